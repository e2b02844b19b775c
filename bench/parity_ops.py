"""The photometric ops check of bench/torchvision_parity.py (--checks ops).

For each op (and each recipe's colour step) two loaders run over the same data with the same
seed: one with the base pipeline (random_resized_crop + horizontal_flip) alone, one with the op
appended. The op's draws come after the base's, so the base loader delivers exactly the pixels
the op received. Each sample's applied ops (`batch.applied_ops`: the op, in order, with its drawn
numbers) are replayed in torchvision.transforms.v2.functional on those pixels, as a uint8 CHW
tensor, and compared with what stoke delivered: every byte, the mean absolute difference (must
be at most 1 level) and the largest. The draws themselves are checked to lie in torchvision's
ranges for the step.
"""

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
    ("random_* chain", [("random_grayscale", 0.3), ("random_solarize", 100, 0.5),
                        ("random_posterize", 3, 0.5), ("random_equalize",),
                        ("random_autocontrast",), ("random_adjust_sharpness", 1.7),
                        ("random_invert", 0.3)]),
]

REPLAY = {
    "brightness": lambda t, a: F.adjust_brightness(t, a[0]),
    "contrast": lambda t, a: F.adjust_contrast(t, a[0]),
    "saturation": lambda t, a: F.adjust_saturation(t, a[0]),
    "hue": lambda t, a: F.adjust_hue(t, a[0]),
    "grayscale": lambda t, a: F.rgb_to_grayscale(t, num_output_channels=t.shape[0]),
    "solarize": lambda t, a: F.solarize(t, a[0]),
    "posterize": lambda t, a: F.posterize(t, int(a[0])),
    "equalize": lambda t, a: F.equalize(t),
    "autocontrast": lambda t, a: F.autocontrast(t),
    "sharpness": lambda t, a: F.adjust_sharpness(t, a[0]),
    "invert": lambda t, a: F.invert(t),
    "gaussian_blur": lambda t, a: F.gaussian_blur(t, [int(a[0]), int(a[1])], [a[2], a[2]]),
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


def replay(src_hwc, ops):
    t = torch.from_numpy(src_hwc).permute(2, 0, 1).contiguous()
    for name, *numbers in ops:
        t = REPLAY[name](t, numbers)
    return t.permute(1, 2, 0).numpy()


def check_op(data, steps, epochs, seed):
    t = OpTally()
    base, with_op = loader(data, BASE, seed), loader(data, BASE + steps, seed)
    for epoch in range(epochs):
        base.set_epoch(epoch)
        with_op.set_epoch(epoch)
        for b, w in zip(base, with_op):
            src = np.from_dlpack(b.pixels[0])
            got = np.from_dlpack(w.pixels[0])
            valid = np.from_dlpack(w.valid)
            for i, ops in enumerate(w.applied_ops):
                if not valid[i]:
                    continue
                for name, *_ in ops:
                    t.ops[name] = t.ops.get(name, 0) + 1
                want = replay(src[i].copy(), ops)
                diff = np.abs(want.astype(np.int16) - got[i].astype(np.int16))
                t.samples += 1
                t.bytes += diff.size
                t.differing += int(np.count_nonzero(diff))
                t.abs_sum += int(diff.sum())
                t.worst = max(t.worst, int(diff.max()))
                if diff.mean() > 1.0:
                    t.mismatches.append(f"epoch {epoch} batch {w.index} sample {i} {ops}: mean "
                                        f"{diff.mean():.3f} levels")
    return t


HEADER = ("| op | samples | ops applied | bytes differing | mean abs diff | max |\n"
          "|---|---|---|---|---|---|")


def check_ops(data, epochs, seed):
    """The table rows and the disagreements (a sample more than 1 level off on average)."""
    rows, problems = [], []
    for label, steps in OPS:
        t = check_op(data, steps, epochs, seed)
        applied = ", ".join(f"{k} {v}" for k, v in sorted(t.ops.items()))
        mean = t.abs_sum / max(t.bytes, 1)
        rows.append(f"| {label} | {t.samples} | {applied} | {t.differing} of {t.bytes} | "
                    f"{mean:.4f} | {t.worst} |")
        print(rows[-1], flush=True)
        problems += [f"{label}: {m}" for m in t.mismatches]
        if t.samples == 0:
            problems.append(f"{label}: no samples")
    return rows, problems
