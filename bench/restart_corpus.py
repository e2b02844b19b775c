#!/usr/bin/env python3
"""Re-lays out a JPEG corpus losslessly with restart markers, through jpegtran (the same DCT
coefficients: no pixel changes), for the restart-interval benchmark (docs/BENCHMARKS.md).

    restart_corpus.py SRC DST --parts N [--optimize] [--max-per-row M]
                                          k MCUs an interval, k the largest divisor of a row's
                                          MCUs <= row / N; with --max-per-row, a whole row
                                          where that makes more than M intervals a row (as
                                          stoke-pack's rule: N 4, M 16)
    restart_corpus.py SRC DST --rows                      one marker every MCU row

Every .jpg under SRC is written to the same relative path under DST. Needs jpegtran
(Debian: libjpeg-turbo-progs).
"""

import argparse
import os
import struct
import subprocess


def frame(path):
    """The frame's width, height, component count and largest horizontal sampling factor."""
    with open(path, "rb") as f:
        d = f.read()
    i = 2
    while i + 4 <= len(d):
        if d[i] != 0xFF:
            raise ValueError(f"{path}: no marker at byte {i}")
        code, n = d[i + 1], struct.unpack(">H", d[i + 2:i + 4])[0]
        if code in (0xC0, 0xC1, 0xC2):
            h, w, nc = struct.unpack(">HHB", d[i + 5:i + 10])
            return w, h, nc, max(d[i + 11 + 3 * c] >> 4 for c in range(nc))
        i += 2 + n
    raise ValueError(f"{path}: no frame header")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("--parts", type=int, default=4)
    p.add_argument("--rows", action="store_true")
    p.add_argument("--optimize", action="store_true")
    p.add_argument("--max-per-row", type=int, default=0)
    a = p.parse_args()
    for root, _, files in os.walk(a.src):
        for name in sorted(files):
            if not name.lower().endswith((".jpg", ".jpeg")):
                continue
            path = os.path.join(root, name)
            out = os.path.join(a.dst, os.path.relpath(path, a.src))
            os.makedirs(os.path.dirname(out), exist_ok=True)
            if a.rows:
                restart = "1"
            else:
                w, _, nc, h = frame(path)
                mcu = 8 if nc == 1 else 8 * h
                mcus = (w + mcu - 1) // mcu
                k = next(k for k in range(max(1, mcus // a.parts), 0, -1) if mcus % k == 0)
                if a.max_per_row and mcus // k > a.max_per_row:
                    k = mcus
                restart = f"{k}B"
            subprocess.run(["jpegtran"] + (["-optimize"] if a.optimize else []) +
                           ["-restart", restart, "-outfile", out, path], check=True)


if __name__ == "__main__":
    main()
