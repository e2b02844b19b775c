#!/usr/bin/env python3
"""Shows that stoke's boxes agree with torchvision.transforms.v2 when each sample's geometric
window is replayed there.

stoke moves every sample's boxes through the map its pixels took (`batch.geometry`: output =
(sx * x + tx, sy * y + ty), sx < 0 when mirrored), clips them to the output and drops those the
rules say. This script reads each delivered sample's window back out of that map, replays it on
a `tv_tensors.BoundingBoxes` of the image's annotations in torchvision.transforms.v2.functional,
then applies `clamp_bounding_boxes` and `SanitizeBoundingBoxes`, and compares: the same number of
boxes, the same classes in the same order, every coordinate within 0.01 px.

  train  random_resized_crop + horizontal_flip: the window (top, left, h, w, flipped) read from
         the map (integers, checked) and replayed as F.resized_crop then F.horizontal_flip;
  eval   resize shorter side to round(min(H, W) / 0.875), centre crop: replayed as torchvision's
         own F.resize(size=[short]) then F.center_crop([H, W]), from the source size alone, so
         stoke's resize and crop rounding is checked too (and its map against torchvision's).

Two data sets: a COCO instances file (default: the real-photograph set that
bench/make_detection_set.py writes) and a synthetic one this script writes, whose boxes are
tiny, thin, edge-touching, reach up to a pixel past the image, and sit on images of extreme
aspect ratios and sizes, so that clipping, the min-size drop and RandomResizedCrop's fallback
all happen. The synthetic set also runs once with other rules (min_box_size 2.5, min_box_area
20, against SanitizeBoundingBoxes(min_size=2.5, min_area=20)).

The train windows come from stoke's own map, so the pixels are compared too, to show that the
map is the window the pixels took: torchvision's replay of the decoded image against stoke's
pixels, mean absolute difference in levels, for information only (not a pass criterion).
stoke resamples with OpenCV (INTER_AREA when shrinking 2x or more, else INTER_LINEAR, from a
reduced-DCT JPEG decode), torchvision with antialiased bilinear, so about a level apart is
expected; a window one pixel off raises it tenfold on the synthetic set (0.4 to 4.2 levels).

Setup (Python 3.9+, about 6 GB of wheels: PyPI's Linux torch brings its CUDA libraries; the
CPU-only index is not reachable everywhere, and Debian's python3-torchvision has no
transforms.v2):

  python3 -m venv /tmp/parity-venv
  /tmp/parity-venv/bin/pip install torch torchvision numpy nanobind scikit-build-core
  /tmp/parity-venv/bin/pip install --no-build-isolation --no-deps .      # from the repo root
  python3 bench/make_detection_set.py --out /tmp/det                      # if not built yet

Run (exit status 1 on any disagreement):

  /tmp/parity-venv/bin/python bench/torchvision_parity.py --data /tmp/det/instances.json \\
      [--epochs 5] [--sizes 224,160x256] [--seed 0] [--synthetic-dir DIR]

Checked with torch 2.15.0 and torchvision 0.29.2.
"""

import argparse
import json
import math
import os
import random
import sys
import tempfile
from dataclasses import dataclass, field

import numpy as np
import torch
import torchvision
from PIL import Image, ImageDraw
from torchvision import tv_tensors
from torchvision.io import ImageReadMode, decode_image
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as F

import stoke

TOLERANCE = 0.01  # px: the most a coordinate may differ
WINDOW_TOLERANCE = 0.05  # px: the most a window edge read from the float32 map may miss an integer
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = os.path.join(HERE, "..", "build", "default", "testdata", "detection",
                            "instances.json")


# --- The data -------------------------------------------------------------------------------

@dataclass
class AnnotatedImage:
    path: str
    width: int
    height: int
    boxes: np.ndarray  # (n, 4) float64 xyxy, non-crowd annotations in file order
    classes: np.ndarray  # (n,) int64 contiguous class indices


def read_coco(json_path):
    """The file's images in its order, each with its non-crowd boxes as xyxy and its classes
    (categories sorted by id, numbered from 0): what stoke's COCO reader is documented to do,
    written independently of it."""
    with open(json_path) as f:
        coco = json.load(f)
    root = os.path.dirname(os.path.abspath(json_path))
    class_of = {c["id"]: i for i, c in enumerate(sorted(coco["categories"], key=lambda c: c["id"]))}
    per_image = {img["id"]: [] for img in coco["images"]}
    for a in coco["annotations"]:
        if a.get("iscrowd", 0):
            continue
        x, y, w, h = (float(v) for v in a["bbox"])
        per_image[a["image_id"]].append(([x, y, x + w, y + h], class_of[a["category_id"]]))
    images = []
    for img in coco["images"]:
        anns = per_image[img["id"]]
        boxes = np.array([b for b, _ in anns], dtype=np.float64).reshape(-1, 4)
        classes = np.array([c for _, c in anns], dtype=np.int64)
        images.append(AnnotatedImage(os.path.join(root, img["file_name"]), img["width"],
                                     img["height"], boxes, classes))
    return images


# Sizes chosen for the cases they cause: square, tiny (upsampled), very wide and very tall
# (RandomResizedCrop's ratio fallback; eval's centre crop wider than the resized image, so it
# pads), odd sides (centre crop offsets that round), large (reduced-DCT JPEG decode).
SYNTHETIC_SIZES = [(640, 480), (37, 29), (1999, 301), (211, 1503), (333, 517), (1024, 1024),
                   (96, 130), (800, 599), (2400, 1601), (501, 499), (64, 700), (1280, 97)]


def synthetic_boxes(rng, w, h):
    """xywh boxes meant to stress the rules: the whole image, strips along each edge, tiny and
    thin boxes, ordinary ones, some reaching up to a pixel past the image (stoke accepts those,
    as annotation tools round corners)."""
    r = lambda a, b: round(rng.uniform(a, b), 3)
    out = [[0.0, 0.0, float(w), float(h)]]
    for _ in range(2):
        s = r(0.5, max(1.0, w / 8))
        out.append([0.0, r(0, h / 2), s, r(1, h / 2)])  # left edge
        out.append([w - s, r(0, h / 2), s, r(1, h / 2)])  # right edge
        t = r(0.5, max(1.0, h / 8))
        out.append([r(0, w / 2), 0.0, r(1, w / 2), t])  # top edge
        out.append([r(0, w / 2), h - t, r(1, w / 2), t])  # bottom edge
    for _ in range(10):  # tiny: most vanish when the crop shrinks, some survive an upsample
        bw, bh = r(0.3, 4), r(0.3, 4)
        out.append([r(0, w - bw), r(0, h - bh), bw, bh])
    for _ in range(4):  # thin: one side near the 1 px limit
        bw, bh = r(0.5, 2.5), r(1, h / 2)
        out.append([r(0, w - bw), r(0, h - bh), bw, bh])
        long = r(1, w / 2)
        out.append([r(0, w - long), r(0, h - bw), long, bw])
    for _ in range(6):
        bw, bh = r(2, w / 2), r(2, h / 2)
        out.append([r(0, w - bw), r(0, h - bh), bw, bh])
    out.append([-0.5, r(0, h / 2), r(2, w / 3), r(2, h / 3)])  # past the left edge
    bw = r(2, w / 3)
    out.append([w - bw + 0.75, r(0, h / 2), bw, r(2, h / 3)])  # past the right edge
    return out


def write_synthetic_set(folder, seed=1):
    """Writes DIR/images/*.jpg|png and DIR/instances.json; returns the JSON's path."""
    rng = random.Random(seed)
    os.makedirs(os.path.join(folder, "images"), exist_ok=True)
    categories = [{"id": i, "name": f"c{i}"} for i in (3, 7, 8, 20, 55)]  # ids with gaps
    images, annotations = [], []
    for n, (w, h) in enumerate(SYNTHETIC_SIZES):
        name = f"images/synth_{n:02d}.{'png' if n % 4 == 3 else 'jpg'}"
        boxes = synthetic_boxes(rng, w, h)
        draw_image(os.path.join(folder, name), w, h, boxes)
        images.append({"id": n + 1, "file_name": name, "width": w, "height": h})
        for k, b in enumerate(boxes):
            annotations.append({"id": len(annotations) + 1, "image_id": n + 1,
                                "category_id": categories[k % len(categories)]["id"],
                                "bbox": b, "area": b[2] * b[3], "iscrowd": 0})
        annotations.append({"id": len(annotations) + 1, "image_id": n + 1,  # left out
                            "category_id": 3, "bbox": [0, 0, w / 2, h / 2],
                            "area": w * h / 4, "iscrowd": 1})
    path = os.path.join(folder, "instances.json")
    with open(path, "w") as f:
        json.dump({"images": images, "annotations": annotations, "categories": categories}, f)
    return path


def draw_image(path, w, h, boxes):
    """A gradient with the boxes outlined: texture, so that the pixel comparison can tell a
    misplaced window from a resampling difference."""
    x = np.linspace(0, 255, w)[None, :, None]
    y = np.linspace(0, 255, h)[:, None, None]
    rgb = np.concatenate([x + 0 * y, y + 0 * x, (x + y) / 2], axis=2).astype(np.uint8)
    img = Image.fromarray(rgb)
    d = ImageDraw.Draw(img)
    for i, (bx, by, bw, bh) in enumerate(boxes):
        d.rectangle([bx, by, bx + bw, by + bh], outline=((i * 97) % 256, 255 - (i * 31) % 256, 0))
    img.save(path, quality=92) if path.endswith(".jpg") else img.save(path)


# --- Reading a window back from stoke's map ---------------------------------------------------

def train_window(g, out_h, out_w):
    """(top, left, h, w, flipped) of a random_resized_crop + flip from a map [sx, tx, sy, ty]:
    sx = +-W/w, sy = H/h, tx = -sx*left (or W + left*W/w mirrored), ty = -sy*top. Returns the
    rounded integers and how far the float values were from them."""
    sx, tx, sy, ty = (float(v) for v in g[:4])
    flipped = sx < 0
    w = out_w / abs(sx)
    h = out_h / sy
    left = (tx - out_w) / abs(sx) if flipped else -tx / sx
    top = -ty / sy
    raw = (top, left, h, w)
    ints = tuple(int(round(v)) for v in raw)
    deviation = max(abs(v - i) for v, i in zip(raw, ints))
    return ints, flipped, deviation


def replay_train(bb, window, flipped, out_h, out_w):
    top, left, h, w = window
    bb = F.resized_crop(bb, top, left, h, w, size=[out_h, out_w])
    return F.horizontal_flip(bb) if flipped else bb


def eval_short_side(out_h, out_w):
    """stoke's eval preset: the shorter side to min(H, W) / 0.875, rounded half away from zero
    (std::lround) as torchvision's reference scripts do with 224 -> 256."""
    return int(math.floor(min(out_h, out_w) / 0.875 + 0.5))


def replay_eval(inpt, out_h, out_w):
    """torchvision's own resize of the shorter side, then centre crop (padding where the crop
    is larger than the resized image)."""
    resized = F.resize(inpt, size=[eval_short_side(out_h, out_w)])
    return F.center_crop(resized, [out_h, out_w])


def eval_map(src_h, src_w, out_h, out_w):
    """The map [sx, tx, sy, ty] that replay_eval amounts to, to hold against stoke's: the
    canvas torchvision's resize computes (read off a resized empty BoundingBoxes), then the
    anchor round((n - crop) / 2) of F.center_crop (negative: padding)."""
    empty = tv_tensors.BoundingBoxes(torch.zeros(0, 4), format="XYXY", canvas_size=(src_h, src_w))
    nh, nw = F.resize(empty, size=[eval_short_side(out_h, out_w)]).canvas_size
    top, left = int(round((nh - out_h) / 2.0)), int(round((nw - out_w) / 2.0))
    return (nw / src_w, -left, nh / src_h, -top)


def sanitize(bb, labels, rules):
    """clamp_bounding_boxes, then SanitizeBoundingBoxes with stoke's rules. torchvision takes
    no min_area below 1 (its default); with min_size >= 1 the area is at least 1 anyway, so
    stoke's default 0 is the same rule."""
    bb = F.clamp_bounding_boxes(bb)
    out = v2.SanitizeBoundingBoxes(min_size=rules.min_size, min_area=max(rules.min_area, 1.0))(
        {"boxes": bb, "labels": labels})
    return out["boxes"].as_subclass(torch.Tensor).numpy(), out["labels"].numpy()


# --- One configuration ------------------------------------------------------------------------

@dataclass
class Rules:
    min_size: float = 1.0
    min_area: float = 0.0


@dataclass
class Tally:
    samples: int = 0
    annotated: int = 0  # non-crowd boxes of the delivered samples
    boxes: int = 0  # boxes stoke kept and were compared
    dropped: int = 0  # boxes stoke's rules dropped (clipped too small, or cropped away)
    on_edge: int = 0  # kept boxes with an edge on the output's border (clipped or touching)
    max_diff: float = 0.0
    max_window_dev: float = 0.0  # train: window from a non-integer map; eval: map vs torchvision's
    flipped: int = 0
    fallbacks: int = 0  # train: RandomResizedCrop's fallback windows; eval: crops that pad
    pixel_diffs: list = field(default_factory=list)
    mismatches: list = field(default_factory=list)


def delivered(loader, epochs):
    """(epoch, sample_id, geometry, boxes, classes, pixels) of every real sample, copied out of
    the batch (its memory goes back to the workers)."""
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for batch in loader:
            valid = np.from_dlpack(batch.valid)
            ids = np.from_dlpack(batch.sample_ids)
            geometry = np.from_dlpack(batch.geometry).astype(np.float64)
            boxes = np.from_dlpack(batch.boxes[0])
            classes = np.from_dlpack(batch.box_classes[0])
            counts = np.from_dlpack(batch.box_counts[0])
            pixels = np.from_dlpack(batch.pixels[0])
            for i in np.flatnonzero(valid == 1):
                n = int(counts[i])
                yield (epoch, int(ids[i]), geometry[i].copy(), boxes[i, :n].astype(np.float64),
                       classes[i, :n].astype(np.int64), pixels[i].copy())


def replay(t, img, aug, out_h, out_w, got, decoded):
    """torchvision's boxes (before the rules) and pixels for one delivered sample; notes the
    window's checks in the tally."""
    epoch, sid, geom = got[:3]
    bb = tv_tensors.BoundingBoxes(torch.from_numpy(img.boxes.copy()), format="XYXY",
                                  canvas_size=(img.height, img.width))
    if aug == "eval":
        expected = eval_map(img.height, img.width, out_h, out_w)
        t.max_window_dev = max(t.max_window_dev, max(abs(a - b) for a, b in zip(geom, expected)))
        t.fallbacks += expected[1] > 0 or expected[3] > 0  # a negative anchor: padding
        return replay_eval(bb, out_h, out_w), replay_eval(decoded, out_h, out_w)
    window, flipped, dev = train_window(geom, out_h, out_w)
    t.max_window_dev = max(t.max_window_dev, dev)
    t.flipped += flipped
    if window == rrc_fallback(img):
        t.fallbacks += 1
    elif not rrc_range(window, img):
        t.mismatches.append(f"epoch {epoch} sample {sid}: window {window} is outside "
                            f"RandomResizedCrop's range")
    return (replay_train(bb, window, flipped, out_h, out_w),
            replay_train(decoded, window, flipped, out_h, out_w))


def check_sample(t, img, aug, out_h, out_w, rules, got, decoded):
    """Replays one sample in torchvision and adds the comparison to the tally."""
    epoch, sid, _, boxes, classes, pixels = got
    ref, ref_pixels = replay(t, img, aug, out_h, out_w, got, decoded)
    ref_boxes, ref_classes = sanitize(ref, torch.from_numpy(img.classes), rules)
    t.samples += 1
    t.annotated += len(img.boxes)
    t.dropped += len(img.boxes) - len(boxes)
    t.pixel_diffs.append(float(np.abs(ref_pixels.permute(1, 2, 0).numpy().astype(np.int16)
                                      - pixels.astype(np.int16)).mean()))
    where = f"epoch {epoch} sample {sid} ({os.path.basename(img.path)})"
    if len(ref_boxes) != len(boxes) or not np.array_equal(ref_classes, classes):
        t.mismatches.append(f"{where}: torchvision keeps {len(ref_boxes)} boxes, classes "
                            f"{ref_classes.tolist()}; stoke {len(boxes)}, {classes.tolist()}")
        return
    t.boxes += len(boxes)
    x0, y0, x1, y1 = boxes.T
    t.on_edge += int(np.sum(np.isclose(x0, 0, atol=1e-4) | np.isclose(y0, 0, atol=1e-4) |
                            np.isclose(x1, out_w, atol=1e-4) | np.isclose(y1, out_h, atol=1e-4)))
    if len(boxes):
        diff = float(np.abs(ref_boxes - boxes).max())
        t.max_diff = max(t.max_diff, diff)
        if diff > TOLERANCE:
            t.mismatches.append(f"{where}: a coordinate differs by {diff:.4f} px")


def rrc_fallback(img):
    """The window RandomResizedCrop.get_params takes after 10 failed draws: a centred crop at
    the nearest allowed aspect ratio (as (top, left, h, w))."""
    ratio = img.width / img.height
    w, h = img.width, img.height
    if ratio < 3 / 4:
        h = int(round(w / (3 / 4)))
    elif ratio > 4 / 3:
        w = int(round(h * (4 / 3)))
    return ((img.height - h) // 2, (img.width - w) // 2, h, w)


def rrc_range(window, img):
    """Whether a train window lies in RandomResizedCrop's sampling range (scale [0.08, 1],
    ratio [3/4, 4/3], up to rounding to whole pixels); otherwise it is the fallback crop."""
    _, _, h, w = window
    scale = w * h / (img.width * img.height)
    ratio = w / h
    slack = 1 / min(w, h) + 1e-9  # w and h are each rounded from the drawn values
    return (0.08 * (1 - 2 * slack) <= scale <= 1 and
            0.75 * (1 - 2 * slack) <= ratio <= 4 / 3 * (1 + 2 * slack))


def run_config(json_path, images, aug, size, rules, epochs, seed):
    out_h, out_w = size
    loader = stoke.Loader(json_path, batch=8, devices="cpu:1", workers=2, size=size,
                          augment=aug, seed=seed, shuffle=True, on_error="error",
                          min_box_size=rules.min_size, min_box_area=rules.min_area)
    decoded = {}
    t = Tally()
    for got in delivered(loader, epochs):
        img = images[got[1]]
        if got[1] not in decoded:
            decoded[got[1]] = decode_image(img.path, mode=ImageReadMode.RGB)
        check_sample(t, img, aug, out_h, out_w, rules, got, decoded[got[1]])
    return t


# --- Report -----------------------------------------------------------------------------------

def parse_sizes(text):
    sizes = []
    for part in text.split(","):
        h, _, w = part.strip().partition("x")
        sizes.append((int(h), int(w or h)))
    return sizes


def table_row(name, aug, size, rules, t):
    pixels = np.array(t.pixel_diffs)
    dev = "map dev" if aug == "eval" else "win dev"
    flipped = t.flipped if aug == "train" else "-"
    return (f"| {name} | {aug} | {size[0]}x{size[1]} | {rules.min_size:g} / {rules.min_area:g} "
            f"| {t.samples} | {flipped} | {t.annotated} | {t.boxes} | {t.dropped} "
            f"| {t.on_edge} | {t.fallbacks} | {dev} {t.max_window_dev:.1e} | {t.max_diff:.2e} "
            f"| {len(t.mismatches)} | {pixels.mean():.2f} / {pixels.max():.2f} |")


HEADER = ("| data | augment | size | min size / area | samples | flipped | annotated boxes "
          "| boxes compared | dropped | on border | RRC fallback / eval pad | window | "
          "max abs diff (px) | mismatches | pixels mean abs diff, mean / worst sample (levels) |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=DEFAULT_DATA, help="a COCO instances JSON file")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--sizes", default="224,160x256", help="comma-separated N or HxW")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--synthetic-dir", default="",
                   help="where to write the synthetic set (default: a temporary folder)")
    args = p.parse_args()
    if not os.path.exists(args.data):
        sys.exit(f"{args.data}: missing (python3 bench/make_detection_set.py --out DIR)")
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"stoke {stoke.version()}", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        synthetic = write_synthetic_set(args.synthetic_dir or tmp)
        sets = [("real", args.data, Rules()), ("synthetic", synthetic, Rules()),
                ("synthetic", synthetic, Rules(2.5, 20.0))]
        rows, problems, worst = [], [], 0.0
        for name, path, rules in sets:
            images = read_coco(path)
            for aug in ("train", "eval"):
                for size in parse_sizes(args.sizes):
                    t = run_config(path, images, aug, size, rules, args.epochs, args.seed)
                    rows.append(table_row(name, aug, size, rules, t))
                    print(rows[-1], flush=True)
                    worst = max(worst, t.max_diff)
                    problems += [f"{name} {aug} {size}: {m}" for m in t.mismatches]
                    if aug == "train" and t.max_window_dev > WINDOW_TOLERANCE:
                        problems.append(f"{name} {aug} {size}: a window is not whole pixels "
                                        f"({t.max_window_dev:.3f})")

    print("\n" + HEADER + "\n" + "\n".join(rows))
    print(f"\nmax abs difference over everything: {worst:.2e} px (tolerance {TOLERANCE} px)")
    for line in problems[:50]:
        print("DISAGREES:", line)
    if problems:
        sys.exit(f"{len(problems)} disagreement(s)")
    print("stoke and torchvision.transforms.v2 agree on every box")


if __name__ == "__main__":
    main()
