"""Writes tests/data/photometric_golden.bin: small uint8 images, the photometric ops of
loader/src/augment/photometric.hpp at several magnitudes, and what torchvision's
transforms.v2.functional returns for each. photometric_test.cpp checks stoke against it byte for
byte without needing torch.

Two kinds of image: ordinary ones (gradients, noise, flat regions, saturated colours; 1 and 3
channels, 1x1 to 27x25, and one 4x3412) that take every op, and images built from inputs on a
rounding edge, where a product rounded before its add, a different summation order or another
float32 constant would change the byte; those take the ops they were built for.

Run with the parity environment (torch 2.15, torchvision 0.29.2):
    /work/parity-venv/bin/python tests/loader/make_photometric_golden.py [OUT]

torch's float kernels differ between its CPU builds: the Gaussian kernel's softmax sums 16 lanes
at a time on AVX-512 and 8 on AVX2, so a kernel of 9 to 15 taps can differ in its last bit. The
committed file was made on an AVX-512 machine (torch.backends.cpu.get_cpu_capability()), as stoke
follows that build; the script refuses another unless --any-cpu is given.

File layout, all integers little-endian:
    "STPG" u32 version=1
    u32 image_count, then per image: u32 height, u32 width, u32 channels, height*width*channels
        bytes (rows of interleaved pixels, no padding)
    u32 case_count, then per case: u32 image, i32 op, f32 a, f32 b, f32 c, and torch's output
        in the layout of its image
"""

import struct

import numpy as np
import torch
import torchvision
import torchvision.transforms.v2.functional as F
from torchvision.transforms.v2.functional._misc import _get_gaussian_kernel2d

import golden_writer

# ColorOp's numbers (photometric.hpp).
BRIGHTNESS, CONTRAST, SATURATION, HUE, GRAYSCALE, SOLARIZE, POSTERIZE = 1, 2, 3, 4, 5, 6, 7
EQUALIZE, AUTOCONTRAST, SHARPNESS, INVERT, GAUSSIAN_BLUR = 8, 9, 10, 11, 12

MAGNITUDES = {
    BRIGHTNESS: [0.0, 0.37, 1.0, 1.9],
    CONTRAST: [0.0, 0.37, 0.5, 1.6],
    SATURATION: [0.0, 0.3, 2.0],
    HUE: [-0.5, -0.13, 0.0, 0.21, 0.5],
    GRAYSCALE: [None],
    SOLARIZE: [0.0, 1.0, 127.5, 128.0, 255.0],
    POSTERIZE: list(range(9)),
    EQUALIZE: [None],
    AUTOCONTRAST: [None],
    SHARPNESS: [0.0, 0.1, 1.0, 1.9],
    INVERT: [None],
}
BLUR_KERNELS = [(3, 3), (5, 3), (3, 5), (23, 23)]  # (width, height)
BLUR_SIGMAS = [0.1, 1.0, 2.3]


def saturated_patches(h, w):
    """The eight corners of the RGB cube and their mixes, in blocks: hue's special cases (the
    maximum in r, g or b, ties between them, grey) and values at both clamps."""
    colours = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0], [0, 255, 255],
                        [255, 0, 255], [255, 255, 255], [0, 0, 0], [255, 128, 0], [128, 128, 128],
                        [200, 200, 13], [13, 200, 200], [1, 0, 0], [254, 255, 255]], np.uint8)
    idx = (np.arange(h)[:, None] // 2 * 5 + np.arange(w)[None, :] // 3) % len(colours)
    return colours[idx]


def mixed(h, w, c, rng):
    """Gradients, a flat region, saturated colours and noise in one image."""
    y = np.arange(h)[:, None] * 255 // max(h - 1, 1)
    x = np.arange(w)[None, :] * 255 // max(w - 1, 1)
    img = np.empty((h, w, 3), np.uint8)
    img[..., 0] = x
    img[..., 1] = y
    img[..., 2] = rng.integers(0, 256, (h, w))
    img[: h // 3, : w // 3] = (97, 97, 160)
    img[h - h // 4:, :] = saturated_patches(h // 4, w)
    noisy = rng.random((h, w)) < 0.15
    img[noisy] = rng.integers(0, 256, (int(noisy.sum()), 3))
    return img if c == 3 else img[..., :1].copy()


# Inputs on a rounding edge. Most pixels of ordinary images come out the same however their
# float32 arithmetic is ordered, so ordinary images alone would not tell a fused multiply-add
# from a rounded product and an add. The images below are made of inputs where such a difference
# changes the byte: the search uses numpy models of the alternatives, and torch, as everywhere
# in this file, writes the expected outputs.

def luma_models(r, g, b):
    """torchvision's float32 grey (fused adds, as torch's add with alpha runs) and the same with
    each product rounded before its add."""
    w0, w1, w2 = (np.float64(np.float32(w)) for w in (0.2989, 0.587, 0.114))
    p = (r * w0).astype(np.float32).astype(np.float64)
    fused = ((p + g * w1).astype(np.float32).astype(np.float64) + b * w2).astype(np.float32)
    split = (p.astype(np.float32) + (g * w1).astype(np.float32)).astype(np.float32)
    split = (split + (b * w2).astype(np.float32)).astype(np.float32)
    return fused, split


def blend_models(v, other, ratio):
    """_blend's byte with its add fused, and with the product rounded first."""
    r = np.float32(ratio)
    rest = np.float64(np.float32(1.0 - float(r)))
    scaled = (v * np.float64(r)).astype(np.float32)
    fused = (scaled.astype(np.float64) + other * rest).astype(np.float32)
    split = (scaled + (other * rest).astype(np.float32)).astype(np.float32)
    return [np.clip(x, 0, 255).astype(np.uint8) for x in (fused, split)]


def every_rgb():
    v = np.arange(256, dtype=np.float64)
    return [a.ravel() for a in np.meshgrid(v, v, v, indexing="ij")]


def grey_edges(rng):
    """16x16 RGB: the colours whose grey floors differently with rounded products, then colours
    whose saturation blend at 0.3 or 1.6 truncates differently with a rounded product."""
    r, g, b = every_rgb()
    fused, split = luma_models(r, g, b)
    picked = list(np.nonzero(np.floor(fused) != np.floor(split))[0])
    grey = np.floor(fused)
    for ratio in (0.3, 1.6):
        edge = np.zeros(r.size, bool)
        for channel in (r, g, b):
            a, c = blend_models(channel, grey, ratio)
            edge |= a != c
        found = np.nonzero(edge)[0]
        picked += list(rng.choice(found, (256 - len(picked)) // (2 if ratio == 0.3 else 1),
                                  replace=False))
    rgb = np.stack([r, g, b], 1)[np.array(picked[:256])]
    return rgb.reshape(16, 16, 3).astype(np.uint8)


def hue_model(px, factor, dt):
    """adjust_hue's arithmetic in numpy, in float32 (torch's) or float64."""
    one = dt(1)
    x = px.astype(dt) * dt(1.0 / 255.0)
    r, g, b = x[:, 0], x[:, 1], x[:, 2]
    maxc, minc = x.max(1), x.min(1)
    eqc = maxc == minc
    s = (maxc - minc) / np.where(eqc, one, maxc)
    d = np.where(eqc, one, maxc - minc)
    rc, gc, bc = (maxc - r) / d, (maxc - g) / d, (maxc - b) / d
    neq_r, eq_g = maxc != r, maxc == g
    h = ((bc - gc) * ~neq_r + (rc + dt(2) - bc) * (eq_g & neq_r)) + (gc + dt(4) - rc) * (
        neq_r & ~eq_g)
    h = np.fmod(h * dt(1.0 / 6.0) + one, one)
    h = np.fmod(h + dt(factor), one)
    h = np.where(h < 0, h + one, h)
    h6 = h * dt(6)
    i = np.floor(h6)
    f = h6 - i
    i = i.astype(np.int64) % 6
    sxf = s * f
    vpqt = np.stack([maxc, np.clip((one - s) * maxc, 0, 1), np.clip((one - sxf) * maxc, 0, 1),
                     np.clip((sxf + (one - s)) * maxc, 0, 1)], 1)
    select = np.array([[0, 2, 1, 1, 3, 0], [3, 0, 0, 2, 1, 1], [1, 1, 3, 0, 0, 2]])
    out = np.take_along_axis(vpqt, select[:, i].T, 1)
    return (out * dt(255.0 + 1.0 - 1e-3)).astype(np.uint8)


def hue_edges(rng):
    """16x16 RGB: colours whose hue shift by -0.13 or 0.21 truncates differently in float64,
    i.e. where every float32 rounding of the chain counts (a shift by 0.5 has none)."""
    rgb = rng.permutation(256 ** 3)[:1 << 21]
    rgb = np.stack([rgb >> 16, (rgb >> 8) & 255, rgb & 255], 1).astype(np.uint8)
    picked = []
    for factor in (-0.13, 0.21):
        edge = np.any(hue_model(rgb, factor, np.float32) != hue_model(rgb, factor, np.float64), 1)
        picked += list(rgb[edge][:128])
    return np.array(picked[:256]).reshape(16, 16, 3)


def fused_sums(w, blocks):
    """The float32 sums oneDNN makes of `blocks` (one per row): the taps in order, each added with
    a fused multiply-add."""
    acc = np.zeros(blocks.shape[0], np.float32)
    for j in range(w.size):
        acc = (acc.astype(np.float64) + w[j] * blocks[:, j]).astype(np.float32)
    return acc.astype(np.float64)


def near_half_block(w, base, rng, fused):
    """A block whose weighted sum lies on a half, within 3e-6 exactly or, for a long kernel whose
    float32 sum strays further than that, within two ulps of oneDNN's float32 sum: round_() of
    torch's sum then depends on each of its roundings."""
    while True:
        at = rng.permutation(w.size)[:9]
        blocks = np.repeat(base[None, :], 1 << 14 if fused else 1 << 16, 0)
        blocks[:, at] = rng.integers(0, 256, (blocks.shape[0], at.size))
        s = fused_sums(w, blocks) if fused else blocks @ w
        tol = 2 * np.spacing(np.float32(128)) if fused else 3e-6
        hit = np.nonzero(np.abs(s - np.floor(s) - 0.5) < tol)[0]
        if hit.size:
            return blocks[hit[0]]


def near_half_tiles(kw, kh, sigma, tiles_y, tiles_x, channels, rng):
    """Adjacent kh x kw blocks, each centre's blur on a rounding edge (a centre's window is its
    own block)."""
    k = _get_gaussian_kernel2d([kw, kh], [sigma, sigma], torch.float32, torch.device("cpu"))
    w = k.numpy().astype(np.float64).ravel()
    out = np.empty((tiles_y * kh, tiles_x * kw, channels), np.uint8)
    for ty in range(tiles_y):
        for tx in range(tiles_x):
            for c in range(channels):
                block = near_half_block(w, rng.integers(0, 256, w.size), rng, w.size > 25)
                out[ty * kh:(ty + 1) * kh, tx * kw:(tx + 1) * kw, c] = block.reshape(kh, kw)
    return out


def sharpness_edges(rng):
    """24x24 grey of 3x3 blocks whose centre v and rounded blur m make the blend at factor 1.1
    (top half) or 1.6 (bottom half) truncate differently with a rounded product (no pair that
    a 3x3 window can produce does below 1, nor at 1.9)."""
    out = rng.integers(0, 256, (24, 24, 1)).astype(np.uint8)
    v, m = (a.ravel() for a in np.meshgrid(np.arange(256.0), np.arange(256.0), indexing="ij"))
    for half, factor in enumerate((1.1, 1.6)):
        rest = np.float64(np.float32(1.0 - float(np.float32(factor))))
        fused = (v + (m - v) * rest).astype(np.float32)
        split = (v.astype(np.float32) + ((m - v) * rest).astype(np.float32)).astype(np.float32)
        around = 13 * m - 5 * v  # the eight neighbours' sum giving exactly m
        edge = (np.clip(fused, 0, 255).astype(np.uint8) != np.clip(split, 0, 255).astype(np.uint8))
        edge &= (around >= 0) & (around <= 8 * 255)
        for k, i in enumerate(rng.choice(np.nonzero(edge)[0], 32, replace=False)):
            y, x = 12 * half + 3 * (k // 8) + 1, 3 * (k % 8) + 1
            share = int(around[i]) // 8
            ring = [share + (1 if j < int(around[i]) % 8 else 0) for j in range(8)]
            out[y - 1:y + 2, x - 1:x + 2, 0] = np.insert(ring, 4, int(v[i])).reshape(3, 3)
    return out


def contrast_edge(img, values=None):
    """A factor near 0.37 at which contrast's byte for one of `values` (by default every value
    in `img`) truncates differently with the product rounded before the mean is added."""
    flat = img.reshape(-1, img.shape[2]).astype(np.float64)
    grey = np.floor(luma_models(*flat.T)[0]) if img.shape[2] == 3 else flat[:, 0]
    mean = np.float32(np.float32(grey.sum()) / np.float32(grey.size))
    present = np.unique(img if values is None else values)
    factor = np.float32(0.37)
    while True:
        fused, split = blend_models(present.astype(np.float64), np.float64(mean), factor)
        if np.any(fused != split):
            return float(factor)
        factor = np.nextafter(factor, np.float32(1))


def remainder_loop_values(img):
    """The channel-first values of `img` that torch's add of a scalar computes with a rounded
    product (photometric_color.cpp, contrast): of the last n % 32 values, past a whole vector of 16,
    the first stays fused and the next four (or eight, or twelve) do not. One thread's range."""
    chw = img.transpose(2, 0, 1).ravel()
    rest = chw.size % 32 % 16
    lanes = (rest - 1) // 4 * 4
    return chw[chw.size - rest + 1:chw.size - rest + 1 + lanes]


def images():
    """(image, cases) pairs; a case is (op, a, b, c), trailing zeros left out."""
    rng = np.random.default_rng(20240613)
    out = [(img, every_case(img)) for img in [
        np.array([[[255, 0, 128]]], np.uint8),            # one saturated pixel
        rng.integers(0, 256, (2, 5, 3), dtype=np.uint8),  # noise
        rng.integers(0, 256, (3, 3, 1), dtype=np.uint8),  # grey noise
        mixed(17, 23, 3, rng),
        mixed(27, 25, 3, rng),
        mixed(24, 20, 1, rng),
        np.full((9, 13, 3), (40, 90, 200), np.uint8),     # flat colour
        saturated_patches(12, 15),
    ]]
    # Where stoke and torch part: a contrast whose byte for a value torch's remainder loop meets
    # differs with the product rounded (photometric_test.cpp counts the bytes that differ).
    img, chosen = out[3]
    chosen.append((CONTRAST, contrast_edge(img, remainder_loop_values(img))))
    grey = grey_edges(rng)
    out.append((grey, [(GRAYSCALE, 0), (SATURATION, 0.3), (SATURATION, 1.6),
                       (CONTRAST, contrast_edge(grey))]))
    out.append((hue_edges(rng), [(HUE, -0.13), (HUE, 0.21), (HUE, 0.5)]))
    out.append((sharpness_edges(rng), [(SHARPNESS, 1.1), (SHARPNESS, 1.6)]))
    # The blur's backends: im2col + GEMM (rounded products) for one channel with a kernel of 3
    # in some direction, oneDNN (fused) for three channels or larger kernels. At 23 taps and
    # sigma 4, the kernel's every weight depends on softmax's lane sum and on linspace's fused
    # steps.
    for kw, kh, sigma, ty, tx, c in [(3, 3, 1.0, 8, 8, 1), (3, 3, 1.0, 8, 8, 3),
                                      (5, 3, 1.0, 8, 5, 1), (5, 5, 2.3, 6, 6, 1),
                                      (23, 23, 4.0, 3, 3, 1)]:
        out.append((near_half_tiles(kw, kh, sigma, ty, tx, c, rng),
                    [(GAUSSIAN_BLUR, kw, kh, sigma)]))
    # Narrow and long, one channel: its padded 3x3 blur input has 20,484 elements, just past the
    # 20,480 at which torch moves a one-channel convolution from im2col + GEMM to oneDNN. Its
    # first three rows hold 3x3 blocks on the rounding edge of sigma 1.
    long = mixed(4, 3412, 1, rng)
    long[:3, :360] = near_half_tiles(3, 3, 1.0, 1, 120, 1, rng)
    out.append((long, [(GAUSSIAN_BLUR, 3, 3, 1.0)]))
    return out


def to_chw(img):
    return torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1)))


def to_hwc(t):
    return np.ascontiguousarray(t.numpy().transpose(1, 2, 0))


def run(op, img, a, b, c):
    t = to_chw(img)
    if op == BRIGHTNESS:
        return F.adjust_brightness(t, a)
    if op == CONTRAST:
        return F.adjust_contrast(t, a)
    if op == SATURATION:
        return F.adjust_saturation(t, a)
    if op == HUE:
        return F.adjust_hue(t, a)
    if op == GRAYSCALE:
        return F.rgb_to_grayscale(t, num_output_channels=t.shape[0])
    if op == SOLARIZE:
        return F.solarize(t, a)
    if op == POSTERIZE:
        return F.posterize(t, int(a))
    if op == EQUALIZE:
        return F.equalize(t)
    if op == AUTOCONTRAST:
        return F.autocontrast(t)
    if op == SHARPNESS:
        return F.adjust_sharpness(t, a)
    if op == INVERT:
        return F.invert(t)
    if op == GAUSSIAN_BLUR:
        return F.gaussian_blur(t, kernel_size=[int(a), int(b)], sigma=[c, c])
    raise ValueError(op)


def f32(v):
    """The magnitude as stoke holds it (a float), handed to torch as that exact value."""
    return float(np.float32(v))


def every_case(img):
    """Every op at every magnitude, and the blurs whose reflect padding fits the image."""
    h, w = img.shape[:2]
    out = [(op, v or 0.0) for op, values in MAGNITUDES.items() for v in values]
    for kw, kh in BLUR_KERNELS:
        if kw // 2 < w and kh // 2 < h:  # torch's reflect padding needs pad < size
            out += [(GAUSSIAN_BLUR, kw, kh, s) for s in BLUR_SIGMAS]
    return out


def cases(imgs):
    for i, (_, chosen) in enumerate(imgs):
        for op, *args in chosen:
            a, b, c = (list(args) + [0, 0, 0])[:3]
            yield i, op, f32(a), f32(b), f32(c)


def main():
    args, capability = golden_writer.parse_args(__doc__, "photometric_golden.bin")

    imgs = images()
    blob = golden_writer.images_blob(b"STPG", [img for img, _ in imgs])
    all_cases = list(cases(imgs))
    blob += struct.pack("<I", len(all_cases))
    for i, op, a, b, c in all_cases:
        out = to_hwc(run(op, imgs[i][0], a, b, c))
        assert out.shape == imgs[i][0].shape and out.dtype == np.uint8
        blob += struct.pack("<Iifff", i, op, a, b, c) + out.tobytes()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(bytes(blob))
    print(f"{args.out}: {len(imgs)} images, {len(all_cases)} cases, {len(blob)} bytes "
          f"(torch {torch.__version__}, torchvision {torchvision.__version__}, {capability})")


if __name__ == "__main__":
    main()
