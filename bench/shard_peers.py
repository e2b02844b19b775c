#!/usr/bin/env python3
"""stoke against other loaders of sharded datasets, on the same WebDataset shards, from local
disk and from SeaweedFS over S3 on 127.0.0.1, measured in one run.

    shard_peers.py --shards DIR [--peers stoke,wds,streaming,litdata] [--sources local,s3]
                   [--epochs 2] [--workers 2] [--batch 64] [--repeat 3] [--json-out FILE]
    shard_peers.py --setup-only

DIR holds the shards (stoke-pack --out DIR/train-%06d.tar) and their .idx sidecars. Loaders:

  stoke      stoke-bench on the shards
  wds        webdataset 1.0 + PyTorch's DataLoader on the same shards (bench/peers/peer_wds.py);
             from S3 through a `pipe:curl --aws-sigv4` command per shard
  streaming  MosaicML Streaming on the shards' samples converted to MDS (peer_streaming.py)
  litdata    litdata on the shards' samples converted with litdata.optimize (peer_litdata.py)

Every loader does the same work: decode the JPEG, random-resized-crop 224 (scale 0.08..1,
ratio 3/4..4/3), flip p=0.5, ImageNet mean/std to float32 CHW, batches of --batch, --workers
worker processes, shuffled, for --epochs epochs. The conversions for streaming and litdata run
once, untimed, into --cache-dir, and are reused while the shards are unchanged. Then SeaweedFS
(`weed server -s3`) starts with a bucket holding the shards and both conversions, and each
round runs every loader once per source, in an order rotated from round to round. Each run
starts with an empty download cache, so every S3 run reads its data from the server.

The table shows each loader's median samples/s over --repeat rounds and stoke's ratio to it,
and for each source stoke's ratio to the best peer. Before each run the script waits for the
machine to go quiet; a run that other processes disturbed is measured again (run_peers.py's
checks). The environments are made by run_peers.py's setup under --venv-root.

Only the Python standard library is used here; the peers run in their environments.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "peers"))
import run_peers as rp  # noqa: E402
from local_servers import SeaweedServer  # noqa: E402

BUCKET = "bench"

# name: title, environment (run_peers.ENVS), module, and the converted dataset it reads (None:
# it reads the tar shards).
LOADERS = {
    "stoke": {"title": "stoke", "env": None},
    "wds": {"title": "webdataset + DataLoader", "env": "wds", "module": "peer_wds.py",
            "format": None},
    "streaming": {"title": "MosaicML Streaming", "env": "streaming",
                  "module": "peer_streaming.py", "format": "streaming"},
    "litdata": {"title": "litdata", "env": "litdata", "module": "peer_litdata.py",
                "format": "litdata"},
}
SOURCES = {"local": "local disk", "s3": "SeaweedFS (S3)"}


def shard_pattern(folder):
    """The brace pattern naming every .tar in `folder`: train-{000000..000010}.tar."""
    shards = sorted(f for f in os.listdir(folder) if f.endswith(".tar"))
    if not shards:
        raise SystemExit(f"{folder}: no .tar shards")
    first, last = shards[0][:-4], shards[-1][:-4]
    digits = len(first) - len(first.rstrip("0123456789"))
    if digits == 0 or len(shards) != int(last[-digits:]) - int(first[-digits:]) + 1:
        raise SystemExit(f"{folder}: shards must be numbered without gaps (prefix-%06d.tar)")
    return shards, f"{first[:-digits]}{{{first[-digits:]}..{last[-digits:]}}}.tar"


def source_signature(folder, shards):
    return [[f, os.stat(os.path.join(folder, f)).st_size,
             os.stat(os.path.join(folder, f)).st_mtime_ns] for f in shards]


def prepare(name, args, setup, shards):
    """Converts the shards into the peer's format in --cache-dir/NAME unless a conversion of
    the same shards is there. Returns None, or the error."""
    loader = LOADERS[name]
    out = os.path.join(args.cache_dir, loader["format"])
    marker = out + ".source.json"
    signature = {"shards": source_signature(args.shards, shards), "module": loader["module"]}
    if os.path.exists(marker) and os.path.isdir(out):
        with open(marker) as f:
            if json.load(f) == signature:
                rp.log(f"prepare {name}: {out} is up to date")
                return None
    rp.log(f"prepare {name}: converting {args.shards} into {out} (untimed)")
    os.makedirs(args.cache_dir, exist_ok=True)
    cmd = [setup[loader["env"]]["python"], os.path.join(HERE, "peers", loader["module"]),
           "--prepare", "--shards", args.shards, "--out", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return rp.tail(r.stderr if r.stderr.strip() else r.stdout)
    with open(marker, "w") as f:
        json.dump(signature, f)
    return None


def data_location(name, source, args, pattern):
    fmt = LOADERS[name].get("format")
    if source == "local":
        return (os.path.join(os.path.abspath(args.shards), pattern) if fmt is None
                else os.path.join(args.cache_dir, fmt))
    return f"s3://{BUCKET}/shards/{pattern}" if fmt is None else f"s3://{BUCKET}/{fmt}"


def command(name, data, args, setup, run_cache):
    if name == "stoke":
        return [args.stoke_bench, "--data", data, "--workers", str(args.workers),
                "--batch", str(args.batch), "--epochs", str(args.epochs),
                "--seed", str(args.seed), "--dtype", "float32",
                "--shuffle-window", str(args.stoke_shuffle_window), "--json"]
    loader = LOADERS[name]
    return [setup[loader["env"]]["python"], os.path.join(HERE, "peers", loader["module"]),
            "--data", data, "--batch", str(args.batch), "--workers", str(args.workers),
            "--epochs", str(args.epochs), "--seed", str(args.seed),
            "--shuffle-buffer", str(args.shuffle_buffer), "--cache-dir", run_cache]


def run_once(name, data, args, setup, env):
    """One run in a fresh process with an empty download cache; returns its result."""
    run_cache = os.path.join(args.cache_dir, "run")
    shutil.rmtree(run_cache, ignore_errors=True)
    os.makedirs(run_cache)
    cmd = command(name, data, args, setup, run_cache)
    env = dict(env, STOKE_CACHE_DIR=os.path.join(run_cache, "stoke"))
    out, err, rc, background = rp.measure(cmd, args, env)
    shutil.rmtree(run_cache, ignore_errors=True)
    result = {"ok": False, "background_cpu": background, "command": cmd}
    try:
        if rc != 0:
            raise ValueError(f"exit status {rc}")
        raw = rp.last_json(out)
        if name == "stoke":
            result.update(samples_per_s=raw["samples_per_s"], startup_s=raw["startup_s"],
                          samples=raw["samples"], versions={"stoke": raw.get("version")},
                          checksum=raw.get("checksum"))
        else:
            result.update(samples_per_s=raw["images_per_s"], startup_s=raw["startup_s"],
                          samples=raw["images"], versions=raw["versions"])
        result["ok"] = True
    except (ValueError, KeyError) as e:
        result["error"] = f"{e}\n{rp.tail(err if err.strip() else out)}"
    return result


def measure_quietly(name, data, args, setup, env):
    """run_peers.measure_quietly for one loader and source: waits for a quiet machine, and
    measures a disturbed run again; keeps the run with the least background CPU."""
    tries = []
    for attempt in range(1 + args.noisy_retries):
        busy = rp.wait_until_quiet(args)
        r = run_once(name, data, args, setup, env)
        r["started"] = datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds")
        r["busy_before"] = busy
        tries.append(r)
        if not r["ok"] or r["background_cpu"] <= args.max_background \
                or attempt == args.noisy_retries:
            break
        rp.log(f"    other processes took {r['background_cpu']:.0%} of the CPUs during the "
               f"run ({r['samples_per_s']:,.1f} samples/s); measuring again")
    best = min(tries, key=lambda t: (not t["ok"], t["background_cpu"]))
    best["discarded"] = [t for t in tries if t is not best]
    return best


def summarize(results):
    """Medians per loader and source, stoke's ratio to each, and to the best peer."""
    summary = {}
    for source, by_loader in results.items():
        rows = {}
        for name, entry in by_loader.items():
            rates = [r["samples_per_s"] for r in entry["runs"] if r["ok"]]
            starts = [r["startup_s"] for r in entry["runs"] if r["ok"]]
            failed = [r["error"] for r in entry["runs"] if not r["ok"]]
            rows[name] = {
                "samples_per_s": statistics.median(rates) if rates else None,
                "runs": rates,
                "startup_s": statistics.median(starts) if starts else None,
                "background_cpu_max": max((r["background_cpu"] for r in entry["runs"]),
                                          default=None),
                "error": entry["error"] or (failed[-1] if failed else None),
            }
        stoke = rows.get("stoke", {}).get("samples_per_s")
        peers = {n: r["samples_per_s"] for n, r in rows.items()
                 if n != "stoke" and r["samples_per_s"]}
        for r in rows.values():
            r["stoke_ratio"] = stoke / r["samples_per_s"] if stoke and r["samples_per_s"] \
                else None
        best = max(peers, key=peers.get) if peers else None
        summary[source] = {"loaders": rows, "best_peer": best,
                           "stoke_to_best_peer": stoke / peers[best] if stoke and best else None}
    return summary


def print_tables(summary, args):
    for source, s in summary.items():
        rp.log(f"\n{SOURCES[source]}: batch {args.batch}, {args.workers} workers, "
               f"{args.epochs} epochs, median of {args.repeat}")
        header = (f"  {'loader':<24} {'samples/s':>10} {'runs':>18} {'stoke/loader':>13} "
                  f"{'start-up s':>11} {'bg CPU':>7}")
        rp.log(header)
        rp.log("  " + "-" * (len(header) - 2))
        for name, r in s["loaders"].items():
            title = LOADERS[name]["title"]
            if r["samples_per_s"] is None:
                if r["error"]:
                    last = r["error"].strip().splitlines() or [""]
                    rp.log(f"  {title:<24} {'failed':>10}   {last[-1][:90]}")
                else:
                    rp.log(f"  {title:<24} {'not run':>10}")
                continue
            runs = r["runs"]
            spread = f"{min(runs):,.0f}..{max(runs):,.0f}" if len(runs) > 1 else ""
            ratio = f"{r['stoke_ratio']:.2f}x" if r["stoke_ratio"] else "-"
            rp.log(f"  {title:<24} {r['samples_per_s']:>10,.1f} {spread:>18} {ratio:>13} "
                   f"{r['startup_s']:>11.2f} {r['background_cpu_max']:>7.0%}")
        if s["best_peer"] and s["stoke_to_best_peer"]:
            rp.log(f"  stoke / best peer ({LOADERS[s['best_peer']]['title']}): "
                   f"{s['stoke_to_best_peer']:.2f}x")


def write_json(args, started, setup, prepared, results):
    if not args.json_out:
        return
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    report = {
        "started": started,
        "host": {"nproc": os.cpu_count(), "platform": platform.platform(),
                 "loadavg": os.getloadavg()},
        "args": vars(args),
        "stoke": {"bench": args.stoke_bench, "repo_commit": commit},
        "setup": setup,
        "prepare_errors": prepared,
        "runs": results,
        "summary": summarize(results),
    }
    partial = args.json_out + ".partial"
    with open(partial, "w") as f:
        json.dump(report, f, indent=1)
    os.replace(partial, args.json_out)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shards", default="/tmp/corpus-shards",
                   help="folder of WebDataset tar shards made by stoke-pack "
                        "(default /tmp/corpus-shards)")
    p.add_argument("--peers", default=",".join(LOADERS),
                   help=f"comma-separated subset of {','.join(LOADERS)} (default all)")
    p.add_argument("--sources", default=",".join(SOURCES),
                   help="local, s3 or both (default)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--repeat", type=int, default=3, help="rounds; the median is shown")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shuffle-buffer", type=int, default=1000,
                   help="webdataset's sample shuffle buffer (default 1000)")
    p.add_argument("--stoke-shuffle-window", type=int, default=4,
                   help="stoke's shuffle window in shards (default 4; 0: every sample with every "
                        "other), the counterpart of webdataset's shard shuffle and sample buffer")
    p.add_argument("--stoke-bench", default=os.path.join(REPO, "build", "default", "bin",
                                                         "stoke-bench"))
    p.add_argument("--weed", default=os.path.join(REPO, "build", "servers", "bin", "weed"),
                   help="SeaweedFS's weed binary (default build/servers/bin/weed)")
    p.add_argument("--venv-root", default="/opt/stoke-peers",
                   help="the peers' virtual environments (default /opt/stoke-peers)")
    p.add_argument("--cache-dir", default="/tmp/stoke-shard-peers",
                   help="the converted datasets and each run's download cache "
                        "(default /tmp/stoke-shard-peers)")
    p.add_argument("--timeout", type=int, default=900, help="seconds per run (default 900)")
    p.add_argument("--max-busy", type=float, default=0.15,
                   help="before each run, wait while other work uses more than this share of "
                        "the CPUs (default 0.15)")
    p.add_argument("--wait-busy", type=float, default=300,
                   help="longest wait for a quiet machine before each run, s (default 300)")
    p.add_argument("--max-background", type=float, default=0.10,
                   help="a run during which other processes used more than this share of the "
                        "CPUs is measured again (default 0.10)")
    p.add_argument("--noisy-retries", type=int, default=1,
                   help="how many times a disturbed run is measured again (default 1)")
    p.add_argument("--setup-only", action="store_true",
                   help="make the environments and the conversions, print versions, and stop")
    p.add_argument("--json-out", help="write every run and the summary as JSON to this file")
    a = p.parse_args(argv)
    a.peers = [x for x in a.peers.split(",") if x]
    a.sources = [x for x in a.sources.split(",") if x]
    if any(x not in LOADERS for x in a.peers) or any(x not in SOURCES for x in a.sources):
        p.error(f"--peers takes {','.join(LOADERS)}; --sources takes {','.join(SOURCES)}")
    a.peers = [x for x in LOADERS if x in a.peers]
    a.sources = [x for x in SOURCES if x in a.sources]
    if min(a.epochs, a.repeat, a.workers, a.batch, a.shuffle_buffer) < 1:
        p.error("--epochs, --repeat, --workers, --batch and --shuffle-buffer must be >= 1")
    a.cache_dir = os.path.abspath(a.cache_dir)
    return a


def stop(signum, frame):
    raise KeyboardInterrupt


def main(argv):
    args = parse_args(argv)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    shards, pattern = shard_pattern(args.shards)

    state = {}
    envs = [LOADERS[n]["env"] for n in args.peers if LOADERS[n]["env"]]
    setup = {env: rp.setup_env(env, args, state) for env in envs}
    errors = {}
    for name in args.peers:
        env = LOADERS[name]["env"]
        if env and not setup[env]["ok"]:
            errors[name] = setup[env]["error"]
        elif LOADERS[name].get("format"):
            errors[name] = prepare(name, args, setup, shards)
    if args.setup_only:
        for name, info in setup.items():
            rp.log(f"{name}: {'ready, ' + info['venv'] if info['ok'] else 'NOT available'}")
            for line in info.get("pip_freeze", []):
                rp.log(f"    {line}")
        for name, error in errors.items():
            if error:
                rp.log(f"{name}: {error}")
        return 0 if not any(errors.values()) else 1

    runnable = [n for n in args.peers if not errors.get(n)]
    results = {src: {n: {"runs": [], "error": errors.get(n)} for n in args.peers}
               for src in args.sources}
    work = tempfile.mkdtemp(prefix="stoke-shard-peers-")
    try:
        s3 = None
        if "s3" in args.sources:
            s3 = SeaweedServer(args.weed, os.path.join(work, "weed")).__enter__()
            rp.log(f"SeaweedFS at {s3.endpoint}: uploading {len(shards)} shards"
                   + "".join(f", the {LOADERS[n]['format']} conversion" for n in runnable
                             if LOADERS[n].get("format")))
            s3.put_folder(BUCKET, args.shards, prefix="shards/")
            for n in runnable:
                fmt = LOADERS[n].get("format")
                if fmt:
                    s3.put_folder(BUCKET, os.path.join(args.cache_dir, fmt),
                                  prefix=f"{fmt}/", create=False)
        env = s3.env() if s3 else dict(os.environ)
        for rnd in range(args.repeat):
            for source in args.sources:
                shift = rnd % len(runnable) if runnable else 0
                for name in runnable[shift:] + runnable[:shift]:
                    data = data_location(name, source, args, pattern)
                    r = measure_quietly(name, data, args, setup, env)
                    r["round"] = rnd + 1
                    results[source][name]["runs"].append(r)
                    head = f"[round {rnd + 1}/{args.repeat}] {source:<5} {name:<9}"
                    if r["ok"]:
                        rp.log(f"{head} {r['samples_per_s']:>9,.1f} samples/s  start-up "
                               f"{r['startup_s']:.2f} s  background CPU "
                               f"{r['background_cpu']:.0%}")
                    else:
                        rp.log(f"{head} failed:\n{r['error']}")
                    write_json(args, started, setup, errors, results)
    except KeyboardInterrupt:
        rp.log("\ninterrupted: the tables below hold the runs completed so far")
    finally:
        if s3:
            s3.__exit__(None, None, None)
        shutil.rmtree(work, ignore_errors=True)

    summary = summarize(results)
    print_tables(summary, args)
    for name, error in errors.items():
        if error:
            rp.log(f"\n{name} could not run:\n{error}")
    if args.json_out:
        write_json(args, started, setup, errors, results)
        rp.log(f"\nwrote {args.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
