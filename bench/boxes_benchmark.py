#!/usr/bin/env python3
"""What boxes and masks cost: stoke-bench on a JPEG corpus as an image folder (classification:
pixels and labels), as a COCO annotation file over the same images with boxes (pixels and boxes
moved with them) and, with --masks, as a list file of the same images with a mask each (the
boxes filled with their class as a PNG label map), alternating runs, medians and their ratio.

    python3 bench/boxes_benchmark.py --corpus /tmp/corpus --repeat 3 [--masks]

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
import zlib

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


def png_gray(width, height, rows):
    """A one-channel 8-bit PNG of `rows` (bytes objects), with the standard library only."""
    raw = b"".join(b"\0" + r for r in rows)

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b""))


def write_masks(root, out, annotations_path):
    """A label map per image (its boxes filled with class index + 1, later over earlier), and
    two list files over the same images: with the masks and without."""
    with open(annotations_path) as f:
        coco = json.load(f)
    classes = {c["id"]: i + 1 for i, c in enumerate(sorted(coco["categories"], key=lambda c: c["id"]))}
    boxes = {}
    for a in coco["annotations"]:
        boxes.setdefault(a["image_id"], []).append(a)
    os.makedirs(os.path.join(out, "masks"), exist_ok=True)
    plain, masked = [], []
    for img in coco["images"]:
        w, h = img["width"], img["height"]
        mask = bytearray(w * h)
        for a in boxes.get(img["id"], []):
            x, y, bw, bh = a["bbox"]
            x1, x2 = int(x), min(w, int(x + bw))
            fill = bytes([classes[a["category_id"]]]) * (x2 - x1)
            for row in range(int(y), min(h, int(y + bh))):
                mask[row * w + x1:row * w + x2] = fill
        name = os.path.join("masks", f"{img['id']}.png")
        with open(os.path.join(out, name), "wb") as f:
            f.write(png_gray(w, h, [bytes(mask[r * w:(r + 1) * w]) for r in range(h)]))
        image = os.path.join(root, img["file_name"])
        plain.append(f"{image}\t0")
        masked.append(f"{image}\t0\t{name}")
    lists = []
    for name, lines in (("images.txt", plain), ("masked.txt", masked)):
        lists.append(os.path.join(out, name))
        with open(lists[-1], "w") as f:
            f.write("\n".join(lines) + "\n")
    return lists


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
    p.add_argument("--masks", action="store_true",
                   help="also the same images from a list file, with and without masks")
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
    if args.masks:
        plain, masked = write_masks(corpus, args.out, annotations)
        print(f"{masked}: the same images, each with a PNG label map")
        kinds["list file (labels)"] = ["--data", plain]
        kinds["list file (masks)"] = ["--data", masked]
    rates = {k: [] for k in kinds}
    delivered = {}
    for r in range(args.repeat):
        for kind, flags in kinds.items():
            j = bench(args, flags)
            rates[kind].append(j["samples_per_s"])
            delivered[kind] = j["boxes"]
            print(f"  run {r + 1}/{args.repeat} {kind}: {j['samples_per_s']:,.0f} samples/s",
                  flush=True)
    print(f"\n| data | samples/s (median of {args.repeat}) | vs labels only | boxes delivered |")
    print("|---|---|---|---|")
    for kind in kinds:
        # Each source against its own kind without targets: the folder, or the plain list.
        base = statistics.median(rates["list file (labels)" if kind.startswith("list")
                                       else "image folder (labels)"])
        m = statistics.median(rates[kind])
        boxes = delivered[kind]
        shown = f"{boxes['delivered']:,} ({boxes['max_boxes']} rows per sample)" \
            if boxes["max_boxes"] else "-"
        print(f"| {kind} | {m:,.0f} | {m / base:.3f} | {shown} |")


if __name__ == "__main__":
    main()
