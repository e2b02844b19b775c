"""Writes tests/data/pil_golden.bin: small uint8 images, the ops of timm's RandAugment and AugMix
(loader/src/augment/pil_ops.hpp, ImageOp 30 to 44) at several magnitudes, what timm's op
functions (timm.data.auto_augment, which call Pillow) return for each, and AugMix mixes (the
ops of ImageOp 45 and 46) as AugMixAugment computes them. pil_ops_test.cpp checks stoke against
it byte for byte without needing Pillow.

Images: RGB from 1x1 to 33x47 and a few 1-channel (mode L) ones, made of gradients, noise, flat
regions and saturated colours; one holds every byte value in each channel (the tables of
brightness, contrast and the point ops meet every entry), one has a histogram whose equalize
table reaches 256 (Image.point clamps it to 255). Square images take the rotations that Pillow
turns by transposing (90, 180, 270 degrees) and non-square ones the same angles through the
affine filter.

Posterize to 0 bits: Pillow 13's ImageOps.posterize raises (bits must be 1 to 8), and timm's
PosterizeIncreasing asks for it at magnitude 10; the expected output is Pillow 12's table for it
(every value masked to 0), applied with Image.point.

Run with the parity environment (Pillow 13.0, timm 1.0, numpy):
    /work/parity-venv/bin/python tests/loader/make_pil_golden.py [OUT]

The script also checks a numpy model of Color, Contrast and Sharpness (Pillow's L, its SMOOTH
filter and its float32 blend) against Pillow, and that the golden file tells that blend from the
same blend with its multiply and add fused (which a compiler targeting FMA would make of it):
some bytes of each must differ. One 16x16 grey image is built for contrast from levels on such an
edge.

File layout, all integers little-endian:
    "STPL" u32 version=1
    u32 image_count, then per image: u32 height, u32 width, u32 channels, height*width*channels
        bytes (rows of interleaved pixels, no padding)
    u32 case_count, then per case: u32 image, u32 op_count, op_count x (i32 op, 7 x f32 args),
        and the output in the layout of its image
"""

import argparse
import pathlib
import struct
import sys

import numpy as np
import PIL
from PIL import Image
from timm.data import auto_augment as aa

# ImageOp's numbers (loader/include/stoke/pipeline.hpp).
AUTOCONTRAST, EQUALIZE, INVERT, POSTERIZE, SOLARIZE, SOLARIZE_ADD = 30, 31, 32, 33, 34, 35
COLOR, CONTRAST, BRIGHTNESS, SHARPNESS = 36, 37, 38, 39
ROTATE, SHEAR_X, SHEAR_Y, TRANSLATE_X_REL, TRANSLATE_Y_REL = 40, 41, 42, 43, 44
CHAIN, BLEND = 45, 46
BILINEAR, BICUBIC = int(Image.Resampling.BILINEAR), int(Image.Resampling.BICUBIC)
FILL = (124, 116, 104)

# float32(5 / 7) and the float32 just above 1.8: factors whose product with some differences of
# two bytes lies within a float32 rounding of a whole number, so that Pillow's float32 product
# then add truncates differently from a fused multiply-add (blend_models checks that they do).
FACTORS = [0.0, 0.1, 0.37, 0.5, 5 / 7, 0.9999, 1.0, 1.3, 1.8000000715255737, 1.9]
ROTATIONS = [0.0, 0.5, -7.3, 30.0, -30.0, 45.0, 90.0, -90.0, 180.0, 270.0, 89.99999, 540.0]
SHEARS = [-0.3, -0.1, 0.05, 0.27]
PCTS = [-0.45, -0.1, 0.0333, 0.3]


def f32(v):
    return float(np.float32(v))


def op_cases():
    """(op, args) for every op at several numbers: args as float32, as AppliedOp carries them."""
    cases = [(AUTOCONTRAST, []), (EQUALIZE, []), (INVERT, [])]
    cases += [(POSTERIZE, [b]) for b in (0, 1, 2, 4, 7, 8)]
    cases += [(SOLARIZE, [t]) for t in (0, 1, 26, 128, 255, 256)]
    cases += [(SOLARIZE_ADD, [a, 128]) for a in (0, 11, 55, 110)]
    for op in (COLOR, CONTRAST, BRIGHTNESS, SHARPNESS):
        cases += [(op, [f32(f)]) for f in FACTORS]
    for flt in (BILINEAR, BICUBIC):
        cases += [(ROTATE, [f32(d), flt, *FILL]) for d in ROTATIONS]
        for op in (SHEAR_X, SHEAR_Y):
            cases += [(op, [f32(f), flt, *FILL]) for f in SHEARS]
        for op in (TRANSLATE_X_REL, TRANSLATE_Y_REL):
            cases += [(op, [f32(p), flt, *FILL]) for p in PCTS]
    return cases


def timm_op(img, op, a):
    """What timm's op function of ImageOp `op` returns (Pillow underneath)."""
    fill = tuple(int(v) for v in a[2:5]) if img.mode == "RGB" else int(a[2]) if len(a) > 2 else 0
    geo = dict(resample=int(a[1]) if len(a) > 1 else BICUBIC, fillcolor=fill)
    if op == AUTOCONTRAST:
        return aa.auto_contrast(img)
    if op == EQUALIZE:
        return aa.equalize(img)
    if op == INVERT:
        return aa.invert(img)
    if op == POSTERIZE:
        if int(a[0]) <= 0:  # Pillow 12's ImageOps.posterize table for 0 bits: ~255 masks all
            return img.point([0] * 256 * len(img.getbands()))
        return aa.posterize(img, int(a[0]))
    if op == SOLARIZE:
        return aa.solarize(img, int(a[0]))
    if op == SOLARIZE_ADD:
        return aa.solarize_add(img, int(a[0]), int(a[1]))
    if op in (COLOR, CONTRAST, BRIGHTNESS, SHARPNESS):
        fn = {COLOR: aa.color, CONTRAST: aa.contrast, BRIGHTNESS: aa.brightness,
              SHARPNESS: aa.sharpness}[op]
        return fn(img, a[0])
    if op == ROTATE:
        return aa.rotate(img, a[0], **geo)
    if op == SHEAR_X:
        return aa.shear_x(img, a[0], **geo)
    if op == SHEAR_Y:
        return aa.shear_y(img, a[0], **geo)
    if op == TRANSLATE_X_REL:
        return aa.translate_x_rel(img, a[0], **geo)
    if op == TRANSLATE_Y_REL:
        return aa.translate_y_rel(img, a[0], **geo)
    raise ValueError(op)


def replay(img, ops):
    """A sample's ops in order, AugMix's chains as AugMixAugment._apply_basic / _apply_blended
    combine them."""
    i = 0
    while i < len(ops):
        op, a = ops[i]
        if op != CHAIN:
            img = timm_op(img, op, a)
            i += 1
            continue
        src, blended, start = img, a[3] != 0, True
        mixed = np.zeros_like(np.asarray(img), dtype=np.float32)
        while i < len(ops) and ops[i][0] == CHAIN and (start or ops[i][1][2] != 0):
            start = False
            w, count = np.float32(ops[i][1][0]), int(ops[i][1][1])
            aug = src
            for op2, a2 in ops[i + 1:i + 1 + count]:
                aug = timm_op(aug, op2, a2)
            if blended:
                img = Image.blend(img, aug, float(w))
            else:
                mixed += w * np.asarray(aug, dtype=np.float32)
            i += 1 + count
        if not blended and i < len(ops) and ops[i][0] == BLEND:
            np.clip(mixed, 0, 255., out=mixed)
            img = Image.blend(src, Image.fromarray(mixed.astype(np.uint8)), float(ops[i][1][0]))
            i += 1
    return img


def mixed_image(h, w, c, rng):
    y = np.arange(h)[:, None] * 255 // max(h - 1, 1)
    x = np.arange(w)[None, :] * 255 // max(w - 1, 1)
    img = np.empty((h, w, 3), np.uint8)
    img[..., 0] = x
    img[..., 1] = y
    img[..., 2] = rng.integers(0, 256, (h, w))
    img[: h // 3, : w // 3] = (97, 97, 160)
    colours = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 255], [0, 0, 0],
                        [255, 128, 0], [128, 128, 128], [1, 254, 3]], np.uint8)
    band = np.arange(w) % len(colours)
    img[h - h // 4:, :] = colours[band][None, :, :]
    noisy = rng.random((h, w)) < 0.2
    img[noisy] = rng.integers(0, 256, (int(noisy.sum()), 3))
    return img if c == 3 else img[..., :1].copy()


def every_value():
    """16x16 RGB holding every byte value in each channel."""
    i = np.arange(256)
    return np.stack([i, 255 - i, (i * 7) % 256], 1).reshape(16, 16, 3).astype(np.uint8)


def equalize_overflow():
    """1x600 RGB whose red histogram makes ImageOps.equalize's table reach 256 at its top value:
    511 pixels below it, so the step is 2 and (1 + 511) // 2 = 256."""
    img = np.zeros((1, 600, 3), np.uint8)
    img[0, :511, 0] = np.arange(511) % 200
    img[0, 511:, 0] = 250
    img[0, :, 1] = np.arange(600) % 256
    img[0, :, 2] = 7
    return img


def images(rng):
    shapes = [(1, 1, 3), (2, 3, 3), (3, 3, 3), (4, 5, 3), (8, 8, 3), (12, 17, 3), (31, 31, 3),
              (33, 47, 3), (3, 3, 1), (9, 7, 1), (16, 16, 1)]
    out = [mixed_image(h, w, c, rng) for h, w, c in shapes]
    out.insert(5, every_value())
    out.append(contrast_edges())
    out.append(equalize_overflow())
    return out


def mixes(rng):
    """AugMix records: chains of two or three ops, weights and m as float32, plain and blended."""
    ops = [c for c in op_cases() if c[0] != POSTERIZE or c[1][0] > 0]
    out = []
    for blended in (0, 1):
        for width in (1, 3):
            w = np.float32(rng.dirichlet([1.0] * width))
            m = np.float32(rng.beta(1.0, 1.0))
            rec = []
            for k in range(width):
                depth = int(rng.integers(1, 4))
                rec.append((CHAIN, [float(w[k]), depth, k, blended]))
                rec += [ops[int(j)] for j in rng.integers(0, len(ops), depth)]
            if not blended:
                rec.append((BLEND, [float(m)]))
            out.append(rec)
    # Two ops, then a mix, then an op: the mix starts from the image as the ops left it.
    out.append([ops[3], (CHAIN, [0.25, 1, 0, 0]), ops[40], (CHAIN, [0.75, 2, 1, 0]), ops[20],
                ops[61], (BLEND, [0.6]), ops[1]])
    return out


def l24(img):
    """Pillow's RGB to L: (19595 r + 38470 g + 7471 b + 2^15) >> 16."""
    if img.shape[2] == 1:
        return img[..., 0].astype(np.int64)
    r, g, b = (img[..., k].astype(np.int64) for k in range(3))
    return (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16


def smooth_model(img):
    """ImageFilter.SMOOTH in numpy float32, in Filter.c's order; the border kept."""
    k1, k5 = np.float32(1) / np.float32(13), np.float32(5) / np.float32(13)
    v = img.astype(np.float32)
    out = img.copy()
    h, w = img.shape[:2]
    if h < 3 or w < 3:
        return out

    def row(r, mid):
        return (v[r, :-2] * k1 + v[r, 1:-1] * mid) + v[r, 2:] * k1

    ss = np.float32(0.5) + row(slice(2, h), k1)
    ss = ss + row(slice(1, h - 1), k5)
    ss = ss + row(slice(0, h - 2), k1)
    out[1:-1, 1:-1] = np.clip(ss, 0, 255).astype(np.uint8)
    return out


def degenerate(img, op):
    if op == CONTRAST:
        mean = int(l24(img).sum() / (img.shape[0] * img.shape[1]) + 0.5)
        return np.full_like(img, mean)
    if op == COLOR:
        return np.repeat(l24(img)[..., None], img.shape[2], 2).astype(np.uint8)
    return smooth_model(img)


def blend_models(im1, im2, factor):
    """Image.blend's bytes: Pillow's float32 product then add, and the same fused."""
    a = np.float32(factor)
    x, y = im1.astype(np.float32), im2.astype(np.float32)
    split = x + a * (y - x)
    fused = (x.astype(np.float64) + np.float64(a) * (y - x).astype(np.float64)).astype(np.float32)
    if not 0 <= a <= 1:
        split, fused = np.clip(split, 0, 255), np.clip(fused, 0, 255)
    return split.astype(np.uint8), fused.astype(np.uint8)


def check_blend_models(imgs, cases, outputs):
    """The numpy model of Color, Contrast and Sharpness gives Pillow's bytes, and the fused blend
    misses some of them for each op: the file tells the two apart."""
    fused_misses = {COLOR: 0, CONTRAST: 0, SHARPNESS: 0}
    for (k, rec), out in zip(cases, outputs):
        op, a = rec[0]
        if len(rec) != 1 or op not in fused_misses or (op == COLOR and imgs[k].shape[2] == 1):
            continue
        split, fused = blend_models(degenerate(imgs[k], op), imgs[k], a[0])
        if not np.array_equal(split, out):
            sys.exit(f"the numpy model of op {op} at {a[0]} misses Pillow's bytes on image {k}")
        fused_misses[op] += int(np.count_nonzero(fused != out))
    for op, n in fused_misses.items():
        if n == 0:
            sys.exit(f"no byte of op {op} tells a fused blend from Pillow's")
    return fused_misses


def contrast_edges():
    """16x16 grey: a mean of 21 and the levels whose contrast at float32(5 / 7) and at 1.8+
    truncates differently with a fused blend, the rest levels that keep the mean."""
    levels = np.arange(256, dtype=np.float32)
    picked = []
    for factor in (5 / 7, 1.8000000715255737):
        base = np.full(256, 21, np.uint8)
        split, fused = blend_models(base, levels, factor)
        picked += list(np.nonzero(split != fused)[0][:20])
    values = np.full(256, 21, np.int64)
    values[:len(picked)] = picked
    need = 21 * 256 - int(values.sum())
    for i in range(len(picked), 256):
        step = int(np.clip(need, -21, 255 - 21))
        values[i] += step
        need -= step
    assert need == 0
    return np.repeat(values.reshape(16, 16, 1), 3, 2).astype(np.uint8)


def to_pil(img):
    return Image.fromarray(img[..., 0] if img.shape[2] == 1 else img)


def from_pil(img, channels):
    a = np.asarray(img)
    return a[..., None] if channels == 1 else a


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", nargs="?",
                   default=str(pathlib.Path(__file__).parents[1] / "data" / "pil_golden.bin"))
    args = p.parse_args()
    rng = np.random.default_rng(20261202)
    imgs = images(rng)
    cases = []
    for k, img in enumerate(imgs):
        overflow, edges = k == len(imgs) - 1, k == len(imgs) - 2
        big = img.shape[0] * img.shape[1] > 300
        for n, (op, a) in enumerate(op_cases()):
            if overflow and op not in (AUTOCONTRAST, EQUALIZE):
                continue
            if edges and op != CONTRAST:
                continue
            if big and n % 4 != k % 4 and op not in (AUTOCONTRAST, EQUALIZE):
                continue
            cases.append((k, [(op, a)]))
    for rec in mixes(rng):
        for k in (3, 5, 7):
            cases.append((k, rec))
    blob = bytearray(b"STPL" + struct.pack("<I", 1))
    blob += struct.pack("<I", len(imgs))
    for img in imgs:
        h, w, c = img.shape
        blob += struct.pack("<III", h, w, c) + img.tobytes()
    outputs = [from_pil(replay(to_pil(imgs[k]), rec), imgs[k].shape[2]) for k, rec in cases]
    misses = check_blend_models(imgs, cases, outputs)
    blob += struct.pack("<I", len(cases))
    for (k, rec), out in zip(cases, outputs):
        img = imgs[k]
        assert out.shape == img.shape and out.dtype == np.uint8
        blob += struct.pack("<II", k, len(rec))
        for op, a in rec:
            a = [float(v) for v in a] + [0.0] * (7 - len(a))
            blob += struct.pack("<i7f", op, *a)
        blob += np.ascontiguousarray(out).tobytes()
    pathlib.Path(args.out).write_bytes(bytes(blob))
    print(f"{args.out}: {len(imgs)} images, {len(cases)} cases, {len(blob)} bytes "
          f"(Pillow {PIL.__version__}); a fused blend would miss {misses} bytes "
          f"(color, contrast, sharpness)")


if __name__ == "__main__":
    main()
