#!/usr/bin/env python3
"""Writes every Nth JPEG of an image-folder corpus as PNG, keeping the folders (the classes).

  python3 bench/make_png_corpus.py SRC DST [--count N] [--level L]

For measuring what PNG costs at the same sizes as a JPEG corpus (docs/BENCHMARKS.md, "PNG at
camera sizes"). Needs Pillow, e.g. the PyTorch environment of bench/peers/run_peers.py:
/opt/stoke-peers/torch/bin/python bench/make_png_corpus.py /tmp/big /tmp/bigpng --count 100.
"""
import argparse
import os
import sys

from PIL import Image


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("src")
    p.add_argument("dst", help="must be missing or empty")
    p.add_argument("--count", type=int, default=100, help="PNGs to write (default 100)")
    p.add_argument("--level", type=int, default=6, help="zlib compression level (default 6)")
    a = p.parse_args()
    if os.path.isdir(a.dst) and os.listdir(a.dst):
        sys.exit(f"{a.dst} is not empty")
    files = sorted(os.path.join(r, f) for r, _, fs in os.walk(a.src) for f in fs
                   if f.lower().endswith((".jpg", ".jpeg")))
    if not files:
        sys.exit(f"no JPEG files under {a.src}")
    step = max(1, len(files) // a.count)
    megapixels = 0.0
    chosen = files[::step][:a.count]
    for i, f in enumerate(chosen, 1):
        out = os.path.join(a.dst, os.path.splitext(os.path.relpath(f, a.src))[0] + ".png")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        im = Image.open(f).convert("RGB")
        megapixels += im.width * im.height / 1e6
        im.save(out, compress_level=a.level)
        if i % 10 == 0 or i == len(chosen):
            print(f"writing {i}/{len(chosen)}", file=sys.stderr)
    print(f"wrote {len(chosen)} PNGs to {a.dst}, {megapixels / len(chosen):.2f} MP on average")


if __name__ == "__main__":
    main()
