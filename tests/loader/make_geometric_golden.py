"""Writes tests/data/geometric_golden.bin: small uint8 images, the geometric ops of
loader/src/augment/geometric_ops.hpp with the parameters the augmentation policies and
RandomAffine draw, and what torchvision's transforms.v2.functional returns for each.
geometric_ops_test.cpp checks stoke against it byte for byte without needing torch.

Nearest sampling hides most of the arithmetic: a grid point a little off is still nearest to the
same pixel. The cases that tell one formula from another put grid points on a half, where one
rounding decides the pixel: quarter turns, whole and half-pixel translations, shears of 45
degrees and of atan(0.5) at the origin, scales of 0.5 and 2, and on images 97 pixels wide or
tall, half-pixel translations whose left or top edge needs grid_sample's fused multiply-add.
Alongside torch, the script runs a numpy model of the arithmetic geometric_ops.cpp follows and of
the alternatives it rejects; it stops unless the model gives torch's bytes on every case and
every alternative misses some, and prints how many each misses.

Run with the parity environment (torch 2.15, torchvision 0.29.2):
    /work/parity-venv/bin/python tests/loader/make_geometric_golden.py [OUT]

The committed file was made on an AVX-512 machine (torch.backends.cpu.get_cpu_capability()),
whose grid sampler fuses its unnormalisation; the script refuses another unless --any-cpu.

File layout, all integers little-endian:
    "STGG" u32 version=1
    u32 image_count, then per image: u32 height, u32 width, u32 channels, height*width*channels
        bytes (rows of interleaved pixels, no padding)
    u32 case_count, then per case: u32 image, i32 op, 7 x f32 args, u32 label length, the label
        (ASCII: where the parameters come from), and torch's output in the layout of its image
"""

import math
import struct
import sys

import numpy as np
import torch
import torchvision
import torchvision.transforms.v2.functional as F
from torchvision.transforms.v2.functional._geometry import _get_inverse_affine_matrix

import golden_writer

# ImageOp's numbers (stoke/pipeline.hpp).
AFFINE, AFFINE_AT_ORIGIN, ROTATE = 13, 14, 15
NEAREST = F.InterpolationMode.NEAREST


def f32(v):
    """A number as stoke holds it (a float), handed to torch as that exact value."""
    return float(np.float32(v))


def to_chw(img):
    return torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1)))


def to_hwc(t):
    return np.ascontiguousarray(t.numpy().transpose(1, 2, 0))


def run(op, img, args):
    t = to_chw(img)
    if op == ROTATE:
        return F.rotate(t, angle=args[0], interpolation=NEAREST, expand=False, fill=args[1])
    return F.affine(t, angle=args[0], translate=[args[1], args[2]], scale=args[3],
                    shear=[args[4], args[5]], interpolation=NEAREST, fill=args[6],
                    center=[0, 0] if op == AFFINE_AT_ORIGIN else None)


# The model. The matrix is torchvision's own (Python double, as stoke mirrors it); everything
# after it is float32, rounded where the named variant says.

def r32(x):
    return np.asarray(x, np.float64).astype(np.float32).astype(np.float64)


def affine_parameters(op, h, w, args):
    """What affine_image hands _get_inverse_affine_matrix (rotate_image's negated angle for
    rotate), and the fill."""
    if op == ROTATE:
        return [0.0, 0.0], -(args[0] % 360), [0.0, 0.0], 1.0, [0.0, 0.0], args[1]
    centre = [0.0 - w * 0.5, 0.0 - h * 0.5] if op == AFFINE_AT_ORIGIN else [0.0, 0.0]
    return centre, args[0], [args[1], args[2]], args[3], [args[4], args[5]], args[6]


def grid(m, h, w, variant):
    """_affine_grid's x and y, before unnormalisation (float64 arrays of float32 values)."""
    t = r32(m)
    a = r32(r32(t[:3]) / np.float32(0.5 * w))
    b = r32(r32(t[3:]) / np.float32(0.5 * h))
    xb, yb = np.meshgrid(np.arange(w) - (w - 1) / 2.0, np.arange(h) - (h - 1) / 2.0)

    def combine(c):
        if variant == "grid fused":  # x * c0, then y * c1 fused into the sum
            return r32(r32(r32(xb * c[0]) + yb * c[1]) + c[2])
        if variant == "grid constant first":
            return r32(r32(r32(xb * c[0]) + c[2]) + r32(yb * c[1]))
        if variant == "grid in double":
            return xb * c[0] + yb * c[1] + c[2]
        return r32(r32(r32(xb * c[0]) + r32(yb * c[1])) + c[2])
    return combine(a), combine(b)


def unnormalize(g, size, variant):
    p = r32(g + 1)
    half = np.float64(np.float32(size / 2))
    x = r32(r32(p * half) - 0.5) if variant == "unnormalisation unfused" else r32(p * half - 0.5)
    if variant == "ties away from zero":
        return np.sign(x) * np.floor(np.abs(x) + 0.5)
    return np.rint(x)


def fill_level(fill, variant):
    return 0 if variant == "fill ignored" else int(np.rint(np.float32(fill)))


def model(img, op, args, variant=None):
    h, w, c = img.shape
    if op == ROTATE:
        angle = args[0] % 360
        if angle == 0:
            return img.copy()
        if angle == 180:
            return img[::-1, ::-1].copy()
        if h == w and angle in (90, 270):
            return np.ascontiguousarray(np.rot90(img, 1 if angle == 90 else 3, (0, 1)))
    *parameters, fill = affine_parameters(op, h, w, args)
    m = _get_inverse_affine_matrix(*parameters)
    gx, gy = grid(m, h, w, variant)
    ix, iy = unnormalize(gx, w, variant), unnormalize(gy, h, variant)
    inside = (ix >= 0) & (ix <= w - 1) & (iy >= 0) & (iy <= h - 1)
    out = img[np.where(inside, iy, 0).astype(np.int64), np.where(inside, ix, 0).astype(np.int64)]
    out[~inside] = fill_level(fill, variant)
    return out


VARIANTS = ["grid fused", "grid constant first", "grid in double", "unnormalisation unfused",
            "ties away from zero", "fill ignored"]


# The cases.

def policy_bins(top, bins):
    """torch.linspace(0, top, bins) as the policies index it: each bin's float32 value."""
    return [float(v) for v in torch.linspace(0.0, top, bins)]


def shear_deg(m):
    return math.degrees(math.atan(m))


def policy_cases(h, w, rng, bins, shear_top, translate_top, rotate_top, name, picks):
    """`picks` draws per op of a policy's magnitude space (num_magnitude_bins = bins), signed,
    with fill 0 or 128, as _apply_image_or_video_transform calls F.affine and F.rotate."""
    out = []
    space = {"ShearX": policy_bins(shear_top, bins), "ShearY": policy_bins(shear_top, bins),
             "TranslateX": policy_bins(translate_top(w), bins),
             "TranslateY": policy_bins(translate_top(h), bins),
             "Rotate": policy_bins(rotate_top, bins)}
    for transform, values in space.items():
        for _ in range(picks):
            v = values[int(rng.integers(1, bins))] * (-1 if rng.random() < 0.5 else 1)
            fill = float(rng.choice([0.0, 128.0]))
            label = f"{name} {transform} {v:.6g} fill {fill:g}"
            if transform == "ShearX":
                out.append((AFFINE_AT_ORIGIN, [0, 0, 0, 1, shear_deg(v), 0, fill], label))
            elif transform == "ShearY":
                out.append((AFFINE_AT_ORIGIN, [0, 0, 0, 1, 0, shear_deg(v), fill], label))
            elif transform == "TranslateX":
                out.append((AFFINE, [0, int(v), 0, 1, 0, 0, fill], label))
            elif transform == "TranslateY":
                out.append((AFFINE, [0, 0, int(v), 1, 0, 0, fill], label))
            else:
                out.append((ROTATE, [v, fill, 0, 0, 0, 0, 0], label))
    return out


def trivial_augment(h, w, rng, picks):
    return policy_cases(h, w, rng, 31, 0.99, lambda s: 32.0, 135.0, "TrivialAugmentWide", picks)


def rand_augment(h, w, rng, picks):
    return policy_cases(h, w, rng, 31, 0.3, lambda s: 150.0 / 331.0 * s, 30.0, "RandAugment",
                        picks)


def random_affine(h, w, rng, n):
    """RandomAffine-style draws: any angle, fractional translations, scale 0.5 to 1.5, both
    shears, about the centre or the origin."""
    out = []
    for i in range(n):
        args = [rng.uniform(-180, 180), rng.uniform(-0.3, 0.3) * w, rng.uniform(-0.3, 0.3) * h,
                rng.uniform(0.5, 1.5), rng.uniform(-30, 30), rng.uniform(-30, 30),
                float(rng.choice([0.0, 128.0]))]
        out.append((AFFINE_AT_ORIGIN if i % 4 == 3 else AFFINE, args, "random affine"))
    return out


def ties(h, w):
    """Parameters that put grid points on a half."""
    t45, t_half = 45.0, shear_deg(0.5)
    out = [(AFFINE, [a, 0, 0, 1, 0, 0, 128], f"affine quarter turn {a}") for a in (90, 180, -90)]
    out += [(ROTATE, [a, 128, 0, 0, 0, 0, 0], f"rotate {a}") for a in (90, 180, 270, -90, 450)]
    out += [(AFFINE, [0, tx, ty, 1, 0, 0, 128], f"translate {tx}, {ty}")
            for tx, ty in ((1, -3), (0.5, 0.5), (-1.5, 2.5), (32, -32))]
    out += [(AFFINE_AT_ORIGIN, [0, 0, 0, 1, sx, sy, 0], f"shear {sx:.6g}, {sy:.6g} at origin")
            for sx, sy in ((t45, 0), (0, -t45), (t_half, 0), (0, t_half))]
    out += [(AFFINE, [0, 0, 0, 1, t45, 0, 128], "shear 45 about the centre"),
            (AFFINE, [0, 0, 0, 0.5, 0, 0, 128], "scale 0.5"),
            (AFFINE, [0, 0, 0, 2, 0, 0, 128], "scale 2"),
            (AFFINE_AT_ORIGIN, [0, 0.5, 0.5, 2, 0, 0, 128], "scale 2 at origin, translate 0.5")]
    return out


def fused_edge(h, w):
    """Half-pixel translations whose first column (width 97) or row (height 97) lands where
    only a fused multiply-add in grid_sample's unnormalisation gives torch's pixel."""
    return [(AFFINE, [0, 0.5, 0.5, 1, 0, 0, 128], "translate 0.5, 0.5 (fused edge)"),
            (AFFINE_AT_ORIGIN, [0, 0.5, 0.5, 2, 0, 0, 0], "scale 2 at origin (fused edge)"),
            (AFFINE_AT_ORIGIN, [0, 0, 0, 1.5, 0, 0, 128], "scale 1.5 at origin (fused edge)"),
            (AFFINE, [0, 1.5, 1.5, 1, 0, 0, 0], "translate 1.5, 1.5 (fused edge)")]


def fill_rounding():
    return [(ROTATE, [30, fill, 0, 0, 0, 0, 0], f"rotate 30 fill {fill}")
            for fill in (127.5, 128.5, 0.4)]


def images():
    """(image, cases) pairs; an image is noise, so a pixel taken from the wrong place shows."""
    rng = np.random.default_rng(20240917)

    def noise(h, w, c):
        return rng.integers(0, 256, (h, w, c), dtype=np.uint8)
    out = []
    for h, w, c, picks, draws in [(1, 1, 3, 1, 4), (2, 3, 3, 2, 8), (3, 2, 1, 2, 8),
                                  (31, 17, 3, 1, 6), (17, 31, 1, 2, 6), (24, 24, 1, 1, 4)]:
        cases = (ties(h, w) + trivial_augment(h, w, rng, picks) + rand_augment(h, w, rng, picks)
                 + random_affine(h, w, rng, draws))
        if (h, w) == (2, 3):
            cases += fill_rounding()
        out.append((noise(h, w, c), cases))
    # Larger images take fewer cases (the file stays under 300 KB): the ties that move the most
    # pixels, a TrivialAugmentWide draw of each op, RandomAffine draws.
    big_ties = [(AFFINE_AT_ORIGIN, [0, 0, 0, 1, 45.0, 0, 128], "shear 45 at origin"),
                (AFFINE, [0, 0.5, 0.5, 1, 0, 0, 0], "translate 0.5, 0.5")]
    out.append((noise(64, 64, 1), big_ties + [(ROTATE, [90, 128, 0, 0, 0, 0, 0], "rotate 90")]
                + trivial_augment(64, 64, rng, 1) + random_affine(64, 64, rng, 2)))
    out.append((noise(64, 64, 3), big_ties[:1]))
    out.append((noise(5, 97, 1), fused_edge(5, 97)))
    out.append((noise(97, 5, 3), fused_edge(97, 5)))
    out.append((noise(176, 176, 1), big_ties))
    return out


def cases(imgs):
    for i, (_, chosen) in enumerate(imgs):
        for op, args, label in chosen:
            yield i, op, [f32(a) for a in (list(args) + [0.0] * 7)[:7]], label


def check_model(imgs, all_cases, outputs):
    """Stops unless the model is torch on every case and each alternative misses somewhere;
    returns the bytes each alternative misses."""
    missed = dict.fromkeys(VARIANTS, 0)
    for (i, op, args, label), out in zip(all_cases, outputs):
        img = imgs[i][0]
        if not np.array_equal(model(img, op, args), out):
            sys.exit(f"the model is not torch on {label} ({img.shape}): geometric_ops.cpp's "
                     f"arithmetic no longer describes this torch")
        for v in VARIANTS:
            missed[v] += int((model(img, op, args, v) != out).sum())
    caught_none = [v for v, n in missed.items() if n == 0]
    if caught_none:
        sys.exit(f"no case tells these alternatives from torch: {caught_none}")
    return missed


def main():
    args, capability = golden_writer.parse_args(__doc__, "geometric_golden.bin")

    imgs = images()
    all_cases = list(cases(imgs))
    outputs = []
    for i, op, a, label in all_cases:
        out = to_hwc(run(op, imgs[i][0], a))
        assert out.shape == imgs[i][0].shape and out.dtype == np.uint8, label
        outputs.append(out)
    missed = check_model(imgs, all_cases, outputs)

    blob = golden_writer.images_blob(b"STGG", [img for img, _ in imgs])
    blob += struct.pack("<I", len(all_cases))
    for (i, op, a, label), out in zip(all_cases, outputs):
        name = label.encode("ascii")
        blob += struct.pack("<Ii7fI", i, op, *a, len(name)) + name + out.tobytes()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(bytes(blob))
    total = sum(o.size for o in outputs)
    print(f"{args.out}: {len(imgs)} images, {len(all_cases)} cases, {total} output bytes, "
          f"{len(blob)} bytes (torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"{capability})")
    for v, n in missed.items():
        print(f"  {v}: {n} bytes differ from torch")


if __name__ == "__main__":
    main()
