"""What the make_*_golden.py scripts share: the command line that writes a golden file into
tests/data from torch's AVX-512 kernels, and the images block that golden_file.hpp's
read_golden_image reads back.

Every such file begins with a 4-byte magic, version 1, the number of images and each image as
height, width, channels (little-endian uint32) and its bytes in tight rows; the cases follow."""

import argparse
import pathlib
import struct
import sys

import torch


def parse_args(doc, name):
    """The script's arguments (`out`, default tests/data/`name`; `--any-cpu`), after refusing a
    torch that does not run its AVX-512 kernels (the committed files were made with them) unless
    --any-cpu, and with torch on one thread, so that its results do not depend on how it splits
    the work. Returns the arguments and torch's CPU capability."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parents[1] / "data" / name)
    parser.add_argument("--any-cpu", action="store_true",
                        help="write the file on a CPU build other than AVX-512")
    args = parser.parse_args()
    capability = torch.backends.cpu.get_cpu_capability()
    if capability != "AVX512" and not args.any_cpu:
        sys.exit(f"torch runs its {capability} kernels here, not AVX512 (see the docstring)")
    torch.set_num_threads(1)
    return args, capability


def images_blob(magic, images):
    """The file's start: `magic`, version 1 and `images` (HxWxC uint8 arrays)."""
    blob = bytearray(magic + struct.pack("<I", 1))
    blob += struct.pack("<I", len(images))
    for img in images:
        blob += struct.pack("<III", *img.shape) + img.tobytes()
    return blob
