#!/usr/bin/env python3
"""How stoke's dataset index scales: start-up, the training process's and each worker's memory,
and the time to the first batch, for the first rank of a machine (which indexes), the other
ranks (which map the machine's index file), and a restart.

    python3 bench/index_scale.py                                   # list-1m, tree-128k, shards-1m, coco
    python3 bench/index_scale.py --datasets list-10m,tree-1.28m --ranks 1,8
    python3 bench/index_scale.py --datasets coco --work /data/scratch

Datasets (made once under --work, kept for the next run):
  list-N     a list file of N lines naming the real JPEGs of testdata/jpeg over and over
  tree-N     an image-folder tree of N files in 1,000 class folders (hard links to real JPEGs,
             so it costs inodes, not bytes)
  shards-N   WebDataset shards of 5,000 samples with their sidecars (real JPEG members)
  linked-N   WebDataset shards by name (a brace range train-{000000..NNNNNN}.tar): N/5,000 hard
             links of one real 5,000-sample shard and its sidecar, as wids-N's (the slope's twin
             is shards-1000, one real 1,000-sample shard by name)
  wids-N     a dataset-level index (wids JSON) of N/5,000 shards of 5,000 samples: each shard a
             hard link to one real shard and its sidecar (so 100 M samples cost one shard's
             bytes), each indexed by itself the first time a sample of it is read
  idx-SPLIT  the IDX folder --idx-dir (Fashion-MNIST: /usr/share/datasets/fashion-mnist), split
             train or test (the Loader's split=); no slope (no small twin)
  parquet-N  Parquet files of at most 1,000,000 rows (bench/make_parquet_rows.py: row groups of
             100,000, 8 x 8 JPEGs and int64 labels, snappy pages with an offset index), written by
             --parquet-python (a Python with pyarrow and Pillow: setup.sh's build/parquet)
  coco       a train2017-sized instances file (bench/make_coco_instances.py); indexed only (its
             images are not made), so no first batch

Each rank is a process of its own (this script with --rank), with one worker, batch 64, 32 px.
Each case also reports the cache folder's datasets/ bytes (every file there) and index files'
bytes per sample; for wids-N, whose shards are indexed lazily (one index file per shard, written
when a worker first reads one of its samples, so after 4 batches only some have files), also
the extrapolation to every shard read once: (the dataset-level file + the mean size of the
per-shard files present x the number of shards) / samples. Memory is read from /proc: a
process's own memory is RssAnon + RssShmem (its heap and its share
of the loader's arena); the index file's pages a process touched are RssFile, the page cache's,
one copy for the machine (the PSS column divides them among the processes that map them). The
per-sample figures are the slope between the dataset and a 1,000-sample one of the same kind, so
Python's and the loader's fixed costs cancel.

The page cache can be emptied between runs (--cold) where /proc/sys/vm/drop_caches is writable.
Standard library only, plus the stoke module (--python names an interpreter that has it).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import io
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


# ---------------------------------------------------------------------------------------------
# One rank: constructs a loader, takes its first batches, reports what it cost.

def status(pid, fields):
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in fields:
                    out[key] = int(rest.split()[0]) * 1024
    except OSError:
        pass
    return out


def pss(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def children(pid):
    kids = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return kids


FIELDS = ("VmRSS", "VmHWM", "RssAnon", "RssShmem", "RssFile")


def rank_main(a):
    import stoke  # noqa: the interpreter --python named
    kw = dict(batch=64, workers=a.workers, size=32, seed=0, cache_dir=a.cache)
    if a.data.endswith(".json") and not a.data.endswith(".wids.json"):
        kw["on_error"] = "skip"  # (COCO: its images are not made)
    if a.split:
        kw["split"] = a.split  # (an IDX folder)
    base = status("self", FIELDS)
    t0 = time.perf_counter()
    loader = stoke.Loader(a.data, **kw)
    t1 = time.perf_counter()
    first = None
    if a.batches > 0:
        it = iter(loader)
        next(it)
        first = time.perf_counter() - t1
        for _ in range(a.batches - 1):
            next(it)
    me = status("self", FIELDS)
    out = {"startup_s": t1 - t0, "first_batch_s": first,
           "own_bytes": me.get("RssAnon", 0) + me.get("RssShmem", 0)
           - base.get("RssAnon", 0) - base.get("RssShmem", 0),
           "rss_bytes": me.get("VmRSS", 0) - base.get("VmRSS", 0),
           "file_bytes": me.get("RssFile", 0) - base.get("RssFile", 0),
           "peak_bytes": me.get("VmHWM", 0), "pss_bytes": pss("self"), "workers": []}
    for pid in children(os.getpid()):
        w = status(pid, FIELDS)
        out["workers"].append({"own_bytes": w.get("RssAnon", 0) + w.get("RssShmem", 0),
                               "file_bytes": w.get("RssFile", 0), "pss_bytes": pss(pid)})
    print(json.dumps(out), flush=True)
    del loader


# ---------------------------------------------------------------------------------------------
# Datasets.

def jpegs(testdata):
    out = []
    for d, _, files in sorted(os.walk(os.path.join(testdata, "jpeg"))):
        out += [os.path.join(d, f) for f in sorted(files) if f.endswith(".jpg")]
    if not out:
        sys.exit(f"index_scale: no JPEGs under {testdata}/jpeg (build the tests first)")
    return out


def count(spec):
    n = spec.split("-", 1)[1].lower()
    scale = {"k": 1000, "m": 1000000}
    return int(float(n[:-1]) * scale[n[-1]]) if n[-1] in scale else int(n)


def make_list(path, n, images):
    if os.path.exists(path):
        return
    with open(path + ".tmp", "w", buffering=1 << 20) as f:
        for i in range(n):
            f.write(f"{images[i % len(images)]}\t{i % 1000}\n")
    os.replace(path + ".tmp", path)


def make_tree(path, n, images):
    if os.path.exists(os.path.join(path, ".done")):
        return
    shutil.rmtree(path, ignore_errors=True)
    for c in range(1000):
        d = os.path.join(path, f"n{c:05d}")
        os.makedirs(d)
        for i in range(c, n, 1000):
            os.link(images[i % len(images)], os.path.join(d, f"img_{i:08d}.jpg"))
    open(os.path.join(path, ".done"), "w").close()


def make_shards(folder, n, images, per_shard=5000):
    done = os.path.join(folder, ".done")
    if os.path.exists(done):
        return os.path.join(folder, f"train-{{000000..{(n - 1) // per_shard:06d}}}.tar")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    payload = [open(p, "rb").read() for p in images]
    for s in range(0, (n + per_shard - 1) // per_shard):
        name = os.path.join(folder, f"train-{s:06d}.tar")
        with tarfile.open(name, "w", format=tarfile.USTAR_FORMAT) as tar:
            for i in range(s * per_shard, min(n, (s + 1) * per_shard)):
                for ext, data in (("jpg", payload[i % len(payload)]), ("cls", b"%d" % (i % 1000))):
                    info = tarfile.TarInfo(f"{i:09d}.{ext}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        members = []
        with tarfile.open(name) as tar:
            for m in tar.getmembers():
                line = f"{m.name}\t{m.offset_data}\t{m.size}"
                if m.name.endswith(".cls"):
                    line += "\t" + tar.extractfile(m).read().decode()
                members.append(line)
        with open(name + ".idx", "w") as f:
            f.write(f"# stoke shard index 1 {os.path.getsize(name)}\n" + "\n".join(members) + "\n")
    open(done, "w").close()
    return os.path.join(folder, f"train-{{000000..{(n - 1) // per_shard:06d}}}.tar")


def make_wids(folder, n, images, per_shard=5000):
    """N samples as hard links to one real shard of `per_shard`, and their wids index."""
    index = os.path.join(folder, "train.wids.json")
    if os.path.exists(index):
        return index
    real = make_shards(os.path.join(os.path.dirname(folder), f"shards-{per_shard}"), per_shard,
                       images, per_shard)
    real = real.replace("{000000..000000}", "000000")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    shards = []
    for s in range((n + per_shard - 1) // per_shard):
        name = f"train-{s:06d}.tar"
        os.link(real, os.path.join(folder, name))
        os.link(real + ".idx", os.path.join(folder, name + ".idx"))
        shards.append({"url": name, "nsamples": min(per_shard, n - s * per_shard),
                       "filesize": os.path.getsize(real)})
    with open(index + ".partial", "w") as f:
        json.dump({"__kind__": "wids-shard-index-v1", "wids_version": 1, "name": "train",
                   "shardlist": shards}, f)
    os.rename(index + ".partial", index)
    return index


def make_linked(folder, n, images, per_shard=5000):
    """N samples in N/per_shard shards by name, each a hard link (and its sidecar) to one real
    shard of `per_shard` (wids-N's, shards-5000), as a brace range."""
    last = (n + per_shard - 1) // per_shard - 1
    pattern = os.path.join(folder, f"train-{{000000..{last:06d}}}.tar")
    if os.path.exists(os.path.join(folder, ".done")):
        return pattern
    if n % per_shard:
        sys.exit(f"index_scale: linked-N needs N a multiple of {per_shard}")
    real = make_shards(os.path.join(os.path.dirname(folder), f"shards-{per_shard}"), per_shard,
                       images, per_shard)
    real = real.replace("{000000..000000}", "000000")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for s in range(last + 1):
        name = os.path.join(folder, f"train-{s:06d}.tar")
        os.link(real, name)
        os.link(real + ".idx", name + ".idx")
    open(os.path.join(folder, ".done"), "w").close()
    return pattern


IDX_SAMPLES = {"train": 60000, "test": 10000}


def dataset(spec, work, images, idx_dir=None, parquet_python=None):
    """(path, samples, split) of a dataset spec, made under `work` when missing."""
    kind = spec.split("-")[0]
    if kind == "parquet":
        n = count(spec)
        folder = os.path.join(work, spec)
        subprocess.run([parquet_python, os.path.join(HERE, "make_parquet_rows.py"), str(n),
                        folder], check=True)
        return folder, n, None
    if kind == "idx":
        split = spec.split("-", 1)[1]
        if split not in IDX_SAMPLES:
            sys.exit(f"index_scale: {spec}: the split is train or test")
        return idx_dir, IDX_SAMPLES[split], split
    if kind == "coco":
        path = os.path.join(work, "instances_train2017.json")
        if not os.path.exists(path):
            subprocess.run([sys.executable, os.path.join(HERE, "make_coco_instances.py"), path],
                           check=True)
        return path, 118287, None
    n = count(spec)
    if kind == "list":
        path = os.path.join(work, f"{spec}.txt")
        make_list(path, n, images)
    elif kind == "tree":
        path = os.path.join(work, spec)
        make_tree(path, n, images)
    elif kind == "shards":
        path = make_shards(os.path.join(work, spec), n, images)
    elif kind == "wids":
        path = make_wids(os.path.join(work, spec), n, images)
    elif kind == "linked":
        path = make_linked(os.path.join(work, spec), n, images)
    else:
        sys.exit(f"index_scale: unknown dataset {spec}")
    return path, n, None


def small_twin(spec):
    kind = spec.split("-")[0]
    if kind in ("coco", "idx"):
        return None
    return "shards-1000" if kind == "linked" else kind + "-1000"


def datasets_usage(cache, spec, n, per_shard=5000):
    """The cache folder's datasets/ bytes: every file, the index files, and for a wids dataset
    the per-shard files (the most common size: every shard is the same hard-linked shard) apart
    from the dataset-level one(s), and the extrapolation to every shard read once."""
    folder = os.path.join(cache, "datasets")
    files = []
    for d, _, names in os.walk(folder):
        for f in names:
            st = os.lstat(os.path.join(d, f))
            files.append((f, st.st_size, st.st_mtime_ns))
    index = [(f, size, t) for f, size, t in files if f.endswith(".stoke-index")]
    out = {"datasets_files": len(files), "datasets_bytes": sum(x[1] for x in files),
           "datasets_b_per_sample": sum(x[1] for x in files) / n,
           "index_bytes": sum(x[1] for x in index),
           "index_b_per_sample": sum(x[1] for x in index) / n,
           "index_sizes": {}}
    for _, size, _ in index:
        out["index_sizes"][str(size)] = out["index_sizes"].get(str(size), 0) + 1
    if spec.split("-")[0] == "wids" and index:
        shards = (n + per_shard - 1) // per_shard
        mode = max(out["index_sizes"].items(), key=lambda kv: (kv[1], int(kv[0])))
        shard_size, shard_files = int(mode[0]), mode[1]
        top = [x for x in index if x[1] != shard_size]
        if not top and len(index) > 1:  # all one size: the dataset-level file is the oldest
            top = [min(index, key=lambda x: x[2])]
            shard_files -= 1
        top_bytes = sum(x[1] for x in top)
        out.update({"wids_shards": shards, "wids_shard_files": shard_files,
                    "wids_shard_file_bytes": shard_size, "wids_top_files": len(top),
                    "wids_top_bytes": top_bytes,
                    "wids_top_is_oldest": bool(top) and min(index, key=lambda x: x[2]) in top,
                    "wids_every_shard_read_b_per_sample":
                        (top_bytes + shard_size * shards) / n})
    return out


# ---------------------------------------------------------------------------------------------
# The driver.

def drop_caches():
    try:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def ranks(a, data, cache, n, batches, split=None):
    cmd = [a.python, os.path.abspath(__file__), "--rank", "--data", data, "--cache", cache,
           "--workers", "1", "--batches", str(batches)] + (["--split", split] if split else [])
    env = dict(os.environ, STOKE_WORKER_PATH=a.worker) if a.worker else None
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for _ in range(n)]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=a.timeout)
        if p.returncode != 0:
            raise RuntimeError(stderr.strip().splitlines()[-1] if stderr.strip() else
                               f"exit {p.returncode}")
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def mib(b):
    return f"{b / 1048576:.1f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    p.add_argument("--cache", help=argparse.SUPPRESS)
    p.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--batches", type=int, default=4, help=argparse.SUPPRESS)
    p.add_argument("--split", default=None, help=argparse.SUPPRESS)
    p.add_argument("--idx-dir", default="/usr/share/datasets/fashion-mnist",
                   help="the IDX folder of the idx-train and idx-test datasets")
    p.add_argument("--datasets", default="list-1m,tree-128k,shards-1m,coco")
    p.add_argument("--parquet-python", default=os.path.join(ROOT, "build", "parquet", "bin",
                                                             "python"),
                   help="the Python that writes parquet-N datasets (pyarrow, Pillow)")
    p.add_argument("--ranks", default="1,8", help="ranks started at once on the machine")
    p.add_argument("--work", default="/tmp/stoke-index-scale", help="where datasets are made")
    p.add_argument("--build", default=os.path.join(ROOT, "build", "default"))
    p.add_argument("--python", default=None,
                   help="an interpreter with the stoke module (default: the build's test venv)")
    p.add_argument("--worker", default=None, help="stoke-worker to use (default: the module's)")
    p.add_argument("--cold", action="store_true", help="empty the page cache before each case")
    p.add_argument("--timeout", type=float, default=3600)
    a = p.parse_args()
    if a.rank:
        return rank_main(a)
    if a.python is None:
        a.python = os.path.join(a.build, "python-test", "torch", "bin", "python")
    os.makedirs(a.work, exist_ok=True)
    images = jpegs(os.path.join(a.build, "testdata"))
    rank_counts = [int(r) for r in a.ranks.split(",")]
    rows = []
    for spec in a.datasets.split(","):
        t = time.perf_counter()
        data, n, split = dataset(spec, a.work, images, a.idx_dir, a.parquet_python)
        print(f"# {spec}: {n:,} samples ({time.perf_counter() - t:.0f} s to make)", file=sys.stderr)
        batches = 0 if spec == "coco" else 4
        twin = small_twin(spec)
        base = None
        if twin:
            tdata, tn, tsplit = dataset(twin, a.work, images, a.idx_dir, a.parquet_python)
            cache = os.path.join(a.work, "cache-base")
            shutil.rmtree(cache, ignore_errors=True)
            ranks(a, tdata, cache, 1, batches)  # built
            base = (ranks(a, tdata, cache, 1, batches)[0], tn)  # found
        for r in rank_counts:
            cache = os.path.join(a.work, f"cache-{spec}-{r}")
            shutil.rmtree(cache, ignore_errors=True)
            cold = a.cold and drop_caches()
            first = ranks(a, data, cache, r, batches, split)  # all start at once: one indexes
            again = ranks(a, data, cache, r, batches, split)  # the file exists: a restart
            one = min(first, key=lambda x: -x["startup_s"])  # the rank that indexed
            index_files = [os.path.getsize(os.path.join(cache, "datasets", f))
                           for f in os.listdir(os.path.join(cache, "datasets"))
                           if f.endswith(".stoke-index")]
            index_file = sum(index_files)
            # The epochs' orders the ranks map (one file a machine per epoch, 4 B a sample).
            orders = os.path.join(cache, "orders")
            order_files = sum(os.path.getsize(os.path.join(orders, f)) for f in os.listdir(orders)
                              if f.endswith(".stoke-order")) if os.path.isdir(orders) else 0
            row = {"dataset": spec, "samples": n, "ranks": r, "cold": cold,
                   "first_startup_s": max(x["startup_s"] for x in first),
                   "other_startup_s": max(x["startup_s"] for x in again),
                   "first_batch_s": max((x["first_batch_s"] or 0) for x in again),
                   "first_rank_first_batch_s": max((x["first_batch_s"] or 0) for x in first),
                   "indexing_peak_mib": max(x["peak_bytes"] for x in first) / 1048576,
                   "index_file_mib": index_file / 1048576, "index_files": len(index_files),
                   "order_files_mib": order_files / 1048576}
            row.update(datasets_usage(cache, spec, n))
            if base:
                b, bn = base
                x = again[0]
                row["process_b_per_sample"] = (x["rss_bytes"] - b["rss_bytes"]) / (n - bn)
                row["process_own_b_per_sample"] = (x["own_bytes"] - b["own_bytes"]) / (n - bn)
                own = lambda y: y["own_bytes"] + sum(w["own_bytes"] for w in y["workers"])
                if x["workers"] and b["workers"]:
                    row["worker_own_b_per_sample"] = (
                        (x["workers"][0]["own_bytes"] - b["workers"][0]["own_bytes"]) / (n - bn))
                    row["worker_file_mib"] = x["workers"][0]["file_bytes"] / 1048576
                # What the index costs the machine: every rank's own memory beyond a loader of
                # the small twin's, and the index and order files' pages once (the page cache's).
                row["machine_index_mib"] = (sum(own(y) - own(b) for y in again) +
                                            index_file + order_files) / 1048576
            rows.append(row)
            print(json.dumps(row), flush=True)
    one_rank = {r["dataset"]: r.get("machine_index_mib") for r in rows if r["ranks"] == 1}
    print("\n| dataset | samples | ranks | start-up, first rank (indexes) | start-up, other ranks "
          "and restart | first batch (first rank / others) | training process B/sample (own) | worker's own B/sample | "
          "index memory of the machine (vs 1 rank) | index file | datasets/ B/sample "
          "(wids: every shard read once, extrapolated) | indexing peak |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        per = r.get("process_b_per_sample")
        own_per = r.get("process_own_b_per_sample")
        wper = r.get("worker_own_b_per_sample")
        machine = r.get("machine_index_mib")
        ratio = machine / one_rank[r["dataset"]] if machine and one_rank.get(r["dataset"]) else None
        print(f"| {r['dataset']} | {r['samples']:,} | {r['ranks']} | {r['first_startup_s']:.2f} s "
              f"| {r['other_startup_s']:.3f} s | {r['first_rank_first_batch_s']:.3f} / "
              f"{r['first_batch_s']:.3f} s | "
              f"{'-' if per is None else f'{per:.1f}'}{'' if own_per is None else f' ({own_per:.1f})'} "
              f"| {'-' if wper is None else f'{wper:.2f}'} "
              f"| {'-' if machine is None else f'{machine:.0f} MiB'}"
              f"{'' if ratio is None else f' ({ratio:.2f}x)'} | {r['index_file_mib']:.0f} MiB "
              f"| {r['datasets_b_per_sample']:.1f}"
              + (f" ({r['wids_every_shard_read_b_per_sample']:.1f})"
                 if "wids_every_shard_read_b_per_sample" in r else "")
              + f" | {r['indexing_peak_mib']:.0f} MiB |")

if __name__ == "__main__":
    sys.exit(main())
