#!/usr/bin/env python3
"""workers=auto against the best static pool, with a simulated trainer, in one run.

  python3 bench/autotune_benchmark.py [--build build/default] [--corpus DIR] [--epochs 5]
                                      [--rounds 3] [--factors 0.6,1.5]

1. One worker's rate R1 on the JPEG corpus (random-resized-crop 224 + flip, batch 64: a
   CPU-heavy pipeline), the median of --rounds runs of `stoke-bench --workers 1` with no consumer.
2. For each factor f: a simulated trainer taking f x R1 img/s (`--demand`, it sleeps between
   batches), then alternately `--sweep-workers 1..K` (the static settings; K = the cores
   available) and `--workers auto`, --rounds times. Reported: each static setting's median, the
   best one, auto's median, auto / best, the pool size auto ended with in each round, and one
   round's decision trace (stoke-bench's stderr lines "stoke: autotune at ...").

Only the Python standard library is used; stoke-bench does the work and prints JSON.
"""
import argparse
import json
import os
import statistics
import subprocess


def bench(binary, *args):
    out = subprocess.run([binary, *args, "--json"], check=True, capture_output=True, text=True)
    trace = [l for l in out.stderr.splitlines() if "autotune at" in l]
    return json.loads(out.stdout.strip().splitlines()[-1]), trace


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--build", default="build/default")
    p.add_argument("--corpus", default="/tmp/stoke-jpeg-corpus")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--factors", default="0.6,1.5")
    a = p.parse_args()
    stoke_bench = os.path.join(a.build, "bin", "stoke-bench")
    if not os.path.isdir(a.corpus):
        subprocess.run([os.path.join(a.build, "bin", "stoke-mkdata"), "jpeg-corpus", "--out",
                        a.corpus], check=True)
    common = ["--data", a.corpus, "--batch", "64", "--epochs", str(a.epochs)]

    one = [bench(stoke_bench, *common, "--workers", "1")[0]["samples_per_s"]
           for _ in range(a.rounds)]
    r1 = statistics.median(one)
    print(f"one worker, no consumer: {', '.join(f'{x:,.0f}' for x in one)} img/s "
          f"(median R1 = {r1:,.0f})", flush=True)

    for factor in (float(f) for f in a.factors.split(",")):
        demand = factor * r1
        print(f"\n## demand {factor:g} x R1 = {demand:,.0f} img/s", flush=True)
        static, auto, ends, traces = {}, [], [], []
        for _ in range(a.rounds):
            sweep, _ = bench(stoke_bench, *common, "--demand", f"{demand:.1f}", "--sweep-workers",
                             "--plot", os.devnull)
            for row in sweep["sweep"]:
                static.setdefault(row["workers"], []).append(row["samples_per_s"])
            run, trace = bench(stoke_bench, *common, "--demand", f"{demand:.1f}", "--workers", "auto")
            auto.append(run["samples_per_s"])
            ends.append(run["workers"])
            traces.append((trace, run["verdict"], run["window_wait_fraction"]))
        for w, rates in sorted(static.items()):
            print(f"static {w} worker(s): {', '.join(f'{x:,.0f}' for x in rates)} "
                  f"(median {statistics.median(rates):,.0f})")
        best_w, best = max(((w, statistics.median(r)) for w, r in static.items()),
                           key=lambda t: t[1])
        med = statistics.median(auto)
        print(f"workers=auto: {', '.join(f'{x:,.0f}' for x in auto)} (median {med:,.0f}); "
              f"ended with {ends} workers")
        print(f"auto / best static ({best_w} worker(s), {best:,.0f}) = {med / best:.3f}")
        trace, verdict, window = traces[-1]
        print("decision trace of the last round:")
        for line in trace or ["  (no decision: the first pool kept up)"]:
            print(f"  {line}")
        print(f"  final window stall {100 * window:.1f}%; verdict: {verdict}", flush=True)


if __name__ == "__main__":
    main()
