"""Writes tests/data/random_affine_golden.bin: what torchvision.transforms.v2 returns for
RandomAffine's warps, for random_affine_test.cpp to check stoke against without torch:

  - images through F.affine with interpolation=BILINEAR (stoke's affine_bilinear) and NEAREST,
    with the parameters v2.RandomAffine's own make_params draws, and with parameters that put
    grid points on pixel centres, halves and edges;
  - bounding boxes (tv_tensors.BoundingBoxes, XYXY) through F.affine, torchvision's float32
    result (the box around the moved corners, clamped to the canvas);
  - label maps (tv_tensors.Mask, uint8 and uint16) through RandomAffine's transform with a
    separate mask fill, which F.affine always samples by nearest neighbour.

The bilinear arithmetic is a float32 chain in which one rounding changes a byte only now and
then, so alongside torch the script runs a numpy model of the arithmetic that geometric_ops.cpp
follows and of the alternatives it rejects; it adds cases (from a fixed search) until every
alternative misses some byte, and stops unless the model gives torch's bytes on every case.
It prints how many bytes each alternative misses.

Run with the parity environment (torch 2.15, torchvision 0.29.2):
    /work/parity-venv/bin/python tests/loader/make_random_affine_golden.py [OUT]

The committed file was made on an AVX-512 machine (torch.backends.cpu.get_cpu_capability());
the script refuses another unless --any-cpu.

File layout, all integers little-endian:
    "STRA" u32 version=1
    u32 image_count, then per image: u32 height, u32 width, u32 channels, the pixels (rows of
        interleaved uint8, no padding)
    u32 pixel_case_count, then per case: u32 image, i32 op (ImageOp: 13 affine, 20
        affine_bilinear), 7 x f32 args, u32 label length, the label (ASCII), and torch's output
        in the layout of its image
    u32 mask_count, then per mask: u32 height, u32 width, u32 bytes per label (1 or 2), the
        labels (rows, little-endian)
    u32 mask_case_count, then per case: u32 mask, 7 x f32 args (args[6]: the image's fill),
        u32 mask fill, u32 label length, the label, and torch's output labels
    u32 box_case_count, then per case: u32 canvas width, u32 canvas height, 7 x f32 args,
        u32 box count n, n x 4 f32 boxes in (x1, y1, x2, y2), n x 4 f32 torch's boxes, u32 label
        length, the label
"""

import struct
import sys

import numpy as np
import torch
import torchvision
import torchvision.transforms.v2.functional as F
from torchvision import tv_tensors
from torchvision.transforms import v2
from torchvision.transforms.v2.functional._geometry import _get_inverse_affine_matrix

import golden_writer

AFFINE, AFFINE_BILINEAR = 13, 20  # ImageOp's numbers (stoke/pipeline.hpp)
NEAREST, BILINEAR = F.InterpolationMode.NEAREST, F.InterpolationMode.BILINEAR


def f32(v):
    return float(np.float32(v))


def to_chw(img):
    return torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1)))


def to_hwc(t):
    return np.ascontiguousarray(t.numpy().transpose(1, 2, 0))


def torch_affine(img, op, args):
    return to_hwc(F.affine(to_chw(img), angle=args[0], translate=[args[1], args[2]],
                           scale=args[3], shear=[args[4], args[5]],
                           interpolation=BILINEAR if op == AFFINE_BILINEAR else NEAREST,
                           fill=args[6]))


# The model of the bilinear warp: torchvision's matrix (Python double), then float32 rounded
# where the variant says. Fused multiply-adds are computed in long double, which holds a uint8 or
# float32 product and its sum with a float32 exactly wherever the sum's float32 rounding depends
# on it, then rounded once to float32.

LD = np.longdouble


def r32(x):
    return np.asarray(x, np.float64).astype(np.float32)


def fma32(a, b, c):
    return (np.asarray(a).astype(LD) * np.asarray(b).astype(LD) + np.asarray(c).astype(LD)) \
        .astype(np.float32)


def grid(m, h, w):
    """_affine_grid's x and y before unnormalisation (the nearest golden's proven order)."""
    t = r32(m).astype(np.float64)
    a = r32(r32(t[:3]) / np.float32(0.5 * w)).astype(np.float64)
    b = r32(r32(t[3:]) / np.float32(0.5 * h)).astype(np.float64)
    xb, yb = np.meshgrid(np.arange(w) - (w - 1) / 2.0, np.arange(h) - (h - 1) / 2.0)

    def combine(c):
        return r32(r32(r32(xb * c[0]) + r32(yb * c[1])) + c[2])
    return combine(a), combine(b)


def unnormalize(g, size, variant):
    p = (g + np.float32(1)).astype(np.float32)
    half = np.float32(size / 2)
    if variant == "unnormalisation unfused":
        return r32(r32(p * half) - np.float32(0.5))
    return fma32(p, half, np.float32(-0.5))


def blend(vals, variant):
    """The four corners' (value, weight) pairs summed as torch's kernel does, or the variant."""
    (a, wa), (b, wb), (c, wc), (d, wd) = vals
    if variant == "sum unfused":
        return r32(r32(r32(r32(a * wa) + r32(b * wb)) + r32(c * wc)) + r32(d * wd))
    if variant == "first product fused":
        return fma32(d, wd, fma32(c, wc, fma32(a, wa, r32(b * wb))))
    if variant == "sum in double":
        return r32(a.astype(np.float64) * wa + b.astype(np.float64) * wb +
                   c.astype(np.float64) * wc + d.astype(np.float64) * wd)
    return fma32(d, wd, fma32(c, wc, fma32(b, wb, r32(a * wa))))


def finish(v, mask, fill, variant):
    f = np.float32(fill)
    if variant == "fill as a blend":
        out = r32(r32(v * mask) + r32(r32(np.float32(1) - mask) * f))
    elif variant == "fill fused":
        out = fma32(r32(v - f), mask, f)
    elif variant == "fill ignored":
        out = v
    else:
        out = r32(r32(r32(v - f) * mask) + f)
    if variant == "truncated":
        return np.floor(out)
    if variant == "ties away from zero":
        return np.floor(out + np.float32(0.5))
    return np.rint(out)


def model_bilinear(img, args, variant=None):
    h, w, c = img.shape
    m = _get_inverse_affine_matrix([0.0, 0.0], args[0], [args[1], args[2]], args[3],
                                   [args[4], args[5]])
    gx, gy = grid(m, h, w)
    x, y = unnormalize(gx, w, variant), unnormalize(gy, h, variant)
    xw, yn = np.floor(x), np.floor(y)
    we = r32(x - xw)
    e = r32(np.float32(1) - we)
    n = r32(y - yn)
    s = r32(np.float32(1) - n)
    weights = [r32(s * e), r32(s * we), r32(n * e), r32(n * we)]  # nw, ne, sw, se
    ix = np.clip(np.nan_to_num(xw), -4, w + 4).astype(np.int64)
    iy = np.clip(np.nan_to_num(yn), -4, h + 4).astype(np.int64)
    corners = [(ix, iy), (ix + 1, iy), (ix, iy + 1), (ix + 1, iy + 1)]
    inside = [(cx > -1) & (cx < w) & (cy > -1) & (cy < h) for cx, cy in corners]
    ones = np.ones((h, w), np.float32)
    planes = [img[..., k].astype(np.float32) for k in range(c)]

    def sample(plane):
        vals = []
        for (cx, cy), ok, wt in zip(corners, inside, weights):
            v = plane[np.clip(cy, 0, h - 1), np.clip(cx, 0, w - 1)]
            vals.append((np.where(ok, v, np.float32(0)).astype(np.float32), wt))
        return blend(vals, variant)
    mask = sample(ones)
    out = [finish(sample(p), mask, args[6], variant) for p in planes]
    return np.clip(np.stack(out, -1), 0, 255).astype(np.uint8)


VARIANTS = ["sum unfused", "first product fused", "sum in double", "unnormalisation unfused",
            "fill as a blend", "fill fused", "fill ignored", "truncated", "ties away from zero"]


# The cases.

def random_affine_draws(rng, h, w, n, interpolation):
    """n parameter sets from torchvision's own RandomAffine.make_params (torch's generator,
    seeded from rng), over ranges like the recipes' and wider."""
    out = []
    configs = [dict(degrees=30, translate=(0.2, 0.2), scale=(0.75, 1.25), shear=(-15, 15)),
               dict(degrees=(-180, 180), translate=(0.45, 0.1), scale=(0.5, 1.5),
                    shear=(-30, 30, -20, 20)),
               dict(degrees=10), dict(degrees=(5, 25), scale=(0.9, 1.1))]
    for i in range(n):
        cfg = configs[i % len(configs)]
        fill = float(rng.choice([0.0, 128.0, 255.0]))
        t = v2.RandomAffine(**cfg, interpolation=interpolation, fill=fill)
        torch.manual_seed(int(rng.integers(1 << 31)))
        p = t.make_params([torch.zeros(1, h, w, dtype=torch.uint8)])
        args = [p["angle"], p["translate"][0], p["translate"][1], p["scale"], p["shear"][0],
                p["shear"][1], fill]
        out.append((args, f"RandomAffine({cfg}) draw, fill {fill:g}"))
    return out


def ties():
    """Grid points on pixel centres, halves and the edge: whole turns and quarter turns,
    integer and half-pixel translations, scales of 0.5 and 2, shear 45, a fill of 127.5."""
    return [([0, 0, 0, 1, 0, 0, 0], "identity"),
            ([90, 0, 0, 1, 0, 0, 128], "quarter turn"),
            ([180, 0, 0, 1, 0, 0, 255], "half turn"),
            ([0, 3, -2, 1, 0, 0, 128], "translate 3, -2"),
            ([0, 0.5, 0.5, 1, 0, 0, 0], "translate 0.5, 0.5"),
            ([0, -1.5, 2.5, 1, 0, 0, 200], "translate -1.5, 2.5"),
            ([0, 0, 0, 0.5, 0, 0, 128], "scale 0.5"),
            ([0, 0, 0, 2, 0, 0, 128], "scale 2"),
            ([0, 0, 0, 1, 45, 0, 128], "shear 45"),
            ([30, 0, 0, 1, 0, 0, 127.5], "rotate 30 fill 127.5"),
            ([0, 0, 0, 1.0001, 0, 0, 255], "scale 1.0001 (weights near 0 and 1)")]


def noise(rng, h, w, c):
    return rng.integers(0, 256, (h, w, c), dtype=np.uint8)


def smooth(rng, h, w, c):
    """A smooth ramp with a little noise: neighbouring levels close, as in photographs."""
    yy, xx = np.mgrid[0:h, 0:w]
    base = (xx * 255.0 / max(w - 1, 1) + yy * 97.0 / max(h - 1, 1)) % 256
    img = np.stack([(base + 40 * k) % 256 for k in range(c)], -1)
    return np.clip(img + rng.normal(0, 2, img.shape), 0, 255).astype(np.uint8)


def image_cases(rng):
    """(image, [(op, args, label)]) pairs, then the search for cases that tell the variants apart."""
    out = []
    for h, w, c, draws in [(1, 1, 3, 4), (2, 3, 1, 6), (5, 4, 3, 6), (31, 17, 3, 6),
                           (17, 31, 1, 6), (24, 24, 3, 4)]:
        img = noise(rng, h, w, c)
        cases = [(AFFINE_BILINEAR, a, "bilinear " + lab) for a, lab in ties()]
        cases += [(AFFINE_BILINEAR, a, "bilinear " + lab)
                  for a, lab in random_affine_draws(rng, h, w, draws, BILINEAR)]
        cases += [(AFFINE, a, "nearest " + lab)
                  for a, lab in random_affine_draws(rng, h, w, draws // 2, NEAREST)]
        out.append((img, cases))
    big = smooth(rng, 64, 64, 3)
    out.append((big, [(AFFINE_BILINEAR, a, "bilinear " + lab)
                      for a, lab in random_affine_draws(rng, 64, 64, 3, BILINEAR)]
                + [(AFFINE, a, "nearest " + lab)
                   for a, lab in random_affine_draws(rng, 64, 64, 2, NEAREST)]))
    return out


def search_cases(rng, missed):
    """Cases from a fixed random search on 48x48 images that some variant gets wrong, until every
    variant misses at least two bytes (at most 40 images). Returns (image, cases) pairs."""
    out = []
    for attempt in range(4000):
        if all(missed[v] >= 2 for v in VARIANTS) or len(out) >= 40:
            break
        c = 3 if attempt % 2 == 0 else 1
        img = smooth(rng, 48, 48, c) if attempt % 3 else noise(rng, 48, 48, c)
        (args, label), = random_affine_draws(rng, 48, 48, 1, BILINEAR)
        if attempt % 4 == 1:
            args[6] = f32(rng.uniform(0, 255))  # a fractional fill
        args = [f32(a) for a in args]
        want = torch_affine(img, AFFINE_BILINEAR, args)
        gains = {v: int((model_bilinear(img, args, v) != want).sum()) for v in VARIANTS}
        if any(gains[v] > 0 and missed[v] < 2 for v in VARIANTS):
            for v in VARIANTS:
                missed[v] += gains[v]
            out.append((img, [(AFFINE_BILINEAR, args, f"bilinear search {attempt}: " + label)]))
    return out


def mask_cases(rng):
    """(labels, [(args, mask fill, label)]) pairs: uint8 and uint16 label maps through
    RandomAffine(interpolation=BILINEAR, fill={Image: f, Mask: ignore}).transform."""
    out = []
    for h, w, bits in [(23, 37, 8), (40, 40, 8), (29, 19, 16), (1, 1, 8)]:
        if bits == 8:
            labels = rng.integers(0, 21, (h, w)).astype(np.uint8)
        else:
            labels = (rng.integers(0, 4000, (h, w))).astype(np.uint16)
        ignore = 255 if bits == 8 else 65535
        cases = []
        for args, lab in random_affine_draws(rng, h, w, 5, BILINEAR):
            cases.append((args, ignore, "mask " + lab))
        cases.append(([0, 0.5, 0.5, 1, 0, 0, 0], ignore, "mask translate 0.5, 0.5"))
        cases.append(([90, 0, 0, 1, 0, 0, 0], 7, "mask quarter turn, fill 7"))
        out.append((labels, cases))
    return out


def torch_mask(labels, args, ignore):
    t = v2.RandomAffine(degrees=0, interpolation=BILINEAR,
                        fill={tv_tensors.Image: args[6], tv_tensors.Mask: ignore})
    params = dict(angle=args[0], translate=(args[1], args[2]), scale=args[3],
                  shear=(args[4], args[5]))
    mask = tv_tensors.Mask(torch.from_numpy(labels.astype(np.int64)).to(
        torch.uint16 if labels.dtype == np.uint16 else torch.uint8))
    out = t.transform(mask, params)
    assert isinstance(out, tv_tensors.Mask)
    return out.numpy().astype(labels.dtype)


def box_cases(rng):
    """(width, height, args, boxes, label): boxes inside the canvas, on its edges, lines on an
    edge (what a crop leaves of a box it cut away) and whole-canvas boxes."""
    out = []
    for w, h in [(64, 48), (224, 224), (7, 5), (300, 97)]:
        boxes = []
        for _ in range(12):
            x1, x2 = sorted(rng.uniform(0, w, 2))
            y1, y2 = sorted(rng.uniform(0, h, 2))
            boxes.append([x1, y1, x2, y2])
        boxes += [[0, 0, w, h], [0, 0, w / 3, h / 4], [w / 2, h / 2, w, h], [0, h / 3, 0, h / 2],
                  [w, 0, w, h], [w / 4, h, w / 2, h]]
        boxes = [[f32(v) for v in b] for b in boxes]
        for args, lab in random_affine_draws(rng, h, w, 6, NEAREST):
            out.append((w, h, args, boxes, "boxes " + lab))
        out.append((w, h, [90, 0, 0, 1, 0, 0, 0], boxes, "boxes quarter turn"))
        out.append((w, h, [0, 5, -3, 1, 0, 0, 0], boxes, "boxes translate 5, -3"))
    return out


def torch_boxes(w, h, args, boxes):
    t = v2.RandomAffine(degrees=0)
    params = dict(angle=args[0], translate=(args[1], args[2]), scale=args[3],
                  shear=(args[4], args[5]))
    bb = tv_tensors.BoundingBoxes(torch.tensor(boxes, dtype=torch.float32), format="XYXY",
                                  canvas_size=(h, w))
    out = t.transform(bb, params)
    return out.numpy().astype(np.float32)


def model_boxes(w, h, args, boxes):
    """The forward matrix in double and each box's moved corners, clamped: stoke's arithmetic."""
    m = _get_inverse_affine_matrix([w * 0.5, h * 0.5], args[0], [args[1], args[2]], args[3],
                                   [args[4], args[5]], inverted=False)
    b = np.asarray(boxes, np.float64)
    xs = b[:, [0, 2, 2, 0]]
    ys = b[:, [1, 1, 3, 3]]
    px = m[0] * xs + m[1] * ys + m[2]
    py = m[3] * xs + m[4] * ys + m[5]
    out = np.stack([px.min(1), py.min(1), px.max(1), py.max(1)], 1)
    out[:, 0::2] = out[:, 0::2].clip(0, w)
    out[:, 1::2] = out[:, 1::2].clip(0, h)
    return out


def main():
    args, capability = golden_writer.parse_args(__doc__, "random_affine_golden.bin")
    rng = np.random.default_rng(20251203)

    imgs = image_cases(rng)
    missed = dict.fromkeys(VARIANTS, 0)
    pixel_cases, outputs = [], []
    for i, (img, chosen) in enumerate(imgs):
        for op, a, label in chosen:
            a = [f32(v) for v in a]
            out = torch_affine(img, op, a)
            assert out.shape == img.shape and out.dtype == np.uint8, label
            if op == AFFINE_BILINEAR:
                if not np.array_equal(model_bilinear(img, a, None), out):
                    sys.exit(f"the model is not torch on {label} ({img.shape}): "
                             "geometric_ops.cpp's bilinear arithmetic no longer describes it")
                for v in VARIANTS:
                    missed[v] += int((model_bilinear(img, a, v) != out).sum())
            pixel_cases.append((i, op, a, label))
            outputs.append(out)
    found = search_cases(rng, missed)
    for img, chosen in found:
        imgs.append((img, chosen))
        for op, a, label in chosen:
            out = torch_affine(img, op, a)
            if not np.array_equal(model_bilinear(img, a, None), out):
                sys.exit(f"the model is not torch on {label}")
            pixel_cases.append((len(imgs) - 1, op, a, label))
            outputs.append(out)
    caught_none = [v for v, n in missed.items() if n == 0]
    if caught_none:
        sys.exit(f"no case tells these alternatives from torch: {caught_none}")

    masks = mask_cases(rng)
    mask_outputs = []
    for labels, cases in masks:
        for a, ignore, label in cases:
            a = [f32(v) for v in a]
            out = torch_mask(labels, a, ignore)
            # F.affine on a Mask is the image kernel's nearest warp whatever the interpolation.
            img = labels.astype(np.int64)[..., None]
            near = to_hwc(F.affine(torch.from_numpy(img.transpose(2, 0, 1).copy()).float(),
                                   angle=a[0], translate=[a[1], a[2]], scale=a[3],
                                   shear=[a[4], a[5]], interpolation=NEAREST, fill=float(ignore)))
            assert np.array_equal(near[..., 0].astype(np.int64), out.astype(np.int64)), label
            mask_outputs.append(out)

    boxes = box_cases(rng)
    box_outputs, worst = [], 0.0
    for w, h, a, bs, label in boxes:
        a = [f32(v) for v in a]
        out = torch_boxes(w, h, a, bs)
        worst = max(worst, float(np.abs(model_boxes(w, h, a, bs) - out).max()))
        box_outputs.append(out)
    if worst > 1e-3:
        sys.exit(f"the box model is {worst} px from torch")

    blob = golden_writer.images_blob(b"STRA", [img for img, _ in imgs])
    blob += struct.pack("<I", len(pixel_cases))
    for (i, op, a, label), out in zip(pixel_cases, outputs):
        name = label.encode("ascii")
        blob += struct.pack("<Ii7fI", i, op, *a, len(name)) + name + out.tobytes()
    blob += struct.pack("<I", len(masks))
    for labels, _ in masks:
        blob += struct.pack("<III", *labels.shape, labels.dtype.itemsize)
        blob += labels.astype(labels.dtype.newbyteorder("<")).tobytes()
    blob += struct.pack("<I", sum(len(c) for _, c in masks))
    k = 0
    for m, (labels, cases) in enumerate(masks):
        for a, ignore, label in cases:
            name = label.encode("ascii")
            blob += struct.pack("<I7fII", m, *[f32(v) for v in a], ignore, len(name)) + name
            blob += mask_outputs[k].astype(labels.dtype.newbyteorder("<")).tobytes()
            k += 1
    blob += struct.pack("<I", len(boxes))
    for (w, h, a, bs, label), out in zip(boxes, box_outputs):
        name = label.encode("ascii")
        blob += struct.pack("<II7fI", w, h, *[f32(v) for v in a], len(bs))
        blob += np.asarray(bs, "<f4").tobytes() + np.asarray(out, "<f4").tobytes()
        blob += struct.pack("<I", len(name)) + name
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(bytes(blob))
    total = sum(o.size for o in outputs)
    print(f"{args.out}: {len(imgs)} images, {len(pixel_cases)} pixel cases ({total} bytes, "
          f"{len(found)} from the search), {k} mask cases, {len(boxes)} box cases "
          f"({sum(len(b[3]) for b in boxes)} boxes, the double model within {worst:.2e} px of "
          f"torch), {len(blob)} bytes (torch {torch.__version__}, torchvision "
          f"{torchvision.__version__}, {capability})")
    for v, n in missed.items():
        print(f"  {v}: {n} bytes differ from torch")


if __name__ == "__main__":
    main()
