#!/usr/bin/env python3
"""stoke reading the same WebDataset shards from local disk, from nginx over HTTP and from
SeaweedFS over S3, on 127.0.0.1, measured in one run.

    remote_benchmark.py --shards DIR [--epochs 2] [--workers 2] [--batch 64] [--repeat 3]
                        [--stoke-bench build/default/bin/stoke-bench]
                        [--weed build/servers/bin/weed] [--json-out FILE]

DIR holds the shards (stoke-pack --out DIR/train-%06d.tar) and their sidecars. This starts
nginx serving DIR and `weed server -s3` with a bucket it fills through SigV4 (curl
--aws-sigv4), then runs stoke-bench on each source in turn, rotating the order every round:
decode, random-resized-crop 224, flip, float32 NCHW (the training preset), --workers worker
processes. Reports the median samples/s of --repeat rounds, its ratio to local disk, and
whether the batches' checksums agree (they must: the same shards, the same seed).

Uses only the standard library; nginx (Debian's nginx-light) and weed (setup.sh installs it
into build/servers) must be installed.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_servers import NginxServer, SeaweedServer  # noqa: E402

BUCKET = "bench"


def run_bench(stoke_bench, data, a, env):
    cmd = [stoke_bench, "--data", data, "--epochs", str(a.epochs), "--workers", str(a.workers),
           "--batch", str(a.batch), "--dtype", "float32", "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.splitlines()[0])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shards", required=True)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--stoke-bench", default="build/default/bin/stoke-bench")
    p.add_argument("--weed", default="build/servers/bin/weed")
    p.add_argument("--json-out")
    a = p.parse_args()
    shards = sorted(f for f in os.listdir(a.shards) if f.endswith(".tar"))
    if not shards:
        sys.exit(f"no .tar shards in {a.shards}")
    first, last = shards[0][:-4], shards[-1][:-4]
    digits = len(first) - len(first.rstrip("0123456789"))
    prefix = first[:-digits]
    pattern = f"{prefix}{{{first[-digits:]}..{last[-digits:]}}}.tar"
    work = tempfile.mkdtemp(prefix="stoke-remote-bench-")
    try:
        with NginxServer(a.shards, f"{work}/nginx") as http, \
                SeaweedServer(a.weed, f"{work}/weed") as s3:
            s3.put_folder(BUCKET, a.shards)
            env = s3.env()
            env["STOKE_CACHE_DIR"] = f"{work}/cache"
            sources = {"local disk": os.path.join(os.path.abspath(a.shards), pattern),
                       "nginx (HTTP)": f"{http}/{pattern}",
                       "SeaweedFS (S3)": f"s3://{BUCKET}/{pattern}"}
            names = list(sources)
            rates = {n: [] for n in names}
            checksums = {n: set() for n in names}
            for r in range(a.repeat):
                order = names[r % len(names):] + names[:r % len(names)]
                for n in order:
                    row = run_bench(a.stoke_bench, sources[n], a, env)
                    rates[n].append(row["samples_per_s"])
                    checksums[n].add(row["checksum"])
                    print(f"round {r + 1} {n}: {row['samples_per_s']:.0f} samples/s, "
                          f"checksum {row['checksum']}", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = statistics.median(rates["local disk"])
    same = len(set().union(*checksums.values())) == 1
    print(f"| source | samples/s (median of {a.repeat}) | vs local disk |\n|---|---|---|")
    rows = []
    for n in names:
        m = statistics.median(rates[n])
        rows.append({"source": n, "samples_per_s": m, "vs_local": m / base,
                     "checksums": sorted(checksums[n])})
        print(f"| {n} | {m:,.0f} | {m / base:.2f} |")
    print(f"\nchecksums {'identical' if same else 'DIFFER'}: "
          f"{', '.join(sorted(set().union(*checksums.values())))}")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"rows": rows, "checksums_identical": same, "epochs": a.epochs,
                       "workers": a.workers, "batch": a.batch}, f, indent=1)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
