#!/usr/bin/env bash
# The device check: runs the carried lean build (bench/pack_device_check.sh) on a machine with
# a GPU, in at most about 7.5 minutes, and writes to $OUT as it goes:
#
#   machine.txt   first, before any step: nvidia-smi (and the head of nvidia-smi -q), where
#                 cuBLAS and NCCL were found, the library paths, ldd of every carried binary,
#                 library and Python module
#   steps.txt     one "NAME: STATUS (N s)" line per step as it ends
#   log.txt       every step's output, appended as it ends; results.jsonl its JSON lines
#   summary.md    the table, at the end (also when the check is stopped by SIGTERM or SIGINT)
#
# Few files on purpose: a device run brings back at most 8.
#
#   bench/device_check.sh [CARRY]     CARRY defaults to build/carry (or the script's own
#                                     folder when run from a packed copy); OUT defaults to
#                                     build/device-check (beside the packed copy);
#                                     DEVICE_CHECK_BUDGET_S (450) caps it
#
# Every step runs under its own time limit, shrunk to what is left of the budget (a step with
# under 5 s left is skipped); a step that fails, crashes or times out is recorded and the next
# one runs. Steps: the Python module (an importable stoke for this python3, one CPU batch); the
# kernel and loader GPU tests (STOKE_REQUIRE_GPU=1: a skipped GPU test fails); H2D bandwidth
# from a page-locked arena vs a cudaHostAlloc buffer; the normalize kernel vs a device-to-device
# copy; a synthetic JPEG corpus; ResNet-50 training fed by stoke and by PyTorch's DataLoader
# (bench/resnet50_check.py: img/s, data stall); the Python module's CUDA arrays in PyTorch
# (device_check/dlpack_cuda.py: zero copy, the host run's bytes, stream order); the loader end
# to end onto cuda:0 with every core as a worker, beside the same run onto a host device; the
# trainer's GPU ops against their CPU references; stoke-train for 3 epochs on cuda:0 beside cpu:1.
#
# Dry run: with DEVICE_CHECK_DRY=1, or when nvidia-smi is missing or fails, every GPU step
# reports "no GPU" at once and the ResNet-50 script only checks its arguments; the machine
# report, the Python module step and the summary run as on a GPU machine (seconds, not minutes).
#
# Knobs: DEVICE_CHECK_CORPUS_IMAGES (4000); DEVICE_CHECK_RESNET_BATCH (256), _WARMUP (30),
# _STEPS (300), _WORKERS (16), _SECONDS (90: each run stops measuring after this long);
# DEVICE_CHECK_DECODE_SECONDS (10: each decode rate), DEVICE_CHECK_CAMERA_IMAGES (96);
# DEVICE_CHECK_ONLY=name,name,... runs only the steps named: the decode=gpu steps come last, so
# a run for them names them, e.g. DEVICE_CHECK_ONLY=python_module,corpus,decode,
# resnet50_stoke_gpu_decode,resnet50_stoke (with DEVICE_CHECK_BUDGET_S=560);
# DEVICE_CHECK_BUILD_MODULE=1 builds the Python module here even when the carried one imports.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# Run from the packed folder (it holds bin/; build/carry) or from the repository's bench/.
if [ -d "$here/bin" ]; then
  default_carry=$here
  default_out=$(dirname "$here")/device-check
else
  default_carry=$(dirname "$here")/build/carry
  default_out=$(dirname "$here")/build/device-check
fi
carry=$(cd "${1:-$default_carry}" 2>/dev/null && pwd) || { echo "no folder ${1:-$default_carry}" >&2; exit 2; }
out=${OUT:-$default_out}
bin=$carry/bin
tools=$carry/device_check
if [ ! -x "$bin/stoke-bench" ] || [ ! -d "$tools" ]; then
  echo "no packed binaries in $carry (run bench/pack_device_check.sh)" >&2
  exit 2
fi
t0=$(date +%s)
budget=${DEVICE_CHECK_BUDGET_S:-450}  # the whole check stays within this
mkdir -p "$out"
: >"$out/steps.txt"
: >"$out/log.txt"
: >"$out/results.jsonl"
# Step outputs, the corpus and checkpoints stay out of $OUT (only a few files come back).
scratch=${TMPDIR:-/tmp}/stoke-device-check
rm -rf "$scratch"
mkdir -p "$scratch/logs"

dry=""
if [ "${DEVICE_CHECK_DRY:-0}" = 1 ]; then
  dry="DEVICE_CHECK_DRY=1"
elif ! command -v nvidia-smi >/dev/null 2>&1; then
  dry="no nvidia-smi"
elif ! timeout 30 nvidia-smi -L >/dev/null 2>&1; then
  dry="nvidia-smi failed"
fi
[ -n "$dry" ] && export DEVICE_CHECK_DRY=1

deps=$carry/lib/deps
if [ -f "$carry/lib/deps.tar.gz" ]; then
  deps=$scratch/deps
  tar -C "$scratch" -xzf "$carry/lib/deps.tar.gz"
fi
# Only the carried binaries see the carried libraries (not nvidia-smi or python3). cuBLAS and
# NCCL come from the machine's own PyTorch packages (too large to carry).
nvlibs=$(timeout 60 python3 "$tools/nvidia_libs.py" 2>"$scratch/nvidia_libs.txt")
# nvJPEG for decode=gpu: the machine's (a file path: torchvision's copy has a hashed name).
if [ -z "${STOKE_NVJPEG:-}" ]; then
  STOKE_NVJPEG=$(timeout 60 python3 "$tools/nvidia_libs.py" --nvjpeg 2>>"$scratch/nvidia_libs.txt")
  export STOKE_NVJPEG
fi
libs=$deps:$carry/lib${nvlibs:+:$nvlibs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# The Python steps load PyTorch, which may need the machine's libstdc++ when that is newer than
# the carried one (Debian 12's): the carried libstdc++ and libgcc_s stay out of their path when
# the machine has one that defines the newest symbol version the carried one does.
pydeps=$deps
system_cxx=$(ldconfig -p 2>/dev/null | awk '/libstdc\+\+\.so\.6 .*x86-64/ {print $NF; exit}')
newest=$(grep -ao 'GLIBCXX_3\.4\.[0-9]*' "$deps/libstdc++.so.6" 2>/dev/null | sort -uV | tail -n 1)
if [ -n "$system_cxx" ] && [ -n "$newest" ] && grep -aqF "$newest" "$system_cxx"; then
  pydeps=$scratch/pydeps
  mkdir -p "$pydeps"
  for f in "$deps"/*; do
    case "$(basename "$f")" in libstdc++.so.6 | libgcc_s.so.1) ;; *) ln -s "$f" "$pydeps/" ;; esac
  done
fi
pylibs=$pydeps:$carry/lib${nvlibs:+:$nvlibs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(uname -srm), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "dry run: ${dry:-no}"
  echo "python3: $(command -v python3) $(python3 -c 'import sys; print(sys.version.split()[0])' 2>&1)"
  echo "== nvidia-smi"
  if command -v nvidia-smi >/dev/null 2>&1; then
    timeout 30 nvidia-smi 2>&1
    timeout 30 nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv 2>&1
    echo "== nvidia-smi -q (head)"
    timeout 30 nvidia-smi -q 2>&1 | head -n 60
  else
    echo "nvidia-smi: not found"
  fi
  echo "== libraries"
  cat "$scratch/nvidia_libs.txt"
  echo "carried binaries: LD_LIBRARY_PATH=$libs"
  echo "python steps:     LD_LIBRARY_PATH=$pylibs"
  echo "machine libstdc++: ${system_cxx:-none found}; carried defines up to ${newest:-?}"
  echo "== ldd (carried binaries and libraries with the first path, Python modules with the second)"
  for f in "$bin"/* "$carry"/lib/libstoke_loader.so.*.*.* "$carry"/libexec/stoke/stoke-worker "$deps"/*; do
    echo "-- ${f#"$carry"/}"
    LD_LIBRARY_PATH=$libs ldd "$f" 2>&1
  done
  for f in "$carry"/python/stoke/*.so; do
    [ -e "$f" ] || continue
    echo "-- ${f#"$carry"/}"
    LD_LIBRARY_PATH=$pylibs ldd "$f" 2>&1
  done
} >"$out/machine.txt" 2>&1
sed -n '1,4p' "$out/machine.txt"
grep '^nvidia libraries: [^s]' "$out/machine.txt"
echo "ldd: $(grep -c '=> not found' "$out/machine.txt") libraries not found (machine.txt)"

# run_step KIND NAME SECONDS COMMAND...: output to $scratch/logs/NAME.txt, appended to
# $OUT/log.txt (its JSON lines to results.jsonl), status to $OUT/steps.txt. KIND: bin (carried
# binaries' library path), py (the Python steps' path and the stoke package), and gpu-bin /
# gpu-py for steps that need the GPU: in a dry run gpu-bin is not started, gpu-py runs with
# DEVICE_CHECK_DRY=1 set, and both report "no GPU". The step runs in the background so that a
# SIGTERM or SIGINT to this script stops it at once (see the trap below).
step_name="" step_pid="" step_start=0
run_step() {
  local kind=$1 name=$2 limit=$3
  shift 3
  local left status log=$scratch/logs/$name.txt
  step_start=$(date +%s)
  left=$((budget - (step_start - t0)))
  if [ -n "${DEVICE_CHECK_ONLY:-}" ] && [[ ",$DEVICE_CHECK_ONLY," != *",$name,"* ]]; then
    echo "not selected (DEVICE_CHECK_ONLY=$DEVICE_CHECK_ONLY)" >"$log"
    status="not selected"
  elif [ -n "$dry" ] && [ "$kind" = gpu-bin ]; then
    echo "no GPU ($dry): not run" >"$log"
    status="no GPU"
  elif [ "$left" -lt 5 ]; then
    echo "skipped: the ${budget} s budget is spent" >"$log"
    status="skipped (budget spent)"
  else
    [ "$limit" -gt "$left" ] && limit=$left
    echo "== $name (limit ${limit}s)"
    local vars=(LD_LIBRARY_PATH="$libs")
    if [ "${kind#gpu-}" = py ]; then
      vars=(LD_LIBRARY_PATH="$pylibs" PYTHONUNBUFFERED=1)
      [ -f "$scratch/stoke_pythonpath" ] && vars+=(PYTHONPATH="$(cat "$scratch/stoke_pythonpath")")
    fi
    step_name=$name
    timeout --kill-after=5 "$limit" env "${vars[@]}" "$@" </dev/null >"$log" 2>&1 &
    step_pid=$!
    wait "$step_pid"
    local rc=$?
    step_pid=""
    case $rc in
      0) status=ok ;;
      124 | 137) status="timed out after ${limit} s" ;;
      *) status="rc=$rc" ;;
    esac
    [ -n "$dry" ] && [ "$kind" = gpu-py ] && [ $rc -eq 0 ] && status="no GPU"
  fi
  end_step "$name" "$status"
  case $status in ok | "no GPU" | skipped* | "not selected") ;; *) tail -n 3 "$log" ;; esac
  return 0
}

# end_step NAME STATUS: the step's line in steps.txt, its output in log.txt and results.jsonl.
end_step() {
  local name=$1 status=$2 log=$scratch/logs/$1.txt
  echo "$name: $status ($(($(date +%s) - step_start)) s)" | tee -a "$out/steps.txt"
  { echo "==== $name: $status"; cat "$log"; } >>"$out/log.txt"
  grep '^{' "$log" | sed "s/^{/{\"step\": \"$name\", /" >>"$out/results.jsonl"
  step_name=""
}

summarized=""
summarize() {
  [ -n "$summarized" ] && return
  summarized=1
  local why=()
  [ -n "$dry" ] && why=(--dry "$dry")
  if command -v python3 >/dev/null 2>&1; then
    python3 "$tools/summary.py" "$scratch/logs" "$out/steps.txt" "$(($(date +%s) - t0))" \
      "${why[@]}" | tee "$out/summary.md"
  else
    { echo "no python3 for the table; the steps:"; cat "$out/steps.txt"; } | tee "$out/summary.md"
  fi
}
# Stopped from outside: end the running step (timeout passes the signal to its command's
# process group), record it, and still write the summary.
stopped() {
  echo "stopped: writing the summary" >&2
  if [ -n "$step_pid" ]; then
    kill -TERM "$step_pid" 2>/dev/null
    wait "$step_pid" 2>/dev/null
    end_step "$step_name" "stopped from outside"
  fi
  summarize
  exit 143
}
trap stopped TERM INT

workers=$(nproc)
corpus=$scratch/corpus
fm=$carry/fashion-mnist
resnet=(python3 "$carry/resnet50_check.py" --data "$corpus"
        --batch "${DEVICE_CHECK_RESNET_BATCH:-256}" --warmup "${DEVICE_CHECK_RESNET_WARMUP:-30}"
        --steps "${DEVICE_CHECK_RESNET_STEPS:-300}" --workers "${DEVICE_CHECK_RESNET_WORKERS:-16}"
        --max-seconds "${DEVICE_CHECK_RESNET_SECONDS:-90}")

run_step py python_module 90 "$tools/python_module.sh" "$carry" "$scratch"
run_step gpu-bin devices 20 "$bin/stoke-bench" --list-devices
run_step gpu-bin kernel_tests 45 env STOKE_REQUIRE_GPU=1 "$bin/stoke_kernel_tests"
run_step gpu-bin h2d 30 "$bin/stoke-gpu-bench" h2d --mib 256 --reps 20
run_step gpu-bin normalize 30 "$bin/stoke-gpu-bench" normalize --batch 256 --size 224 --reps 50
run_step gpu-bin corpus 45 "$bin/stoke-gpu-bench" make-corpus --out "$corpus" \
  --count "${DEVICE_CHECK_CORPUS_IMAGES:-4000}"
# The same model, loop, steps and batch size; only the loader differs.
run_step gpu-py resnet50_stoke 150 "${resnet[@]}" --loader stoke --dtype bfloat16
run_step gpu-py resnet50_torch 150 "${resnet[@]}" --loader torch
run_step gpu-bin gpu_tests 60 env STOKE_REQUIRE_GPU=1 "$bin/stoke_gpu_tests"
# The Python module's GPU arrays in PyTorch: zero copy, the host device's bytes, stream order.
run_step gpu-py dlpack_cuda 60 python3 "$tools/dlpack_cuda.py" "$corpus" --workers 4
run_step gpu-bin nn_gpu_tests 60 env STOKE_REQUIRE_GPU=1 "$bin/stoke_nn_gpu_tests"
# Like for like: float32 NCHW onto the GPU (normalized there), and onto a host device
# (normalized by the CPU kernel).
run_step gpu-bin e2e_cuda 45 "$bin/stoke-bench" --data "$corpus" --devices cuda:0 \
  --workers "$workers" --batch 256 --epochs 2 --dtype float32 --json
run_step gpu-bin e2e_host 45 "$bin/stoke-bench" --data "$corpus" --devices cpu:1 \
  --workers "$workers" --batch 256 --epochs 2 --dtype float32 --json
# The trainer on one GPU (NCCL over one communicator) and on every core, same data and steps.
run_step gpu-bin train_cuda 60 "$bin/stoke-train" --data "$fm" --devices cuda:0 --workers 4 \
  --epochs 3 --batch 256 --checkpoint "$scratch/train_cuda.ckpt" --no-progress
run_step gpu-bin train_host 60 "$bin/stoke-train" --data "$fm" --devices cpu:1 --workers 4 \
  --epochs 3 --batch 256 --checkpoint "$scratch/train_host.ckpt" --no-progress

# decode=gpu: stoke's device decoders against its workers and torchvision's GPU path, pixels
# against the workers' (bench/device_check/decode_check.py), then ResNet-50 fed by decode=gpu
# with 4 workers.
run_step gpu-py decode 240 python3 "$tools/decode_check.py" "$corpus" \
  --seconds "${DEVICE_CHECK_DECODE_SECONDS:-10}" --camera "${DEVICE_CHECK_CAMERA_IMAGES:-96}" \
  --scratch "$scratch/decode"
run_step gpu-py resnet50_stoke_gpu_decode 150 "${resnet[@]}" --loader stoke --dtype bfloat16 \
  --decode gpu --workers 4

summarize
