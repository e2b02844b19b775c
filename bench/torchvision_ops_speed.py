#!/usr/bin/env python3
"""ms per 224x224 RGB image for each photometric and geometric op of torchvision.transforms.v2
on a uint8 tensor and on a PIL image, one thread: the peer column beside
`stoke-decode-benchmarks --benchmark_filter='BM_ImageOp|BM_AugMix|BM_AffineMask'` (the same ops
and numbers, the same image: the corpus's first file resized to 224x224 with an area filter);
affine_mask is F.affine on a 224x224 uint8 label map (a tv_tensors.Mask, or a mode-L PIL
image), beside `BM_AffineMask`. AugMix draws anew on each call, as BM_AugMix does, so its
figure is a mean over its draws.

  python bench/torchvision_ops_speed.py [--corpus DIR] [--seconds S] [--cpu-time]

Needs torch and torchvision (0.29.2 measured), Pillow and OpenCV's Python module or Pillow only
(the image is resized with Pillow's box filter when cv2 is missing). With timm installed, a second
table: timm's op functions (BM_ImageOp/pil_*) and its RandAugment and AugMix transforms
(BM_TimmStep) on the PIL image.
"""

import argparse
import glob
import os
import time

import torch
from PIL import Image
from torchvision import tv_tensors
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
I = F.InterpolationMode.NEAREST
MASKS = {}


def mask_like(x):
    """A uint8 label map of x's size (a tv_tensors.Mask, or a mode-L PIL image), made once."""
    key = "pil" if isinstance(x, Image.Image) else "tensor"
    if key not in MASKS:
        labels = (torch.arange(224).view(1, 224) // 16 + torch.arange(224).view(224, 1) // 16) % 21
        labels = labels.to(torch.uint8)
        MASKS[key] = (Image.fromarray(labels.numpy(), mode="L") if key == "pil"
                      else tv_tensors.Mask(labels))
    return MASKS[key]
B = F.InterpolationMode.BILINEAR

OPS = [
    ("brightness", lambda x: F.adjust_brightness(x, 1.3)),
    ("contrast", lambda x: F.adjust_contrast(x, 1.3)),
    ("saturation", lambda x: F.adjust_saturation(x, 1.3)),
    ("hue", lambda x: F.adjust_hue(x, 0.1)),
    ("grayscale", lambda x: F.rgb_to_grayscale(x, num_output_channels=3)),
    ("solarize", lambda x: F.solarize(x, 128)),
    ("posterize", lambda x: F.posterize(x, 4)),
    ("equalize", F.equalize),
    ("autocontrast", F.autocontrast),
    ("sharpness", lambda x: F.adjust_sharpness(x, 1.5)),
    ("invert", F.invert),
    ("gaussian_blur_5", lambda x: F.gaussian_blur(x, [5, 5], [1.0, 1.0])),
    ("gaussian_blur_23", lambda x: F.gaussian_blur(x, [23, 23], [1.0, 1.0])),
    ("affine", lambda x: F.affine(x, angle=15.0, translate=[10.0, -5.0], scale=1.1,
                                  shear=[5.0, 3.0], interpolation=I, fill=0)),
    ("affine_bilinear", lambda x: F.affine(x, angle=15.0, translate=[10.0, -5.0], scale=1.1,
                                           shear=[5.0, 3.0], interpolation=B, fill=0)),
    # random_affine's mask: F.affine on a tv_tensors.Mask (nearest) of the image's size.
    ("affine_mask", lambda x: F.affine(mask_like(x), angle=15.0, translate=[10.0, -5.0],
                                       scale=1.1, shear=[5.0, 3.0], fill=255)),
    ("shear", lambda x: F.affine(x, angle=0.0, translate=[0, 0], scale=1.0,
                                 shear=[16.69924423399362, 0.0], interpolation=I, fill=0,
                                 center=[0, 0])),
    ("rotate", lambda x: F.rotate(x, 30.0, interpolation=I, fill=0)),
    ("shear_bilinear", lambda x: F.affine(x, angle=0.0, translate=[0, 0], scale=1.0,
                                          shear=[16.69924423399362, 0.0], interpolation=B,
                                          fill=None, center=[0, 0])),
    ("rotate_bilinear", lambda x: F.rotate(x, 30.0, interpolation=B, fill=None)),
    ("rotate_bilinear_fill", lambda x: F.rotate(x, 30.0, interpolation=B, fill=0)),
    ("AugMix (defaults)", v2.AugMix()),
    ("AugMix (nearest)", v2.AugMix(interpolation=I)),
]


# timm's op functions (timm.data.auto_augment, on PIL) with the numbers of stoke's BM_ImageOp/pil_*
# benchmarks, and timm's whole transforms (bicubic warps, ImageNet-mean fill) beside
# BM_TimmStep: a call's mean over its random draws.
TIMM_FILL = (124, 116, 104)


def timm_ops():
    from timm.data import auto_augment as aa
    bl, bc = Image.Resampling.BILINEAR, Image.Resampling.BICUBIC
    return [
        ("pil_autocontrast", aa.auto_contrast),
        ("pil_equalize", aa.equalize),
        ("pil_invert", aa.invert),
        ("pil_posterize", lambda x: aa.posterize(x, 4)),
        ("pil_solarize", lambda x: aa.solarize(x, 128)),
        ("pil_solarize_add", lambda x: aa.solarize_add(x, 55, 128)),
        ("pil_color", lambda x: aa.color(x, 1.3)),
        ("pil_contrast", lambda x: aa.contrast(x, 1.3)),
        ("pil_brightness", lambda x: aa.brightness(x, 1.3)),
        ("pil_sharpness", lambda x: aa.sharpness(x, 1.5)),
        ("pil_rotate_bilinear", lambda x: aa.rotate(x, 30.0, resample=bl, fillcolor=TIMM_FILL)),
        ("pil_rotate_bicubic", lambda x: aa.rotate(x, 30.0, resample=bc, fillcolor=TIMM_FILL)),
        ("pil_shear_x_bicubic", lambda x: aa.shear_x(x, 0.3, resample=bc, fillcolor=TIMM_FILL)),
        ("pil_translate_x_rel_bicubic",
         lambda x: aa.translate_x_rel(x, 0.3, resample=bc, fillcolor=TIMM_FILL)),
    ]


def timm_steps():
    from timm.data import auto_augment as aa
    hparams = dict(translate_const=100, img_mean=TIMM_FILL,
                   interpolation=Image.Resampling.BICUBIC)
    return [("rand-m9-mstd0.5-inc1", aa.rand_augment_transform("rand-m9-mstd0.5-inc1", hparams)),
            ("augmix-m5-w3", aa.augment_and_mix_transform("augmix-m5-w3",
                                                          dict(hparams, translate_pct=0.3)))]


CLOCK = time.perf_counter


def ms_per_call(fn, x, seconds):
    torch.manual_seed(0)
    fn(x)  # warm up
    n, start = 0, CLOCK()
    while CLOCK() - start < seconds:
        fn(x)
        n += 1
    return (CLOCK() - start) / n * 1000


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", default=os.path.join(HERE, "..", "build", "default", "testdata",
                                                    "jpeg"))
    p.add_argument("--seconds", type=float, default=0.5)
    p.add_argument("--cpu-time", action="store_true",
                   help="the process's CPU time instead of the wall clock (the figure to set "
                   "beside a benchmark's CPU column on a shared machine)")
    args = p.parse_args()
    global CLOCK
    if args.cpu_time:
        CLOCK = time.process_time
    torch.set_num_threads(1)
    first = sorted(glob.glob(os.path.join(args.corpus, "**", "*.jpg"), recursive=True))[0]
    pil = Image.open(first).convert("RGB").resize((224, 224), Image.BOX)
    tensor = F.pil_to_tensor(pil)
    clock = "cpu" if args.cpu_time else "wall"
    print(f"torch {torch.__version__}, one thread, {clock} clock; {first} at 224x224")
    print("| op | tensor ms | PIL ms |\n|---|---|---|")
    for name, fn in OPS:
        t = ms_per_call(fn, tensor, args.seconds)
        try:
            q = f"{ms_per_call(fn, pil, args.seconds):.3f}"
        except Exception as e:  # an op without a PIL kernel
            q = f"n/a ({type(e).__name__})"
        print(f"| {name} | {t:.3f} | {q} |", flush=True)
    try:
        ops, steps = timm_ops(), timm_steps()
    except ImportError:
        print("\n(timm is not installed: no timm rows)")
        return
    import timm
    print(f"\ntimm {timm.__version__} on PIL\n| op | PIL ms |\n|---|---|")
    for name, fn in ops:
        print(f"| {name} | {ms_per_call(fn, pil, args.seconds):.3f} |", flush=True)
    for name, fn in steps:
        # On Pillow 13, timm's PosterizeIncreasing at magnitude 10 asks ImageOps.posterize for 0
        # bits, which raises: such calls are counted, not timed apart.
        raised = [0, 0]

        def call(x, fn=fn):
            raised[1] += 1
            try:
                return fn(x)
            except ValueError:
                raised[0] += 1
                return x

        ms = ms_per_call(call, pil, args.seconds)
        note = f" ({raised[0]} of {raised[1]} calls raised ValueError)" if raised[0] else ""
        print(f"| {name} | {ms:.3f}{note} |", flush=True)


if __name__ == "__main__":
    main()
