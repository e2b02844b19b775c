#!/usr/bin/env python3
"""The relayout cache, end to end (docs/BENCHMARKS.md, "The relayout cache"): stoke-bench over
one image folder for E epochs, with the cache off and with it on from an empty folder, rounds
alternated; prints each epoch's samples/s (medians over the rounds), the run's, and whether the
checksums agree.

    relayout_cache_benchmark.py --data FOLDER [--which progressive|all] [--epochs 3]
                                [--repeat 2] [--bench build/default/bin/stoke-bench]
                                [--size 224] [--workers 2]

Each "on" run starts from an empty cache folder of its own (its first epoch makes the copies);
"on, warm" runs again over the copies the run before it left.
"""

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile


def run(bench, data, which, cache, epochs, size, workers):
    cmd = [bench, "--data", data, "--relayout-cache", which, "--cache-dir", cache,
           "--epochs", str(epochs), "--size", str(size), "--workers", str(workers), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    j = json.loads(out.strip().splitlines()[-1])
    return j


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--which", default="progressive")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--bench", default="build/default/bin/stoke-bench")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--workers", type=int, default=2)
    a = p.parse_args()
    rows = {"off": [], "on, cold": [], "on, warm": []}
    checksums = set()
    for r in range(a.repeat):
        with tempfile.TemporaryDirectory() as cache:
            order = [("off", "off"), ("on, cold", a.which), ("on, warm", a.which)]
            if r % 2:
                order = order[1:] + order[:1]
            for name, which in order:
                j = run(a.bench, a.data, which, cache, a.epochs, a.size, a.workers)
                rows[name].append(j)
                checksums.add(j["checksum"] if "checksum" in j else "")
                rc = j.get("relayout_cache", {})
                print(f"round {r + 1} {name}: {j['samples_per_s']:.0f} samples/s, epochs "
                      f"{[round(x) for x in j['samples_per_s_per_epoch']]}, copies made "
                      f"{rc.get('stored')}, read {rc.get('hits')}", flush=True)
            shutil.rmtree(cache, ignore_errors=True)
    print()
    epochs = "".join(f" epoch {e + 1} |" for e in range(a.epochs))
    print(f"| {a.which} cache |{epochs} whole run | vs off |")
    print("|---|" + "---|" * (a.epochs + 2))
    off = statistics.median(j["samples_per_s"] for j in rows["off"])
    for name, js in rows.items():
        per = [statistics.median(j["samples_per_s_per_epoch"][e] for j in js)
               for e in range(a.epochs)]
        whole = statistics.median(j["samples_per_s"] for j in js)
        cells = "".join(f" {x:,.0f} |" for x in per)
        print(f"| {name} |{cells} {whole:,.0f} | {whole / off:.2f}x |")
    print(f"\nchecksums: {len(checksums)} distinct {sorted(checksums)}")


if __name__ == "__main__":
    main()
