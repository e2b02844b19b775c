#!/usr/bin/env python3
"""The core engine's benchmarks, in one run, as ratios measured side by side.

  python3 bench/core_benchmarks.py [--build build/default] [--corpus DIR] [--repeat 3]

1. Fashion-MNIST, 28x28, default augment (pad-4 random crop + flip), 2 workers, 20 epochs:
   samples/s, and resident memory of the training process and the workers after every epoch.
   With Debian's python3-torch installed, PyTorch's DataLoader (2 workers) runs the same work
   (bench/peers/torch_fashion_mnist.py) in the same invocation, for a ratio.
2. The JPEG corpus (made with stoke-mkdata jpeg-corpus if DIR is missing), random-resized-crop
   224 + flip: workers=0 (the single-threaded in-process pipeline) and workers=2, alternated
   --repeat times; the ratio of their medians is the scaling figure.

Only the Python standard library is used; stoke-bench does the work and prints JSON.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def bench(binary, *args):
    out = subprocess.run([binary, *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--build", default="build/default")
    p.add_argument("--corpus", default="/tmp/stoke-jpeg-corpus")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--epochs", type=int, default=20)
    a = p.parse_args()
    stoke_bench = os.path.join(a.build, "bin", "stoke-bench")
    mkdata = os.path.join(a.build, "bin", "stoke-mkdata")

    print(f"## Fashion-MNIST, 2 workers, {a.epochs} epochs", flush=True)
    runs = [bench(stoke_bench, "--workers", "2", "--epochs", str(a.epochs)) for _ in range(a.repeat)]
    rates = sorted(r["samples_per_s"] for r in runs)
    print(f"samples/s per run: {', '.join(f'{x:,.0f}' for x in rates)} "
          f"(median {statistics.median(rates):,.0f})")
    last = runs[-1]
    rss, wrss = last["rss_mib_per_epoch"], last["worker_rss_mib_per_epoch"]
    print(f"training process RSS MiB, epoch 1 -> {len(rss)}: {rss[0]:.1f} -> {rss[-1]:.1f} "
          f"(max {max(rss):.1f}); workers: {wrss[0]:.1f} -> {wrss[-1]:.1f} (max {max(wrss):.1f})")
    print(f"checksum {last['checksum']} (identical across runs: "
          f"{len({r['checksum'] for r in runs}) == 1})")

    peer = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers", "torch_fashion_mnist.py")
    has_torch = subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                               capture_output=True).returncode == 0
    if has_torch:
        out = subprocess.run(["/usr/bin/python3", peer, "--workers", "2", "--epochs", "2", "--json"],
                             check=True, capture_output=True, text=True)
        t = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"torch.utils.data.DataLoader {t['torch']}, 2 workers: {t['samples_per_s']:,.0f} "
              f"samples/s; stoke / torch = {statistics.median(rates) / t['samples_per_s']:.0f}x")
    else:
        print("(install python3-torch to compare with PyTorch's DataLoader in the same run)")

    if not os.path.isdir(a.corpus):
        print(f"making the JPEG corpus in {a.corpus} ...", flush=True)
        subprocess.run([mkdata, "jpeg-corpus", "--out", a.corpus], check=True)
    print("\n## JPEG corpus, random-resized-crop 224 + flip, workers=0 vs workers=2", flush=True)
    rates = {0: [], 2: []}
    sums = set()
    for _ in range(a.repeat):
        for w in (0, 2):
            r = bench(stoke_bench, "--data", a.corpus, "--workers", str(w), "--batch", "64")
            rates[w].append(r["samples_per_s"])
            sums.add(r["checksum"])
    m0, m2 = statistics.median(rates[0]), statistics.median(rates[2])
    for w in (0, 2):
        print(f"workers={w}: {', '.join(f'{x:,.1f}' for x in rates[w])} samples/s")
    print(f"ratio workers=2 / workers=0 (medians): {m2 / m0:.2f}x")
    print(f"same checksum for every run: {len(sums) == 1}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
