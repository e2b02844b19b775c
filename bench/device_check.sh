#!/usr/bin/env bash
# The device check: runs the carried lean build (bench/pack_device_check.sh) on a machine with
# a GPU, in at most about 5 minutes, writing each result to $OUT as soon as it has it, and a
# summary table (summary.md) at the end.
#
#   bench/device_check.sh [CARRY]     CARRY defaults to build/carry (or the script's own
#                                     folder when run from a packed copy); OUT defaults to
#                                     build/device-check; DEVICE_CHECK_BUDGET_S (290) caps it
#
# Steps: the kernel and loader GPU tests (STOKE_REQUIRE_GPU=1: a skipped GPU test fails);
# H2D bandwidth from a page-locked arena vs a cudaHostAlloc buffer; the normalize kernel vs a
# device-to-device copy; a synthetic JPEG corpus; the loader end to end onto cuda:0 with every
# core as a worker, beside the same run onto a host device; the trainer's GPU ops against their
# CPU references; stoke-train for 3 epochs on cuda:0 beside cpu:1 (img/s, data stall, accuracy).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# Run from the packed folder (it holds bin/) or from the repository's bench/.
if [ -d "$here/bin" ]; then default_carry=$here; else default_carry=$(dirname "$here")/build/carry; fi
carry=${1:-$default_carry}
out=${OUT:-$(dirname "$here")/build/device-check}
mkdir -p "$out"
: >"$out/steps.txt"
bin=$carry/bin
[ -x "$bin/stoke-bench" ] || { echo "no packed binaries in $carry (run bench/pack_device_check.sh)" >&2; exit 2; }
# Only the carried binaries see the carried libraries (not nvidia-smi or python3). cuBLAS and
# NCCL come from the machine's own PyTorch packages (too large to carry).
nvlibs=$(python3 -c 'import nvidia.cublas, nvidia.nccl, os; print(":".join(os.path.join(p.__path__[0], "lib") for p in (nvidia.cublas, nvidia.nccl)))' 2>/dev/null || true)
deps=$carry/lib/deps
if [ -f "$carry/lib/deps.tar.gz" ]; then
  deps=${TMPDIR:-/tmp}/stoke-carried/deps
  rm -rf "$(dirname "$deps")" && mkdir -p "$(dirname "$deps")"
  tar -C "$(dirname "$deps")" -xzf "$carry/lib/deps.tar.gz"
fi
libs=$deps:$carry/lib${nvlibs:+:$nvlibs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
t0=$(date +%s)
budget=${DEVICE_CHECK_BUDGET_S:-290}  # the whole check stays within this

# step NAME SECONDS COMMAND...: output to $OUT/NAME.txt, status to $OUT/steps.txt. The limit
# shrinks to what is left of the budget; a step with under 5 s left is skipped.
step() {
  local name=$1 limit=$2
  shift 2
  local t left
  t=$(date +%s)
  left=$((budget - (t - t0)))
  if [ "$left" -lt 5 ]; then
    echo "$name skipped (budget spent)" | tee -a "$out/steps.txt"
    return 0
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "== $name (limit ${limit}s)"
  timeout --kill-after=5 "$limit" env LD_LIBRARY_PATH="$libs" "$@" >"$out/$name.txt" 2>&1
  local rc=$?
  echo "$name rc=$rc seconds=$(($(date +%s) - t))" | tee -a "$out/steps.txt"
  tail -n 3 "$out/$name.txt"
  return 0
}

{
  echo "date: $(date -u +%FT%TZ)"
  echo "cores: $(nproc)"
  nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv 2>&1
} >"$out/machine.txt"
cat "$out/machine.txt"

step devices 20 "$bin/stoke-bench" --list-devices
step kernel_tests 45 env STOKE_REQUIRE_GPU=1 "$bin/stoke_kernel_tests"
step gpu_tests 60 env STOKE_REQUIRE_GPU=1 "$bin/stoke_gpu_tests"
step nn_gpu_tests 60 env STOKE_REQUIRE_GPU=1 "$bin/stoke_nn_gpu_tests"
step h2d 30 "$bin/stoke-gpu-bench" h2d --mib 256 --reps 20
step normalize 30 "$bin/stoke-gpu-bench" normalize --batch 256 --size 224 --reps 50
corpus=${TMPDIR:-/tmp}/stoke-device-corpus
rm -rf "$corpus"
step corpus 45 "$bin/stoke-gpu-bench" make-corpus --out "$corpus" --count 4000
workers=$(nproc)
# Like for like: float32 NCHW onto the GPU (normalized there), and onto a host device
# (normalized by the CPU kernel).
step e2e_cuda 45 "$bin/stoke-bench" --data "$corpus" --devices cuda:0 --workers "$workers" \
  --batch 256 --epochs 2 --dtype float32 --json
step e2e_host 45 "$bin/stoke-bench" --data "$corpus" --devices cpu:1 --workers "$workers" \
  --batch 256 --epochs 2 --dtype float32 --json

# The trainer on one GPU (NCCL over one communicator) and on every core, same data and steps.
fm=$carry/fashion-mnist
step train_cuda 60 "$bin/stoke-train" --data "$fm" --devices cuda:0 --workers 4 --epochs 3 \
  --batch 256 --checkpoint "$out/train_cuda.ckpt" --no-progress
step train_host 60 "$bin/stoke-train" --data "$fm" --devices cpu:1 --workers 4 --epochs 3 \
  --batch 256 --checkpoint "$out/train_host.ckpt" --no-progress

python3 - "$out" "$(($(date +%s) - t0))" <<'PY' | tee "$out/summary.md"
import json, pathlib, re, sys
out = pathlib.Path(sys.argv[1])
def jsons(name):
    p = out / f"{name}.txt"
    rows = []
    for line in (p.read_text(errors="replace").splitlines() if p.exists() else []):
        if line.startswith("{"):
            try: rows.append(json.loads(line))
            except ValueError: pass
    return rows
def gtest(name):
    p = out / f"{name}.txt"
    t = p.read_text(errors="replace") if p.exists() else ""
    passed = re.search(r"\[  PASSED  \] (\d+) test", t)
    failed = re.search(r"(\d+) FAILED TEST", t)
    return f"{passed.group(1) if passed else 0} passed, {failed.group(1) if failed else 0} failed"
rows = [("kernel tests (GPU vs CPU reference, bit-identical)", gtest("kernel_tests"), ""),
        ("loader GPU tests", gtest("gpu_tests"), ""),
        ("trainer ops and trainer on the GPU vs CPU reference", gtest("nn_gpu_tests"), "")]
h = jsons("h2d")
if h:
    h = h[0]
    ok = "goal >= 0.80: " + ("met" if h["arena_vs_pinned"] >= 0.8 else "NOT met")
    rows.append(("H2D from page-locked arena", f'{h["registered_arena_gbps"]:.1f} GB/s vs cudaHostAlloc {h["host_alloc_gbps"]:.1f} GB/s (pageable {h["pageable_gbps"]:.1f}): {h["arena_vs_pinned"]:.2f}x', ok))
for n in jsons("normalize"):
    ok = "goal >= 0.60: " + ("met" if n["kernel_vs_copy"] >= 0.6 else "NOT met")
    rows.append((f'normalize -> {n["dtype"]} NCHW, {n["batch"]}x{n["size"]}x{n["size"]}x3', f'{n["kernel_gbps"]:.0f} GB/s vs D2D copy {n["d2d_copy_gbps"]:.0f} GB/s: {n["kernel_vs_copy"]:.2f}x ({n["images_per_s"]:,.0f} img/s)', ok))
for name in ("e2e_cuda", "e2e_host"):
    for e in jsons(name):
        rows.append((f'loader end to end, {e["devices"]} {e["dtype"]}, {e["workers"]} workers', f'{e["samples_per_s"]:,.0f} img/s, consumer waited {100*e["wait_fraction"]:.0f}%, staging {e["staging"]}, host copies {e["host_copy_bytes"]} B', ""))
for name in ("train_cuda", "train_host"):
    p = out / f"{name}.txt"
    m = re.search(r"done: test accuracy ([0-9.]+), ([0-9.]+) s, ([0-9,]+) img/s, data stall ([0-9.]+)%", p.read_text(errors="replace") if p.exists() else "")
    if m:
        rows.append((f"stoke-train 3 epochs, {name[6:]}", f"{m.group(3)} img/s, data stall {m.group(4)}%, test accuracy {m.group(1)}, {m.group(2)} s", ""))
print("| check | result | goal |\n|---|---|---|")
for r in rows: print(f"| {r[0]} | {r[1]} | {r[2]} |")
print(f"\nsteps: " + ", ".join(l.strip() for l in (out / "steps.txt").read_text().splitlines()))
print(f"total {sys.argv[2]} s")
PY
