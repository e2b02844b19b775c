#!/usr/bin/env python3
"""stoke against other data loaders, on the same data and the same work, measured in one run.

  python3 bench/peers/run_peers.py [--corpus DIR] [--epochs 2] [--repeat 3] [--json-out FILE]
  python3 bench/peers/run_peers.py --setup-only

Peers: PyTorch DataLoader + torchvision, tf.data (tensorflow-cpu), NVIDIA DALI (CPU-only) and
FFCV, each framework in its own virtual environment under --venv-root (made and filled on
first use, reused afterwards), each run in a fresh process; stoke runs as stoke-bench. tf.data
and DALI run the JPEG case twice: with plain decode + crop operators, and with their operators
that decode only the crop's window ("ROI decode"), as stoke does.

Cases:
  jpeg    the image-folder corpus (made with stoke-mkdata jpeg-corpus when --corpus is
          missing): decode to RGB, random-resized-crop 224x224 (scale 0.08..1, ratio 3/4..4/3),
          horizontal flip p=0.5, ImageNet mean/std to float32 CHW, batch 64.
  fmnist  Fashion-MNIST train split (60000 x 28x28) from memory: pad 4 + random crop 28,
          horizontal flip p=0.5, (x/255 - 0.5)/0.5 to float32 CHW, batch 256.
Both with --workers worker processes (threads for DALI, FFCV and tf.data).

Throughput: images delivered after the first batch / time from the first to the last batch,
over --epochs (jpeg) or --fmnist-epochs epochs; the consumer only reads each batch's shape.
Each round runs every peer once per case, in an order rotated from round to round; the table
shows the median of --repeat rounds and its ratio to stoke's median. The machine is shared:
each run waits for other processes to go quiet, and a run they disturbed anyway is measured
again. A peer that cannot be installed or run is reported with the last lines of its error,
and the others go on.

Only the Python standard library is used here; the peers' modules run in their environments.
"""

import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(REPO, "build", "default", "bin")

# Debian's interpreter for every environment: Debian's python3-torch is built for it, and
# using it for all peers keeps the Python version the same everywhere.
SYSTEM_PYTHON = "/usr/bin/python3"

# PyPI's torch wheels for Linux are CUDA builds that pull in several GiB of nvidia-* wheels
# (the CPU-only wheels live on PyTorch's own index, which is not PyPI), and PyPI's torchvision
# wheels for Python 3.11 start at 0.15, which needs torch 2.0. Debian 12's python3-torch
# 1.13.1 and its matching python3-torchvision 0.14.1 are used instead, through environments
# that see Debian's packages (--system-site-packages).
TORCH_APT = ["python3-torch", "python3-torchvision", "python3-venv"]

# The environments the peers run in. "pip" is a list of pip install invocations (each a list
# of arguments), pinned to the versions this benchmark was checked with; "constraints" go to
# every one of them.
ENVS = {
    "torch": {
        "system_site": True,
        "apt": TORCH_APT,
        "pip": [],
        "check": "import torch, torchvision, PIL",
    },
    "tf": {
        "system_site": False,
        "apt": ["python3-venv"],
        "pip": [["tensorflow-cpu==2.21.0"]],
        "check": "import tensorflow",
    },
    "dali": {
        "system_site": False,
        "apt": ["python3-venv"],
        # DALI has no CPU-only wheel; the CUDA 13 build runs CPU pipelines (device_id=None)
        # without a GPU or a CUDA driver.
        "pip": [["nvidia-dali-cuda130==2.4.0"]],
        "check": "import nvidia.dali",
    },
    "ffcv": {
        "system_site": True,
        # libffcv is compiled at install time against OpenCV and libjpeg-turbo (pkg-config).
        "apt": TORCH_APT + ["python3-dev", "g++", "pkg-config", "libopencv-dev",
                            "libturbojpeg0-dev"],
        # Debian's torch is built against numpy 1.x, so numpy must stay below 2 here.
        "constraints": ["numpy<2"],
        "pip": [
            ["numba==0.68.1", "opencv-python-headless==4.11.0.86", "terminaltables", "fastargs",
             "assertpy", "tqdm", "psutil"],
            # ffcv also declares pytorch_pfn_extras (used only on GPUs, and it would pull a
            # PyPI torch over Debian's) and opencv-python (the headless build above gives the
            # same cv2 module); hence --no-deps and the list above.
            ["--no-deps", "ffcv==1.0.2"],
        ],
        "check": "import ffcv, ffcv.loader",
    },
    # The WebDataset-shard peers of bench/shard_peers.py.
    "wds": {
        "system_site": True,
        "apt": TORCH_APT + ["curl"],
        "constraints": ["numpy<2"],
        # webdataset reads s3:// shards through a "pipe:" command; curl signs the requests
        # (--aws-sigv4), so no S3 SDK is needed.
        "pip": [["webdataset==1.0.2"]],
        "check": "import webdataset, torch, torchvision",
    },
    "streaming": {
        "system_site": True,
        "apt": TORCH_APT,
        # mosaicml-streaming accepts torch >= 1.10, so Debian's torch 1.13 serves; its
        # dependencies would otherwise bring numpy 2, which Debian's torch is not built for.
        "constraints": ["numpy<2"],
        "pip": [["mosaicml-streaming==0.13.0"]],
        "check": "import streaming, torch, torchvision",
    },
    "litdata": {
        # litdata needs torch >= 2.4 (it refers to torch.uint16 on import), which Debian does
        # not have: PyPI's torch, with the CUDA wheels it requires (about 4 GiB; CPU-only
        # wheels are not on PyPI). Nothing here uses CUDA.
        "system_site": False,
        "apt": ["python3-venv"],
        "pip": [["litdata==0.2.76", "torch==2.15.0", "torchvision==0.29.2"]],
        "check": "import litdata, torch, torchvision, PIL",
    },
}

# The loaders compared, in the order of the tables. stoke decodes only the region of a JPEG
# that the random crop keeps (at a reduced DCT scale when the crop is shrunk), so tf.data and
# DALI also run with their own decode-only-the-crop operators ("roi"), next to the pipeline
# built from the plain decode + crop operators.
LOADERS = {
    "stoke": {"title": "stoke", "env": None},
    "torch": {"title": "PyTorch DataLoader", "env": "torch", "module": "peer_torch.py"},
    "tf": {"title": "tf.data", "env": "tf", "module": "peer_tf.py"},
    "tf-roi": {"title": "tf.data, ROI decode", "env": "tf", "module": "peer_tf.py",
               "variant": "roi", "cases": ["jpeg"]},
    "dali": {"title": "DALI (CPU)", "env": "dali", "module": "peer_dali.py"},
    "dali-roi": {"title": "DALI (CPU), ROI decode", "env": "dali", "module": "peer_dali.py",
                 "variant": "roi", "cases": ["jpeg"]},
    "ffcv": {"title": "FFCV", "env": "ffcv", "module": "peer_ffcv.py"},
}
CASES = {
    "jpeg": "JPEG corpus",
    "fmnist": "Fashion-MNIST 28x28",
}
ERROR_LINES = 15


def log(msg):
    print(msg, flush=True)


def tail(text, lines=ERROR_LINES):
    """The last lines of a failure's output: what is recorded for a peer that cannot run."""
    return "\n".join(text.strip().splitlines()[-lines:])


# --- Setup -------------------------------------------------------------------------------

def dpkg_version(package):
    out = subprocess.run(["dpkg-query", "-W", "-f=${Status}\t${Version}", package],
                         capture_output=True, text=True)
    status, _, version = out.stdout.partition("\t")
    return version if out.returncode == 0 and status.endswith("installed") else None


def ensure_apt(packages, state):
    """Installs the Debian packages that are missing (through sudo when not root)."""
    missing = [p for p in packages if dpkg_version(p) is None]
    if not missing:
        return
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if not state.get("apt_updated"):
        subprocess.run(sudo + ["apt-get", "update", "-qq"], env=env, check=False)
        state["apt_updated"] = True
    log(f"  apt-get install {' '.join(missing)}")
    r = subprocess.run(sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends"]
                       + missing, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"apt-get install {' '.join(missing)} failed:\n"
                           f"{tail(r.stdout + r.stderr)}")


def venv_python(venv):
    return os.path.join(venv, "bin", "python")


def setup_env(name, args, state):
    """Makes one environment ready; returns {ok, venv, python, error, ...}."""
    spec = ENVS[name]
    venv = os.path.join(args.venv_root, name)
    info = {"ok": False, "venv": venv, "python": venv_python(venv), "error": None}
    log(f"setup {name}: {venv}")
    try:
        ensure_apt(spec["apt"], state)
        info["apt"] = {p: dpkg_version(p) for p in spec["apt"]}

        # The marker records what was installed; an environment whose marker matches the
        # current spec is reused as it is.
        marker = os.path.join(venv, "stoke-peers-spec.json")
        wanted = {"system_site": spec["system_site"], "pip": spec["pip"],
                  "constraints": spec.get("constraints", [])}
        current = None
        if os.path.exists(marker):
            with open(marker) as f:
                current = json.load(f)
        if current != wanted:
            if os.path.exists(venv):
                shutil.rmtree(venv)
            os.makedirs(args.venv_root, exist_ok=True)
            cmd = [SYSTEM_PYTHON, "-m", "venv", venv]
            if spec["system_site"]:
                cmd.insert(3, "--system-site-packages")
            run_setup_step(cmd, venv, "venv")
            constraints = []
            if wanted["constraints"]:
                path = os.path.join(venv, "constraints.txt")
                with open(path, "w") as f:
                    f.write("\n".join(wanted["constraints"]) + "\n")
                constraints = ["-c", path]
            for pip_args in spec["pip"]:
                run_setup_step([venv_python(venv), "-m", "pip", "install",
                                "--disable-pip-version-check", "--no-input"]
                               + constraints + pip_args, venv, "pip install")
            with open(marker, "w") as f:
                json.dump(wanted, f, indent=1)

        check = subprocess.run([venv_python(venv), "-c", spec["check"]],
                               capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError(f"{spec['check']!r} failed:\n{tail(check.stderr)}")
        info["pip_freeze"] = subprocess.run(
            [venv_python(venv), "-m", "pip", "freeze", "--local", "--disable-pip-version-check"],
            capture_output=True, text=True).stdout.split()
        info["ok"] = True
    except (RuntimeError, OSError) as e:
        info["error"] = str(e)
        log(f"  {name} is not available: {tail(str(e), 3)}")
    return info


def run_setup_step(cmd, venv, what):
    """Runs one install step, keeping its full output in the environment's setup.log."""
    log(f"  {' '.join(shlex.quote(c) for c in cmd)}")
    r = subprocess.run(cmd, capture_output=True, text=True)
    if os.path.isdir(venv):
        with open(os.path.join(venv, "setup.log"), "a") as f:
            f.write(f"$ {' '.join(cmd)}\n{r.stdout}{r.stderr}\n")
    if r.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {r.returncode}):\n{tail(r.stdout + r.stderr)}")


def ensure_corpus(args):
    """Builds the JPEG corpus with stoke-mkdata when --corpus is missing or empty."""
    if os.path.isdir(args.corpus) and os.listdir(args.corpus):
        return
    extra = shlex.split(args.corpus_args)
    log(f"making the JPEG corpus: {args.mkdata} jpeg-corpus --out {args.corpus} "
        f"{' '.join(extra)}")
    subprocess.run([args.mkdata, "jpeg-corpus", "--out", args.corpus] + extra, check=True)


# --- Measurements ------------------------------------------------------------------------

def cpu_times():
    """(busy, total) CPU seconds of the whole machine, from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]                  # idle + iowait
    total = sum(fields[:8])                       # guest time is already in user/nice
    return (total - idle) / hz, total / hz


def children_cpu():
    ru = os.times()
    return ru.children_user + ru.children_system


def busy_fraction(seconds):
    """Share of the machine's CPU busy over the next `seconds` (nothing of ours runs then)."""
    b0, t0 = cpu_times()
    time.sleep(seconds)
    b1, t1 = cpu_times()
    return (b1 - b0) / (t1 - t0) if t1 > t0 else 0.0


def wait_until_quiet(args):
    """Waits (up to --wait-busy seconds) until other work uses under --max-busy of the CPUs;
    returns the last share measured."""
    deadline = time.monotonic() + args.wait_busy
    while True:
        busy = busy_fraction(1.0)
        if busy <= args.max_busy or time.monotonic() >= deadline:
            if busy > args.max_busy:
                log(f"    the machine is busy ({busy:.0%} of its CPUs) and stayed so for "
                    f"{args.wait_busy:.0f} s; measuring anyway")
            return busy
        time.sleep(5)


def measure(cmd, args, env=None):
    """Runs one measurement (in `env`, or this process's environment); returns (stdout, stderr,
    returncode, background CPU share).

    The background share is the machine's busy CPU time during the run, less the CPU time of
    the measured process tree, over the run's CPU capacity: other work competing with it."""
    b0, t0 = cpu_times()
    c0 = children_cpu()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
        out, err, rc = r.stdout, r.stderr, r.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = (e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")) + \
            f"\ntimed out after {args.timeout} s"
        rc = -1
    b1, t1 = cpu_times()
    others = (b1 - b0) - (children_cpu() - c0)
    background = max(0.0, others / (t1 - t0)) if t1 > t0 else 0.0
    return out, err, rc, background


def last_json(stdout):
    lines = stdout.strip().splitlines()
    if not lines:
        raise ValueError("no output")
    return json.loads(lines[-1])


def case_data(case, args):
    return args.corpus if case == "jpeg" else args.fmnist


def case_epochs(case, args):
    return args.epochs if case == "jpeg" else args.fmnist_epochs


def case_batch(case, args):
    return args.jpeg_batch if case == "jpeg" else args.fmnist_batch


def run_stoke(case, args):
    cmd = [args.stoke_bench, "--data", case_data(case, args), "--workers", str(args.workers),
           "--batch", str(case_batch(case, args)), "--epochs", str(case_epochs(case, args)),
           "--seed", str(args.seed), "--dtype", "float32", "--json"]
    # The binary may be rebuilt while this runs (a missing or half-written file): retry, and
    # record which build each run used.
    for attempt in range(1, args.stoke_attempts + 1):
        try:
            built = datetime.datetime.fromtimestamp(
                os.stat(args.stoke_bench).st_mtime, datetime.timezone.utc).isoformat()
        except OSError:
            built = None
        out, err, rc, background = measure(cmd, args)
        try:
            if rc != 0:
                raise ValueError(f"exit status {rc}")
            raw = last_json(out)
            return {"ok": True, "images_per_s": raw["samples_per_s"], "images": raw["samples"],
                    "batches": raw["batches"], "startup_s": raw["startup_s"],
                    "background_cpu": background,
                    "versions": {"stoke": raw.get("version"), "stoke-bench built": built},
                    "raw": raw, "command": cmd}
        except (ValueError, KeyError) as e:
            error = f"{e}\n{tail(out + err)}"
            if attempt < args.stoke_attempts:
                log(f"    stoke-bench failed ({e}); retrying in 10 s")
                time.sleep(10)
    return {"ok": False, "error": error, "background_cpu": background, "command": cmd}


def peer_command(name, case, args, setup):
    loader = LOADERS[name]
    return [setup[loader["env"]]["python"], os.path.join(HERE, loader["module"]),
            "--case", case, "--variant", loader.get("variant", "standard"),
            "--data", case_data(case, args), "--batch", str(case_batch(case, args)),
            "--workers", str(args.workers), "--epochs", str(case_epochs(case, args)),
            "--seed", str(args.seed), "--cache-dir", args.cache_dir]


def run_peer(name, case, args, setup):
    cmd = peer_command(name, case, args, setup)
    out, err, rc, background = measure(cmd, args)
    try:
        if rc != 0:
            raise ValueError(f"exit status {rc}")
        r = last_json(out)
        r.update({"ok": True, "background_cpu": background, "command": cmd})
        return r
    except (ValueError, KeyError):
        return {"ok": False, "error": tail(err if err.strip() else out),
                "background_cpu": background, "command": cmd}


def prepare_peer(name, case, args, setup):
    """Untimed preparation (FFCV's .beton); a failure is the peer's error for that case."""
    cmd = peer_command(name, case, args, setup) + ["--prepare"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return None if r.returncode == 0 else tail(r.stderr if r.stderr.strip() else r.stdout)


def measure_quietly(name, case, args, setup):
    """One run of one loader, taken again (up to --noisy-retries times) while other processes
    took more than --max-background of the CPUs during it; the run with the least background
    is kept, the others are listed under "discarded"."""
    tries = []
    for _ in range(1 + args.noisy_retries):
        busy = wait_until_quiet(args)
        at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        r = run_stoke(case, args) if name == "stoke" else run_peer(name, case, args, setup)
        r["started"] = at
        r["busy_before"] = busy
        tries.append(r)
        if not r["ok"] or r["background_cpu"] <= args.max_background:
            break
        log(f"    {case} {name}: other processes took {r['background_cpu']:.0%} of the CPUs "
            f"during the run ({r['images_per_s']:,.1f} images/s); measuring again")
    best = min(tries, key=lambda t: (not t["ok"], t["background_cpu"]))
    best["discarded"] = [t for t in tries if t is not best]
    return best


# --- Report ------------------------------------------------------------------------------

def summarize(results):
    """Adds medians and ratios to stoke's median to results[case][peer]."""
    for by_peer in results.values():
        for entry in by_peer.values():
            rates = [r["images_per_s"] for r in entry["runs"] if r["ok"]]
            entry["images_per_s"] = statistics.median(rates) if rates else None
            entry["images_per_s_runs"] = rates
            starts = [r["startup_s"] for r in entry["runs"] if r["ok"]]
            entry["startup_s"] = statistics.median(starts) if starts else None
            entry["background_cpu_max"] = max((r["background_cpu"] for r in entry["runs"]),
                                              default=None)
            failed = [r for r in entry["runs"] if not r["ok"]]
            if failed and entry.get("error") is None:
                entry["error"] = failed[-1]["error"]
            versions = [r["versions"] for r in entry["runs"] if r["ok"]]
            if versions:
                entry["versions"] = versions[-1]
        stoke = by_peer.get("stoke", {}).get("images_per_s")
        for entry in by_peer.values():
            rate = entry["images_per_s"]
            entry["ratio_to_stoke"] = rate / stoke if rate and stoke else None


def print_table(case, entries, args):
    batch = case_batch(case, args)
    log("")
    log(f"{CASES[case]} ({case_data(case, args)}): batch {batch}, {args.workers} workers, "
        f"{case_epochs(case, args)} epochs, median of {args.repeat}")
    header = (f"  {'loader':<24} {'images/s':>10} {'runs':>22} {'peer/stoke':>11} "
              f"{'stoke/peer':>11} {'start-up s':>11} {'bg CPU':>7}")
    log(header)
    log("  " + "-" * (len(header) - 2))
    for name, entry in entries.items():
        title = LOADERS[name]["title"]
        rate = entry["images_per_s"]
        if rate is None:
            if entry.get("error"):
                last = entry["error"].strip().splitlines() or [""]
                log(f"  {title:<24} {'failed':>10}   {last[-1][:90]}")
            else:
                log(f"  {title:<24} {'not run':>10}")
            continue
        runs = entry["images_per_s_runs"]
        spread = f"{min(runs):,.0f}..{max(runs):,.0f}" if len(runs) > 1 else ""
        ratio = entry["ratio_to_stoke"]
        inv = f"{1 / ratio:.2f}x" if ratio else "-"
        ratio_s = f"{ratio:.3f}" if ratio else "-"
        bg = entry["background_cpu_max"]
        log(f"  {title:<24} {rate:>10,.1f} {spread:>22} {ratio_s:>11} {inv:>11} "
            f"{entry['startup_s']:>11.2f} {bg:>7.0%}")


def write_json(args, started, setup, results):
    if not args.json_out:
        return
    summarize(results)
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    report = {
        "started": started,
        "host": {"nproc": os.cpu_count(), "platform": platform.platform(),
                 "loadavg": os.getloadavg()},
        "args": vars(args),
        "stoke": {"bench": args.stoke_bench, "repo_commit": commit},
        "setup": setup,
        "cases": results,
    }
    # Replaced in one step, so that a reader never sees a half-written file.
    partial = args.json_out + ".partial"
    with open(partial, "w") as f:
        json.dump(report, f, indent=1)
    os.replace(partial, args.json_out)


# --- Main --------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", default="/tmp/corpus",
                   help="JPEG image-folder corpus; made with stoke-mkdata when missing "
                        "(default /tmp/corpus)")
    p.add_argument("--corpus-args", default="",
                   help="more stoke-mkdata jpeg-corpus flags for making a missing corpus, e.g. "
                        "camera-sized photographs: \"--count 600 --long-side 1600..2600 "
                        "--quality 85..95 --progressive 0.1 --chroma-422 0.15 --chroma-444 0.15\"")
    p.add_argument("--fmnist", default="/usr/share/datasets/fashion-mnist",
                   help="Fashion-MNIST IDX folder (default: Debian's dataset-fashion-mnist)")
    p.add_argument("--peers", default=",".join(LOADERS),
                   help=f"comma-separated subset of {','.join(LOADERS)} (default all)")
    p.add_argument("--cases", default="jpeg,fmnist", help="jpeg, fmnist or both (default)")
    p.add_argument("--epochs", type=int, default=2, help="epochs per jpeg run (default 2)")
    p.add_argument("--fmnist-epochs", type=int, default=5,
                   help="epochs per fmnist run (default 5: at stoke's rate two epochs are "
                        "timed over a fraction of a second)")
    p.add_argument("--repeat", type=int, default=3,
                   help="rounds; the table shows the median (default 3)")
    p.add_argument("--workers", type=int, default=2,
                   help="worker processes or threads for every loader (default 2)")
    p.add_argument("--jpeg-batch", type=int, default=64)
    p.add_argument("--fmnist-batch", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stoke-bench", default=os.path.join(BIN, "stoke-bench"))
    p.add_argument("--mkdata", default=os.path.join(BIN, "stoke-mkdata"))
    p.add_argument("--stoke-attempts", type=int, default=3,
                   help="tries per stoke-bench run, for a binary being rebuilt (default 3)")
    p.add_argument("--venv-root", default="/opt/stoke-peers",
                   help="one virtual environment per framework below it "
                        "(default /opt/stoke-peers)")
    p.add_argument("--cache-dir", default="/tmp/stoke-peers-cache",
                   help="files derived from the data, FFCV's .beton (default "
                        "/tmp/stoke-peers-cache)")
    p.add_argument("--timeout", type=int, default=900, help="seconds per run (default 900)")
    p.add_argument("--max-busy", type=float, default=0.15,
                   help="before each run, wait while other work uses more than this share of "
                        "the CPUs (default 0.15)")
    p.add_argument("--wait-busy", type=float, default=300,
                   help="longest wait for a quiet machine before each run, seconds "
                        "(default 300)")
    p.add_argument("--max-background", type=float, default=0.10,
                   help="a run during which other processes used more than this share of the "
                        "CPUs is measured again (default 0.10)")
    p.add_argument("--noisy-retries", type=int, default=2,
                   help="how many times a disturbed run is measured again; the run with the "
                        "least background is kept (default 2)")
    p.add_argument("--setup-only", action="store_true",
                   help="make the environments and the corpus, print versions, and stop")
    p.add_argument("--json-out", help="write every run and the summary as JSON to this file")
    a = p.parse_args(argv)
    a.peers = [x for x in a.peers.split(",") if x]
    a.cases = [x for x in a.cases.split(",") if x]
    if any(x not in LOADERS for x in a.peers) or any(x not in CASES for x in a.cases):
        p.error(f"--peers takes {','.join(LOADERS)}; --cases takes {','.join(CASES)}")
    # Table order, whatever the order given.
    a.peers = [x for x in LOADERS if x in a.peers]
    if min(a.epochs, a.fmnist_epochs, a.repeat, a.workers) < 1:
        p.error("--epochs, --fmnist-epochs, --repeat and --workers must be >= 1")
    return a


def stop(signum, frame):
    raise KeyboardInterrupt


def main(argv):
    args = parse_args(argv)
    # Ctrl-C or `kill` ends the rounds early and still prints and writes what was measured
    # (also when started in the background, where SIGINT may arrive ignored).
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    state = {}
    envs = [e for e in ENVS if any(LOADERS[n]["env"] == e for n in args.peers)]
    setup = {env: setup_env(env, args, state) for env in envs}
    if "jpeg" in args.cases:
        ensure_corpus(args)

    if args.setup_only:
        for name, info in setup.items():
            if info["ok"]:
                log(f"{name}: ready, {info['venv']}")
                for line in info["pip_freeze"]:
                    log(f"    {line}")
                for pkg, ver in info["apt"].items():
                    log(f"    {pkg} {ver} (Debian)")
            else:
                log(f"{name}: NOT available\n{info['error']}")
        return 0 if all(i["ok"] for i in setup.values()) else 1

    results = {case: {} for case in args.cases}
    for case in args.cases:
        for name in args.peers:
            loader = LOADERS[name]
            if case not in loader.get("cases", CASES):
                continue
            entry = {"runs": [], "error": None}
            if loader["env"] is not None:
                if not setup[loader["env"]]["ok"]:
                    entry["error"] = setup[loader["env"]]["error"]
                else:
                    entry["error"] = prepare_peer(name, case, args, setup)
            results[case][name] = entry

    # Rotating the order spreads any drift of the machine (heat, other work, page cache)
    # over all loaders instead of always favouring the one that runs first.
    runnable = {case: [n for n, e in results[case].items() if e["error"] is None]
                for case in args.cases}
    try:
        for rnd in range(args.repeat):
            for case in args.cases:
                names = runnable[case]
                shift = rnd % len(names) if names else 0
                for name in names[shift:] + names[:shift]:
                    r = measure_quietly(name, case, args, setup)
                    r["round"] = rnd + 1
                    results[case][name]["runs"].append(r)
                    if r["ok"]:
                        log(f"[round {rnd + 1}/{args.repeat}] {case:<6} {name:<8} "
                            f"{r['images_per_s']:>10,.1f} images/s  "
                            f"start-up {r['startup_s']:.2f} s  "
                            f"background CPU {r['background_cpu']:.0%}")
                    else:
                        log(f"[round {rnd + 1}/{args.repeat}] {case:<6} {name:<8} failed:\n"
                            f"{r['error']}")
                    # Written after every run, so that a long run stopped early keeps its data.
                    write_json(args, started, setup, results)
    except KeyboardInterrupt:
        log("\ninterrupted: the tables below hold the runs completed so far")

    summarize(results)
    for case in args.cases:
        print_table(case, results[case], args)
    for case in args.cases:
        for name, entry in results[case].items():
            if entry["images_per_s"] is None and entry.get("error"):
                log(f"\n{case} / {name} could not run:\n{entry['error']}")
    if args.json_out:
        write_json(args, started, setup, results)
        log(f"\nwrote {args.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
