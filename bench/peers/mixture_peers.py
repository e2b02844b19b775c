#!/usr/bin/env python3
"""Dataset mixtures: stoke, MosaicML Streaming and litdata on the same three weighted sources.

    python3 bench/peers/mixture_peers.py --setup                 # venvs + pinned packages
    python3 bench/peers/mixture_peers.py --json-out /tmp/mix.json \\
        --stoke-pythonpath BUILD/pymod --stoke-ld-path BUILD/lib

The driver (this file, run by any python3: it uses only the standard library) writes the data
once, then starts every loader run as a subprocess of this same file under the interpreter of
that loader:

  stoke      --stoke-python (default build/default/python-test/torch/bin/python), with
             --stoke-pythonpath / --stoke-ld-path prepended to PYTHONPATH / LD_LIBRARY_PATH
             (the folder holding the `stoke` package and the one holding libstoke_loader.so)
  streaming  ROOT/venv-streaming: Debian's python3 with --system-site-packages (Debian's
             python3-torch 1.13 and numpy 1.24), plus mosaicml-streaming==0.13.0 (numpy<2)
  litdata    ROOT/venv-litdata: Debian's python3, no system packages, litdata==0.2.76 with
             torch==2.15.0 and torchvision==0.29.2 from PyPI (litdata reads torch.uint16 on
             import, which torch 1.13 lacks; PyPI's Linux torch brings its CUDA wheels, ~5 GiB)

ROOT is --root (default /tmp/stoke-mixture-peers). --setup makes both venvs (and installs Debian's
python3-torch with apt-get when it is missing); it is not needed when they exist.

Data (--prepare runs it; the main run does it first when missing). Three sources from the
Fashion-MNIST IDX files in --fmnist:
  source 0 = A: the 10000 test images
  source 1 = B: train images 0..29999
  source 2 = C: train images 30000..59999
Each sample is {"id": source * 100000 + index in its source, "image": the 28x28 uint8 image}.
Streaming gets them through its own MDSWriter (columns id:int, image:bytes, 1 MiB shards) in
ROOT/data/streaming/{A,B,C}; litdata through litdata.optimize (1 MiB chunks, one worker) in
ROOT/data/litdata/{A,B,C}. stoke reads the IDX files themselves: A is its "test" split, B and C
are its "train" split named twice (weights 0.3 and 0.1), so for stoke B and C each draw from all
60000 training images; a sample is identified by (source, sample id) in every check.

What each loader is asked to do. Weights 0.6 / 0.3 / 0.1 over A / B / C, shuffle on, seed 7,
global batch 256: world 1 = one rank with batch 256, world 2 = two ranks with batch 128 each,
each rank in its own process, num_workers=0 (batches made in the training process).
  stoke      stoke.Loader(sources=[{data, split, weight}...], epoch_samples=10240,
             batch=per-rank batch, world=W, rank=R, workers=0, seed=7). It takes rank and
             world as arguments. Resume: loader.state_dict(); a new Loader, load_state_dict().
  streaming  StreamingDataset(streams=[Stream(local=DIR, proportion=w)...], epoch_size=10240,
             batch_size=per-rank batch, shuffle=True, shuffle_seed=7, batching_method=
             "random" (its default) or "stratified" (the second row, "streaming-stratified"))
             read by streaming's StreamingDataLoader(num_workers=0). Rank and world come from
             the RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE variables (both ranks on one
             node). In world 2 each rank first joins a gloo process group, as a training
             script would (streaming uses it for its barriers; without one it starts and
             stops a group of its own in every call that needs it, and the second such
             rendezvous on the same port failed here with "Connection reset by peer").
             Each process calls streaming's clean_stale_shared_memory() first.
             Resume: StreamingDataLoader.state_dict() (a global sample position), a new
             dataset + loader, load_state_dict().
  litdata    CombinedStreamingDataset([StreamingDataset(DIR, shuffle=True, seed=7)...],
             weights=[0.6, 0.3, 0.1], iterate_over_all=False, seed=7) read by
             StreamingDataLoader(batch_size=per-rank batch, num_workers=0). Rank and world
             come from WORLD_SIZE and GLOBAL_RANK. litdata has no epoch size: its epoch ends
             when one source is used up, so its measurements cover that whole epoch.
             Resume: StreamingDataLoader.state_dict() / load_state_dict().
Every process gets RANK, GLOBAL_RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK=0,
MASTER_ADDR and MASTER_PORT, whichever of them its library reads.

Runs per loader (a world-2 run is two processes started together):
  w1_full      world 1, one whole epoch
  w2_full      world 2, one whole epoch
  w2_stop      world 2, stops after 10 global batches and saves each rank's state
  w2_to_w2     world 2, each rank loads its own rank's saved state and finishes the epoch
  w2_to_w1     world 1, loads rank 0's saved state and finishes the epoch
  w1_stop      world 1, stops after 10 batches and saves the state
  w1_to_w2     world 2, both ranks load that state and finish the epoch
  over_*       world 1, an epoch that asks more of A than A holds (stoke epoch_samples=25600,
               streaming epoch_size=25600) and the library's default epoch (stoke
               epoch_samples=0, streaming epoch_size=None); litdata's own epoch is w1_full

Reported:
  1. per global batch (w1_full, and w2_full's two rank batches put together): the largest
     |count - 256 w| of each source over the epoch's full batches, and the fraction of those
     batches where a source is more than 1 away from 153.6 / 76.8 / 25.6.
  2. per rank (w2_full): the same against 128 w, and each rank's per-source totals.
  3. resume: the samples of the first 10 global batches of the stopped run plus all samples
     of the resumed run, against the uninterrupted epoch in the stopped run's world, per
     source: samples delivered again ("repeats") and never delivered ("missing"); whether the
     resumed batches are exactly the uninterrupted run's batches 11..end; the per-batch
     proportions after the resume. A library that refuses to load the state gets its error.
  4. the over_* runs and litdata's w1_full / w2_full: samples per source, distinct samples, the most
     times one sample came, batches, the size of the last batch.

Nothing here measures speed. The table is printed; --json-out writes every number (per-batch
per-source counts of every run included, not the sample ids).
"""

import argparse
import collections
import json
import os
import pickle
import shutil
import socket
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

WEIGHTS = [0.6, 0.3, 0.1]
SOURCE_NAMES = ["A", "B", "C"]
GLOBAL_BATCH = 256
EPOCH = 256 * 40
STOP_AFTER = 10
SEED = 7
OVER_EPOCH = 256 * 100  # A's share (15360) is more than A's 10000 samples
ID_BASE = 100000

STREAMING_PINS = ["mosaicml-streaming==0.13.0"]
LITDATA_PINS = ["litdata==0.2.76", "torch==2.15.0", "torchvision==0.29.2"]

PEERS = {
    "stoke": {"env": "stoke"},
    "streaming": {"env": "streaming", "batching": "random"},
    "streaming-stratified": {"env": "streaming", "batching": "stratified"},
    "litdata": {"env": "litdata"},
}


def log(msg):
    print(msg, flush=True)


# --- Setup -------------------------------------------------------------------------------

def venv_python(root, env):
    return os.path.join(root, f"venv-{env}", "bin", "python")


def run_checked(cmd, logf):
    log("  $ " + " ".join(cmd))
    r = subprocess.run(cmd, stdout=logf, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise SystemExit(f"failed ({r.returncode}): {' '.join(cmd)}; see {logf.name}")


def setup(args):
    os.makedirs(args.root, exist_ok=True)
    sys_py = "/usr/bin/python3"
    with open(os.path.join(args.root, "setup.log"), "a") as logf:
        if subprocess.run([sys_py, "-c", "import torch, numpy"]).returncode != 0:
            sudo = [] if os.geteuid() == 0 else ["sudo"]
            run_checked(sudo + ["apt-get", "update", "-qq"], logf)
            run_checked(sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                                "python3-torch", "python3-numpy", "python3-venv"], logf)
        venv = os.path.join(args.root, "venv-streaming")
        if not os.path.exists(os.path.join(venv, "bin", "python")):
            run_checked([sys_py, "-m", "venv", "--system-site-packages", venv], logf)
        constraints = os.path.join(args.root, "constraints.txt")
        with open(constraints, "w") as f:
            f.write("numpy<2\n")  # Debian's torch is built against numpy 1.x
        run_checked([os.path.join(venv, "bin", "pip"), "install", "-q", "-c", constraints]
                    + STREAMING_PINS, logf)
        venv = os.path.join(args.root, "venv-litdata")
        if not os.path.exists(os.path.join(venv, "bin", "python")):
            run_checked([sys_py, "-m", "venv", venv], logf)
        run_checked([os.path.join(venv, "bin", "pip"), "install", "-q"] + LITDATA_PINS, logf)
    for env in ("streaming", "litdata"):
        r = subprocess.run([venv_python(args.root, env), os.path.abspath(__file__),
                            "--versions", env], capture_output=True, text=True)
        log(f"{env}: {r.stdout.strip() or r.stderr.strip()[-400:]}")


# --- Code that runs inside a loader's interpreter ---------------------------------------------

def versions(kind):
    import importlib.metadata as md
    out = {"python": sys.version.split()[0]}
    for name in ("numpy", "torch", "mosaicml-streaming", "litdata", "stoke"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    try:
        import numpy
        out["numpy"] = numpy.__version__
    except ImportError:
        pass
    if kind != "stoke":
        import torch
        out["torch"] = torch.__version__
    else:
        import stoke
        out["stoke_module"] = os.path.dirname(stoke.__file__)
    return out


def read_idx_images(path):
    import gzip
    import numpy as np
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic, n, rows, cols = (int.from_bytes(raw[i:i + 4], "big") for i in range(0, 16, 4))
    assert magic == 2051, path
    return np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(n, rows, cols)


def source_images(fmnist):
    test = read_idx_images(os.path.join(fmnist, "t10k-images-idx3-ubyte.gz"))
    train = read_idx_images(os.path.join(fmnist, "train-images-idx3-ubyte.gz"))
    return [test, train[:30000], train[30000:]]


def _litdata_sample(item):
    import numpy as np
    sample_id, image = item
    return {"id": int(sample_id), "image": np.frombuffer(image, dtype=np.uint8).reshape(28, 28)}


def write_data(kind, fmnist, out_root):
    """Writes the three sources in `kind`'s own format with its own writer."""
    spec = {"kind": kind, "fmnist": os.path.abspath(fmnist), "layout": 1}
    for s, images in enumerate(source_images(fmnist)):
        out = os.path.join(out_root, kind, SOURCE_NAMES[s])
        marker = os.path.join(out, "mixture_peers.json")
        if os.path.exists(marker):
            with open(marker) as f:
                if json.load(f) == dict(spec, count=len(images)):
                    continue
        shutil.rmtree(out, ignore_errors=True)
        t = time.time()
        if kind == "streaming":
            from streaming import MDSWriter
            with MDSWriter(out=out, columns={"id": "int", "image": "bytes"}, compression=None,
                           size_limit=1 << 20) as writer:
                for i, image in enumerate(images):
                    writer.write({"id": s * ID_BASE + i, "image": image.tobytes()})
        else:
            from litdata import optimize
            items = [(s * ID_BASE + i, image.tobytes()) for i, image in enumerate(images)]
            optimize(fn=_litdata_sample, inputs=items, output_dir=out, chunk_bytes="1MB",
                     num_workers=1, mode="overwrite", verbose=False)
        with open(marker, "w") as f:
            json.dump(dict(spec, count=len(images)), f)
        print(f"{kind} {SOURCE_NAMES[s]}: {len(images)} samples in {time.time() - t:.1f} s",
              flush=True)


def _ids_collate(samples):
    import torch
    return {"id": torch.tensor([int(x["id"]) for x in samples], dtype=torch.int64)}


def make_loader(task):
    """Returns (iterable of batches, batch -> (sources, ids), state_dict(), load_state_dict())."""
    kind, world, rank, batch = task["kind"], task["world"], task["rank"], task["batch"]
    if kind == "stoke":
        import numpy as np
        import stoke
        fm = task["fmnist"]
        sources = [{"data": fm, "split": split, "weight": w}
                   for split, w in zip(["test", "train", "train"], WEIGHTS)]
        loader = stoke.Loader(sources=sources, epoch_samples=task["epoch"] or 0, batch=batch,
                              world=world, rank=rank, workers=0, seed=SEED)

        def extract(b):
            valid = np.from_dlpack(b.valid).astype(bool)
            return (np.from_dlpack(b.sources)[valid].tolist(),
                    np.from_dlpack(b.sample_ids)[valid].tolist())
        return loader, extract, loader.state_dict, loader.load_state_dict

    if kind == "streaming":
        from streaming import Stream, StreamingDataLoader, StreamingDataset
        from streaming.base.util import clean_stale_shared_memory
        if world > 1:
            # As a training script would: one gloo group for the run, which streaming then
            # uses for its barriers (it would otherwise start and stop one per call).
            import datetime
            import torch.distributed as dist
            dist.init_process_group("gloo", rank=rank, world_size=world,
                                    timeout=datetime.timedelta(seconds=120))
        clean_stale_shared_memory()
        streams = [Stream(local=os.path.join(task["data"], "streaming", n), proportion=w)
                   for n, w in zip(SOURCE_NAMES, WEIGHTS)]
        dataset = StreamingDataset(streams=streams, epoch_size=task["epoch"], batch_size=batch,
                                   shuffle=True, shuffle_seed=SEED,
                                   batching_method=task["batching"])
        loader = StreamingDataLoader(dataset, batch_size=batch, num_workers=0,
                                     collate_fn=_ids_collate)
    else:
        from litdata import CombinedStreamingDataset, StreamingDataLoader, StreamingDataset
        datasets = [StreamingDataset(os.path.join(task["data"], "litdata", n), shuffle=True,
                                     seed=SEED) for n in SOURCE_NAMES]
        combined = CombinedStreamingDataset(datasets, weights=WEIGHTS, iterate_over_all=False,
                                            seed=SEED)
        loader = StreamingDataLoader(combined, batch_size=batch, num_workers=0)

    def extract(b):
        ids = [int(x) for x in b["id"].tolist()]
        return [i // ID_BASE for i in ids], [i % ID_BASE for i in ids]
    return loader, extract, loader.state_dict, loader.load_state_dict


def worker(task_json):
    """One loader run in one process: writes {versions, batches, error} to task["out"]."""
    task = json.loads(task_json)
    result = {"versions": None, "batches": [], "error": None, "stage": "import"}
    try:
        result["versions"] = versions(task["kind"])
        result["stage"] = "construct"
        loader, extract, state_dict, load_state_dict = make_loader(task)
        if task.get("load_state"):
            result["stage"] = "load_state_dict"
            with open(task["load_state"], "rb") as f:
                load_state_dict(pickle.load(f))
        result["stage"] = "iterate"
        t = time.time()
        for k, b in enumerate(loader):
            src, ids = extract(b)
            result["batches"].append([src, ids])
            if task.get("stop_after") and k + 1 == task["stop_after"]:
                result["stage"] = "state_dict"
                with open(task["save_state"], "wb") as f:
                    pickle.dump(state_dict(), f)
                break
        result["seconds"] = time.time() - t
        result["stage"] = "done"
    except Exception as e:  # recorded, not raised: a refusal is a result
        result["error"] = f"{type(e).__name__}: {e}"
        result["traceback"] = traceback.format_exc()[-3000:]
    with open(task["out"], "w") as f:
        json.dump(result, f)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown: loader threads are not waited for


# --- Driver ------------------------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Runner:
    def __init__(self, args):
        self.args = args
        self.work = os.path.join(args.root, "runs")
        os.makedirs(self.work, exist_ok=True)

    def command(self, env_name):
        if env_name == "stoke":
            env = dict(os.environ)
            for var, extra in (("PYTHONPATH", self.args.stoke_pythonpath),
                               ("LD_LIBRARY_PATH", self.args.stoke_ld_path)):
                if extra:
                    env[var] = extra + (os.pathsep + env[var] if env.get(var) else "")
            return self.args.stoke_python, env
        return venv_python(self.args.root, env_name), dict(os.environ)

    def run(self, peer, name, world, epoch, stop_after=None, load_from=None):
        """Starts `world` rank processes together; returns their results, rank by rank."""
        spec = PEERS[peer]
        python, base_env = self.command(spec["env"])
        port = free_port()
        procs = []
        for rank in range(world):
            out = os.path.join(self.work, f"{peer}.{name}.r{rank}.json")
            load = None
            if load_from:
                own = os.path.join(self.work, f"{peer}.{load_from}.state.r{rank}.pkl")
                load = own if load_from.startswith(f"w{world}_") else \
                    os.path.join(self.work, f"{peer}.{load_from}.state.r0.pkl")
            task = {"kind": spec["env"],
                    "batching": spec.get("batching"), "world": world, "rank": rank,
                    "batch": GLOBAL_BATCH // world, "epoch": epoch, "fmnist": self.args.fmnist,
                    "data": os.path.join(self.args.root, "data"), "out": out,
                    "stop_after": stop_after, "load_state": load,
                    "save_state": os.path.join(self.work, f"{peer}.{name}.state.r{rank}.pkl")}
            env = dict(base_env, RANK=str(rank), GLOBAL_RANK=str(rank), LOCAL_RANK=str(rank),
                       WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world), NODE_RANK="0",
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
            if os.path.exists(out):
                os.remove(out)
            logf = open(os.path.join(self.work, f"{peer}.{name}.r{rank}.log"), "w")
            procs.append((subprocess.Popen(
                [python, os.path.abspath(__file__), "--worker", json.dumps(task)],
                env=env, stdout=logf, stderr=subprocess.STDOUT), out, logf))
        results = []
        t = time.time()
        for p, out, logf in procs:
            try:
                p.wait(timeout=max(1, self.args.timeout - (time.time() - t)))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            logf.close()
            if os.path.exists(out):
                with open(out) as f:
                    results.append(json.load(f))
            else:
                with open(logf.name) as f:
                    tail = "\n".join(f.read().strip().splitlines()[-15:])
                results.append({"batches": [], "versions": None, "stage": "process",
                                "error": f"no result (exit {p.returncode}): {tail}"})
        errors = [r["error"] for r in results if r.get("error")]
        log(f"  {peer:22s} {name:10s} world {world}: "
            + (f"ERROR {errors[0][:300]}" if errors else
               f"{[len(r['batches']) for r in results]} batches, {time.time() - t:.1f} s"))
        return results


def keys(batch):
    return list(zip(batch[0], batch[1]))


def merge_ranks(results):
    """Global batch k = every rank's batch k; also says whether the ranks' batch counts differ."""
    n = max((len(r["batches"]) for r in results), default=0)
    merged = []
    for k in range(n):
        src, ids = [], []
        for r in results:
            if k < len(r["batches"]):
                src += r["batches"][k][0]
                ids += r["batches"][k][1]
        merged.append([src, ids])
    return merged


def counts(batch):
    c = [0] * len(WEIGHTS)
    for s in batch[0]:
        c[s] += 1
    return c


def batch_stats(batches, batch_size):
    """Deviation of each source's count from batch_size * w over the full batches."""
    share = [batch_size * w for w in WEIGHTS]
    full = [counts(b) for b in batches if len(b[0]) == batch_size]
    out = {"batches": len(batches), "full_batches": len(full),
           "other_batch_sizes": [len(b[0]) for b in batches if len(b[0]) != batch_size],
           "share": share}
    if not full:
        return out
    dev = [[abs(c[s] - share[s]) for s in range(len(WEIGHTS))] for c in full]
    out["max_dev"] = [round(max(d[s] for d in dev), 2) for s in range(len(WEIGHTS))]
    out["mean_abs_dev"] = [round(sum(d[s] for d in dev) / len(full), 2)
                           for s in range(len(WEIGHTS))]
    out["frac_outside_1"] = [round(sum(d[s] > 1 + 1e-9 for d in dev) / len(full), 4)
                             for s in range(len(WEIGHTS))]
    out["frac_any_outside_1"] = round(sum(any(x > 1 + 1e-9 for x in d) for d in dev)
                                      / len(full), 4)
    out["min_count"] = [min(c[s] for c in full) for s in range(len(WEIGHTS))]
    out["max_count"] = [max(c[s] for c in full) for s in range(len(WEIGHTS))]
    return out


def totals(batches):
    t = [0] * len(WEIGHTS)
    for b in batches:
        for s, c in enumerate(counts(b)):
            t[s] += c
    return t


def per_source(counter):
    out = [0] * len(WEIGHTS)
    for (s, _), n in counter.items():
        out[s] += n
    return out


def resume_check(reference, stopped, resumed):
    """Exactly-once and continuation of the stopped + resumed run against `reference`."""
    if any(r.get("error") for r in stopped):
        return {"error": "the stopped run failed: "
                + next(r["error"] for r in stopped if r.get("error"))}
    if any(r.get("error") for r in resumed):
        return {"error": next(r["error"] for r in resumed if r.get("error")),
                "stage": next(r["stage"] for r in resumed if r.get("error"))}
    ref, pre, post = merge_ranks(reference), merge_ranks(stopped), merge_ranks(resumed)
    c_ref = collections.Counter(k for b in ref for k in keys(b))
    c_pre = collections.Counter(k for b in pre for k in keys(b))
    c_post = collections.Counter(k for b in post for k in keys(b))
    remaining = c_ref - c_pre
    repeats, missing = c_post - remaining, remaining - c_post
    rem_totals = per_source(remaining)
    post_totals = totals(post)
    if post_totals == rem_totals:
        continuation = "continues (the epoch's remaining per-source counts)"
    elif post_totals == totals(ref):
        continuation = "restarts (a whole epoch's per-source counts)"
    else:
        continuation = "neither (counts differ from the remainder and from a whole epoch)"
    ref_rest = [sorted(keys(b)) for b in ref[STOP_AFTER:]]
    return {
        "first_10_match_reference": [sorted(keys(b)) for b in pre] ==
                                    [sorted(keys(b)) for b in ref[:STOP_AFTER]],
        "resumed_batches": len(post),
        "reference_batches_left": len(ref) - STOP_AFTER,
        "same_batches_as_reference": [sorted(keys(b)) for b in post] == ref_rest,
        "repeats": per_source(repeats),
        "missing": per_source(missing),
        "exactly_once": not repeats and not missing,
        "remaining_totals": rem_totals,
        "resumed_totals": post_totals,
        "continuation": continuation,
        "per_batch_after_resume": batch_stats(post, GLOBAL_BATCH),
    }


def over_stats(results, sizes):
    batches = merge_ranks(results)
    c = collections.Counter(k for b in batches for k in keys(b))
    distinct = [0] * len(WEIGHTS)
    most = [0] * len(WEIGHTS)
    for (s, _), n in c.items():
        distinct[s] += 1
        most[s] = max(most[s], n)
    return {"batches": len(batches), "last_batch": len(batches[-1][0]) if batches else 0,
            "samples": totals(batches), "distinct": distinct, "most_times_one_sample": most,
            "source_sizes": sizes, "used_up": [d >= n for d, n in zip(distinct, sizes)]}


def measure(peer, runner):
    log(f"{peer}:")
    lit = PEERS[peer]["env"] == "litdata"
    epoch = None if lit else EPOCH
    runs = {}
    runs["w1_full"] = runner.run(peer, "w1_full", 1, epoch)
    runs["w2_full"] = runner.run(peer, "w2_full", 2, epoch)
    runs["w2_stop"] = runner.run(peer, "w2_stop", 2, epoch, stop_after=STOP_AFTER)
    runs["w2_to_w2"] = runner.run(peer, "w2_to_w2", 2, epoch, load_from="w2_stop")
    runs["w2_to_w1"] = runner.run(peer, "w2_to_w1", 1, epoch, load_from="w2_stop")
    runs["w1_stop"] = runner.run(peer, "w1_stop", 1, epoch, stop_after=STOP_AFTER)
    runs["w1_to_w2"] = runner.run(peer, "w1_to_w2", 2, epoch, load_from="w1_stop")
    stoke = peer == "stoke"
    sizes = [10000, 60000, 60000] if stoke else [10000, 30000, 30000]
    if peer in ("stoke", "streaming"):
        runs[f"over_{OVER_EPOCH}"] = runner.run(peer, f"over_{OVER_EPOCH}", 1, OVER_EPOCH)
        runs["over_default"] = runner.run(peer, "over_default", 1, 0 if stoke else None)

    rep = {"versions": next((r["versions"] for rs in runs.values() for r in rs
                             if r.get("versions")), None),
           "errors": {n: [r["error"] for r in rs if r.get("error")]
                      for n, rs in runs.items() if any(r.get("error") for r in rs)},
           "epoch_setting": "none (ends when a source is used up)" if lit else EPOCH}
    if not runs["w1_full"][0].get("error"):
        rep["global_world1"] = batch_stats(merge_ranks(runs["w1_full"]), GLOBAL_BATCH)
        rep["global_world1"]["totals"] = totals(merge_ranks(runs["w1_full"]))
    if not any(r.get("error") for r in runs["w2_full"]):
        w2 = runs["w2_full"]
        rep["global_world2"] = batch_stats(merge_ranks(w2), GLOBAL_BATCH)
        rep["per_rank"] = [dict(batch_stats(r["batches"], GLOBAL_BATCH // 2),
                                totals=totals(r["batches"])) for r in w2]
        rep["rank_totals_differ"] = totals(w2[0]["batches"]) != totals(w2[1]["batches"])
        rep["rank_batch_counts"] = [len(r["batches"]) for r in w2]
        both = collections.Counter(k for r in w2 for b in r["batches"] for k in keys(b))
        rep["ranks_overlap_samples"] = sum(n - 1 for n in both.values() if n > 1)
    rep["resume_w2_to_w2"] = resume_check(runs["w2_full"], runs["w2_stop"], runs["w2_to_w2"])
    rep["resume_w2_to_w1"] = resume_check(runs["w2_full"], runs["w2_stop"], runs["w2_to_w1"])
    rep["resume_w1_to_w2"] = resume_check(runs["w1_full"], runs["w1_stop"], runs["w1_to_w2"])
    rep["epoch_end"] = {}
    for name in runs:
        if name.startswith("over_") or (lit and name in ("w1_full", "w2_full")):
            if not any(r.get("error") for r in runs[name]):
                rep["epoch_end"][name] = over_stats(runs[name], sizes)
    rep["per_batch_counts"] = {n: [counts(b) for b in merge_ranks(rs)] for n, rs in runs.items()}
    return rep


def fmt_list(xs):
    return "/".join(f"{x:g}" if isinstance(x, float) else str(x) for x in xs)


def fmt_resume(r):
    if "error" in r:
        return "refused: " + r["error"][:160]
    s = "exactly once" if r["exactly_once"] else \
        f"repeats {fmt_list(r['repeats'])}, missing {fmt_list(r['missing'])}"
    s += "; same batches" if r["same_batches_as_reference"] else "; other batches"
    return s + "; " + r["continuation"].split(" (")[0]


def table(report):
    lines = ["| loader | global batch: max dev A/B/C (frac outside ±1) | per rank: max dev "
             "A/B/C | rank totals | resume 2→2 | resume 2→1 | resume 1→2 |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for peer, rep in report["peers"].items():
        g = rep.get("global_world1", {})
        g2 = rep.get("global_world2", {})
        cell = (f"w1 {fmt_list(g.get('max_dev', []))} ({g.get('frac_any_outside_1')}); "
                f"w2 {fmt_list(g2.get('max_dev', []))} ({g2.get('frac_any_outside_1')}); "
                f"{g.get('full_batches')} full batches")
        pr = rep.get("per_rank", [])
        rank_cell = "; ".join(f"r{i} {fmt_list(r.get('max_dev', []))}" for i, r in enumerate(pr))
        tot = " vs ".join(fmt_list(r["totals"]) for r in pr)
        tot += " (differ)" if rep.get("rank_totals_differ") else " (equal)"
        lines.append(f"| {peer} | {cell} | {rank_cell} | {tot} | "
                     f"{fmt_resume(rep['resume_w2_to_w2'])} | "
                     f"{fmt_resume(rep['resume_w2_to_w1'])} | "
                     f"{fmt_resume(rep['resume_w1_to_w2'])} |")
    lines += ["", "| loader | run | batches | last batch | samples A/B/C | distinct A/B/C "
              "| most times one sample A/B/C |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for peer, rep in report["peers"].items():
        for name, e in rep["epoch_end"].items():
            lines.append(f"| {peer} | {name} | {e['batches']} | {e['last_batch']} | "
                         f"{fmt_list(e['samples'])} | {fmt_list(e['distinct'])} | "
                         f"{fmt_list(e['most_times_one_sample'])} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default="/tmp/stoke-mixture-peers")
    ap.add_argument("--fmnist", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--setup", action="store_true", help="make the venvs, then stop")
    ap.add_argument("--prepare", action="store_true", help="write the data, then stop")
    ap.add_argument("--stoke-python",
                    default=os.path.join(REPO, "build/default/python-test/torch/bin/python"))
    ap.add_argument("--stoke-pythonpath", default="")
    ap.add_argument("--stoke-ld-path", default="")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--json-out")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--write-data", help=argparse.SUPPRESS)
    ap.add_argument("--versions", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        return worker(args.worker)
    if args.versions:
        print(json.dumps(versions(args.versions)))
        return
    if args.write_data:
        return write_data(args.write_data, args.fmnist, os.path.join(args.root, "data"))
    if args.setup:
        return setup(args)

    peers = [p for p in args.peers.split(",") if p]
    for env in sorted({PEERS[p]["env"] for p in peers} - {"stoke"}):
        r = subprocess.run([venv_python(args.root, env), os.path.abspath(__file__),
                            "--write-data", env, "--fmnist", args.fmnist, "--root", args.root])
        if r.returncode != 0:
            log(f"writing the {env} data failed ({r.returncode})")
    if args.prepare:
        return

    report = {"settings": {"weights": WEIGHTS, "global_batch": GLOBAL_BATCH, "epoch": EPOCH,
                           "stop_after": STOP_AFTER, "seed": SEED, "over_epoch": OVER_EPOCH,
                           "num_workers": 0}, "peers": {}}
    runner = Runner(args)
    t = time.time()
    for peer in peers:
        report["peers"][peer] = measure(peer, runner)
        if args.json_out:
            with open(args.json_out, "w") as f:
                json.dump(report, f, indent=1)
    report["seconds"] = round(time.time() - t, 1)
    print()
    print(table(report))
    for peer, rep in report["peers"].items():
        print(f"{peer}: versions {rep['versions']}")
        for name, errs in rep["errors"].items():
            print(f"  {name}: {errs[0][:400]}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
