#!/usr/bin/env python3
"""A mixture of a local image folder and remote shards against the two read alone, in one run.

    mixture_benchmark.py --folder DIR --shards DIR [--weight 0.5] [--epochs 2] [--workers 2]
                         [--batch 64] [--size 224] [--repeat 3] [--cache-limit 16GiB]
                         [--stoke-bench build/default/bin/stoke-bench] [--json-out FILE]

DIR of --folder is an image folder (root/<class>/<image>); DIR of --shards holds WebDataset
shards (stoke-pack --out DIR/train-%06d.tar), served here by nginx on 127.0.0.1. Three runs of
stoke-bench per round, in an order rotated every round: the folder alone, the shards over HTTP
alone, and a mixture file naming both, the folder at --weight of every batch and the shards at
the rest, its epoch as many samples as the folder and the shards hold together. Each run
decodes, random-resized-crops (--size), flips and normalizes to float32 NCHW with --workers
worker processes.

The shards go through the shard cache in both runs that read them (--cache-limit; 0 reads
byte ranges from the server instead), a fresh cache folder for every run, so each starts cold.

Reports the median samples/s of --repeat rounds for each run, the weighted rate of the two
alone (1 / (w / folder + (1 - w) / shards): the rate of a loader that spends each source's
share of every batch at that source's own speed) and the mixture's ratio to it, and the samples
each source gave the mixture. Uses only the standard library; nginx must be installed.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_servers import NginxServer  # noqa: E402
from remote_benchmark import brace_pattern  # noqa: E402


def run_bench(a, data, cache_dir):
    cmd = [a.stoke_bench, "--data", data, "--epochs", str(a.epochs), "--workers", str(a.workers),
           "--batch", str(a.batch), "--size", str(a.size), "--dtype", "float32",
           "--shuffle-window", "4", "--cache-dir", cache_dir, "--cache-limit", a.cache_limit,
           "--relayout-cache", "off", "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--folder", required=True)
    p.add_argument("--shards", required=True)
    p.add_argument("--weight", type=float, default=0.5, help="the folder's share of a batch")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--cache-limit", default="16GiB")
    p.add_argument("--stoke-bench", default="build/default/bin/stoke-bench")
    p.add_argument("--json-out")
    a = p.parse_args()
    if not 0 < a.weight < 1:
        sys.exit("--weight must be between 0 and 1")

    with tempfile.TemporaryDirectory(prefix="stoke-mixture-") as work, \
            NginxServer(a.shards, os.path.join(work, "nginx")) as url:
        shards = f"{url}/{brace_pattern(a.shards)}"
        folder = os.path.abspath(a.folder)
        first = run_bench(a, folder, os.path.join(work, "probe"))
        second = run_bench(a, shards, os.path.join(work, "probe"))
        sizes = (first["dataset_size"], second["dataset_size"])
        mix = os.path.join(work, "mix.json")
        with open(mix, "w") as f:
            json.dump({"sources": [{"data": folder, "weight": a.weight},
                                   {"data": shards, "weight": 1 - a.weight}],
                       "epoch_samples": sum(sizes)}, f)
        runs = {"folder alone": folder, "shards alone (HTTP)": shards, "mixture": mix}
        rates = {name: [] for name in runs}
        source_samples = None
        names = list(runs)
        for r in range(a.repeat):
            for name in names[r % len(names):] + names[:r % len(names)]:
                result = run_bench(a, runs[name], os.path.join(work, f"cache-{r}-{names.index(name)}"))
                rates[name].append(result["samples_per_s"])
                if name == "mixture":
                    source_samples = [s["samples"] for s in result.get("sources", [])]
            print(f"round {r + 1}: " + ", ".join(f"{n} {rates[n][-1]:.0f}" for n in names),
                  file=sys.stderr)

    median = {name: statistics.median(v) for name, v in rates.items()}
    w = a.weight
    weighted = 1 / (w / median["folder alone"] + (1 - w) / median["shards alone (HTTP)"])
    ratio = median["mixture"] / weighted
    print(f"{'run':<22} {'samples/s':>10}")
    for name in names:
        print(f"{name:<22} {median[name]:>10.0f}")
    print(f"{'weighted rate':<22} {weighted:>10.0f}   (folder {w:g}, shards {1 - w:g})")
    print(f"mixture / weighted rate: {ratio:.3f}")
    print(f"samples each source gave the mixture: {source_samples} (datasets of {sizes[0]} "
          f"and {sizes[1]} samples)")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"median_samples_per_s": median, "weighted": weighted, "ratio": ratio,
                       "rates": rates, "weight": w, "source_samples": source_samples,
                       "sizes": sizes, "workers": a.workers, "batch": a.batch,
                       "epochs": a.epochs, "size": a.size, "cache_limit": a.cache_limit}, f,
                      indent=1)


if __name__ == "__main__":
    main()
