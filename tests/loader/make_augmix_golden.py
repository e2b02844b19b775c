"""Writes tests/data/augmix_golden.bin: small uint8 images, AugMix draws (the mixing weights,
each chain's ops, bins and signs) and what torchvision.transforms.v2.AugMix returns for each
when it is handed those draws. augmix_test.cpp builds stoke's record from the same draws and
checks the mix byte for byte without needing torch.

torchvision's AugMix draws from torch's generator; stoke draws from the sample's own, so parity
is "the same draws give the same bytes". The script feeds its draws to torchvision's own
AugMix._forward: _sample_dirichlet returns [m0, m1] and then the chains' Dirichlet weights
(which AugMix multiplies by m1 itself), _get_random_item the op, and torch.randint and
torch.rand, while it runs, the depth, the bin and the sign. The cases cover both
interpolations, fill None, 0 and 128, all_ops on and off, every severity, widths 1 to 4, drawn
and fixed depths, and alphas from 0.2 to 5, on gray and RGB images from 1x1 to 40x48.

Alongside torch, the script mixes torchvision's own chains in numpy as augmix.cpp does (float32
products, then adds, in chain order, truncated) and as the alternatives it rejects do; it stops
unless the model gives torch's bytes on every case and every alternative misses some, and
prints how many each misses.

Run with the parity environment (torch 2.15, torchvision 0.29.2):
    /work/parity-venv/bin/python tests/loader/make_augmix_golden.py [OUT]

The chains' ops are those of make_photometric_golden.py and make_bilinear_golden.py, whose
committed files were made on an AVX-512 machine; the script refuses another unless --any-cpu.

File layout, all integers little-endian:
    "STAM" u32 version=1
    u32 image_count, then per image: u32 height, u32 width, u32 channels, height*width*channels
        bytes (rows of interleaved pixels, no padding)
    u32 case_count, then per case: u32 image, u32 interpolation (0 nearest, 1 bilinear),
        u32 all_ops, u32 severity, f32 alpha, f32 fill (-1 for None), f32 m0, f32 m1,
        u32 chains, then per chain: f32 weight (the Dirichlet draw before AugMix multiplies it
        by m1), u32 ops, then per op: u32 index in AugMix's op space (torchvision's key order),
        i32 bin (-1 for the ops without magnitudes), u32 negative; then u32 label length, the
        label (ASCII), and torch's output in the layout of its image
"""

import contextlib
import math
import struct
import sys

import numpy as np
import torch
import torchvision
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as F

import golden_writer

SPACE = list(v2.AugMix._AUGMENTATION_SPACE)  # ShearX, ..., Sharpness: 13 ops
PARTIAL = len(v2.AugMix._PARTIAL_AUGMENTATION_SPACE)
NO_FILL = -1.0


def to_chw(img):
    return torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1)))


def to_hwc(t):
    return np.ascontiguousarray(t.numpy().transpose(1, 2, 0))


class Draws:
    """One sample's AugMix draws: m0 and m1 (float32), and per chain its Dirichlet weight and
    its ops as (space index, bin or -1, negative)."""

    def __init__(self, m0, m1, chains):
        self.m0, self.m1, self.chains = m0, m1, chains


class Replayed(v2.AugMix):
    """torchvision's AugMix handed `draws` in the order _forward asks for them."""

    def __init__(self, draws, **kwargs):
        super().__init__(**kwargs)
        self.dirichlet = [torch.tensor([[draws.m0, draws.m1]], dtype=torch.float32),
                          torch.tensor([[w for w, _ in draws.chains]], dtype=torch.float32)]
        self.ops = [op for _, ops in draws.chains for op in ops]
        self.depths = [len(ops) for _, ops in draws.chains]
        self.pending = []  # what torch.randint and torch.rand return next

    def _sample_dirichlet(self, params):
        return self.dirichlet.pop(0)

    def _get_random_item(self, dct):
        index, bin_, negative = self.ops.pop(0)
        key = SPACE[index]
        assert key in dct, (key, list(dct))
        magnitudes = dct[key][0](self._PARAMETER_MAX, 1, 1)
        if magnitudes is not None:
            self.pending.append(("randint", bin_))
            if dct[key][1]:
                self.pending.append(("rand", 0.25 if negative else 0.75))
        return key, dct[key]

    @contextlib.contextmanager
    def scripted(self):
        randint, rand = torch.randint, torch.rand

        def fake_randint(*args, **kwargs):
            if kwargs.get("low") == 1 and kwargs.get("high") == 4:  # a chain's depth
                return torch.tensor([self.depths.pop(0)])
            kind, value = self.pending.pop(0)
            assert kind == "randint" and args[0] == self.severity, (kind, args)
            return torch.tensor(value)

        def fake_rand(*args, **kwargs):
            kind, value = self.pending.pop(0)
            assert kind == "rand", kind
            return torch.tensor(value)
        torch.randint, torch.rand = fake_randint, fake_rand
        try:
            yield
        finally:
            torch.randint, torch.rand = randint, rand


def torch_augmix(img, case):
    fill = None if case["fill"] == NO_FILL else case["fill"]
    t = Replayed(case["draws"], severity=case["severity"], mixture_width=len(case["draws"].chains),
                 chain_depth=case["depth"], alpha=case["alpha"], all_ops=case["all_ops"],
                 interpolation=case["interpolation"], fill=fill)
    with t.scripted():
        out = t(to_chw(img))
    assert not t.ops and not t.pending and not t.dirichlet, "draws left over"
    return to_hwc(out)


# The model: torchvision's chains (each op as _apply_image_or_video_transform calls it) mixed
# in numpy.

def float32_primitive(t, key, magnitude):
    """The blends and the solarize of a policy op called with float32 numbers: the factor
    1 + m rounded (so that 1 - factor is no longer -m) and the threshold ceil(255 m) (torch
    compares in float32, where 255 m can round down to a whole level); None for other ops."""
    factor = float(np.float32(1.0 + magnitude))
    blends = {"Color": F.adjust_saturation, "Contrast": F.adjust_contrast,
              "Sharpness": F.adjust_sharpness}
    if key in blends:
        return blends[key](t, factor)
    if key == "Solarize":
        return F.solarize(t, threshold=float(math.ceil(255.0 * magnitude)))
    return None


def chain_images(img, case, variant=None):
    """Each chain's image, from torchvision's AugMix op by op."""
    aug = v2.AugMix(interpolation=case["interpolation"],
                    fill=None if case["fill"] == NO_FILL else case["fill"])
    h, w = img.shape[:2]
    out = []
    for _, ops in case["draws"].chains:
        t = to_chw(img)
        for index, bin_, negative in ops:
            fn, signed = aug._AUGMENTATION_SPACE[SPACE[index]]
            magnitudes = fn(aug._PARAMETER_MAX, h, w)
            magnitude = 0.0 if magnitudes is None else float(magnitudes[bin_])
            if signed and negative:
                magnitude *= -1
            changed = None
            if variant == FLOAT32_PRIMITIVES:
                changed = float32_primitive(t, SPACE[index], magnitude)
            t = changed if changed is not None else aug._apply_image_or_video_transform(
                t, SPACE[index], magnitude, interpolation=aug.interpolation, fill=aug._fill)
        out.append(to_hwc(t).astype(np.float32))
    return out


def mix(img, case, chains, variant=None):
    d = case["draws"]
    f = np.float32
    weights = [f(f(w) * f(d.m1)) for w, _ in d.chains]
    if variant == "mixed in double":
        m = img.astype(np.float64) * float(d.m0)
        for w, c in zip(weights, chains):
            m = m + float(w) * c.astype(np.float64)
    elif variant == "products fused":
        m = (img.astype(np.float64) * float(d.m0)).astype(f)
        for w, c in zip(weights, chains):
            m = (m.astype(np.float64) + float(w) * c.astype(np.float64)).astype(f)
    else:
        m = img.astype(f) * f(d.m0)
        for w, c in zip(weights, chains):
            m = m + f(w) * c
    if variant == "rounded":
        m = np.rint(m)
    return np.clip(m, 0, 255).astype(np.uint8)


FLOAT32_PRIMITIVES = "blend factors and solarize thresholds as float32"
VARIANTS = ["rounded", "products fused", "mixed in double", FLOAT32_PRIMITIVES]


# The cases.

def random_draws(rng, case, width):
    alpha, severity = case["alpha"], case["severity"]
    ops = len(SPACE) if case["all_ops"] else PARTIAL
    m = rng.dirichlet([alpha, alpha]).astype(np.float32)
    weights = rng.dirichlet([alpha] * width).astype(np.float32)
    chains = []
    for w in weights:
        depth = case["depth"] if case["depth"] > 0 else int(rng.integers(1, 4))
        chain = []
        for _ in range(depth):
            index = int(rng.integers(0, ops))
            fn, signed = v2.AugMix._AUGMENTATION_SPACE[SPACE[index]]
            has_bins = fn(10, 1, 1) is not None
            bin_ = int(rng.integers(0, severity)) if has_bins else -1
            chain.append((index, bin_, bool(signed and has_bins and rng.random() < 0.5)))
        chains.append((float(w), chain))
    return Draws(float(m[0]), float(m[1]), chains)


def configs(rng, n):
    out = []
    for i in range(n):
        out.append({"interpolation": ["bilinear", "nearest"][i % 2],
                    "fill": [NO_FILL, 0.0, 128.0][i % 3],
                    "all_ops": i % 5 != 4,
                    "severity": int(rng.integers(1, 11)) if i % 4 else 3,
                    "depth": [-1, -1, 1, 2, 3][i % 5],
                    "alpha": float(np.float32([1.0, 0.2, 5.0, 1.0, 0.5][i % 5])),
                    "width": int(rng.integers(1, 5)) if i % 3 else 3})
    return out


def every_op(rng):
    """One chain per op of the space at the highest bin, signed both ways: each primitive in a
    mix, bilinear, fill None (AugMix's defaults); and the bins where a float32 factor or
    threshold would move bytes (solarize's 3 and 6: 255 m rounds down to 170 and 85)."""
    out = []
    for index, key in enumerate(SPACE):
        fn, signed = v2.AugMix._AUGMENTATION_SPACE[key]
        bins = [9] if fn(10, 1, 1) is not None else [-1]
        bins += {"Solarize": [3, 6], "Color": [1, 2], "Sharpness": [1, 2]}.get(key, [])
        for bin_, negative in [(b, n) for b in bins for n in (False, True)]:
            if negative and not signed:
                continue
            case = {"interpolation": "bilinear", "fill": NO_FILL, "all_ops": True,
                    "severity": 10, "depth": 1, "alpha": 1.0, "width": 1}
            m = rng.dirichlet([1.0, 1.0]).astype(np.float32)
            case["draws"] = Draws(float(m[0]), float(m[1]), [(1.0, [(index, bin_, negative)])])
            case["label"] = f"{SPACE[index]} bin {bin_}{' negative' if negative else ''}"
            out.append(case)
    return out


def images():
    """(image, cases) pairs: noise, gradients and flat areas (where a truncated float32 mix
    of equal bytes can fall one short)."""
    rng = np.random.default_rng(20251203)

    def noise(h, w, c):
        return rng.integers(0, 256, (h, w, c), dtype=np.uint8)

    def mixed(h, w, c):
        img = noise(h, w, c)
        img[: h // 2, : w // 2] = 200
        img[h // 2:, w // 2:] = np.linspace(0, 255, w - w // 2, dtype=np.uint8)[None, :, None]
        return img
    out = []
    for img, n in [(noise(1, 1, 3), 6), (noise(3, 5, 1), 8), (mixed(17, 13, 3), 16),
                   (mixed(32, 32, 1), 16), (mixed(32, 32, 3), 24), (mixed(40, 48, 3), 10)]:
        cases = []
        for case in configs(rng, n):
            case["draws"] = random_draws(rng, case, case.pop("width"))
            case["label"] = (f"{case['interpolation']} fill {case['fill']:g} all_ops "
                             f"{int(case['all_ops'])} severity {case['severity']} depth "
                             f"{case['depth']} alpha {case['alpha']:g}")
            cases.append(case)
        if img.shape == (32, 32, 3):
            cases += every_op(rng)
        out.append((img, cases))
    return out


def check_model(imgs, outputs):
    """Stops unless the model is torch on every case and each alternative misses somewhere;
    returns the bytes each alternative misses."""
    missed = dict.fromkeys(VARIANTS, 0)
    k = 0
    for img, cases in imgs:
        for case in cases:
            chains = chain_images(img, case)
            if not np.array_equal(mix(img, case, chains), outputs[k]):
                sys.exit(f"the model is not torch on {case['label']} ({img.shape}): "
                         f"augmix.cpp's arithmetic no longer describes this torchvision")
            for v in VARIANTS:
                if v == FLOAT32_PRIMITIVES:
                    got = mix(img, case, chain_images(img, case, v))
                else:
                    got = mix(img, case, chains, v)
                missed[v] += int((got != outputs[k]).sum())
            k += 1
    caught_none = [v for v, n in missed.items() if n == 0]
    if caught_none:
        sys.exit(f"no case tells these alternatives from torch: {caught_none}")
    return missed


def main():
    args, capability = golden_writer.parse_args(__doc__, "augmix_golden.bin")

    imgs = images()
    outputs = []
    for img, cases in imgs:
        for case in cases:
            out = torch_augmix(img, case)
            assert out.shape == img.shape and out.dtype == np.uint8, case["label"]
            outputs.append(out)
    missed = check_model(imgs, outputs)

    blob = golden_writer.images_blob(b"STAM", [img for img, _ in imgs])
    blob += struct.pack("<I", len(outputs))
    k = 0
    for i, (img, cases) in enumerate(imgs):
        for case in cases:
            d = case["draws"]
            blob += struct.pack("<IIII4fI", i, case["interpolation"] == "bilinear",
                                int(case["all_ops"]), case["severity"], case["alpha"],
                                case["fill"], d.m0, d.m1, len(d.chains))
            for w, ops in d.chains:
                blob += struct.pack("<fI", w, len(ops))
                for index, bin_, negative in ops:
                    blob += struct.pack("<IiI", index, bin_, int(negative))
            name = case["label"].encode("ascii")
            blob += struct.pack("<I", len(name)) + name + outputs[k].tobytes()
            k += 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(bytes(blob))
    total = sum(o.size for o in outputs)
    print(f"{args.out}: {len(imgs)} images, {len(outputs)} cases, {total} output bytes, "
          f"{len(blob)} bytes (torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"{capability})")
    for v, n in missed.items():
        print(f"  {v}: {n} bytes differ from torch")


if __name__ == "__main__":
    main()
