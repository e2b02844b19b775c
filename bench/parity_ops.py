"""The photometric ops checks of bench/torchvision_parity.py (--checks ops, and timm for timm's
RandAugment and AugMix, replayed in timm's own op functions on Pillow).

For each op (and each recipe's colour step) two loaders run over the same data with the same
seed: one with the base pipeline (random_resized_crop + horizontal_flip) alone, one with the op
appended. The op's draws come after the base's, so the base loader delivers exactly the pixels
the op received. Each sample's applied ops (`batch.applied_ops`: the op, in order, with its drawn
numbers) are replayed in torchvision.transforms.v2.functional on those pixels, as a uint8 CHW
tensor, and compared with what stoke delivered: every byte, the mean absolute difference (must
be at most 1 level) and the largest. The draws themselves are checked to lie in torchvision's
ranges for the step. An AugMix record (("augmix", m0, chains, interpolation, fill), then per
chain ("augmix_chain", weight, ops) and its ops) is replayed as AugMix._forward mixes: each
chain's ops on the pixels AugMix received, with its interpolation and fill, then
m0 * image + weight * chain added in float32 tensors and converted to uint8.
"""

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torchvision.transforms.v2 import functional as F

import stoke

BASE = [("random_resized_crop", 160, 160), ("horizontal_flip",)]

# (label, pipeline steps appended to the base)
OPS = [
    ("color_jitter 0.4 0.4 0.4 0.1", [("color_jitter", 0.4, 0.4, 0.4, 0.1)]),
    ("color_jitter 0.9 0.9 0.9 0.5", [("color_jitter", 0.9, 0.9, 0.9, 0.5)]),
    ("color_jitter 0.4 (brightness)", [("color_jitter", 0.4)]),
    ("grayscale", [("grayscale",)]),
    ("gaussian_blur 5 0.1 2", [("gaussian_blur", 5, 0.1, 2.0)]),
    ("gaussian_blur 23 0.1 2", [("gaussian_blur", 23, 0.1, 2.0)]),
    ("solarize 128", [("solarize", 128)]),
    ("solarize 0", [("solarize", 0)]),
    ("posterize 4", [("posterize", 4)]),
    ("posterize 1", [("posterize", 1)]),
    ("equalize", [("equalize",)]),
    ("autocontrast", [("autocontrast",)]),
    ("adjust_sharpness 2", [("adjust_sharpness", 2)]),
    ("adjust_sharpness 0.3", [("adjust_sharpness", 0.3)]),
    ("invert", [("invert",)]),
    ("trivial_augment_wide", [("trivial_augment_wide",)]),
    ("trivial_augment_wide fill 128", [("trivial_augment_wide", 31, 128)]),
    ("rand_augment 2 9", [("rand_augment", 2, 9)]),
    ("rand_augment 3 15 31 64", [("rand_augment", 3, 15, 31, 64)]),
    ("auto_augment (imagenet)", [("auto_augment",)]),
    ("auto_augment_cifar10", [("auto_augment_cifar10",)]),
    ("auto_augment_svhn fill 200", [("auto_augment_svhn", 200)]),
    ("augmix", ["augmix"]),
    ("augmix interpolation=nearest fill=128 width=2",
     [("augmix", "interpolation=nearest", "fill=128", "width=2")]),
    ("augmix severity=10 depth=3 all_ops=0 alpha=0.5",
     [("augmix", "severity=10", "depth=3", "all_ops=0", "alpha=0.5")]),
    ("random_* chain", [("random_grayscale", 0.3), ("random_solarize", 100, 0.5),
                        ("random_posterize", 3, 0.5), ("random_equalize",),
                        ("random_autocontrast",), ("random_adjust_sharpness", 1.7),
                        ("random_invert", 0.3)]),
    # RandomAffine, nearest and bilinear (its boxes and masks: torchvision_parity.py --checks
    # affine).
    ("random_affine 15", [("random_affine", 15)]),
    ("random_affine -30 30 0.1 0.1 0.8 1.2 -10 10 fill 128",
     [("random_affine", -30, 30, 0.1, 0.1, 0.8, 1.2, -10, 10, 0, 0, 128)]),
    ("random_affine_bilinear -30 30 0.1 0.1 0.8 1.2 -10 10",
     [("random_affine_bilinear", -30, 30, 0.1, 0.1, 0.8, 1.2, -10, 10)]),
    ("random_affine_bilinear -180 180 0.3 0.3 0.5 1.5 -30 30 -20 20 fill 77",
     [("random_affine_bilinear", -180, 180, 0.3, 0.3, 0.5, 1.5, -30, 30, -20, 20, 77)]),
]

def blend_factor(a):
    """The factor a blend op's record stands for: args[0], or where args[1] holds torch's
    1 - factor (the policies' 1 + m, no float32), 1 - args[1] in double, which is 1 + m."""
    return 1.0 - a[1] if a[1] != 0 else a[0]


REPLAY = {
    "brightness": lambda t, a: F.adjust_brightness(t, a[0]),
    "contrast": lambda t, a: F.adjust_contrast(t, blend_factor(a)),
    "saturation": lambda t, a: F.adjust_saturation(t, blend_factor(a)),
    "hue": lambda t, a: F.adjust_hue(t, a[0]),
    "grayscale": lambda t, a: F.rgb_to_grayscale(t, num_output_channels=t.shape[0]),
    "solarize": lambda t, a: F.solarize(t, a[0]),
    "posterize": lambda t, a: F.posterize(t, int(a[0])),
    "equalize": lambda t, a: F.equalize(t),
    "autocontrast": lambda t, a: F.autocontrast(t),
    "sharpness": lambda t, a: F.adjust_sharpness(t, blend_factor(a)),
    "invert": lambda t, a: F.invert(t),
    "gaussian_blur": lambda t, a: F.gaussian_blur(t, [int(a[0]), int(a[1])], [a[2], a[2]]),
}

# The policies' geometric ops, as their _apply_image_or_video_transform calls F.affine and
# F.rotate: nearest (AugMix: its interpolation), fill one level for every channel or None.
NEAREST = F.InterpolationMode.NEAREST


def _fill(t, level):
    return None if level is None else [level] * t.shape[0]


WARPS = {
    "affine": lambda t, a, mode: F.affine(t, angle=a[0], translate=[a[1], a[2]], scale=a[3],
                                          shear=[a[4], a[5]], interpolation=mode,
                                          fill=_fill(t, a[6])),
    "affine_at_origin": lambda t, a, mode: F.affine(t, angle=a[0], translate=[a[1], a[2]],
                                                    scale=a[3], shear=[a[4], a[5]],
                                                    interpolation=mode, fill=_fill(t, a[6]),
                                                    center=[0, 0]),
    "rotate": lambda t, a, mode: F.rotate(t, angle=a[0], interpolation=mode, fill=_fill(t, a[1])),
    # random_affine_bilinear: RandomAffine(interpolation=BILINEAR)'s call.
    "affine_bilinear": lambda t, a, mode: F.affine(t, angle=a[0], translate=[a[1], a[2]],
                                                   scale=a[3], shear=[a[4], a[5]],
                                                   interpolation=F.InterpolationMode.BILINEAR,
                                                   fill=_fill(t, a[6])),
    # What the policies' ShearX / ShearY call, their degrees(atan(m)) in Python's double.
    "shear": lambda t, a, mode: F.affine(
        t, angle=0.0, translate=[0, 0], scale=1.0,
        shear=[math.degrees(math.atan(a[0])), 0.0] if a[1] == 0 else
        [0.0, math.degrees(math.atan(a[0]))],
        interpolation=mode, fill=_fill(t, a[2]), center=[0, 0]),
}


@dataclass
class OpTally:
    samples: int = 0
    bytes: int = 0
    differing: int = 0
    abs_sum: int = 0
    worst: int = 0
    ops: dict = field(default_factory=dict)  # op name -> times applied
    mismatches: list = field(default_factory=list)


def loader(data, steps, seed):
    return stoke.Loader(data, batch=16, devices="cpu:1", workers=2, size=(160, 160),
                        pipeline=steps, seed=seed, shuffle=True, on_error="error",
                        dtype="uint8", layout="nhwc")


def replay_op(t, op, mode=NEAREST):
    name, *numbers = op
    return WARPS[name](t, numbers, mode) if name in WARPS else REPLAY[name](t, numbers)


def replay_augmix(t, ops, i):
    """The AugMix record at ops[i], as AugMix._forward mixes: returns the mix and the index after
    the record."""
    _, m0, chains, interpolation, _ = ops[i]
    mode = F.InterpolationMode(interpolation)
    mix = torch.tensor(m0, dtype=torch.float32) * t
    i += 1
    for _ in range(chains):
        _, weight, count = ops[i]
        aug = t
        for op in ops[i + 1:i + 1 + count]:
            aug = replay_op(aug, op, mode)
        mix.add_(torch.tensor(weight, dtype=torch.float32) * aug)
        i += 1 + count
    return mix.to(torch.uint8), i


def replay(src_hwc, ops):
    t = torch.from_numpy(src_hwc).permute(2, 0, 1).contiguous()
    i = 0
    while i < len(ops):
        if ops[i][0] == "augmix":
            t, i = replay_augmix(t, ops, i)
        else:
            t = replay_op(t, ops[i])
            i += 1
    return t.permute(1, 2, 0).numpy()


def paired_samples(base, other, epochs):
    """Each valid sample of `epochs` of two loaders of one seed: (epoch, batch index, sample,
    the base's output, the other's output, the other's applied ops)."""
    for epoch in range(epochs):
        base.set_epoch(epoch)
        other.set_epoch(epoch)
        for b, w in zip(base, other):
            src = np.from_dlpack(b.pixels[0])
            got = np.from_dlpack(w.pixels[0])
            valid = np.from_dlpack(w.valid)
            for i, ops in enumerate(w.applied_ops):
                if valid[i]:
                    yield epoch, w.index, i, src[i], got[i], ops


def check_op(data, steps, epochs, seed, replay=replay):
    t = OpTally()
    base, with_op = loader(data, BASE, seed), loader(data, BASE + steps, seed)
    for epoch, index, i, src, got, ops in paired_samples(base, with_op, epochs):
        for name, *_ in ops:
            t.ops[name] = t.ops.get(name, 0) + 1
        want = replay(src.copy(), ops)
        diff = np.abs(want.astype(np.int16) - got.astype(np.int16))
        t.samples += 1
        t.bytes += diff.size
        t.differing += int(np.count_nonzero(diff))
        t.abs_sum += int(diff.sum())
        t.worst = max(t.worst, int(diff.max()))
        if diff.mean() > 1.0:
            t.mismatches.append(f"epoch {epoch} batch {index} sample {i} {ops}: mean "
                                f"{diff.mean():.3f} levels")
    return t


HEADER = ("| op | samples | ops applied | bytes differing | mean abs diff | max |\n"
          "|---|---|---|---|---|---|")


def check_ops(data, epochs, seed, ops=OPS, replay=replay, exact=False):
    """The table rows and the disagreements (a sample more than 1 level off on average; with
    `exact`, any byte that differs)."""
    rows, problems = [], []
    for label, steps in ops:
        t = check_op(data, steps, epochs, seed, replay)
        applied = ", ".join(f"{k} {v}" for k, v in sorted(t.ops.items()))
        mean = t.abs_sum / max(t.bytes, 1)
        rows.append(f"| {label} | {t.samples} | {applied} | {t.differing} of {t.bytes} | "
                    f"{mean:.4f} | {t.worst} |")
        print(rows[-1], flush=True)
        problems += [f"{label}: {m}" for m in t.mismatches]
        if exact and t.differing:
            problems.append(f"{label}: {t.differing} bytes differ")
        if t.samples == 0:
            problems.append(f"{label}: no samples")
    return rows, problems


# --- timm's RandAugment and AugMix, replayed in timm's own op functions -----------------------

# DeiT's RandAugment (bicubic, create_transform's ImageNet-mean fill: stoke's default) and
# AugMix as create_transform builds it (random filter, translate_pct 0.3).
TIMM_OPS = [
    ("timm rand-m9-mstd0.5-inc1 bicubic",
     [("timm_augment", "rand-m9-mstd0.5-inc1", "interpolation=bicubic")]),
    ("timm rand-m9-mstd0.5 (random filter)", [("timm_augment", "rand-m9-mstd0.5")]),
    ("timm augmix-m5-w3", [("timm_augment", "augmix-m5-w3")]),
    ("timm augmix-m5-w3-b1 (blended)", [("timm_augment", "augmix-m5-w3-b1")]),
]


def _timm():
    from timm.data import auto_augment as aa
    return aa


def _timm_warp(fn):
    return lambda img, a: fn(img, a[0], resample=a[1], fillcolor=tuple(a[2]))


def _posterize(img, bits):
    """timm's posterize; 0 bits and fewer as Pillow 12's ImageOps.posterize made them (every
    value masked to 0): Pillow 13's raises there."""
    if bits <= 0:
        return img.point([0] * 768)
    return _timm().posterize(img, bits)


def timm_replay_table():
    aa = _timm()
    return {
        "pil_autocontrast": lambda img, a: aa.auto_contrast(img),
        "pil_equalize": lambda img, a: aa.equalize(img),
        "pil_invert": lambda img, a: aa.invert(img),
        "pil_posterize": lambda img, a: _posterize(img, a[0]),
        "pil_solarize": lambda img, a: aa.solarize(img, a[0]),
        "pil_solarize_add": lambda img, a: aa.solarize_add(img, a[0], a[1]),
        "pil_color": lambda img, a: aa.color(img, a[0]),
        "pil_contrast": lambda img, a: aa.contrast(img, a[0]),
        "pil_brightness": lambda img, a: aa.brightness(img, a[0]),
        "pil_sharpness": lambda img, a: aa.sharpness(img, a[0]),
        "pil_rotate": _timm_warp(aa.rotate),
        "pil_shear_x": _timm_warp(aa.shear_x),
        "pil_shear_y": _timm_warp(aa.shear_y),
        "pil_translate_x_rel": _timm_warp(aa.translate_x_rel),
        "pil_translate_y_rel": _timm_warp(aa.translate_y_rel),
    }


def replay_timm(src_hwc, ops):
    """A sample's timm ops in timm's functions on a PIL image; AugMix's chains combined as
    AugMixAugment._apply_basic (float32 sum, clip, truncate, Image.blend) or, blended,
    _apply_blended (Image.blend per chain) combines them."""
    from PIL import Image
    table = timm_replay_table()
    img = Image.fromarray(src_hwc)
    i = 0
    while i < len(ops):
        name, *a = ops[i]
        if name != "timm_augmix_chain":
            img = table[name](img, a)
            i += 1
            continue
        src, blended, start = img, a[3], True
        mixed = np.zeros_like(np.asarray(img), dtype=np.float32)
        while i < len(ops) and ops[i][0] == "timm_augmix_chain" and (start or ops[i][3] != 0):
            start = False
            _, weight, count, _, _ = ops[i]
            aug = src
            for name2, *a2 in ops[i + 1:i + 1 + count]:
                aug = table[name2](aug, a2)
            if blended:
                img = Image.blend(img, aug, float(np.float32(weight)))
            else:
                mixed += np.float32(weight) * np.asarray(aug, dtype=np.float32)
            i += 1 + count
        if not blended and i < len(ops) and ops[i][0] == "timm_augmix_blend":
            np.clip(mixed, 0, 255., out=mixed)
            img = Image.blend(src, Image.fromarray(mixed.astype(np.uint8)), float(ops[i][1]))
            i += 1
    return np.asarray(img)


def check_timm_ops(data, epochs, seed):
    """timm's policies: every byte must match."""
    return check_ops(data, epochs, seed, TIMM_OPS, replay_timm, exact=True)


# --- The policies' distributions against torchvision's own classes ---------------------------

def _category_of_torchvision(transform_id, m):
    """What torchvision's _apply_image_or_video_transform calls for (transform_id, magnitude),
    as a hashable category (written from its source, independently of stoke's)."""
    if transform_id == "Identity":
        return ("identity",)
    if transform_id == "ShearX":
        return ("affine_at_origin", round(math.degrees(math.atan(m)), 3), 0.0)
    if transform_id == "ShearY":
        return ("affine_at_origin", 0.0, round(math.degrees(math.atan(m)), 3))
    if transform_id == "TranslateX":
        return ("affine", int(m), 0)
    if transform_id == "TranslateY":
        return ("affine", 0, int(m))
    if transform_id == "Rotate":
        return ("rotate", round(m, 3))
    factor = {"Brightness": "brightness", "Color": "saturation", "Contrast": "contrast",
              "Sharpness": "sharpness"}
    if transform_id in factor:
        return (factor[transform_id], round(1.0 + m, 4))
    if transform_id == "Posterize":
        return ("posterize", int(m))
    if transform_id == "Solarize":  # the smallest level it inverts, compared in float32
        return ("solarize", math.ceil(np.float32(255.0 * m)))
    return ({"AutoContrast": "autocontrast", "Equalize": "equalize",
             "Invert": "invert"}[transform_id],)


def _category_of_stoke(op):
    """None for AugMix's head and chain markers, which torchvision applies nothing for."""
    name, *a = op
    if name in ("augmix", "augmix_chain"):
        return None
    if name == "shear":
        deg = round(math.degrees(math.atan(a[0])), 3) + 0.0
        return ("affine_at_origin", deg, 0.0) if a[1] == 0 else ("affine_at_origin", 0.0, deg)
    if name == "affine_at_origin":
        return (name, round(a[4], 3) + 0.0, round(a[5], 3) + 0.0)
    if name == "affine":
        return (name, int(a[1]), int(a[2]))
    if name == "rotate":
        return (name, round(a[0], 3))
    if name in ("brightness", "saturation", "contrast", "sharpness"):
        return (name, round(a[0], 4))
    if name in ("posterize", "solarize"):
        return (name, int(a[0]))
    return (name,)


def torchvision_policy_counts(transform, draws, size):
    """Category counts of `draws` calls of a torchvision policy class on a size x size image,
    recording what it would apply instead of applying it."""
    counts = {}

    def record(image, transform_id, magnitude, interpolation, fill):
        c = _category_of_torchvision(transform_id, magnitude)
        counts[c] = counts.get(c, 0) + 1
        return image

    transform._apply_image_or_video_transform = record
    image = torch.zeros(3, size, size, dtype=torch.uint8)
    for _ in range(draws):
        transform(image)
    return counts


def stoke_policy_counts(data, step, ops_per_sample, epochs, size):
    """Category counts of stoke's applied ops over `epochs` of Fashion-MNIST's test split,
    upscaled to size x size; ops a sample did not get (TrivialAugmentWide's and RandAugment's
    Identity) counted as identity."""
    counts, samples = {}, 0
    for ops in fashion_applied_ops(data, step, epochs, size):
        samples += 1
        for op in ops:
            c = _category_of_stoke(op)
            if c is not None:
                counts[c] = counts.get(c, 0) + 1
        if ops_per_sample:
            missing = ops_per_sample - len(ops)
            counts[("identity",)] = counts.get(("identity",), 0) + missing
    return counts, samples


def fashion_applied_ops(data, step, epochs, size, dtype="uint8"):
    """Each valid sample's applied ops over `epochs` of Fashion-MNIST's test split, upscaled to
    size x size RGB and then given `step`."""
    loader = stoke.Loader(data, batch=500, devices="cpu:1", workers=2, size=(size, size),
                          split="test", seed=1, pipeline=[("resize", size, size), step],
                          channels=3, dtype=dtype)
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for b in loader:
            valid = np.from_dlpack(b.valid)
            for i, ops in enumerate(b.applied_ops):
                if valid[i]:
                    yield ops


def two_sample_chi_square(a, b, min_count=10):
    """Chi-square statistic, degrees of freedom and p-value of two category counts coming from
    one distribution (categories with fewer than min_count together are pooled)."""
    na, nb = sum(a.values()), sum(b.values())
    ka, kb = math.sqrt(nb / na), math.sqrt(na / nb)
    chi2, cells, pooled_a, pooled_b = 0.0, 0, 0, 0
    for c in set(a) | set(b):
        x, y = a.get(c, 0), b.get(c, 0)
        if x + y < min_count:
            pooled_a, pooled_b = pooled_a + x, pooled_b + y
            continue
        chi2 += (ka * x - kb * y) ** 2 / (x + y)
        cells += 1
    if pooled_a + pooled_b > 0:
        chi2 += (ka * pooled_a - kb * pooled_b) ** 2 / (pooled_a + pooled_b)
        cells += 1
    df = max(cells - 1, 1)
    p = float(torch.special.gammaincc(torch.tensor(df / 2.0, dtype=torch.float64),
                                      torch.tensor(chi2 / 2.0, dtype=torch.float64)))
    return chi2, df, p


POLICY_HEADER = ("| policy | stoke ops (samples) | torchvision ops (draws) | categories | chi-square "
                 "(df) | p |\n|---|---|---|---|---|---|")


def check_policy_distributions(fashion, epochs, size=32):
    """One row per policy; a problem when p <= 0.01."""
    from torchvision.transforms import v2
    policies = [
        ("trivial_augment_wide", ("trivial_augment_wide",), 1, v2.TrivialAugmentWide()),
        ("rand_augment 2 9", ("rand_augment", 2, 9), 2, v2.RandAugment(2, 9)),
        ("auto_augment imagenet", ("auto_augment",), 0,
         v2.AutoAugment(v2.AutoAugmentPolicy.IMAGENET)),
        ("auto_augment_cifar10", ("auto_augment_cifar10",), 0,
         v2.AutoAugment(v2.AutoAugmentPolicy.CIFAR10)),
        ("auto_augment_svhn", ("auto_augment_svhn",), 0, v2.AutoAugment(v2.AutoAugmentPolicy.SVHN)),
        ("augmix", "augmix", 0, v2.AugMix()),
        ("augmix severity=10 all_ops=0 depth=2", ("augmix", "severity=10", "all_ops=0", "depth=2"),
         0, v2.AugMix(severity=10, all_ops=False, chain_depth=2)),
    ]
    rows, problems = [], []
    for label, step, per_sample, transform in policies:
        ours, samples = stoke_policy_counts(fashion, step, per_sample, epochs, size)
        theirs = torchvision_policy_counts(transform, samples, size)
        chi2, df, p = two_sample_chi_square(ours, theirs)
        rows.append(f"| {label} | {sum(ours.values())} ({samples}) | {sum(theirs.values())} "
                    f"({samples}) | {len(set(ours) | set(theirs))} | {chi2:.1f} ({df}) | {p:.3f} |")
        print(rows[-1], flush=True)
        if p <= 0.01:
            problems.append(f"{label}: stoke's draws differ from torchvision's (p = {p:.4f})")
    return rows, problems


# --- random_erasing: the op on the normalized image, and its rectangles' distribution ---------

ERASING = [
    ("random_erasing 0.5 (value 0)", ("random_erasing", 0.5)),
    ("random_erasing 1 0.1 0.5 0.5 2 (values -1 0.5 2)",
     ("random_erasing", 1.0, 0.1, 0.5, 0.5, 2.0, -1.0, 0.5, 2.0)),
    ("random_erasing_pixel 0.25", ("random_erasing_pixel", 0.25)),
    ("random_erasing_color 0.5", ("random_erasing_color", 0.5)),
]

ERASING_HEADER = ("| step | samples | erased | values compared | differing | noise mean, std |\n"
                  "|---|---|---|---|---|---|")


def normalized_loader(data, steps, seed):
    return stoke.Loader(data, batch=16, devices="cpu:1", workers=2, size=(160, 160),
                        pipeline=steps, seed=seed, shuffle=True, on_error="error",
                        dtype="float32", layout="nchw")


def check_erasing_op(data, label, step, epochs, seed):
    """stoke's float output against F.erase on the same normalized image (the base pipeline's
    output) with the recorded rectangle and values: exact for constants; outside the rectangle
    exact and inside N(0, 1) for noise."""
    base, erased = normalized_loader(data, BASE, seed), normalized_loader(data, BASE + [step], seed)
    samples = hits = compared = differing = 0
    noise = []
    for _, _, i, src, got, ops in paired_samples(base, erased, epochs):
        samples += 1
        want = torch.from_numpy(src.copy())
        inside = np.zeros(want.shape[1:], bool)
        for name, top, left, h, wd, *rest in ops:
            hits += 1
            if name == "erase":
                want = F.erase(want, top, left, h, wd, torch.tensor(rest)[:, None, None])
            else:
                inside[top:top + h, left:left + wd] = True
                noise.append(got[:, inside].ravel())
        if inside.any():  # noise: only the values outside are known
            compared += int((~inside).sum()) * got.shape[0]
            differing += int(np.count_nonzero(got[:, ~inside] != src[:, ~inside]))
        else:
            compared += got.size
            differing += int(np.count_nonzero(got != want.numpy()))
    stats = "-"
    if noise:
        values = np.concatenate(noise)
        stats = f"{values.mean():+.4f}, {values.std():.4f} ({values.size} values)"
    row = f"| {label} | {samples} | {hits} | {compared} | {differing} | {stats} |"
    return row, differing, samples


def torchvision_erasing_counts(transform, draws, size):
    """What torchvision's RandomErasing draws on a size x size image `draws` times: its
    probability check, then make_params."""
    counts = {}
    image = torch.zeros(3, size, size)
    for _ in range(draws):
        if torch.rand(1) >= transform.p:
            key = ("none",)
        else:
            params = transform.make_params([image])
            key = ("none",) if params["v"] is None else (params["h"], params["w"])
            if key != ("none",):
                _count_position(counts, params["i"], params["j"], params["h"], params["w"], size)
        counts[key] = counts.get(key, 0) + 1
    return counts


def _count_position(counts, i, j, h, w, size, bins=4):
    key = ("at", i * bins // (size - h + 1), j * bins // (size - w + 1))
    counts[key] = counts.get(key, 0) + 1


def stoke_erasing_counts(fashion, step, epochs, size):
    counts, samples = {}, 0
    for ops in fashion_applied_ops(fashion, step, epochs, size, dtype="float32"):
        samples += 1
        key = ("none",)
        for name, top, left, h, w, *_ in ops:
            key = (h, w)
            _count_position(counts, top, left, h, w, size)
        counts[key] = counts.get(key, 0) + 1
    return counts, samples


def check_erasing(photos, fashion, epochs, policy_epochs, seed, size=32):
    """The op rows, the distribution rows and the problems (a differing value, or p <= 0.01)."""
    from torchvision.transforms import v2
    rows, problems = [], []
    for label, step in ERASING:
        row, differing, samples = check_erasing_op(photos, label, step, epochs, seed)
        rows.append(row)
        print(row, flush=True)
        if differing or samples == 0:
            problems.append(f"{label}: {differing} values differ from F.erase's ({samples} samples)")
    dist_rows = []
    for label, step, transform in [
            ("random_erasing 0.5", ("random_erasing", 0.5), v2.RandomErasing(0.5)),
            ("random_erasing 1 0.1 0.5 0.5 2", ("random_erasing", 1.0, 0.1, 0.5, 0.5, 2.0),
             v2.RandomErasing(1.0, (0.1, 0.5), (0.5, 2.0)))]:
        ours, samples = stoke_erasing_counts(fashion, step, policy_epochs, size)
        theirs = torchvision_erasing_counts(transform, samples, size)
        chi2, df, p = two_sample_chi_square(ours, theirs)
        dist_rows.append(f"| {label} | {samples} | {len(set(ours) | set(theirs))} | "
                         f"{chi2:.1f} ({df}) | {p:.3f} |")
        print(dist_rows[-1], flush=True)
        if p <= 0.01:
            problems.append(f"{label}: stoke's rectangles differ from torchvision's (p = {p:.4f})")
    return rows, dist_rows, problems


ERASING_DIST_HEADER = ("| step | draws (each side) | categories (size, place) | chi-square (df) "
                       "| p |\n|---|---|---|---|---|")
