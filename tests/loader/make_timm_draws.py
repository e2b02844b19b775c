"""Writes tests/data/timm_draws.txt: what timm's own RandAugment and AugMixAugment classes draw,
counted over many calls, for timm_augment_test.cpp to compare stoke's draws with (a two-sample
chi-square) without needing timm.

Each class is built by timm's rand_augment_transform / augment_and_mix_transform from the config
string, with the hparams stoke's defaults stand for (create_transform's translate_pct and fill,
the interpolation given). Nothing is applied to an image: each AugmentOp's op function is
replaced by a recorder, so the class draws exactly what it draws in training (its choices, each
op's coin, magnitude noise, the level function's sign through timm's own _randomly_negate, and
the warps' filter through timm's own _check_args_tf), and AugMixAugment's _apply_basic by its own
loop without the pixel arithmetic, which records the float32 weights, m and each chain's depth.

Lines: the config string and its interpolation (random, bilinear or bicubic), a tab, the
category, a tab, its count. Categories are the words timm_augment_test.cpp forms from stoke's
draws:
    op NAME SIGN FILTER BIN    an applied op: timm's op name, '-' / '+' / '.' (negated, not,
                               no sign drawn), Pillow's filter number (0 for non-warps), the
                               magnitude's quarter floor(4 m) (the upper bound's clipped mass
                               has a bin of its own)
    applied K                  a RandAugment call that applied K of its n ops
    depth D                    an AugMix chain of D ops
    w0 BIN, m BIN              AugMix's first weight and m, in tenths

Run with the parity environment (timm 1.0, numpy):
    /work/parity-venv/bin/python tests/loader/make_timm_draws.py [OUT]
"""

import argparse
import math
import pathlib
import random
from collections import Counter

import numpy as np
from PIL import Image
from timm.data import auto_augment as aa

CALLS = 200000

# (config, interpolation or None for random): stoke's timm_augment defaults otherwise.
CONFIGS = [
    ("rand-m9-mstd0.5-inc1", "bicubic"),
    ("rand-m9-mstd0.5", None),
    ("rand-m15-n3-p0.8-mstd101-mmax12", "bilinear"),
    ("augmix-m5-w3", None),
    ("augmix-m3-w4-d2-a0.5-mstd0.5", "bicubic"),
]
INTERPOLATION = {"bilinear": Image.Resampling.BILINEAR, "bicubic": Image.Resampling.BICUBIC}
WARPS = {"Rotate", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel"}


def magnitude_bin(m):
    return int(math.floor(4 * m))


def build(config, interpolation):
    hparams = dict(translate_const=100, img_mean=(124, 116, 104))
    if interpolation:
        hparams["interpolation"] = INTERPOLATION[interpolation]
    if config.startswith("augmix"):
        hparams["translate_pct"] = 0.3
        return aa.augment_and_mix_transform(config, hparams)
    return aa.rand_augment_transform(config, hparams)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", nargs="?",
                   default=str(pathlib.Path(__file__).parents[1] / "data" / "timm_draws.txt"))
    args = p.parse_args()
    random.seed(20261202)
    np.random.seed(20261202)
    lines = []
    for config, interpolation in CONFIGS:
        counts = Counter()
        transform = build(config, interpolation)
        state = {}

        original_negate = aa._randomly_negate

        def negate(v):
            out = original_negate(v)
            state["sign"] = "-" if out != v or (v == 0 and math.copysign(1, out) < 0) else "+"
            return out

        aa._randomly_negate = negate
        for op in transform.ops:
            def record(img, *level_args, _op=op, **kwargs):
                flt = 0
                if _op.name in WARPS:
                    aa._check_args_tf(kwargs)  # draws random.choice of the filters as timm does
                    flt = int(kwargs["resample"])
                counts[("op", _op.name, state.pop("sign", "."), flt,
                        magnitude_bin(state.pop("magnitude")))] += 1
                state["applied"] = state.get("applied", 0) + 1
                return img

            level_fn = op.level_fn

            def level(magnitude, hparams, _fn=level_fn):
                state["magnitude"] = magnitude
                return _fn(magnitude, hparams) if _fn is not None else ()

            op.aug_fn = record
            op.level_fn = level

        if isinstance(transform, aa.AugMixAugment):
            def apply_basic(img, mixing_weights, m, _t=transform):
                counts[("w0", int(mixing_weights[0] * 10))] += 1
                counts[("m", int(m * 10))] += 1
                for _ in mixing_weights:
                    depth = _t.depth if _t.depth > 0 else np.random.randint(1, 4)
                    counts[("depth", depth)] += 1
                    for op in np.random.choice(_t.ops, depth, replace=True):
                        op(img)
                return img

            transform._apply_basic = apply_basic
        image = Image.new("RGB", (8, 8))
        for _ in range(CALLS):
            state["applied"] = 0
            transform(image)
            if not isinstance(transform, aa.AugMixAugment):
                counts[("applied", state["applied"])] += 1
        aa._randomly_negate = original_negate
        for key, n in sorted(counts.items(), key=lambda kv: [str(x) for x in kv[0]]):
            lines.append("\t".join([f"{config} {interpolation or 'random'}",
                                    " ".join(str(x) for x in key), str(n)]))
        print(f"{config}: {len(counts)} categories over {CALLS} calls", flush=True)
    header = [f"# timm's draws over {CALLS} calls per config (tests/loader/make_timm_draws.py)"]
    pathlib.Path(args.out).write_text("\n".join(header + lines) + "\n")


if __name__ == "__main__":
    main()
