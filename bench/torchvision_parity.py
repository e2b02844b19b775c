#!/usr/bin/env python3
"""Shows that stoke's boxes and masks agree with torchvision.transforms.v2 when each sample's
geometric window is replayed there.

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

Masks: stoke moves a label map through the same map by nearest neighbour: output pixel (X, Y)
takes the source label at (floor(x), floor(y)), (x, y) the source point the map sends to the
pixel's centre (X + 0.5, Y + 0.5), and pixels from outside the source (eval's centre crop wider
than the resized image) get mask_ignore. The same windows are replayed on a `tv_tensors.Mask`:
train as F.crop, F.resize([H, W]) and F.horizontal_flip, eval as F.resize(short) and
F.center_crop, whose padding (0 for masks) is set to the ignore label, both under
InterpolationMode.NEAREST_EXACT (the same centre rule) and under NEAREST (floor(o * in / out),
the pixel under the output pixel's top-left corner). The replay is F.crop + F.resize, not
F.resized_crop, because torchvision 0.29.2 drops the interpolation F.resized_crop is given for a
Mask (always NEAREST); F.resize keeps NEAREST or NEAREST_EXACT and turns any other mode, its
default BILINEAR included, into NEAREST. The script prints what it finds torchvision doing.

Every output pixel is compared, and each is also held against the rule computed in integers
(source index (2 * o + 1) * n_in // (2 * n_out) plus the window's offset): where that product is
an exact multiple (a "tie", the source point on the edge between two pixels), floating point
may land on either pixel, in stoke (double) and in torch (float) alike. A difference counts as
a tie when it lies on such a row or column and both labels are ones the tie allows. Each side is
also recomputed from its own formula in floating point: stoke's floor((o + 0.5 - t) / s) in
double (a tie within 1e-9 rounded to the whole number) must give every one of its pixels, and torch's floorf((r + 0.5) * float32(in / out)) is
shown against torchvision's replay, so that each tie difference is accounted for. One more
difference is explained, not a failure: F.center_crop pads an image or mask (crop - n) // 2
before it, while it anchors boxes at round((n - crop) / 2), half to even; the two are a pixel
apart when crop - n = 3 (mod 4). stoke uses the boxes' anchor for pixels, boxes and masks, so
in those samples its mask is compared with torchvision's F.crop at that anchor instead (the
table counts them). Anything else exits 1.

random_affine (--checks affine): two loaders of one seed over the COCO set, random_resized_crop
+ horizontal_flip and the same with random_affine appended (nearest and bilinear, recipe-sized
and extreme ranges, several fills). Each sample's recorded op is replayed by F.affine on the
first loader's pixels and compared byte for byte with the second's; its boxes are the
annotations replayed through the window (the geometry, which random_affine leaves out) as
F.resized_crop, F.horizontal_flip, then F.affine on BoundingBoxes, clamp_bounding_boxes and
SanitizeBoundingBoxes, compared within 1e-3 px; and over the COCO set's label maps the first
loader's mask through F.affine on a tv_tensors.Mask (fill mask_ignore) is compared label for
label with the second's. Any difference exits 1.

Mask data, written by the script: label maps for the COCO set's images (0, each non-crowd box
filled with its class index + 1, then 1-px lines, a 1-px checkerboard and a quarter whose label
changes at every pixel), and for synthetic images of the sizes above plus a few pixels and a
2047 x 33 strip: the same fine structures as 8-bit PNGs (run at mask_depth 8 and 16) and as
16-bit PNGs (run at depth 8), and 16-bit PNGs labelled (y mod 255) * 256 + (x mod 256) (run at
depth 16, mask_ignore 65535), so that every source pixel of a tile has its own label.

timm (--checks timm; needs timm and Pillow in the venv): the ops check's method for timm's
RandAugment and AugMix steps (DeiT's rand-m9-mstd0.5-inc1 with bicubic warps, rand-m9-mstd0.5
with a random filter per warp, augmix-m5-w3 plain and blended): each sample's applied ops are
replayed in timm.data.auto_augment's own op functions (Pillow underneath) on the pixels the step
received, AugMix's chains combined as AugMixAugment combines them, and every byte must match.
Posterize to 0 bits, which timm's PosterizeIncreasing asks for at magnitude 10 and Pillow 13's
ImageOps.posterize refuses, is replayed as Pillow 12 computed it (every value masked to 0).

Setup (Python 3.9+, about 6 GB of wheels: PyPI's Linux torch brings its CUDA libraries; the
CPU-only index is not reachable everywhere, and Debian's python3-torchvision has no
transforms.v2):

  python3 -m venv /tmp/parity-venv
  /tmp/parity-venv/bin/pip install torch torchvision numpy nanobind scikit-build-core
  /tmp/parity-venv/bin/pip install timm pillow                             # for --checks timm
  /tmp/parity-venv/bin/pip install --no-build-isolation --no-deps .      # from the repo root
  python3 bench/make_detection_set.py --out /tmp/det                      # if not built yet

Run (exit status 1 on any disagreement):

  /tmp/parity-venv/bin/python bench/torchvision_parity.py --data /tmp/det/instances.json \\
      [--checks boxes,masks,ops,policies,affine] [--epochs 5] [--sizes 224,160x256] \\
      [--mask-sizes 224,160x256,97x203,31x45] [--seed 0] [--synthetic-dir DIR]

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

import parity_ops
import stoke

TOLERANCE = 0.01  # px: the most a coordinate may differ
WINDOW_TOLERANCE = 0.05  # px: the most a window edge read from the float32 map may miss an integer
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = os.path.join(HERE, "..", "build", "default", "testdata", "detection",
                            "instances.json")
DEFAULT_PHOTOS = os.path.join(HERE, "..", "build", "default", "testdata", "jpeg")


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


def eval_canvas(src_h, src_w, out_h, out_w):
    """(nh, nw, top, left) of replay_eval: the canvas torchvision's resize computes (read off a
    resized empty BoundingBoxes), then the anchor round((n - crop) / 2) (half to even) that
    F.center_crop uses for boxes (negative: padding)."""
    empty = tv_tensors.BoundingBoxes(torch.zeros(0, 4), format="XYXY", canvas_size=(src_h, src_w))
    nh, nw = F.resize(empty, size=[eval_short_side(out_h, out_w)]).canvas_size
    return nh, nw, int(round((nh - out_h) / 2.0)), int(round((nw - out_w) / 2.0))


def eval_map(src_h, src_w, out_h, out_w):
    """The map [sx, tx, sy, ty] that replay_eval amounts to, to hold against stoke's."""
    nh, nw, top, left = eval_canvas(src_h, src_w, out_h, out_w)
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


def real_samples(loader, epochs):
    """(epoch, batch, i, sample_id, geometry) of every real sample (valid == 1) of `epochs`
    epochs; what a caller keeps of the batch it copies out (its memory goes back to the
    workers)."""
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for batch in loader:
            valid = np.from_dlpack(batch.valid)
            ids = np.from_dlpack(batch.sample_ids)
            geometry = np.from_dlpack(batch.geometry).astype(np.float64)
            for i in np.flatnonzero(valid == 1):
                yield epoch, batch, i, int(ids[i]), geometry[i].copy()


def delivered(loader, epochs):
    """(epoch, sample_id, geometry, boxes, classes, pixels) of every real sample."""
    for epoch, batch, i, sample, geometry in real_samples(loader, epochs):
        n = int(np.from_dlpack(batch.box_counts[0])[i])
        yield (epoch, sample, geometry, np.from_dlpack(batch.boxes[0])[i, :n].astype(np.float64),
               np.from_dlpack(batch.box_classes[0])[i, :n].astype(np.int64),
               np.from_dlpack(batch.pixels[0])[i].copy())


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


# --- Masks: the data ------------------------------------------------------------------------

@dataclass
class MaskedImage:
    path: str
    width: int
    height: int
    labels: np.ndarray  # (height, width) uint8 or uint16: the label map as written


def save_label_map(path, labels):
    """A one-channel PNG, 8- or 16-bit by the array's dtype, read back with PIL to make sure the
    file holds exactly these labels."""
    Image.fromarray(labels).save(path)
    back = np.array(Image.open(path))
    if back.dtype != labels.dtype or not np.array_equal(back, labels):
        sys.exit(f"{path}: the PNG written does not read back as the labels")


def fine_structures(m):
    """Writes over a label map what a nearest-neighbour rule one source pixel off cannot hide:
    1-px lines (rows in the left half, columns in the top half), a 1-px checkerboard in the
    bottom-left quarter and, in the bottom-right quarter, labels that change at every pixel
    (100 + x mod 11 + 11 * (y mod 13), up to 242)."""
    h, w = m.shape
    y, x = np.mgrid[0:h, 0:w]
    m[(y % 23 == 11) & (x < w // 2)] = 250
    m[(x % 19 == 7) & (y < h // 2)] = 251
    low = y >= h // 2
    board = low & (x < w // 2)
    m[board] = (252 + (x + y) % 2)[board]
    texture = low & (x >= w // 2)
    m[texture] = (100 + x % 11 + 11 * (y % 13))[texture]
    return m


def write_list(folder, name, rows):
    """A list file image<TAB>0<TAB>mask (the mask relative to the list file)."""
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        for image, mask in rows:
            f.write(f"{image}\t0\t{os.path.relpath(mask, folder)}\n")
    return path


def write_real_masks(images, folder):
    """Label maps for a COCO set's images (their AnnotatedImage): 0 background, each non-crowd
    box filled with its class index + 1 (later boxes over earlier ones), then fine_structures.
    Returns the list file's path and the MaskedImages in its order."""
    os.makedirs(os.path.join(folder, "masks"), exist_ok=True)
    rows, out = [], []
    for n, img in enumerate(images):
        m = np.zeros((img.height, img.width), np.uint8)
        for (x0, y0, x1, y1), c in zip(img.boxes, img.classes):
            m[int(round(y0)):int(round(y1)), int(round(x0)):int(round(x1))] = c + 1
        fine_structures(m)
        mask_path = os.path.join(folder, "masks", f"{n:03d}.png")
        save_label_map(mask_path, m)
        rows.append((img.path, mask_path))
        out.append(MaskedImage(img.path, img.width, img.height, m))
    return write_list(folder, "real.txt", rows), out


# The synthetic boxes' sizes and some more: a few pixels (every output pixel an upsampled
# block), and a long thin strip.
MASK_SYNTHETIC_SIZES = SYNTHETIC_SIZES + [(7, 5), (5, 9), (2047, 33)]


def write_synthetic_masks(folder):
    """Images of MASK_SYNTHETIC_SIZES with four lists over them, each a dict of the list's
    path and its MaskedImages:
      "8-bit":       fine_structures on a background of 0, 8-bit PNGs;
      "16-bit low":  the same labels as 16-bit PNGs (stoke narrows them to 8 bits);
      "16-bit":      labels (y mod 255) * 256 + (x mod 256), 16-bit PNGs: every source pixel
                     of a 255 x 256 tile has its own label, nearly all above 255."""
    os.makedirs(os.path.join(folder, "images"), exist_ok=True)
    os.makedirs(os.path.join(folder, "masks"), exist_ok=True)
    sets = {k: ([], []) for k in ("8-bit", "16-bit low", "16-bit")}
    for n, (w, h) in enumerate(MASK_SYNTHETIC_SIZES):
        image = os.path.join(folder, "images", f"synth_{n:02d}.{'png' if n % 4 == 3 else 'jpg'}")
        draw_image(image, w, h, [])
        y, x = np.mgrid[0:h, 0:w]
        low = fine_structures(np.zeros((h, w), np.uint8))
        coords = ((y % 255) * 256 + x % 256).astype(np.uint16)
        for key, labels in (("8-bit", low), ("16-bit low", low.astype(np.uint16)),
                            ("16-bit", coords)):
            mask = os.path.join(folder, "masks", f"synth_{n:02d}.{key.replace(' ', '_')}.png")
            save_label_map(mask, labels)
            sets[key][0].append((image, mask))
            sets[key][1].append(MaskedImage(image, w, h, labels))
    return {k: (write_list(folder, f"synthetic_{k.replace(' ', '_')}.txt", rows), imgs)
            for k, (rows, imgs) in sets.items()}


# --- Masks: the rule, and torchvision's replay -------------------------------------------------

NEAREST = torchvision.transforms.InterpolationMode.NEAREST
NEAREST_EXACT = torchvision.transforms.InterpolationMode.NEAREST_EXACT


@dataclass
class Axis:
    index: np.ndarray  # the source index of each output index by the rule, in integers; -1: padding
    tie: np.ndarray  # where the source point falls exactly on the edge between two source pixels


def exact_axis(out, anchor, resized, src, start=0, flipped=False):
    """stoke's documented rule along one axis, in exact integer arithmetic: output index o reads
    index o + anchor of a `resized`-long resampling of `src` source pixels (starting at `start`),
    whose centre comes from source point (o + anchor + 0.5) * src / resized; the index is that
    point's floor. A tie is a point exactly on a pixel edge (an integer): there a computation in
    floating point may land on either side. Mirrored: the unmirrored axis read backwards."""
    r = np.arange(out, dtype=np.int64) + anchor
    num = (2 * r + 1) * src
    inside = (r >= 0) & (r < resized)
    index = np.where(inside, start + num // (2 * resized), -1)
    tie = inside & (num % (2 * resized) == 0)
    return Axis(index[::-1], tie[::-1]) if flipped else Axis(index, tie)


def take(labels, ys, xs, ignore):
    out = labels[np.ix_(np.maximum(ys, 0), np.maximum(xs, 0))]
    out[ys < 0, :] = ignore
    out[:, xs < 0] = ignore
    return out


def stoke_axis(out, s, t, src):
    """The index stoke computes along one axis, x = (o + 0.5 - t) / s in double precision, then
    floor(x), or round(x) when x is within 1e-9 of a whole number (a tie, taken as exact
    arithmetic takes it: loader/src/augment/masks.cpp), from the map [s, t] built as
    augment.cpp builds it."""
    x = (np.arange(out, dtype=np.float64) + 0.5 - t) / s
    nearest = np.round(x)
    v = np.where(np.abs(x - nearest) < 1e-9, nearest, np.floor(x))
    return np.where((v >= 0) & (v < src), v, -1).astype(np.int64)


def torch_axis(out, offset, resized, src, start=0, flipped=False):
    """The index torch's "nearest-exact" takes along one axis, floorf((r + 0.5) * scale) with
    scale = float32(src / resized), at most src - 1 (found to reproduce torch 2.15 on CPU for
    float32 and uint8 tensors), for output o reading resized index r = o + offset."""
    scale = np.float64(np.float32(src) / np.float32(resized))
    r = np.arange(out, dtype=np.int64) + offset
    v = np.minimum(np.floor(((r + 0.5) * scale).astype(np.float32)), src - 1).astype(np.int64)
    index = np.where((r >= 0) & (r < resized), start + v, -1)
    return index[::-1] if flipped else index


def center_crop_offset(crop, n):
    """The resized index of F.center_crop's first output pixel for an image or mask: padding
    (crop - n) // 2 before it, else the anchor round((n - crop) / 2)."""
    return -((crop - n) // 2) if crop > n else int(round((n - crop) / 2.0))


def rule_candidates(labels, ys, xs, ignore):
    """The labels the rule gives (first), then those it gives with a tie taken to the lower
    pixel along either axis or both: what an output pixel may hold when its source point lies
    on a pixel edge. (n, H, W)."""
    options = lambda a: [a.index] + ([np.where(a.tie, a.index - 1, a.index)] if a.tie.any() else [])
    return np.stack([take(labels, y, x, ignore) for y in options(ys) for x in options(xs)])


def as_mask(labels):
    return tv_tensors.Mask(torch.from_numpy(labels)[None])


def to_numpy(mask):
    return mask.as_subclass(torch.Tensor)[0].numpy()


def replay_mask_train(mask, window, flipped, out_h, out_w, mode):
    """F.crop then F.resize with `mode`: what F.resized_crop does to a Mask, but F.resized_crop
    drops the interpolation it is given for masks (always NEAREST), F.resize keeps it."""
    top, left, h, w = window
    mask = F.resize(F.crop(mask, top, left, h, w), size=[out_h, out_w], interpolation=mode)
    return F.horizontal_flip(mask) if flipped else mask


def replay_mask_eval(mask, out_h, out_w, mode, ignore, anchor=None):
    """F.resize (shorter side) with `mode`, then F.center_crop, or with `anchor` (top, left)
    F.crop there. Both pad masks with 0; the same crop of an all-ones mask tells the padding
    from label 0, and it is set to `ignore`, stoke's label for it."""
    resized = F.resize(mask, size=[eval_short_side(out_h, out_w)], interpolation=mode)
    crop = ((lambda m: F.center_crop(m, [out_h, out_w])) if anchor is None else
            (lambda m: F.crop(m, anchor[0], anchor[1], out_h, out_w)))
    inside = crop(tv_tensors.Mask(torch.ones_like(resized.as_subclass(torch.Tensor),
                                                  dtype=torch.uint8)))
    return tv_tensors.Mask(torch.where(inside.bool(), crop(resized),
                                       torch.tensor(ignore, dtype=resized.dtype)))


def torchvision_mask_defaults():
    """What torchvision.transforms.v2 does with a Mask, found by running it on a 10-pixel row
    of labels 0..9 resized to 4 (NEAREST reads 0 2 5 7: floor(o * 2.5); NEAREST_EXACT reads
    1 3 6 8: floor((o + 0.5) * 2.5)) and a 2 x 2 mask centre-cropped to 4 x 5."""
    row = tv_tensors.Mask(torch.arange(10, dtype=torch.uint8).repeat(10, 1)[None])
    read = lambda m: m.as_subclass(torch.Tensor)[0, 0].tolist()
    mode = lambda got: {(0, 2, 5, 7): "NEAREST", (1, 3, 6, 8): "NEAREST_EXACT"}.get(tuple(got),
                                                                                    str(got))
    padded = F.center_crop(tv_tensors.Mask(torch.full((1, 2, 2), 7, dtype=torch.uint8)), [4, 5])
    return {
        "F.resize(Mask) default": mode(read(F.resize(row, [4, 4]))),
        "F.resize(Mask, interpolation=NEAREST_EXACT)":
            mode(read(F.resize(row, [4, 4], interpolation=NEAREST_EXACT))),
        "F.resized_crop(Mask) default": mode(read(F.resized_crop(row, 0, 0, 10, 10, [4, 4]))),
        "F.resized_crop(Mask, interpolation=NEAREST_EXACT)":
            mode(read(F.resized_crop(row, 0, 0, 10, 10, [4, 4], interpolation=NEAREST_EXACT))),
        "v2.Resize(size) on a Mask": mode(read(v2.Resize([4, 4])(row))),
        "v2.RandomResizedCrop(interpolation=NEAREST_EXACT) on a Mask":
            mode(read(v2.RandomResizedCrop([4, 4], scale=(1, 1), ratio=(1, 1),
                                           interpolation=NEAREST_EXACT)(row))),
        "F.center_crop(Mask) padding, 2 x 2 of 7s to 4 x 5":
            str(padded.as_subclass(torch.Tensor)[0].tolist()),
    }


# --- Masks: one configuration -----------------------------------------------------------------

@dataclass
class MaskTally:
    samples: int = 0
    flipped: int = 0
    pixels: int = 0  # output pixels compared
    padding: int = 0  # of those, from outside the source (eval's centre crop pads)
    ties: int = 0  # of those, on a row or column whose source point is exactly on a pixel edge
    ties_visible: int = 0  # of those, where the two pixels on the edge have different labels
    exact_diff: int = 0  # stoke against torchvision, NEAREST_EXACT (F.resize + F.center_crop)
    exact_diff_ties: int = 0  # of those, ties (both labels among the tie's candidates)
    split_samples: int = 0  # eval: centre crops whose padding torchvision splits another way
    split_diff: int = 0  # pixels stoke differs in from F.center_crop there, not from the anchor
    nearest_diff: int = 0  # stoke against torchvision, NEAREST
    rule_diff_ties: int = 0  # stoke against the rule in integers, at ties
    tv_rule_diff_ties: int = 0  # torchvision NEAREST_EXACT against the rule, at ties
    unexplained: int = 0  # pixels differing from torchvision NEAREST_EXACT, not ties or the split
    rule_unexplained: int = 0  # pixels differing from the rule, not ties
    stoke_formula_diff: int = 0  # stoke against its own formula in double precision
    torch_formula_diff: int = 0  # torchvision's replay against torch's formula in float32
    max_window_dev: float = 0.0
    mismatches: list = field(default_factory=list)


def pad_split(crop, n):
    """Whether torchvision's F.center_crop of an image or mask, padding (crop - n) // 2 before
    it, lands one pixel off the anchor round((n - crop) / 2) (half to even) that it uses for
    boxes and stoke uses for everything: when crop - n = 3 (mod 4)."""
    return crop > n and (crop - n) % 4 == 3


def delivered_masks(loader, epochs):
    """(epoch, sample_id, geometry, mask) of every real sample."""
    for epoch, batch, i, sample, geometry in real_samples(loader, epochs):
        yield epoch, sample, geometry, np.from_dlpack(batch.masks[0])[i].copy()


def check_mask_sample(t, img, aug, out_h, out_w, ignore, got):
    """The rule's axes for one delivered sample's window, torchvision's replays under both
    modes, and the comparisons, into the tally."""
    epoch, sid, geom, mask = got
    where = f"epoch {epoch} sample {sid} ({os.path.basename(img.path)})"
    src = as_mask(img.labels)
    anchored = None  # eval: torchvision's crop at the anchor it uses for boxes
    split = False
    if aug == "train":
        window, flipped, dev = train_window(geom, out_h, out_w)
        t.max_window_dev = max(t.max_window_dev, dev)
        t.flipped += flipped
        if window != rrc_fallback(img) and not rrc_range(window, img):
            t.mismatches.append(f"{where}: window {window} is outside RandomResizedCrop's range")
        top, left, h, w = window
        ys = exact_axis(out_h, 0, out_h, h, start=top)
        xs = exact_axis(out_w, 0, out_w, w, start=left, flipped=flipped)
        ky, kx = out_h / h, out_w / w
        stoke_ys = stoke_axis(out_h, ky, -top * ky, img.height)
        stoke_xs = (stoke_axis(out_w, -kx, out_w - (-left * kx), img.width) if flipped else
                    stoke_axis(out_w, kx, -left * kx, img.width))
        torch_ys = torch_axis(out_h, 0, out_h, h, start=top)
        torch_xs = torch_axis(out_w, 0, out_w, w, start=left, flipped=flipped)
        ne = to_numpy(replay_mask_train(src, window, flipped, out_h, out_w, NEAREST_EXACT))
        nn = to_numpy(replay_mask_train(src, window, flipped, out_h, out_w, NEAREST))
    else:
        nh, nw, top, left = eval_canvas(img.height, img.width, out_h, out_w)
        expected = (nw / img.width, -left, nh / img.height, -top)
        t.max_window_dev = max(t.max_window_dev, max(abs(a - b) for a, b in zip(geom, expected)))
        split = pad_split(out_h, nh) or pad_split(out_w, nw)
        ys = exact_axis(out_h, top, nh, img.height)
        xs = exact_axis(out_w, left, nw, img.width)
        stoke_ys = stoke_axis(out_h, nh / img.height, -top, img.height)
        stoke_xs = stoke_axis(out_w, nw / img.width, -left, img.width)
        offsets = (top, left) if split else (center_crop_offset(out_h, nh),
                                             center_crop_offset(out_w, nw))
        torch_ys = torch_axis(out_h, offsets[0], nh, img.height)
        torch_xs = torch_axis(out_w, offsets[1], nw, img.width)
        ne = to_numpy(replay_mask_eval(src, out_h, out_w, NEAREST_EXACT, ignore))
        nn = to_numpy(replay_mask_eval(src, out_h, out_w, NEAREST, ignore))
        anchored = to_numpy(replay_mask_eval(src, out_h, out_w, NEAREST_EXACT, ignore,
                                             anchor=(top, left)))

    candidates = rule_candidates(img.labels, ys, xs, ignore)
    rule = candidates[0]
    tie = ys.tie[:, None] | xs.tie[None, :]
    allowed = lambda a: tie & (candidates == a[None]).any(axis=0)  # a tie, and a label it allows

    t.samples += 1
    t.pixels += mask.size
    t.padding += int(((ys.index < 0)[:, None] | (xs.index < 0)[None, :]).sum())
    t.ties += int(tie.sum())
    t.ties_visible += int((tie & (candidates != rule[None]).any(axis=0)).sum())
    reference = ne
    if anchored is not None and split:  # compared with torchvision's crop at the boxes' anchor
        t.split_samples += 1
        reference = anchored
    elif anchored is not None and not np.array_equal(anchored, ne):
        t.mismatches.append(f"{where}: torchvision's F.center_crop and its crop at the boxes' "
                            f"anchor differ, but not by the padding split")
    differ = mask != ne  # from torchvision's F.center_crop (eval) as it is
    differ_ref = mask != reference  # from its crop at the boxes' anchor where those two differ
    at_ties = differ_ref & allowed(mask) & allowed(reference)
    unexplained = differ_ref & ~at_ties
    t.exact_diff += int(differ.sum())
    t.exact_diff_ties += int((differ & at_ties).sum())
    t.split_diff += int((differ & ~differ_ref).sum())
    t.unexplained += int(unexplained.sum())
    t.nearest_diff += int((mask != nn).sum())
    off_rule = mask != rule
    off_rule_elsewhere = off_rule & ~allowed(mask)
    t.rule_diff_ties += int((off_rule & allowed(mask)).sum())
    t.rule_unexplained += int(off_rule_elsewhere.sum())
    t.tv_rule_diff_ties += int(((reference != rule) & allowed(reference)).sum())
    if unexplained.any():
        y, x = np.argwhere(unexplained)[0]
        t.mismatches.append(f"{where}: {int(unexplained.sum())} pixels differ from torchvision's "
                            f"NEAREST_EXACT replay, not at ties; first (y {y}, x {x}): stoke "
                            f"{mask[y, x]}, torchvision {reference[y, x]}, the rule {rule[y, x]}")
    if off_rule_elsewhere.any():
        t.mismatches.append(f"{where}: {int(off_rule_elsewhere.sum())} pixels differ from the "
                            f"rule computed in integers, not at ties")
    off_formula = int((mask != take(img.labels, stoke_ys, stoke_xs, ignore)).sum())
    t.stoke_formula_diff += off_formula
    t.torch_formula_diff += int((reference != take(img.labels, torch_ys, torch_xs, ignore)).sum())
    if off_formula:
        t.mismatches.append(f"{where}: {off_formula} pixels differ from stoke's own formula")


def run_mask_config(list_path, images, aug, size, depth, ignore, epochs, seed):
    out_h, out_w = size
    loader = stoke.Loader(list_path, batch=8, devices="cpu:1", workers=2, size=size,
                          augment=aug, seed=seed, shuffle=True, on_error="error",
                          mask_depth=depth, mask_ignore=ignore)
    t = MaskTally()
    for got in delivered_masks(loader, epochs):
        want = np.uint16 if depth == 16 else np.uint8
        if got[3].dtype != want:
            t.mismatches.append(f"sample {got[1]}: masks are {got[3].dtype}, not {want}")
            break
        check_mask_sample(t, images[got[1]], aug, out_h, out_w, ignore, got)
    return t


def mask_row(name, bits, aug, size, t):
    share = lambda n: f"{1 - n / max(t.pixels, 1):.6f} ({n})"
    flipped = t.flipped if aug == "train" else "-"
    dev = "map dev" if aug == "eval" else "win dev"
    split = f"{t.split_samples} / {t.split_diff}" if aug == "eval" else "-"
    return (f"| {name} | {bits} | {aug} | {size[0]}x{size[1]} | {t.samples} | {flipped} "
            f"| {t.pixels} | {t.padding} | {t.ties} ({t.ties_visible}) "
            f"| {share(t.exact_diff)} | {t.exact_diff_ties} | {split} | {t.unexplained} "
            f"| {share(t.nearest_diff)} | {t.rule_diff_ties} / {t.tv_rule_diff_ties} "
            f"| {t.rule_unexplained} | {t.stoke_formula_diff} / {t.torch_formula_diff} "
            f"| {dev} {t.max_window_dev:.1e} |")


MASK_HEADER = (
    "| data | file bits -> depth | augment | size | samples | flipped | pixels compared "
    "| padding | tie pixels (visible) | NEAREST_EXACT match (pixels differing) "
    "| of those at ties | eval pad split: samples / pixels | unexplained "
    "| NEAREST match (pixels differing) | at ties off the rule: stoke / torchvision "
    "| stoke off the rule elsewhere | off their float formulas: stoke / torchvision | window |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")


# --- random_affine after the train crop: pixels, boxes and masks -----------------------------

AFFINE_TOLERANCE = 1e-3  # px: the most a box coordinate may differ after a warp

# (label, the step appended to random_resized_crop + horizontal_flip)
AFFINE_CONFIGS = [
    ("random_affine -30 30 0.1 0.1 0.8 1.2 -10 10",
     ("random_affine", -30, 30, 0.1, 0.1, 0.8, 1.2, -10, 10)),
    ("random_affine_bilinear -30 30 0.1 0.1 0.8 1.2 -10 10 fill 128",
     ("random_affine_bilinear", -30, 30, 0.1, 0.1, 0.8, 1.2, -10, 10, 0, 0, 128)),
    ("random_affine -180 180 0.3 0.3 0.5 1.5 -30 30 -20 20 fill 255",
     ("random_affine", -180, 180, 0.3, 0.3, 0.5, 1.5, -30, 30, -20, 20, 255)),
    ("random_affine_bilinear -180 180 0.3 0.3 0.5 1.5 -30 30 -20 20 fill 77",
     ("random_affine_bilinear", -180, 180, 0.3, 0.3, 0.5, 1.5, -30, 30, -20, 20, 77)),
]


@dataclass
class AffineTally:
    samples: int = 0
    pixel_bytes: int = 0
    pixel_differing: int = 0
    annotated: int = 0
    boxes: int = 0
    dropped: int = 0
    max_diff: float = 0.0
    mask_samples: int = 0
    mask_pixels: int = 0
    mask_differing: int = 0
    mask_ignored: int = 0  # labels mask_ignore, where the warp uncovered the image
    mismatches: list = field(default_factory=list)


def affine_call(t, op, fill):
    """F.affine as RandomAffine calls it with a sample's recorded op ("affine" or
    "affine_bilinear", angle, tx, ty, scale, shear x, shear y, fill), `fill` given for t's type."""
    name, angle, tx, ty, scale, shear_x, shear_y, _ = op
    mode = F.InterpolationMode.BILINEAR if name == "affine_bilinear" else NEAREST
    return F.affine(t, angle=angle, translate=[tx, ty], scale=scale, shear=[shear_x, shear_y],
                    interpolation=mode, fill=fill)


def affine_loaders(data, step, size, seed, **more):
    """The base loader (random_resized_crop + horizontal_flip) and the one with `step` after it,
    one seed: the step's draws come after the base's, so the base delivers what it received."""
    base = [("random_resized_crop", size[0], size[1]), ("horizontal_flip",)]
    kw = dict(batch=8, devices="cpu:1", workers=2, size=size, seed=seed, shuffle=True,
              on_error="error", dtype="uint8", layout="nhwc", **more)
    return stoke.Loader(data, pipeline=base, **kw), stoke.Loader(data, pipeline=base + [step], **kw)


def check_affine_boxes(t, json_path, images, step, size, epochs, seed):
    """Pixels: the base's, through F.affine with the recorded numbers, against the step's, byte
    for byte. Boxes: the annotations replayed from the window (the geometry, which random_affine
    leaves out) as F.resized_crop and F.horizontal_flip, then F.affine on BoundingBoxes, clamped
    and sanitized (min_size 1), against stoke's."""
    out_h, out_w = size
    base, warped = affine_loaders(json_path, step, size, seed)
    for epoch in range(epochs):
        base.set_epoch(epoch)
        warped.set_epoch(epoch)
        for a, b in zip(base, warped):
            valid = np.from_dlpack(b.valid)
            ids = np.from_dlpack(b.sample_ids)
            src = np.from_dlpack(a.pixels[0])
            got = np.from_dlpack(b.pixels[0])
            geometry = np.from_dlpack(b.geometry).astype(np.float64)
            counts = np.from_dlpack(b.box_counts[0])
            boxes = np.from_dlpack(b.boxes[0])
            classes = np.from_dlpack(b.box_classes[0])
            if not np.array_equal(geometry, np.from_dlpack(a.geometry).astype(np.float64)):
                t.mismatches.append(f"epoch {epoch} batch {b.index}: the step moved the geometry")
            for i in np.flatnonzero(valid == 1):
                (op,) = b.applied_ops[i]
                where = f"epoch {epoch} sample {ids[i]} {op}"
                img = images[int(ids[i])]
                want = affine_call(torch.from_numpy(src[i].copy()).permute(2, 0, 1), op,
                                   [op[7]] * 3).permute(1, 2, 0).numpy()
                t.samples += 1
                t.pixel_bytes += want.size
                t.pixel_differing += int(np.count_nonzero(want != got[i]))
                window, flipped, _ = train_window(geometry[i], out_h, out_w)
                bb = tv_tensors.BoundingBoxes(torch.from_numpy(img.boxes.copy()), format="XYXY",
                                              canvas_size=(img.height, img.width))
                bb = affine_call(replay_train(bb, window, flipped, out_h, out_w), op, None)
                ref, ref_classes = sanitize(bb, torch.from_numpy(img.classes), Rules())
                n = int(counts[i])
                t.annotated += len(img.boxes)
                t.dropped += len(img.boxes) - n
                if len(ref) != n or not np.array_equal(ref_classes, classes[i, :n]):
                    t.mismatches.append(f"{where}: torchvision keeps {len(ref)} boxes, classes "
                                        f"{ref_classes.tolist()}; stoke {n}, "
                                        f"{classes[i, :n].tolist()}")
                    continue
                t.boxes += n
                if n:
                    diff = float(np.abs(ref - boxes[i, :n]).max())
                    t.max_diff = max(t.max_diff, diff)
                    if diff > AFFINE_TOLERANCE:
                        t.mismatches.append(f"{where}: a coordinate differs by {diff:.5f} px")


def check_affine_masks(t, list_path, step, size, epochs, seed, ignore=255):
    """The base's delivered mask through F.affine on a tv_tensors.Mask (fill mask_ignore; the
    image's interpolation passed and ignored, as for RandomAffine) against the step's, label
    for label."""
    base, warped = affine_loaders(list_path, step, size, seed, mask_ignore=ignore)
    for epoch in range(epochs):
        base.set_epoch(epoch)
        warped.set_epoch(epoch)
        for a, b in zip(base, warped):
            valid = np.from_dlpack(b.valid)
            src = np.from_dlpack(a.masks[0])
            got = np.from_dlpack(b.masks[0])
            for i in np.flatnonzero(valid == 1):
                (op,) = b.applied_ops[i]
                want = affine_call(tv_tensors.Mask(torch.from_numpy(src[i].copy())), op, ignore)
                want = want.as_subclass(torch.Tensor).numpy()
                t.mask_samples += 1
                t.mask_pixels += want.size
                t.mask_differing += int(np.count_nonzero(want != got[i]))
                t.mask_ignored += int(np.count_nonzero(got[i] == ignore))


AFFINE_HEADER = ("| step | size | samples | bytes differing | boxes compared (annotated, dropped) "
                 "| max abs diff (px) | mask samples | labels differing (mask_ignore) "
                 "| mismatches |\n|---|---|---|---|---|---|---|---|---|")


def check_affine(args, folder):
    """random_affine's table rows and disagreements, on the COCO set and its label maps."""
    images = read_coco(args.data)
    list_path, _ = write_real_masks(images, os.path.join(folder, "affine"))
    rows, problems = [], []
    for label, step in AFFINE_CONFIGS:
        for size in parse_sizes(args.sizes):
            t = AffineTally()
            check_affine_boxes(t, args.data, images, step, size, args.epochs, args.seed)
            check_affine_masks(t, list_path, step, size, args.epochs, args.seed)
            rows.append(f"| {label} | {size[0]}x{size[1]} | {t.samples} | {t.pixel_differing} of "
                        f"{t.pixel_bytes} | {t.boxes} ({t.annotated}, {t.dropped}) "
                        f"| {t.max_diff:.2e} | {t.mask_samples} | {t.mask_differing} of "
                        f"{t.mask_pixels} ({t.mask_ignored}) | {len(t.mismatches)} |")
            print(rows[-1], flush=True)
            problems += [f"{label} {size}: {m}" for m in t.mismatches]
            if t.pixel_differing or t.mask_differing:
                problems.append(f"{label} {size}: {t.pixel_differing} bytes and "
                                f"{t.mask_differing} labels differ from torchvision")
            if t.samples == 0 or t.boxes == 0 or t.mask_samples == 0:
                problems.append(f"{label} {size}: nothing compared")
    return rows, problems


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


def check_boxes(args, folder):
    """The box check's table rows, its disagreements and the largest coordinate difference."""
    synthetic = write_synthetic_set(folder)
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
    return rows, problems, worst


def check_masks(args, folder):
    """The mask check's table rows, its disagreements and the tallies summed over everything."""
    real_list, real = write_real_masks(read_coco(args.data), os.path.join(folder, "real"))
    synthetic = write_synthetic_masks(os.path.join(folder, "synthetic"))
    sets = [("real", "8 -> 8", real_list, real, 8, 255),
            ("synthetic", "8 -> 8", *synthetic["8-bit"], 8, 255),
            ("synthetic", "8 -> 16", *synthetic["8-bit"], 16, 255),
            ("synthetic", "16 -> 8", *synthetic["16-bit low"], 8, 255),
            ("synthetic coords", "16 -> 16", *synthetic["16-bit"], 16, 65535)]
    rows, problems, total = [], [], MaskTally()
    for name, bits, path, images, depth, ignore in sets:
        for aug in ("train", "eval"):
            for size in parse_sizes(args.mask_sizes):
                t = run_mask_config(path, images, aug, size, depth, ignore, args.epochs, args.seed)
                rows.append(mask_row(name, bits, aug, size, t))
                print(rows[-1], flush=True)
                for k in ("samples", "pixels", "padding", "ties", "ties_visible", "exact_diff",
                          "exact_diff_ties", "split_samples", "split_diff", "nearest_diff",
                          "rule_diff_ties", "tv_rule_diff_ties", "unexplained",
                          "rule_unexplained", "stoke_formula_diff", "torch_formula_diff"):
                    setattr(total, k, getattr(total, k) + getattr(t, k))
                problems += [f"{name} {bits} {aug} {size}: {m}" for m in t.mismatches]
                if aug == "train" and t.max_window_dev > WINDOW_TOLERANCE:
                    problems.append(f"{name} {bits} {aug} {size}: a window is not whole pixels "
                                    f"({t.max_window_dev:.3f})")
    return rows, problems, total


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=DEFAULT_DATA, help="a COCO instances JSON file")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--sizes", default="224,160x256", help="box check: comma-separated N or HxW")
    p.add_argument("--mask-sizes", default="224,160x256,97x203,31x45",
                   help="mask check: comma-separated N or HxW")
    p.add_argument("--checks", default="boxes,masks,ops,policies,erasing,affine",
                   help="any of boxes, masks, ops, policies, erasing, affine, timm "
                   "(comma-separated; timm needs timm and Pillow)")
    p.add_argument("--fashion", default="/usr/share/datasets/fashion-mnist",
                   help="policies check: the Fashion-MNIST IDX folder (its test split)")
    p.add_argument("--policy-epochs", type=int, default=10,
                   help="policies check: epochs of the 10,000-image split (10: 100,000 draws)")
    p.add_argument("--photos", default=DEFAULT_PHOTOS,
                   help="ops check: a folder of photographs (class folders)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--synthetic-dir", default="",
                   help="where to write the data sets (default: a temporary folder)")
    args = p.parse_args()
    checks = set(args.checks.split(","))
    known = {"boxes", "masks", "ops", "policies", "erasing", "affine", "timm"}
    if not checks or checks - known:
        sys.exit(f"--checks: any of {', '.join(sorted(known))}, not {args.checks}")
    if not os.path.exists(args.data):
        sys.exit(f"{args.data}: missing (python3 bench/make_detection_set.py --out DIR)")
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"stoke {stoke.version()}", flush=True)

    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.synthetic_dir or tmp
        if "boxes" in checks:
            rows, box_problems, worst = check_boxes(args, folder)
            print("\n" + HEADER + "\n" + "\n".join(rows))
            print(f"\nmax abs difference over everything: {worst:.2e} px (tolerance "
                  f"{TOLERANCE} px)")
            problems += box_problems
            if not box_problems:
                print("stoke and torchvision.transforms.v2 agree on every box")
        if "masks" in checks:
            print("\ntorchvision.transforms.v2 on a Mask:")
            for what, result in torchvision_mask_defaults().items():
                print(f"  {what}: {result}")
            rows, mask_problems, t = check_masks(args, os.path.join(folder, "masks"))
            print("\n" + MASK_HEADER + "\n" + "\n".join(rows))
            print(f"\nmasks: {t.samples} samples, {t.pixels} pixels compared ({t.padding} padding)"
                  f"; {t.ties} on tie rows or columns, {t.ties_visible} of them between two "
                  f"different labels")
            print(f"  NEAREST_EXACT: {t.pixels - t.exact_diff} match, {t.exact_diff} differ: "
                  f"{t.exact_diff_ties} at ties, {t.split_diff} from the centre crop's padding "
                  f"split ({t.split_samples} samples), {t.unexplained} unexplained")
            print(f"  NEAREST: {t.pixels - t.nearest_diff} match, {t.nearest_diff} differ")
            print(f"  off the rule at ties: stoke {t.rule_diff_ties}, torchvision "
                  f"{t.tv_rule_diff_ties}; stoke off the rule elsewhere: {t.rule_unexplained}")
            print(f"  off their floating-point formulas: stoke (double) {t.stoke_formula_diff}, "
                  f"torchvision (float) {t.torch_formula_diff}")
            problems += mask_problems
            if not mask_problems:
                print("stoke's masks are torchvision.transforms.v2's under NEAREST_EXACT, but "
                      "for the ties and padding splits counted above")

        if "ops" in checks:
            print("\nphotometric ops, replayed in torchvision.transforms.v2.functional on the "
                  "pixels each op received:")
            rows, op_problems = parity_ops.check_ops(args.photos, args.epochs, args.seed)
            print("\n" + parity_ops.HEADER + "\n" + "\n".join(rows))
            problems += op_problems
            if not op_problems:
                print("stoke's photometric ops are torchvision.transforms.v2's, within a level "
                      "on average for every sample")

        if "timm" in checks:
            import timm
            import PIL
            print(f"\ntimm's RandAugment and AugMix (timm {timm.__version__}, Pillow "
                  f"{PIL.__version__}), replayed in timm.data.auto_augment's op functions on the "
                  "pixels each step received:")
            rows, timm_problems = parity_ops.check_timm_ops(args.photos, args.epochs, args.seed)
            print("\n" + parity_ops.HEADER + "\n" + "\n".join(rows))
            problems += timm_problems
            if not timm_problems:
                print("stoke's timm ops are timm's on Pillow, byte for byte")
        if "affine" in checks:
            print("\nrandom_affine after random_resized_crop + horizontal_flip, replayed in "
                  "torchvision.transforms.v2.functional (pixels, BoundingBoxes, Mask):")
            rows, affine_problems = check_affine(args, folder)
            print("\n" + AFFINE_HEADER + "\n" + "\n".join(rows))
            problems += affine_problems
            if not affine_problems:
                print("stoke's random_affine is torchvision's on every byte, box and label")

        if "policies" in checks:
            print("\nthe policies' draws against torchvision's own classes (two-sample "
                  "chi-square over what each applies):")
            rows, policy_problems = parity_ops.check_policy_distributions(args.fashion,
                                                                          args.policy_epochs)
            print("\n" + parity_ops.POLICY_HEADER + "\n" + "\n".join(rows))
            problems += policy_problems

        if "erasing" in checks:
            print("\nrandom_erasing against F.erase on the same normalized image, and its "
                  "rectangles against RandomErasing's draws (two-sample chi-square over size and "
                  "place):")
            rows, dist_rows, erasing_problems = parity_ops.check_erasing(
                args.photos, args.fashion, args.epochs, args.policy_epochs, args.seed)
            print("\n" + parity_ops.ERASING_HEADER + "\n" + "\n".join(rows))
            print("\n" + parity_ops.ERASING_DIST_HEADER + "\n" + "\n".join(dist_rows))
            problems += erasing_problems

    for line in problems[:50]:
        print("DISAGREES:", line)
    if problems:
        sys.exit(f"{len(problems)} disagreement(s)")


if __name__ == "__main__":
    main()
