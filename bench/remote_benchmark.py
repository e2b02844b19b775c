#!/usr/bin/env python3
"""stoke reading the same WebDataset shards from local disk, from nginx over HTTP and from
SeaweedFS over S3, on 127.0.0.1, measured in one run.

    remote_benchmark.py --shards [NAME=]DIR [--shards [NAME=]DIR ...] [--args NAME="FLAGS"]
                        [--epochs 2] [--workers 2] [--batch 64] [--repeat 3]
                        [--shuffle-window 4] [--cache-limit 16GiB]
                        [--stoke-bench build/default/bin/stoke-bench]
                        [--weed build/servers/bin/weed] [--json-out FILE]
                        [--dataset-level-index [--stoke-pack build/default/bin/stoke-pack]]

Each DIR holds one corpus's shards (stoke-pack --out DIR/train-%06d.tar) and their sidecars;
NAME labels it in the table (default: the folder's name), and --args NAME="..." adds
stoke-bench flags for it (e.g. --args fmnist="--size 28" for Fashion-MNIST). This starts nginx
serving the corpora and `weed server -s3` with a bucket per corpus it fills through SigV4 (curl
--aws-sigv4), then runs stoke-bench on each corpus and source in turn, rotating the order every
round: decode, random-resized-crop (224 unless --args says otherwise), flip, float32 NCHW (the
training preset), --workers worker processes, --shuffle-window shards shuffled together. Remote
shards go through the shard cache (--cache-limit; a fresh cache folder for every run, so the
first epoch starts cold and the second finds the cache warm). Reports, per corpus and source,
the median samples/s of --repeat rounds for each epoch and over the run, the ratio to local
disk, the cache's bytes fetched and fetch wait, and whether the batches' checksums agree (they
must: the same shards, the same seed).

--dataset-level-index adds two sources: the same shards given by a dataset-level index on each
server (a wids JSON beside them on nginx, a sizes.json in the bucket; the counts come from
`stoke-pack --data SHARDS --index`), so no shard is looked at when the loader starts and the
shard cache looks each one up as the plan nears it. Their batches must be the same too.

Uses only the standard library; nginx (Debian's nginx-light) and weed (setup.sh installs it
into build/servers) must be installed.
"""

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_servers import NginxServer, SeaweedServer  # noqa: E402

BUCKET = "bench"
SOURCES = ("local disk", "nginx (HTTP)", "SeaweedFS (S3)")
INDEXED = ("nginx, dataset-level index", "S3, dataset-level index")


def brace_pattern(folder):
    """train-{000000..000011}.tar for the .tar files of `folder`."""
    shards = sorted(f for f in os.listdir(folder) if f.endswith(".tar"))
    if not shards:
        sys.exit(f"no .tar shards in {folder}")
    first, last = shards[0][:-4], shards[-1][:-4]
    digits = len(first) - len(first.rstrip("0123456789"))
    return f"{first[:-digits]}{{{first[-digits:]}..{last[-digits:]}}}.tar"


def run_bench(a, data, extra, env, cache_dir):
    cmd = [a.stoke_bench, "--data", data, "--epochs", str(a.epochs), "--workers", str(a.workers),
           "--batch", str(a.batch), "--dtype", "float32", "--shuffle-window",
           str(a.shuffle_window), "--cache-dir", cache_dir, "--cache-limit", a.cache_limit,
           "--json", *extra]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def dataset_level_indexes(a, name, folder, www, work):
    """Writes www/NAME.wids.json (its shards named NAME/train-N.tar, beside it on nginx) and
    returns the path of a sizes.json naming them train-N.tar (for the bucket)."""
    counts_file = os.path.join(work, f"{name}.counts.wids.json")
    subprocess.run([a.stoke_pack, "--no-progress", "--data",
                    os.path.join(folder, brace_pattern(folder)), "--index", counts_file],
                   check=True, stdout=subprocess.DEVNULL)
    with open(counts_file) as f:
        shards = json.load(f)["shardlist"]
    wids = {"__kind__": "wids-shard-index-v1", "wids_version": 1,
            "shardlist": [{"url": f"{name}/{os.path.basename(s['url'])}",
                           "nsamples": s["nsamples"]} for s in shards]}
    with open(os.path.join(www, f"{name}.wids.json"), "w") as f:
        json.dump(wids, f)
    sizes = os.path.join(work, f"{name}.sizes.json")
    with open(sizes, "w") as f:
        json.dump({os.path.basename(s["url"]): s["nsamples"] for s in shards}, f)
    return sizes


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shards", action="append", required=True, metavar="[NAME=]DIR")
    p.add_argument("--args", action="append", default=[], metavar='NAME="FLAGS"')
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--shuffle-window", type=int, default=4)
    p.add_argument("--cache-limit", default="16GiB")
    p.add_argument("--stoke-bench", default="build/default/bin/stoke-bench")
    p.add_argument("--weed", default="build/servers/bin/weed")
    p.add_argument("--json-out")
    p.add_argument("--dataset-level-index", action="store_true")
    p.add_argument("--stoke-pack", default="build/default/bin/stoke-pack")
    a = p.parse_args()
    sources = SOURCES + (INDEXED if a.dataset_level_index else ())
    corpora = {}
    for spec in a.shards:
        name, _, folder = spec.rpartition("=")
        folder = os.path.abspath(folder)
        corpora[name or os.path.basename(folder.rstrip("/"))] = folder
    extra = {name: [] for name in corpora}
    for spec in a.args:
        name, _, flags = spec.partition("=")
        if name not in corpora:
            sys.exit(f"--args {spec}: no corpus named {name} (corpora: {', '.join(corpora)})")
        extra[name] = shlex.split(flags)

    work = tempfile.mkdtemp(prefix="stoke-remote-bench-")
    runs = {(c, s): [] for c in corpora for s in sources}
    try:
        www = os.path.join(work, "www")
        os.makedirs(www)
        for name, folder in corpora.items():
            os.symlink(folder, os.path.join(www, name))
        with NginxServer(www, f"{work}/nginx") as http, \
                SeaweedServer(a.weed, f"{work}/weed") as s3:
            buckets = {name: f"{BUCKET}-{i}" for i, name in enumerate(corpora)}
            for name, folder in corpora.items():
                s3.put_folder(buckets[name], folder)
            indexes = {}
            if a.dataset_level_index:
                for name, folder in corpora.items():
                    indexes[name] = dataset_level_indexes(a, name, folder, www, work)
                    s3.put_file(buckets[name], "sizes.json", indexes[name])
            env = s3.env()
            keys = [(c, s) for c in corpora for s in sources]
            for r in range(a.repeat):
                shift = r % len(keys)
                for c, s in keys[shift:] + keys[:shift]:
                    pattern = brace_pattern(corpora[c])
                    data = {"local disk": os.path.join(corpora[c], pattern),
                            "nginx (HTTP)": f"{http}/{c}/{pattern}",
                            "SeaweedFS (S3)": f"s3://{buckets[c]}/{pattern}",
                            INDEXED[0]: f"{http}/{c}.wids.json",
                            INDEXED[1]: f"s3://{buckets[c]}/sizes.json"}[s]
                    cache = tempfile.mkdtemp(dir=work, prefix="cache-")
                    row = run_bench(a, data, extra[c], env, cache)
                    shutil.rmtree(cache, ignore_errors=True)
                    runs[(c, s)].append(row)
                    per_epoch = ", ".join(f"{v:,.0f}" for v in row["samples_per_s_per_epoch"])
                    print(f"round {r + 1} {c} / {s}: {row['samples_per_s']:,.0f} samples/s "
                          f"(epochs: {per_epoch}), checksum {row['checksum']}", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    epoch_cols = " | ".join(f"epoch {e + 1}" for e in range(a.epochs))
    print(f"| corpus | source | samples/s (median of {a.repeat}) | {epoch_cols} | vs local, "
          f"epoch by epoch | fetched | fetch wait |")
    print("|---|---|---|" + "---|" * a.epochs + "---|---|---|")
    rows, same = [], True
    for c in corpora:
        base = [statistics.median(r["samples_per_s_per_epoch"][e] for r in runs[(c, "local disk")])
                for e in range(a.epochs)]
        checksums = set()
        for s in sources:
            rs = runs[(c, s)]
            checksums |= {r["checksum"] for r in rs}
            total = statistics.median(r["samples_per_s"] for r in rs)
            epochs = [statistics.median(r["samples_per_s_per_epoch"][e] for r in rs)
                      for e in range(a.epochs)]
            vs = [v / b for v, b in zip(epochs, base)]
            fetched = statistics.median(r["shard_cache"]["bytes_fetched"] for r in rs)
            wait = statistics.median(r["shard_cache"]["fetch_wait_s"] for r in rs)
            rows.append({"corpus": c, "source": s, "samples_per_s": total,
                         "samples_per_s_per_epoch": epochs, "vs_local_per_epoch": vs,
                         "bytes_fetched": fetched, "fetch_wait_s": wait,
                         "shard_cache": rs[0]["shard_cache"]["state"],
                         "checksums": sorted({r["checksum"] for r in rs})})
            cells = " | ".join(f"{v:,.0f}" for v in epochs)
            ratios = " / ".join(f"{v:.2f}" for v in vs)
            print(f"| {c} | {s} | {total:,.0f} | {cells} | {ratios} | "
                  f"{fetched / 2**20:,.0f} MiB | {wait:.2f} s |")
        same = same and len(checksums) == 1
        print(f"<!-- {c}: checksums {'identical' if len(checksums) == 1 else 'DIFFER'}: "
              f"{', '.join(sorted(checksums))} -->")
    print(f"\nchecksums {'identical within each corpus' if same else 'DIFFER'}")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"rows": rows, "checksums_identical": same, "epochs": a.epochs,
                       "workers": a.workers, "batch": a.batch, "shuffle_window": a.shuffle_window,
                       "cache_limit": a.cache_limit, "runs": {f"{c} / {s}": v
                                                              for (c, s), v in runs.items()}},
                      f, indent=1)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
