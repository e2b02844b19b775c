#!/usr/bin/env python3
"""What boxes cost: stoke-bench on a JPEG corpus as an image folder (classification: pixels and
labels) and as a COCO annotation file over the same images with boxes (pixels and boxes moved
with them), alternating runs, medians and their ratio.

    python3 bench/boxes_benchmark.py --corpus /tmp/corpus --repeat 3

The corpus is an image-folder tree of JPEGs (`stoke-mkdata jpeg-corpus --out /tmp/corpus`).
The script writes, under --out, an instances.json naming every image of the corpus with its
size (read from the JPEG's frame header) and synthetic boxes: 1 to 2 * --boxes-per-image - 1
per image (COCO train2017 has 7.3 on average), anywhere in the image, 5% to 60% of each side,
drawn from a fixed seed. Both runs use the same pipeline (the default training pipeline at
224 x 224: random-resized-crop and flip), workers, batch and epochs.
"""

import argparse
import json
import os
import random
import statistics
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BENCH = os.path.join(HERE, "..", "build", "default", "bin", "stoke-bench")
SOF_MARKERS = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def jpeg_size(path):
    """(width, height) from the first start-of-frame marker."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] != b"\xff\xd8":
        raise ValueError(f"{path}: not a JPEG")
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            at += 1
            continue
        marker = data[at + 1]
        length = struct.unpack(">H", data[at + 2:at + 4])[0]
        if marker in SOF_MARKERS:
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return width, height
        at += 2 + length
    raise ValueError(f"{path}: no frame header")


def corpus_images(root):
    """Relative paths of the corpus's JPEGs, sorted."""
    found = []
    for folder, _, files in os.walk(root):
        for name in files:
            if name.lower().endswith((".jpg", ".jpeg")):
                found.append(os.path.relpath(os.path.join(folder, name), root))
    if not found:
        sys.exit(f"{root}: no JPEG files (make a corpus with stoke-mkdata jpeg-corpus --out DIR)")
    return sorted(found)


def write_annotations(root, out, per_image, seed):
    rng = random.Random(seed)
    images, annotations = [], []
    for i, rel in enumerate(corpus_images(root)):
        width, height = jpeg_size(os.path.join(root, rel))
        images.append({"id": i + 1, "file_name": rel, "width": width, "height": height})
        for _ in range(rng.randint(1, 2 * per_image - 1)):
            w = rng.uniform(0.05, 0.6) * width
            h = rng.uniform(0.05, 0.6) * height
            x = rng.uniform(0, width - w)
            y = rng.uniform(0, height - h)
            annotations.append({"id": len(annotations) + 1, "image_id": i + 1,
                                "category_id": rng.choice([1, 3, 17, 44, 62]),
                                "bbox": [round(x, 2), round(y, 2), round(w, 2), round(h, 2)],
                                "area": round(w * h, 2), "iscrowd": 0})
    categories = [{"id": c, "name": f"class{c}"} for c in (1, 3, 17, 44, 62)]
    path = os.path.join(out, "instances.json")
    with open(path, "w") as f:
        json.dump({"images": images, "annotations": annotations, "categories": categories}, f)
    return path, len(images), len(annotations)


def bench(args, data_flags):
    cmd = [args.bench, *data_flags, "--workers", str(args.workers), "--batch", str(args.batch),
           "--epochs", str(args.epochs), "--json"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({run.returncode}):\n{run.stderr[-2000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", required=True, help="image-folder tree of JPEGs")
    p.add_argument("--bench", default=DEFAULT_BENCH, help="the stoke-bench binary")
    p.add_argument("--out", default="/tmp/stoke-boxes-bench", help="folder for instances.json")
    p.add_argument("--repeat", type=int, default=3, help="runs of each kind, alternating")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--boxes-per-image", type=int, default=7, help="mean boxes per image")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    if args.boxes_per_image < 1:
        p.error("--boxes-per-image must be at least 1")
    os.makedirs(args.out, exist_ok=True)
    corpus = os.path.abspath(args.corpus)
    annotations, n_images, n_boxes = write_annotations(corpus, args.out, args.boxes_per_image,
                                                       args.seed)
    print(f"{annotations}: {n_images} images, {n_boxes} boxes ({n_boxes / n_images:.2f} per image)")
    kinds = {"image folder (labels)": ["--data", corpus],
             "COCO file (boxes)": ["--data", annotations, "--image-root", corpus]}
    rates = {k: [] for k in kinds}
    delivered = {}
    for r in range(args.repeat):
        for kind, flags in kinds.items():
            j = bench(args, flags)
            rates[kind].append(j["samples_per_s"])
            delivered[kind] = j["boxes"]
            print(f"  run {r + 1}/{args.repeat} {kind}: {j['samples_per_s']:,.0f} samples/s",
                  flush=True)
    base = statistics.median(rates["image folder (labels)"])
    print(f"\n| data | samples/s (median of {args.repeat}) | vs labels only | boxes delivered |")
    print("|---|---|---|---|")
    for kind in kinds:
        m = statistics.median(rates[kind])
        boxes = delivered[kind]
        shown = f"{boxes['delivered']:,} ({boxes['max_boxes']} rows per sample)" \
            if boxes["max_boxes"] else "-"
        print(f"| {kind} | {m:,.0f} | {m / base:.3f} | {shown} |")


if __name__ == "__main__":
    main()
