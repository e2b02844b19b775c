#!/usr/bin/env python3
"""stoke on Parquet against stoke on the same samples as an image folder and as tar shards, and
against Hugging Face `datasets` (and litdata's Parquet streaming) with PyTorch's DataLoader.

    parquet_benchmark.py [--build DIR] [--corpus DIR] [--work DIR] [--repeat 3] [--workers 2]
                         [--batch 64] [--epochs 8] [--window 8] [--large-copies 4]
                         [--large-epochs 2] [--diag-epochs 3] [--peer-epochs 2]
                         [--litdata-python PY] [--no-large] [--no-diag] [--no-peers]

Run it with the Python that has pyarrow, datasets and torch (build/parquet/bin/python). --build
is a copy of a build's bin/, lib/ and libexec/ (the build tree's RUNPATHs are absolute: the
script puts its lib/ first on LD_LIBRARY_PATH and checks that stoke-bench loads it). The data,
made once under --work and reused:

  corpus            --corpus, else a 3,000-JPEG `stoke-mkdata jpeg-corpus` (24 class folders)
  tar               WebDataset shards of 100 samples (tests/loader/make_shards.py)
  pq-datasets       Dataset.to_parquet (Image + ClassLabel, the Hub's layout): one file of one
                    100-row row group per shard (make_parquet.py --writer datasets --files N)
  pq-pyarrow        pyarrow.parquet.write_table's defaults (snappy, dictionary tried), one file
                    of 100-row row groups (make_parquet.py --writer pyarrow --rows-per-group 100)
  *-large           the same three from --large-copies hard-linked copies of the corpus, so the
                    decoded Parquet pages do not all stay in a worker's page cache under a full
                    shuffle (--shuffle-window 0: 32 MiB a worker)

Each round runs every configuration once, in an order rotated from round to round, so drift of
a shared machine falls on all of them alike. stoke runs are stoke-bench's own measurement
(--json: samples_per_s over all epochs; a cold, uncounted pass first builds each index and
reports its start-up). Every configuration has the default photo pipeline: random-resized-crop
224 and horizontal flip, uint8; --shuffle-window --window and 0. stoke's checksums (of the
batches as delivered) must be equal between configurations of the same samples, window and
epochs. Besides the rate, each run records its CPU time per sample and the cores other
processes took meanwhile (/proc/stat less our children's rusage): on a shared machine the CPU
time per sample is the steadier comparison. --workers 0 runs (diag) show the stages' cost
in-process.

The peers read pq-datasets:

  hf        datasets.load_dataset("parquet", ...) (its one-time conversion to an Arrow cache
            timed apart, with an empty cache every round), .with_transform(PIL decode,
            torchvision RandomResizedCrop(224), RandomHorizontalFlip, PILToTensor: uint8),
            DataLoader(batch_size, num_workers, shuffle=True, persistent_workers=True); one
            warm-up epoch, then --peer-epochs timed
  litdata   litdata.index_parquet_dataset + StreamingDataset(item_loader=ParquetLoader(),
            shuffle=True, the same transform) + StreamingDataLoader (spawn: litdata refuses fork
            with Polars), in the Python of --litdata-python (its own venv: litdata needs
            torch >= 2.4, e.g. `python3 -m venv --system-site-packages V && V/bin/pip install
            litdata polars pyarrow torchvision 'numpy>=2'`); skipped when that Python is
            missing. Reads a copy of pq-datasets, since litdata writes index.json beside it.

Writes --work/results.json with every run. Only the standard library is used here.
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
IMAGE_EXTENSIONS = {".jpg", ".jpeg", ".png"}
ROWS_PER_GROUP = 100


# ---------------------------------------------------------------------------------------------
# Peers (run in a child Python: --peer-mode hf|litdata). Module level, so that litdata's spawned
# workers can unpickle the transform.

_TRANSFORM = None


def _tensor(image):
    global _TRANSFORM
    if _TRANSFORM is None:
        from torchvision import transforms as T
        _TRANSFORM = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                                T.PILToTensor()])
    return _TRANSFORM(image if image.mode == "RGB" else image.convert("RGB"))


def hf_transform(batch):
    # Image() has decoded the bytes with PIL already (and loaded them in full).
    return {"image": [_tensor(im) for im in batch["image"]], "label": batch["label"]}


def litdata_transform(row):
    import io
    from PIL import Image
    image = Image.open(io.BytesIO(row["image"]["bytes"]))
    image.load()
    return {"image": _tensor(image), "label": row["label"]}


def tree_cpu_s(root=None):
    """CPU seconds (user + system) of a process and its live descendants, from /proc."""
    root = root or os.getpid()
    parent, cpu = {}, {}
    tick = os.sysconf("SC_CLK_TCK")
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            f = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(d)] = int(f[1])
        cpu[int(d)] = (int(f[11]) + int(f[12])) / tick
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo += [c for c, pp in parent.items() if pp == pid]
    return total


def time_epochs(loader, epochs, batch):
    """Epoch 0 is the warm-up. Returns per epoch [samples, seconds, CPU seconds of the tree]."""
    out = []
    for _ in range(epochs + 1):
        n = 0
        cpu = tree_cpu_s()
        start = time.perf_counter()
        for b in loader:
            x = b["image"]
            if n == 0:
                assert tuple(x.shape[1:]) == (3, 224, 224) and str(x.dtype) == "torch.uint8", \
                    (x.shape, x.dtype)
                assert x.shape[0] == batch
            n += x.shape[0]
        out.append([n, time.perf_counter() - start, tree_cpu_s() - cpu])
    return out


def peer_main(a):
    import glob
    files = sorted(glob.glob(os.path.join(a.peer_data, "*.parquet")))
    result = {"peer": a.peer_mode, "files": len(files)}
    if a.peer_mode == "hf":
        os.environ["HF_DATASETS_CACHE"] = a.peer_cache
        os.environ["HF_DATASETS_OFFLINE"] = "1"
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"
        import datasets
        import torch
        start = time.perf_counter()
        ds = datasets.load_dataset("parquet", data_files=files, split="train")
        result["prepare_s"] = time.perf_counter() - start
        result["versions"] = {"datasets": datasets.__version__, "torch": torch.__version__}
        ds = ds.with_transform(hf_transform)
        loader = torch.utils.data.DataLoader(ds, batch_size=a.batch, num_workers=a.workers,
                                             shuffle=True, persistent_workers=a.workers > 0)
    else:
        import litdata
        import torch
        from litdata.streaming.item_loader import ParquetLoader
        index = os.path.join(a.peer_data, "index.json")
        if os.path.exists(index):
            os.remove(index)
        start = time.perf_counter()
        litdata.index_parquet_dataset(a.peer_data)
        result["prepare_s"] = time.perf_counter() - start
        result["versions"] = {"litdata": litdata.__version__, "torch": torch.__version__}
        ds = litdata.StreamingDataset(a.peer_data, item_loader=ParquetLoader(), shuffle=True,
                                      transform=litdata_transform)
        loader = litdata.StreamingDataLoader(ds, batch_size=a.batch, num_workers=a.workers,
                                             multiprocessing_context="spawn",
                                             persistent_workers=a.workers > 0)
    result["dataset_size"] = len(ds)
    epochs = time_epochs(loader, a.peer_epochs, a.batch)
    result["epochs"] = epochs
    result["warmup_samples_per_s"] = epochs[0][0] / epochs[0][1]
    timed = epochs[1:]
    result["samples_per_s"] = sum(e[0] for e in timed) / sum(e[1] for e in timed)
    result["best_epoch_samples_per_s"] = max(e[0] / e[1] for e in timed)
    result["cpu_us_per_sample"] = sum(e[2] for e in timed) / sum(e[0] for e in timed) * 1e6
    print(json.dumps(result), flush=True)


# ---------------------------------------------------------------------------------------------
# Data


def count_images(root):
    n = 0
    for _, _, names in os.walk(root):
        n += sum(os.path.splitext(x)[1].lower() in IMAGE_EXTENSIONS for x in names)
    return n


def sh(cmd, env=None, quiet=True):
    r = subprocess.run(cmd, env=env, capture_output=quiet, text=True)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout or ''}{r.stderr or ''}")
    return r.stdout


def stoke_env(a):
    env = dict(os.environ)
    # The build tree's RUNPATHs name the build folder itself: the snapshot's libraries come first.
    lib = os.path.join(a.build, "lib")
    env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH")
                                    else "")
    env["STOKE_CACHE_DIR"] = os.path.join(a.work, "stoke-cache")
    return env


def check_snapshot(a, env):
    bench = os.path.join(a.build, "bin", "stoke-bench")
    out = sh(["ldd", bench], env=env)
    for line in out.splitlines():
        if "libstoke_loader" in line:
            path = line.split("=>")[1].split("(")[0].strip()
            want = os.path.realpath(os.path.join(a.build, "lib"))
            if os.path.dirname(os.path.realpath(path)) != want:
                sys.exit(f"stoke-bench would load {path}, not the one in {want}")
            return path
    sys.exit("stoke-bench does not link libstoke_loader?")


def find_corpus(a, env):
    if a.corpus:
        candidates = [a.corpus]
    else:
        candidates = ["/tmp/stoke-jpeg-corpus", "/tmp/corpus",
                      os.path.join(os.path.dirname(a.work), "corpus")]
    for c in candidates:
        if os.path.isdir(c) and count_images(c) == 3000:
            return c
    out = a.corpus or candidates[-1]
    if os.path.isdir(out) and count_images(out) > 0:
        return out  # a corpus of another size, given on purpose
    print(f"making the JPEG corpus in {out}", flush=True)
    sh([os.path.join(a.build, "bin", "stoke-mkdata"), "jpeg-corpus", "--out", out], env=env)
    return out


def make_large_corpus(corpus, out, copies):
    """copies hard links (symbolic where linking fails) of every image, in the same classes."""
    done = os.path.join(out, ".done")
    if os.path.exists(done):
        return out
    shutil.rmtree(out, ignore_errors=True)
    for cls in sorted(os.listdir(corpus)):
        src = os.path.join(corpus, cls)
        if not os.path.isdir(src):
            continue
        dst = os.path.join(out, cls)
        os.makedirs(dst)
        for folder, _, names in os.walk(src):
            for name in names:
                if os.path.splitext(name)[1].lower() not in IMAGE_EXTENSIONS:
                    continue
                rel = os.path.relpath(os.path.join(folder, name), src).replace(os.sep, "_")
                for k in range(copies):
                    target = os.path.join(dst, f"copy{k}-{rel}")
                    try:
                        os.link(os.path.join(folder, name), target)
                    except OSError:
                        os.symlink(os.path.abspath(os.path.join(folder, name)), target)
    open(done, "w").close()
    return out


def parquet_layout(python, paths):
    code = r"""
import json, sys, pyarrow.parquet as pq
files = sys.argv[1:]
groups = rows = 0; sizes = set(); codecs = set(); dictionary = set(); meta = set(); nbytes = 0
for f in files:
    m = pq.ParquetFile(f).metadata
    groups += m.num_row_groups; rows += m.num_rows
    meta |= {k.decode() for k in (m.metadata or {})}
    for g in range(m.num_row_groups):
        rg = m.row_group(g); sizes.add(rg.num_rows)
        for c in range(rg.num_columns):
            col = rg.column(c)
            if col.path_in_schema.startswith("image"):
                codecs.add(col.compression); dictionary.add(col.has_dictionary_page)
                nbytes += col.total_compressed_size
print(json.dumps({"files": len(files), "row_groups": groups, "rows": rows,
                  "rows_per_group": sorted(sizes), "image_codec": sorted(codecs),
                  "image_dictionary_page": sorted(dictionary), "metadata_keys": sorted(meta),
                  "image_bytes": nbytes}))
"""
    return json.loads(sh([python, "-c", code] + paths).strip().splitlines()[-1])


def make_sets(a, env, corpus, tag, samples):
    """tar, pq-datasets and pq-pyarrow of `corpus` under work/<kind><tag>; returns their paths."""
    shards = -(-samples // ROWS_PER_GROUP)
    tar_dir = os.path.join(a.work, "tar" + tag)
    tar_pattern = os.path.join(tar_dir, f"s-{{000000..{shards - 1:06d}}}.tar")
    if not os.path.exists(os.path.join(tar_dir, f"s-{shards - 1:06d}.tar")):
        shutil.rmtree(tar_dir, ignore_errors=True)
        os.makedirs(tar_dir)
        sh([sys.executable, os.path.join(REPO, "tests/loader/make_shards.py"), corpus,
            os.path.join(tar_dir, "s"), "--shards", str(shards)])
    writer_env = dict(os.environ, HF_DATASETS_CACHE=os.path.join(a.work, "hf-writer-cache"),
                      HF_DATASETS_DISABLE_PROGRESS_BARS="1")
    make_parquet = os.path.join(REPO, "tests/loader/make_parquet.py")
    ds_dir = os.path.join(a.work, "pq_datasets" + tag)
    ds_last = os.path.join(ds_dir, f"train-{shards - 1:05d}-of-{shards:05d}.parquet")
    if not os.path.exists(ds_last):
        shutil.rmtree(ds_dir, ignore_errors=True)
        os.makedirs(ds_dir)
        sh([sys.executable, make_parquet, corpus, os.path.join(ds_dir, "train"),
            "--writer", "datasets", "--rows-per-group", str(ROWS_PER_GROUP),
            "--files", str(shards)], env=writer_env)
    pa_dir = os.path.join(a.work, "pq_pyarrow" + tag)
    pa_file = os.path.join(pa_dir, "train.parquet")
    if not os.path.exists(pa_file):
        shutil.rmtree(pa_dir, ignore_errors=True)
        os.makedirs(pa_dir)
        sh([sys.executable, make_parquet, corpus, pa_file, "--writer", "pyarrow",
            "--rows-per-group", str(ROWS_PER_GROUP)], env=writer_env)
    ds_files = sorted(os.path.join(ds_dir, f) for f in os.listdir(ds_dir)
                      if f.endswith(".parquet"))
    layout = {"pq-datasets" + tag: parquet_layout(sys.executable, ds_files),
              "pq-pyarrow" + tag: parquet_layout(sys.executable, [pa_file])}
    for name, l in layout.items():
        if l["rows_per_group"] != [ROWS_PER_GROUP] or l["rows"] != samples:
            print(f"warning: {name} has row groups of {l['rows_per_group']} rows, "
                  f"{l['rows']} rows", flush=True)
    return {"tar": tar_pattern, "pq-datasets": ds_dir, "pq-pyarrow": pa_file}, layout


def disk_bytes(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for folder, _, names in os.walk(path):
        total += sum(os.path.getsize(os.path.join(folder, n)) for n in names)
    return total


# ---------------------------------------------------------------------------------------------
# Runs


def loadavg():
    try:
        return float(open("/proc/loadavg").read().split()[0])
    except OSError:
        return None


def machine_busy_s():
    """(CPU seconds every process of the machine ran, seconds stolen by the hypervisor)."""
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    user, nice, system, idle, iowait, irq, softirq, steal = (f + [0] * 8)[:8]
    return (user + nice + system + irq + softirq) / tick, steal / tick


class Measured:
    """Wall time, our children's CPU time and everyone else's (other processes, steal) over a
    child's run: foreign_cores = the cores others took, on average."""

    def __enter__(self):
        self.busy, self.steal = machine_busy_s()
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.ours = ru.ru_utime + ru.ru_stime
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.start
        busy, steal = machine_busy_s()
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        ours = ru.ru_utime + ru.ru_stime - self.ours
        foreign = max(0.0, busy - self.busy - ours) + (steal - self.steal)
        self.facts = {"wall_s": self.wall, "child_cpu_s": ours,
                      "foreign_cores": foreign / self.wall if self.wall > 0 else None}
        return False


def run_stoke(a, env, c, epochs):
    cmd = [os.path.join(a.build, "bin", "stoke-bench"), "--data", c["data"],
           "--shuffle-window", str(c["window"]), "--batch", str(a.batch),
           "--workers", str(c["workers"]), "--epochs", str(epochs), "--seed", str(a.seed),
           "--json"]
    load = loadavg()
    with Measured() as m:
        r = subprocess.run(cmd, env=c.get("env", env), capture_output=True, text=True,
                           timeout=900)
    if r.returncode != 0:
        sys.exit(f"stoke-bench failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-3000:]}")
    j = json.loads(r.stdout.strip().splitlines()[-1])
    samples = max(1, j["samples"])
    stages = j.get("stages", {})
    return {"samples_per_s": j["samples_per_s"], "per_epoch": j["samples_per_s_per_epoch"],
            "checksum": j["checksum"], "output_checksum": j["output_checksum"],
            "startup_s": j["startup_s"], "samples": j["samples"],
            "best_epoch_samples_per_s": max(j["samples_per_s_per_epoch"]),
            "cpu_us_per_sample": ((j.get("cpu_s") or 0) + (j.get("worker_cpu_s") or 0))
                                 / samples * 1e6,
            "skipped": j["skipped"], "dataset_size": j["dataset_size"],
            "us_per_sample": {k[:-2]: v / samples * 1e6 for k, v in stages.items()
                              if k != "wait_s"},
            "wait_fraction": j.get("wait_fraction"), "worker_cpu_s": j.get("worker_cpu_s"),
            "cpu_s": j.get("cpu_s"), "loadavg": load, "command": cmd, **m.facts}


def run_peer(a, c):
    cmd = [c["python"], os.path.abspath(__file__), "--peer-mode", c["peer"], "--peer-data",
           c["data"], "--peer-cache", os.path.join(a.work, "hf-cache"), "--peer-epochs",
           str(a.peer_epochs), "--batch", str(a.batch), "--workers", str(a.workers)]
    shutil.rmtree(os.path.join(a.work, "hf-cache"), ignore_errors=True)
    load = loadavg()
    with Measured() as m:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout)[-2000:], "loadavg": load, **m.facts}
    j = json.loads(r.stdout.strip().splitlines()[-1])
    j.update(loadavg=load, command=cmd, **m.facts)
    return j


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(v, spec=",.0f"):
    return "-" if v is None else format(v, spec)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build",
                   default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
                       __file__))), "build", "default"),
                   help="a stoke build (bin/, lib/, libexec/); copy one before a rebuild")
    p.add_argument("--corpus", help="an image folder (default: a 3,000-JPEG jpeg-corpus)")
    p.add_argument("--work", default="/tmp/stoke-parquet-bench")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--epochs", type=int, default=8, help="stoke epochs per run (3,000 samples)")
    p.add_argument("--window", type=int, default=8, help="the shuffle window in shards/groups")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--large-copies", type=int, default=4)
    p.add_argument("--large-epochs", type=int, default=2)
    p.add_argument("--diag-epochs", type=int, default=3,
                   help="epochs of the --workers 0 runs (tar and Parquet, in-process stages)")
    p.add_argument("--diag-large-epochs", type=int, default=1)
    p.add_argument("--peer-epochs", type=int, default=2, help="timed epochs after the warm-up")
    p.add_argument("--litdata-python", default="",
                   help="a Python with litdata (its own venv, see above); none: litdata skipped")
    p.add_argument("--no-large", action="store_true")
    p.add_argument("--no-diag", action="store_true")
    p.add_argument("--no-peers", action="store_true")
    p.add_argument("--s3", metavar="WEED", default="",
                   help="also read pq-datasets from SeaweedFS's S3 gateway (this weed binary: "
                        "setup.sh's build/servers/bin/weed), window --window, beside local disk")
    p.add_argument("--peer-mode", choices=["hf", "litdata"], help=argparse.SUPPRESS)
    p.add_argument("--peer-data", help=argparse.SUPPRESS)
    p.add_argument("--peer-cache", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.peer_mode:
        return peer_main(a)

    began = time.perf_counter()
    a.build = os.path.abspath(a.build)
    a.work = os.path.abspath(a.work)
    os.makedirs(a.work, exist_ok=True)
    env = stoke_env(a)
    loader_lib = check_snapshot(a, env)
    shutil.rmtree(env["STOKE_CACHE_DIR"], ignore_errors=True)  # cold indexes, timed below

    corpus = find_corpus(a, env)
    samples = count_images(corpus)
    print(f"build {a.build} (libstoke_loader: {loader_lib}); corpus {corpus}: {samples} images",
          flush=True)
    t = time.perf_counter()
    sets, layout = make_sets(a, env, corpus, "", samples)
    if not a.no_large:
        large = make_large_corpus(corpus, os.path.join(a.work, "corpus_large"), a.large_copies)
        large_sets, large_layout = make_sets(a, env, large, "-large", samples * a.large_copies)
        layout.update(large_layout)
    print(f"data ready in {time.perf_counter() - t:.1f} s", flush=True)
    for name, l in layout.items():
        print(f"  {name}: {l['files']} files, {l['row_groups']} row groups of "
              f"{l['rows_per_group']} rows; image column {l['image_codec']}, dictionary page "
              f"{l['image_dictionary_page']}, {l['image_bytes'] / 2**20:.1f} MiB; "
              f"key-value metadata {l['metadata_keys']}", flush=True)

    w = a.window
    configs = []

    def add(name, data, window, workers, kind, group):
        configs.append({"name": name, "data": data, "window": window, "workers": workers,
                        "kind": kind, "group": group})

    # group: the samples a configuration delivers (equal group, window and epochs: equal
    # checksums). The folder has no shards: its window does not apply (a full shuffle).
    add("folder", corpus, w, a.workers, "main", "corpus")
    for win in (w, 0):
        for kind in ("tar", "pq-datasets", "pq-pyarrow"):
            add(f"{kind} w{win}", sets[kind], win, a.workers, "main", "corpus")
    if not a.no_large:
        for win in (w, 0):
            for kind in ("tar", "pq-datasets", "pq-pyarrow"):
                add(f"{kind}-large w{win}", large_sets[kind], win, a.workers, "large", "large")
    if not a.no_diag:
        for kind in ("tar", "pq-datasets", "pq-pyarrow"):
            add(f"{kind} w{w} workers0", sets[kind], w, 0, "diag", "corpus")
        if not a.no_large:
            for kind in ("tar", "pq-datasets", "pq-pyarrow"):
                add(f"{kind}-large w0 workers0", large_sets[kind], 0, 0, "diag-large", "large")
            add(f"pq-pyarrow-large w{w} workers0", large_sets["pq-pyarrow"], w, 0,
                "diag-large", "large")
    s3 = None
    if a.s3:
        # (Each file is fetched whole into the shard cache ahead of the plan, as a shard is.)
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import local_servers
        shutil.rmtree(os.path.join(a.work, "weed"), ignore_errors=True)  # (a fresh bucket)
        s3 = local_servers.SeaweedServer(a.s3, os.path.join(a.work, "weed")).__enter__()
        s3.put_folder("stoke-bench", sets["pq-datasets"], prefix="pq/")
        names = sorted(f for f in os.listdir(sets["pq-datasets"]) if f.endswith(".parquet"))
        add(f"pq-datasets-s3 w{w}", ",".join(f"s3://stoke-bench/pq/{f}" for f in names), w,
            a.workers, "main", "corpus")
        configs[-1]["env"] = s3.env(env)
        configs[-1]["bytes"] = disk_bytes(sets["pq-datasets"])
    for c in configs:
        if "bytes" not in c:
            c["bytes"] = disk_bytes(c["data"] if "{" not in c["data"]
                                    else os.path.dirname(c["data"]))
    peers = []
    if not a.no_peers:
        peers.append({"name": "peer: datasets + DataLoader", "peer": "hf",
                      "python": sys.executable, "data": sets["pq-datasets"], "kind": "peer"})
        if os.path.exists(a.litdata_python):
            lit_dir = os.path.join(a.work, "pq_litdata")
            shutil.rmtree(lit_dir, ignore_errors=True)
            os.makedirs(lit_dir)
            for f in sorted(os.listdir(sets["pq-datasets"])):
                if f.endswith(".parquet"):
                    shutil.copy(os.path.join(sets["pq-datasets"], f), lit_dir)
            peers.append({"name": "peer: litdata ParquetLoader", "peer": "litdata",
                          "python": a.litdata_python, "data": lit_dir, "kind": "peer"})
        else:
            print(f"litdata: {a.litdata_python} is missing, skipped", flush=True)
    epochs_of = {"main": a.epochs, "large": a.large_epochs, "diag": a.diag_epochs,
                 "diag-large": a.diag_large_epochs}

    # Cold pass: builds every index (the first run of each dataset: its start-up is the index
    # build), not counted.
    cold = {}
    seen = set()
    print("\ncold pass (1 epoch, not counted; the first run of each dataset builds its index):",
          flush=True)
    for c in configs:
        r = run_stoke(a, env, c, 1)
        r["index_built"] = c["data"] not in seen
        seen.add(c["data"])
        cold[c["name"]] = r
        print(f"  {c['name']:30s} startup {r['startup_s']:6.2f} s"
              f"{' (index built)' if r['index_built'] else '              '}"
              f"  {r['samples_per_s']:8,.0f} samples/s  wall {r['wall_s']:5.1f} s", flush=True)

    items = configs + peers
    runs = []
    for rnd in range(a.repeat):
        shift = (rnd * len(items)) // max(1, a.repeat)
        order = items[shift:] + items[:shift]
        print(f"\nround {rnd + 1}/{a.repeat}", flush=True)
        for c in order:
            if c["kind"] == "peer":
                r = run_peer(a, c)
                if "error" in r:
                    print(f"  {c['name']:30s} FAILED: {r['error'][-400:]}", flush=True)
                else:
                    print(f"  {c['name']:30s} {r['samples_per_s']:8,.0f} samples/s (warm-up "
                          f"{r['warmup_samples_per_s']:,.0f}, prepare {r['prepare_s']:.2f} s) "
                          f"wall {r['wall_s']:5.1f} s  others {r['foreign_cores']:.2f} cores",
                          flush=True)
            else:
                r = run_stoke(a, env, c, epochs_of[c["kind"]])
                print(f"  {c['name']:30s} {r['samples_per_s']:8,.0f} samples/s  wall "
                      f"{r['wall_s']:5.1f} s  others {r['foreign_cores']:.2f} cores  "
                      f"{r['checksum'][:12]}", flush=True)
            r.update(round=rnd + 1, name=c["name"])
            runs.append(r)

    # ------------------------------------------------------------------------------ report
    def of(name):
        return [r for r in runs if r["name"] == name and "error" not in r]

    def value(name, rnd, key):
        for r in of(name):
            if r["round"] == rnd:
                return r[key]
        return None

    def ratio(name, base, key="samples_per_s", invert=False):
        values = []
        for rnd in range(1, a.repeat + 1):
            x, y = value(name, rnd, key), value(base, rnd, key)
            if x and y:
                values.append(y / x if invert else x / y)
        return med(values)

    print("\n" + "=" * 110)
    print(f"stoke-bench --batch {a.batch}, default pipeline (random-resized-crop 224 + flip, "
          f"uint8), --shuffle-window {w} or 0; {a.repeat} rounds.\n"
          f"samples/s: median (min..max) of the runs' own rate; best ep: the fastest epoch of any "
          f"round; vs tar: median of the same round's ratios;\n"
          f"CPU us: CPU time of the loader's processes per sample (median), less sensitive to "
          f"other processes than the rate; others: cores other processes (and steal) took "
          f"during the run (median);\nread/decode/augment: the stages' time per sample "
          f"(summed over workers; read includes Parquet page decoding).")
    titles = {"main": f"{samples} samples, --workers {a.workers}, {a.epochs} epochs per run",
              "large": f"{samples * a.large_copies} samples ({a.large_copies} copies of each), "
                       f"--workers {a.workers}, {a.large_epochs} epochs per run",
              "diag": f"--workers 0 (in-process), {a.diag_epochs} epochs per run",
              "diag-large": f"--workers 0 (in-process), large, {a.diag_large_epochs} epochs "
                            f"per run"}
    for kind, title in titles.items():
        group = [c for c in configs if c["kind"] == kind]
        if not group:
            continue
        names = [c["name"] for c in group]

        def base(c):
            stem = "tar-large" if c["group"] == "large" else "tar"
            suffix = " workers0" if c["workers"] == 0 else ""
            for b in (f"{stem} w{c['window']}{suffix}", f"{stem} w{w}{suffix}",
                      f"{stem} w0{suffix}"):
                if b in names:
                    return b
            return None

        print(f"\n{title}")
        print(f"{'configuration':30s} {'samples/s':>9s} {'min..max':>13s} {'best ep':>7s} "
              f"{'vs tar':>6s} {'CPU us':>6s} {'CPU vs tar':>10s} {'others':>6s} {'MiB':>5s} "
              f"{'read/decode/augment us':>22s}  checksum")
        for c in group:
            rs = of(c["name"])
            v = [r["samples_per_s"] for r in rs]
            b = base(c)
            us = [fmt(med([r["us_per_sample"].get(k) for r in rs])) for k in
                  ("read", "decode", "augment")]
            sums = sorted({r["checksum"][:12] for r in rs})
            print(f"{c['name']:30s} {fmt(med(v)):>9s} {fmt(min(v)) + '..' + fmt(max(v)):>13s} "
                  f"{fmt(max(r['best_epoch_samples_per_s'] for r in rs)):>7s} "
                  f"{fmt(ratio(c['name'], b), '.2f'):>6s} "
                  f"{fmt(med([r['cpu_us_per_sample'] for r in rs])):>6s} "
                  f"{fmt(ratio(c['name'], b, 'cpu_us_per_sample'), '.2f'):>10s} "
                  f"{fmt(med([r['foreign_cores'] for r in rs]), '.2f'):>6s} "
                  f"{c['bytes'] / 2**20:5.0f} {'/'.join(us):>22s}  {', '.join(sums)}")
        print(f"  (vs tar: against {', '.join(sorted({base(c) for c in group}))} with the same "
              f"window where there is one)")

    print("\nstart-up of the cold pass (index built on the first run of each dataset):")
    for c in configs:
        r = cold[c["name"]]
        if r["index_built"]:
            print(f"  {c['name']:30s} {r['startup_s']:.2f} s")

    # Checksums: equal samples, window and epochs must give equal batches.
    print("\nchecksums (checksum / output_checksum), by samples, window and epochs:")
    all_ok = True
    groups = {}
    for c in configs:
        key = (c["group"], c["window"] if c["name"] != "folder" else 0, epochs_of[c["kind"]])
        groups.setdefault(key, []).append(
            (c["name"], {(r["checksum"], r["output_checksum"]) for r in of(c["name"])}))
    for (group, win, epochs), members in groups.items():
        distinct = set().union(*[s for _, s in members])
        ok = len(distinct) == 1
        all_ok &= ok
        print(f"  {group} window {win}, {epochs} epochs: {'MATCH' if ok else 'DIFFER'} "
              f"({len(members)} configurations x {a.repeat} rounds)")
        for name, sums in members:
            print(f"    {name:30s} {', '.join(f'{x}/{y}' for x, y in sorted(sums))}")
    print(f"  every configuration of the same samples, window and epochs agrees: {all_ok} "
          f"(the folder counts with window 0: it has no shards)")

    if peers:
        print(f"\npeers (on pq-datasets, --workers {a.workers}, batch {a.batch}; warm-up epoch "
              f"excluded; prepare: load_dataset's Arrow conversion, litdata's index; "
              f"stoke/peer: median of the same round's ratios)")
        print(f"{'peer':30s} {'samples/s':>9s} {'min..max':>13s} {'best ep':>7s} "
              f"{'warm-up':>7s} {'prepare s':>9s} {'CPU us':>6s} {'others':>6s}  "
              f"{'stoke pq-datasets w' + str(w) + ' / peer':>25s} {'w0 / peer':>9s} "
              f"{'CPU: peer / stoke w' + str(w):>20s}")
        for c in peers:
            rs = of(c["name"])
            if not rs:
                errs = [r for r in runs if r["name"] == c["name"]]
                print(f"{c['name']:30s} failed: {errs[-1]['error'][-300:] if errs else '?'}")
                continue
            v = [r["samples_per_s"] for r in rs]
            print(f"{c['name']:30s} {fmt(med(v)):>9s} {fmt(min(v)) + '..' + fmt(max(v)):>13s} "
                  f"{fmt(max(r['best_epoch_samples_per_s'] for r in rs)):>7s} "
                  f"{fmt(med([r['warmup_samples_per_s'] for r in rs])):>7s} "
                  f"{fmt(med([r['prepare_s'] for r in rs]), '.2f'):>9s} "
                  f"{fmt(med([r['cpu_us_per_sample'] for r in rs])):>6s} "
                  f"{fmt(med([r['foreign_cores'] for r in rs]), '.2f'):>6s}  "
                  f"{fmt(ratio(f'pq-datasets w{w}', c['name']), '.2f'):>25s} "
                  f"{fmt(ratio('pq-datasets w0', c['name']), '.2f'):>9s} "
                  f"{fmt(ratio(c['name'], f'pq-datasets w{w}', 'cpu_us_per_sample'), '.2f'):>20s}"
                  f"   {rs[0]['versions']}")

    print("\nper run (rate, per-epoch rates, CPU us/sample, cores others took):")
    for r in runs:
        if "error" in r:
            print(f"  round {r['round']} {r['name']:30s} FAILED")
        elif "peer" in r:
            print(f"  round {r['round']} {r['name']:30s} {r['samples_per_s']:6,.0f}/s epochs "
                  f"{[round(e[0] / e[1]) for e in r['epochs']]} (first: warm-up) CPU "
                  f"{r['cpu_us_per_sample']:,.0f} us others {r['foreign_cores']:.2f} prepare "
                  f"{r['prepare_s']:.2f} s")
        else:
            print(f"  round {r['round']} {r['name']:30s} {r['samples_per_s']:6,.0f}/s epochs "
                  f"{[round(x) for x in r['per_epoch']]} CPU {r['cpu_us_per_sample']:,.0f} us "
                  f"others {r['foreign_cores']:.2f} skipped {r['skipped']}")
    out = os.path.join(a.work, "results.json")
    with open(out, "w") as f:
        json.dump({"args": vars(a), "layout": layout, "configs": configs, "cold": cold,
                   "runs": runs}, f, indent=1)
    if s3 is not None:
        s3.__exit__(None, None, None)
    print(f"\nall runs in {out}; {time.perf_counter() - began:.0f} s in all")


if __name__ == "__main__":
    main()
