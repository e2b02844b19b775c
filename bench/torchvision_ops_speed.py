#!/usr/bin/env python3
"""ms per 224x224 RGB image for each photometric and geometric op of torchvision.transforms.v2
on a uint8 tensor and on a PIL image, one thread: the peer column beside
`stoke-decode-benchmarks --benchmark_filter='BM_ImageOp|BM_AugMix'` (the same ops and numbers,
the same image: the corpus's first file resized to 224x224 with an area filter). AugMix draws
anew on each call, as BM_AugMix does, so its figure is a mean over its draws.

  python bench/torchvision_ops_speed.py [--corpus DIR] [--seconds S]

Needs torch and torchvision (0.29.2 measured), Pillow and OpenCV's Python module or Pillow only
(the image is resized with Pillow's box filter when cv2 is missing).
"""

import argparse
import glob
import os
import time

import torch
from PIL import Image
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
I = F.InterpolationMode.NEAREST
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
    ("shear", lambda x: F.affine(x, angle=0.0, translate=[0, 0], scale=1.0,
                                 shear=[16.69924423399362, 0.0], interpolation=I, fill=0,
                                 center=[0, 0])),
    ("rotate", lambda x: F.rotate(x, 30.0, interpolation=I, fill=0)),
    ("affine_bilinear", lambda x: F.affine(x, angle=15.0, translate=[10.0, -5.0], scale=1.1,
                                           shear=[5.0, 3.0], interpolation=B, fill=None)),
    ("shear_bilinear", lambda x: F.affine(x, angle=0.0, translate=[0, 0], scale=1.0,
                                          shear=[16.69924423399362, 0.0], interpolation=B,
                                          fill=None, center=[0, 0])),
    ("rotate_bilinear", lambda x: F.rotate(x, 30.0, interpolation=B, fill=None)),
    ("rotate_bilinear_fill", lambda x: F.rotate(x, 30.0, interpolation=B, fill=0)),
    ("AugMix (defaults)", v2.AugMix()),
    ("AugMix (nearest)", v2.AugMix(interpolation=I)),
]


def ms_per_call(fn, x, seconds):
    torch.manual_seed(0)
    fn(x)  # warm up
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn(x)
        n += 1
    return (time.perf_counter() - start) / n * 1000


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", default=os.path.join(HERE, "..", "build", "default", "testdata",
                                                    "jpeg"))
    p.add_argument("--seconds", type=float, default=0.5)
    args = p.parse_args()
    torch.set_num_threads(1)
    first = sorted(glob.glob(os.path.join(args.corpus, "**", "*.jpg"), recursive=True))[0]
    pil = Image.open(first).convert("RGB").resize((224, 224), Image.BOX)
    tensor = F.pil_to_tensor(pil)
    print(f"torch {torch.__version__}, one thread; {first} at 224x224")
    print("| op | tensor ms | PIL ms |\n|---|---|---|")
    for name, fn in OPS:
        t = ms_per_call(fn, tensor, args.seconds)
        try:
            q = f"{ms_per_call(fn, pil, args.seconds):.3f}"
        except Exception as e:  # an op without a PIL kernel
            q = f"n/a ({type(e).__name__})"
        print(f"| {name} | {t:.3f} | {q} |", flush=True)


if __name__ == "__main__":
    main()
