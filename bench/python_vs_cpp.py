#!/usr/bin/env python3
"""The Python bindings' overhead: the same loader settings driven from C++ (stoke-bench) and from
Python (stoke.Loader), side by side, in alternating rounds.

    python bench/python_vs_cpp.py --corpus DIR [--stoke-bench PATH] [--rounds 3] [--epochs 2]

Run it with a Python that has stoke installed (pip install .). Both consumers hash every
delivered batch with XXH3 (stoke-bench always checksums; the Python side uses the xxhash package
when present, else reads each array through numpy), so they do the same work per batch. Prints
the median samples/s of each and their ratio.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np

import stoke


def run_cpp(args):
    out = subprocess.run([args.stoke_bench, "--data", args.corpus, "--batch", str(args.batch),
                          "--workers", str(args.workers), "--epochs", str(args.epochs),
                          "--dtype", args.dtype, "--json"],
                         capture_output=True, text=True, check=True).stdout
    line = [l for l in out.splitlines() if l.startswith("{")][-1]
    return json.loads(line)["samples_per_s"]


def run_python(args):
    try:
        import xxhash
        digest = lambda a: xxhash.xxh3_128(memoryview(a).cast("B")).digest()
    except ImportError:
        digest = lambda a: float(a.sum())
    loader = stoke.Loader(args.corpus, batch=args.batch, workers=args.workers, dtype=args.dtype)
    for epoch in range(args.epochs):
        loader.set_epoch(epoch)
        for batch in loader:
            for pixels in batch.pixels:
                digest(np.from_dlpack(pixels))
            digest(np.from_dlpack(batch.labels))
    # The loader's own measure, from the first delivered batch to the last: as stoke-bench.
    return loader.stats()["samples_per_s"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", required=True)
    p.add_argument("--stoke-bench", default="build/default/bin/stoke-bench")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--dtype", default="float32")
    args = p.parse_args()
    cpp, py = [], []
    for r in range(args.rounds):
        cpp.append(run_cpp(args))
        py.append(run_python(args))
        print(f"round {r + 1}: C++ {cpp[-1]:,.1f} img/s, Python {py[-1]:,.1f} img/s", flush=True)
    c, q = statistics.median(cpp), statistics.median(py)
    print(f"median: C++ stoke-bench {c:,.1f} img/s, Python stoke.Loader {q:,.1f} img/s, "
          f"Python/C++ = {q / c:.3f}")


if __name__ == "__main__":
    main()
