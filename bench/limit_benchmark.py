#!/usr/bin/env python3
"""How close stoke's JPEG pipeline comes to the hardware limit, measured in one run.

  python3 bench/limit_benchmark.py [--build build/default] [--corpus DIR] [--repeat 3]

On the same JPEG files, held in memory (copied to a tmpfs under /dev/shm, so reading them is a
memory copy for every contender), per core:

  (a) TurboJPEG tjDecompress2, full decode to RGB with the accurate (ISLOW) IDCT, no
      augmentation: the practical limit of a full decode (stoke-decode-benchmarks,
      BM_TurboJpegFullDecode, one thread, every file of the corpus in a cycle);
  (b) stoke's whole pipeline in-process on one thread: stoke-bench --workers 0, random-resized
      crop 224 + flip into batch slots, files read through the loader;
  (c) stoke with 2 worker processes (stoke-bench --workers 2).

The three are alternated --repeat times and compared by their medians. Goals: (b) >= 1.0 x (a),
(c) >= 1.8 x (b). Only the Python standard library is used.
"""
import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys


def stoke_bench(build, data, workers, epochs):
    cmd = [os.path.join(build, "bin", "stoke-bench"), "--data", data, "--workers", str(workers),
           "--batch", "64", "--epochs", str(epochs), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["samples_per_s"]


def turbojpeg(build, data, seconds):
    cmd = [os.path.join(build, "bin", "stoke-decode-benchmarks"), "--corpus", data,
           "--limit", "100000", "--benchmark_filter=BM_TurboJpegFullDecode",
           f"--benchmark_min_time={seconds}", "--benchmark_format=json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["benchmarks"][0]["items_per_second"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--build", default="build/default")
    p.add_argument("--corpus", default="/tmp/stoke-jpeg-corpus",
                   help="made with stoke-mkdata jpeg-corpus when missing")
    p.add_argument("--corpus-args", default="",
                   help="more stoke-mkdata jpeg-corpus flags for making a missing corpus, e.g. "
                        "camera-sized photographs: \"--count 600 --long-side 1600..2600 "
                        "--quality 85..95 --progressive 0.1 --chroma-422 0.15 --chroma-444 0.15\"")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--epochs", type=int, default=2, help="epochs per stoke-bench run")
    a = p.parse_args()
    if not os.path.isdir(a.corpus):
        print(f"making the JPEG corpus in {a.corpus} ...", flush=True)
        subprocess.run([os.path.join(a.build, "bin", "stoke-mkdata"), "jpeg-corpus", "--out",
                        a.corpus] + shlex.split(a.corpus_args), check=True)
    memory = "/dev/shm/stoke-limit-corpus"
    shutil.rmtree(memory, ignore_errors=True)
    shutil.copytree(a.corpus, memory)
    files = sum(len(f) for _, _, f in os.walk(memory))
    print(f"corpus: {files} JPEG files, copied to {memory} (tmpfs)", flush=True)
    try:
        rows = {"a": [], "b": [], "c": []}
        for i in range(a.repeat):
            rows["a"].append(turbojpeg(a.build, memory, 5))
            rows["b"].append(stoke_bench(a.build, memory, 0, a.epochs))
            rows["c"].append(stoke_bench(a.build, memory, 2, a.epochs))
            print(f"round {i + 1}/{a.repeat}: (a) {rows['a'][-1]:,.1f}  (b) {rows['b'][-1]:,.1f}  "
                  f"(c) {rows['c'][-1]:,.1f} images/s", flush=True)
    finally:
        shutil.rmtree(memory, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in rows.items()}
    b_over_a = med["b"] / med["a"]
    c_over_b = med["c"] / med["b"]
    print()
    print("| | images/s (median of %d) | ratio | goal |" % a.repeat)
    print("|---|---|---|---|")
    print(f"| (a) TurboJPEG full decode, ISLOW, 1 thread | {med['a']:,.1f} | 1.00 | |")
    print(f"| (b) stoke pipeline in-process, 1 thread | {med['b']:,.1f} | {b_over_a:.2f} x (a) "
          f"| >= 1.0: {'met' if b_over_a >= 1.0 else 'NOT met'} |")
    print(f"| (c) stoke, 2 workers | {med['c']:,.1f} | {c_over_b:.2f} x (b) "
          f"| >= 1.8: {'met' if c_over_b >= 1.8 else 'NOT met'} |")
    print(json.dumps({"a": rows["a"], "b": rows["b"], "c": rows["c"], "b_over_a": b_over_a,
                      "c_over_b": c_over_b}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
