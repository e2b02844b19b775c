"""Writes tests/data/bilinear_golden.bin: small uint8 images, the geometric ops of
loader/src/augment/geometric_ops.hpp with bilinear interpolation (and, for torchvision's
fill=None, nearest), and what torchvision's transforms.v2.functional returns for each.
geometric_ops_bilinear_test.cpp checks stoke against it byte for byte without needing torch.

The bilinear blend is rounded to a byte at the end, so most formulas give torch's bytes almost
everywhere; one that rounds differently misses only where the blend lands within an ulp or two
of a half. The cases are of three kinds: AugMix's draws (its shears, translations and rotations
at each of its 10 magnitude bins, signed, with fill=None, 0 and 128), parameters that put
points on a half (half-pixel translations: exact ties, to even), and draws kept from a seeded
search because one of the rejected formulas below misses a byte on them. Alongside torch, the
script runs a numpy model of the arithmetic geometric_ops.cpp follows and of the alternatives it
rejects; it stops unless the model gives torch's bytes on every case and every alternative
misses some, and prints how many each misses.

Run with the parity environment (torch 2.15, torchvision 0.29.2):
    /work/parity-venv/bin/python tests/loader/make_bilinear_golden.py [OUT]

The committed file was made on an AVX-512 machine (torch.backends.cpu.get_cpu_capability()),
whose grid sampler is compiled with fused multiply-adds; the script refuses another unless
--any-cpu.

File layout, all integers little-endian:
    "STGB" u32 version=1
    u32 image_count, then per image: u32 height, u32 width, u32 channels, height*width*channels
        bytes (rows of interleaved pixels, no padding)
    u32 case_count, then per case: u32 image, i32 op, u32 interpolation (0 nearest, 1 bilinear),
        7 x f32 args (the fill -1 for fill=None), u32 label length, the label (ASCII: where the
        parameters come from), and torch's output in the layout of its image
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

# ImageOp's numbers (stoke/pipeline.hpp) and Interpolation's.
AFFINE, AFFINE_AT_ORIGIN, ROTATE, SHEAR = 13, 14, 15, 16
NEAREST, BILINEAR = 0, 1
MODES = {NEAREST: F.InterpolationMode.NEAREST, BILINEAR: F.InterpolationMode.BILINEAR}
NO_FILL = -1.0


def f32(v):
    """A number as stoke holds it (a float), handed to torch as that exact value."""
    return float(np.float32(v))


def to_chw(img):
    return torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1)))


def to_hwc(t):
    return np.ascontiguousarray(t.numpy().transpose(1, 2, 0))


def torch_fill(fill):
    return None if fill == NO_FILL else fill


def run(op, interpolation, img, args):
    t, mode = to_chw(img), MODES[interpolation]
    if op == ROTATE:
        return F.rotate(t, angle=args[0], interpolation=mode, expand=False,
                        fill=torch_fill(args[1]))
    if op == SHEAR:  # _apply_image_or_video_transform's ShearX / ShearY
        degrees = math.degrees(math.atan(args[0]))
        return F.affine(t, angle=0.0, translate=[0, 0], scale=1.0,
                        shear=[degrees, 0.0] if args[1] == 0 else [0.0, degrees],
                        interpolation=mode, fill=torch_fill(args[2]), center=[0, 0])
    return F.affine(t, angle=args[0], translate=[args[1], args[2]], scale=args[3],
                    shear=[args[4], args[5]], interpolation=mode, fill=torch_fill(args[6]),
                    center=[0, 0] if op == AFFINE_AT_ORIGIN else None)


# The model. The matrix is torchvision's own (Python double); everything after it is float32,
# rounded where the named variant says. A fused multiply-add is computed in double and rounded
# once: exact here, the products being of a byte and a float32 weight.

def r32(x):
    return np.asarray(x, np.float64).astype(np.float32).astype(np.float64)


def fma(a, b, c):
    return r32(np.asarray(a, np.float64) * b + c)


def affine_parameters(op, h, w, args):
    """What affine_image hands _get_inverse_affine_matrix, and the fill."""
    if op == ROTATE:
        return [0.0, 0.0], -(args[0] % 360), [0.0, 0.0], 1.0, [0.0, 0.0], args[1]
    origin = [0.0 - w * 0.5, 0.0 - h * 0.5]
    if op == SHEAR:
        degrees = math.degrees(math.atan(args[0]))
        shear = [degrees, 0.0] if args[1] == 0 else [0.0, degrees]
        return origin, 0.0, [0.0, 0.0], 1.0, shear, args[2]
    centre = origin if op == AFFINE_AT_ORIGIN else [0.0, 0.0]
    return centre, args[0], [args[1], args[2]], args[3], [args[4], args[5]], args[6]


def grid(m, h, w):
    """_affine_grid's x and y, before unnormalisation (geometric_ops.cpp's, as the nearest
    golden file shows)."""
    t = r32(m)
    a = r32(r32(t[:3]) / np.float32(0.5 * w))
    b = r32(r32(t[3:]) / np.float32(0.5 * h))
    xb, yb = np.meshgrid(np.arange(w) - (w - 1) / 2.0, np.arange(h) - (h - 1) / 2.0)

    def combine(c):
        return r32(r32(r32(xb * c[0]) + r32(yb * c[1])) + c[2])
    return combine(a), combine(b)


def coordinate(g, size):
    return r32(r32(g + 1) * np.float64(np.float32(size / 2)) - 0.5)


def blend(v, wt, variant):
    nw, ne, sw, se = v
    a, b, c, d = wt
    if variant == "sum unfused":
        return r32(r32(r32(r32(nw * a) + r32(ne * b)) + r32(sw * c)) + r32(se * d))
    if variant == "first product fused":
        return fma(se, d, fma(sw, c, fma(nw, a, r32(ne * b))))
    return fma(se, d, fma(sw, c, fma(ne, b, r32(nw * a))))


def bilinear(img, x, y, fill, variant):
    h, w, c = img.shape
    xw, yn = np.floor(x), np.floor(y)
    we = r32(x - xw)
    n = r32(y - yn)
    e, s = r32(1 - we), r32(1 - n)
    wt = [r32(s * e), r32(s * we), r32(n * e), r32(n * we)]
    ix, iy = np.nan_to_num(xw, nan=-9).astype(np.int64), np.nan_to_num(yn, nan=-9).astype(np.int64)

    def corners(channel):
        out = []
        for dy, dx in ((0, 0), (0, 1), (1, 0), (1, 1)):
            cx, cy = ix + dx, iy + dy
            inside = (cx >= 0) & (cx < w) & (cy >= 0) & (cy < h)
            out.append(np.where(inside, channel[np.clip(cy, 0, h - 1), np.clip(cx, 0, w - 1)], 0.0))
        return out
    mask = blend(corners(np.ones((h, w))), wt, variant)
    f = np.float64(np.float32(fill))
    planes = []
    for k in range(c):
        v = blend(corners(img[..., k].astype(np.float64)), wt, variant)
        if fill != NO_FILL and variant != "fill ignored":
            if variant == "fill as img * mask + (1 - mask) * fill":
                v = r32(r32(v * mask) + r32(r32(1 - mask) * f))
            else:
                v = r32(r32(r32(v - f) * mask) + f)
        if variant == "ties away from zero":
            planes.append(np.floor(v + 0.5))
        elif variant == "truncated":
            planes.append(np.floor(v))
        else:
            planes.append(np.rint(v))
    return np.clip(np.stack(planes, -1), 0, 255).astype(np.uint8)


def nearest(img, x, y, fill):
    h, w, _ = img.shape
    ix, iy = np.rint(x), np.rint(y)
    inside = (ix >= 0) & (ix <= w - 1) & (iy >= 0) & (iy <= h - 1)
    out = img[np.where(inside, iy, 0).astype(np.int64), np.where(inside, ix, 0).astype(np.int64)]
    out[~inside] = 0 if fill == NO_FILL else int(np.rint(np.float32(fill)))
    return out


def model(img, op, interpolation, args, variant=None):
    h, w, _ = img.shape
    if op == ROTATE:
        angle = args[0] % 360
        if angle == 0:
            return img.copy()
        if angle == 180:
            return img[::-1, ::-1].copy()
        if h == w and angle in (90, 270):
            return np.ascontiguousarray(np.rot90(img, 1 if angle == 90 else 3, (0, 1)))
    *parameters, fill = affine_parameters(op, h, w, args)
    gx, gy = grid(_get_inverse_affine_matrix(*parameters), h, w)
    x, y = coordinate(gx, w), coordinate(gy, h)
    if interpolation == NEAREST:
        return nearest(img, x, y, fill)
    return bilinear(img, x, y, fill, variant)


VARIANTS = ["sum unfused", "first product fused", "fill as img * mask + (1 - mask) * fill",
            "fill ignored", "ties away from zero", "truncated"]
# The variants that miss a byte in tens of thousands: the search looks for cases that tell them.
SUBTLE = VARIANTS[:3]


# The cases.

def augmix_cases(h, w, rng, picks):
    """AugMix's geometric ops (torchvision's _PARTIAL_AUGMENTATION_SPACE, 10 bins: shear 0.3,
    translation a third of the side, rotation 30 degrees) at random bins and signs, as
    _apply_image_or_video_transform calls them, with fill None, 0 or 128."""
    space = {"ShearX": 0.3, "ShearY": 0.3, "TranslateX": w / 3.0, "TranslateY": h / 3.0,
             "Rotate": 30.0}
    out = []
    for transform, top in space.items():
        values = [float(v) for v in torch.linspace(0.0, top, 10)]
        for _ in range(picks):
            v = values[int(rng.integers(1, 10))] * (-1 if rng.random() < 0.5 else 1)
            fill = float(rng.choice([NO_FILL, 0.0, 128.0]))
            label = f"AugMix {transform} {v:.6g} fill {'None' if fill == NO_FILL else f'{fill:g}'}"
            if transform in ("ShearX", "ShearY"):
                out.append((SHEAR, BILINEAR, [v, 0 if transform == "ShearX" else 1, fill], label))
            elif transform == "TranslateX":
                out.append((AFFINE, BILINEAR, [0, int(v), 0, 1, 0, 0, fill], label))
            elif transform == "TranslateY":
                out.append((AFFINE, BILINEAR, [0, 0, int(v), 1, 0, 0, fill], label))
            else:
                out.append((ROTATE, BILINEAR, [v, fill], label))
    return out


def ties():
    """Half-pixel translations (every weight a half: exact ties), quarter turns (torch.rot90
    or the grid), and nearest sampling with fill=None (grid_sample's zeros: a fill of 0)."""
    out = [(AFFINE, BILINEAR, [0, tx, ty, 1, 0, 0, fill], f"translate {tx}, {ty} fill {fill:g}")
           for tx, ty, fill in ((0.5, 0, NO_FILL), (0, -0.5, 0), (0.5, 0.5, 128), (-1.5, 2.5, NO_FILL))]
    out += [(ROTATE, BILINEAR, [a, NO_FILL], f"rotate {a}") for a in (90, 180, 270, 360)]
    out += [(AFFINE, BILINEAR, [90, 0, 0, 1, 0, 0, 128], "affine quarter turn 90")]
    out += [(AFFINE, NEAREST, [17, 1.5, -2, 1, 0, 0, NO_FILL], "nearest affine fill None"),
            (ROTATE, NEAREST, [33, NO_FILL], "nearest rotate fill None"),
            (SHEAR, NEAREST, [-0.2, 1, NO_FILL], "nearest shear fill None")]
    return out


def random_draw(h, w, rng):
    op = int(rng.choice([AFFINE, AFFINE_AT_ORIGIN, ROTATE, SHEAR]))
    fill = float(rng.choice([NO_FILL, 0.0, 128.0, 37.5]))
    if op == ROTATE:
        return op, [rng.uniform(-180, 180), fill]
    if op == SHEAR:
        return op, [rng.uniform(-0.3, 0.3), int(rng.integers(0, 2)), fill]
    return op, [rng.uniform(-180, 180), rng.uniform(-0.3, 0.3) * w, rng.uniform(-0.3, 0.3) * h,
                rng.uniform(0.5, 1.5), rng.uniform(-30, 30), rng.uniform(-30, 30), fill]


def searched(img, rng, tries, keep):
    """Random draws on `img` kept while one of the SUBTLE variants that has missed fewer than
    `keep` bytes so far misses a byte on them, until each has missed `keep` or `tries` run out."""
    h, w, _ = img.shape
    missed = dict.fromkeys(SUBTLE, 0)
    out = []
    for i in range(tries):
        op, args = random_draw(h, w, rng)
        args = [f32(a) for a in args]
        torch_out = to_hwc(run(op, BILINEAR, img, args))
        misses = {v: int((model(img, op, BILINEAR, args, v) != torch_out).sum()) for v in SUBTLE}
        wanted = [v for v, n in misses.items() if n and missed[v] < keep]
        if wanted:
            out.append((op, BILINEAR, args, f"searched draw {i} ({', '.join(wanted)})"))
            for v, n in misses.items():
                missed[v] += n
        if all(n >= keep for n in missed.values()):
            break
    return out


def images():
    """(image, cases) pairs; an image is noise, so a pixel taken from the wrong place shows."""
    rng = np.random.default_rng(20251202)

    def noise(h, w, c):
        return rng.integers(0, 256, (h, w, c), dtype=np.uint8)
    out = []
    for h, w, c, picks in [(1, 1, 3, 1), (2, 3, 3, 2), (3, 2, 1, 2), (31, 17, 3, 2),
                           (17, 31, 1, 2), (24, 24, 3, 1)]:
        out.append((noise(h, w, c), ties() + augmix_cases(h, w, rng, picks)))
    out.append((noise(64, 64, 3), augmix_cases(64, 64, rng, 1)))
    big = noise(96, 96, 3)
    out.append((big, searched(big, rng, 400, 2)))
    gray = noise(96, 96, 1)
    out.append((gray, searched(gray, rng, 400, 1)))
    return out


def cases(imgs):
    for i, (_, chosen) in enumerate(imgs):
        for op, interpolation, args, label in chosen:
            yield i, op, interpolation, [f32(a) for a in (list(args) + [0.0] * 7)[:7]], label


def check_model(imgs, all_cases, outputs):
    """Stops unless the model is torch on every case and each alternative misses somewhere;
    returns the bytes each alternative misses."""
    missed = dict.fromkeys(VARIANTS, 0)
    for (i, op, interpolation, args, label), out in zip(all_cases, outputs):
        img = imgs[i][0]
        if not np.array_equal(model(img, op, interpolation, args), out):
            sys.exit(f"the model is not torch on {label} ({img.shape}): geometric_ops.cpp's "
                     f"arithmetic no longer describes this torch")
        if interpolation == BILINEAR:
            for v in VARIANTS:
                missed[v] += int((model(img, op, interpolation, args, v) != out).sum())
    caught_none = [v for v, n in missed.items() if n == 0]
    if caught_none:
        sys.exit(f"no case tells these alternatives from torch: {caught_none}")
    return missed


def main():
    args, capability = golden_writer.parse_args(__doc__, "bilinear_golden.bin")

    imgs = images()
    all_cases = list(cases(imgs))
    outputs = []
    for i, op, interpolation, a, label in all_cases:
        out = to_hwc(run(op, interpolation, imgs[i][0], a))
        assert out.shape == imgs[i][0].shape and out.dtype == np.uint8, label
        outputs.append(out)
    missed = check_model(imgs, all_cases, outputs)

    blob = golden_writer.images_blob(b"STGB", [img for img, _ in imgs])
    blob += struct.pack("<I", len(all_cases))
    for (i, op, interpolation, a, label), out in zip(all_cases, outputs):
        name = label.encode("ascii")
        blob += struct.pack("<IiI7fI", i, op, interpolation, *a, len(name)) + name + out.tobytes()
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
