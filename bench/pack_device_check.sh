#!/usr/bin/env bash
# Builds the lean configuration (no OpenCV imgcodecs, CUDA on) and packs what the device check
# runs on a GPU machine that has no Debian -dev libraries and no network: the binaries, the
# stoke library and worker in their install-tree layout, every shared library they load except
# glibc's own (from ldd), the Python module, and the check's scripts.
#
#   bench/pack_device_check.sh [DEST]      (default build/carry; prints the size)
#
# Then, on the GPU machine, from the repository root:  DEST/device_check.sh  (writes to $OUT);
# here, without a GPU:  DEVICE_CHECK_DRY=1 DEST/device_check.sh  runs it dry, in seconds.
# The libraries travel as lib/deps.tar.gz (gzip: about half the size), unpacked there.
#
# The Python module: stoke._stoke is built for the GPU machine's Python (3.12; STOKE_PACK_PYTHON
# names the interpreter, else python3.12 or pyenv's 3.12 is used) and for this machine's python3,
# each from the packed sources alone by the packed device_check/build_module.sh, in a fresh
# folder: python/stoke/ holds both, and each interpreter imports its own. The sources, the
# nanobind wheel (STOKE_NANOBIND_VERSION, fetched once into build/lean-python) and the 3.12
# headers travel too, so the check can rebuild the module there if the carried one will not load.
#
# Fails when what a device run carries (this folder and the working tree) exceeds 64 MiB.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/build/carry}
target_python=3.12  # the GPU machine's python3
nanobind_version=${STOKE_NANOBIND_VERSION:-3.1.0}
limit_bytes=$((64 * 1024 * 1024))
cd "$root"

cmake --preset lean -DSTOKE_CUDA=ON >/dev/null
cmake --build build/lean --target stoke-bench stoke-gpu-bench stoke_gpu_tests stoke_kernel_tests \
  stoke_nn_gpu_tests stoke-train stoke-worker stoke_loader

rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib/deps" "$dest/libexec/stoke"
dest=$(cd "$dest" && pwd)
cp build/lean/bin/{stoke-bench,stoke-gpu-bench,stoke_gpu_tests,stoke_kernel_tests,stoke_nn_gpu_tests,stoke-train} "$dest/bin/"
# Fashion-MNIST's test split (4 MiB) serves as the trainer's data there: no Debian packages.
mkdir -p "$dest/fashion-mnist"
for f in t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
  cp /usr/share/datasets/fashion-mnist/$f "$dest/fashion-mnist/$f"
  cp /usr/share/datasets/fashion-mnist/$f "$dest/fashion-mnist/${f/t10k/train}"
done
cp -P build/lean/lib/libstoke_loader.so* "$dest/lib/"
cp build/lean/libexec/stoke/stoke-worker "$dest/libexec/stoke/"
cp bench/device_check.sh bench/resnet50_check.py "$dest/"
mkdir -p "$dest/device_check"
cp bench/device_check/{CMakeLists.txt,build_module.sh,decode_check.py,dlpack_cuda.py,nvidia_libs.py,python_module.sh,stoke_smoke.py,summary.py} \
  "$dest/device_check/"

# The module's sources: bindings/src/ includes only nanobind and stoke's public headers, laid
# out as installed (include/stoke/, dtype.hpp and mix_sample.hpp beside the loader's).
src=$dest/python-src
mkdir -p "$src/include/stoke" "$src/stoke"
cp bindings/src/*.cpp bindings/src/*.hpp "$src/"
cp loader/include/stoke/*.hpp kernels/include/stoke/dtype.hpp kernels/include/stoke/mix_sample.hpp \
  "$src/include/stoke/"
cp bindings/stoke/*.py bindings/stoke/py.typed "$src/stoke/"
wheels=$root/build/lean-python
wheel=$wheels/nanobind-$nanobind_version-py3-none-any.whl
if [ ! -f "$wheel" ]; then
  mkdir -p "$wheels"
  python3 -m pip download -q --disable-pip-version-check --no-deps -d "$wheels" "nanobind==$nanobind_version"
fi
cp "$wheel" "$src/"

# has_headers PYTHON VERSION: PYTHON runs, is VERSION (or any, when empty) and has Python.h.
has_headers() {
  "$1" -c 'import os, sys, sysconfig
v = f"{sys.version_info[0]}.{sys.version_info[1]}"
sys.exit(not ((not sys.argv[1] or v == sys.argv[1]) and
              os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))))' "$2" 2>/dev/null
}
python_for_target=""
for p in ${STOKE_PACK_PYTHON:-} python$target_python \
         "$(pyenv root 2>/dev/null || echo /nonexistent)"/versions/"$target_python"*/bin/python"$target_python"; do
  if has_headers "$p" "$target_python"; then python_for_target=$p; break; fi
done
# build_module PYTHON: from the packed folder alone, in a fresh folder (under build/ so ccache
# sees the same relative paths every time).
build_module() {
  local work
  mkdir -p "$root/build/lean-python"
  work=$(mktemp -d "$root/build/lean-python/module.XXXXXX")
  "$dest/device_check/build_module.sh" "$1" "$dest" "$dest/python" "$work" >"$work.log" 2>&1 \
    || { cat "$work.log" >&2; rm -rf "$work" "$work.log"; return 1; }
  tail -n 1 "$work.log"
  rm -rf "$work" "$work.log"
}
if [ -n "$python_for_target" ]; then
  include=$("$python_for_target" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  tar -C "$(dirname "$include")" -czf "$src/python$target_python-include.tar.gz" "$(basename "$include")"
  build_module "$python_for_target"
else
  echo "note: no Python $target_python with headers here (set STOKE_PACK_PYTHON): the device" \
       "check will build the module there, with that machine's own headers" >&2
fi
if has_headers python3 "" && ! has_headers python3 "$target_python"; then
  build_module python3  # this machine's, for the dry run here
fi

# glibc (and the dynamic loader) must come from the machine itself; the rest travels, except
# cuBLAS and NCCL (over 700 MiB): the GPU machine's PyTorch carries the same CUDA 13 builds in
# its `nvidia` packages, where device_check.sh finds them and puts them on the library path.
is_system() {
  case "$(basename "$1")" in
    libstoke_loader.so*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libresolv.so.*) return 0 ;;
    libcuda.so*|libnvidia-*) return 0 ;;  # the driver belongs to the GPU machine
    libcublas.so*|libcublasLt.so*|libnccl.so*) return 0 ;;
  esac
  return 1
}
for f in "$dest"/bin/* "$dest"/lib/libstoke_loader.so.*.*.* "$dest"/libexec/stoke/stoke-worker \
         "$dest"/python/stoke/*.so; do
  if [ -e "$f" ]; then ldd "$f" | awk '/=> \//{print $3}'; fi
done | sort -u | while read -r lib; do
  is_system "$lib" || cp -L "$lib" "$dest/lib/deps/"
done

count=$(ls "$dest/lib/deps" | wc -l)
tar -C "$dest/lib" -czf "$dest/lib/deps.tar.gz" deps
rm -rf "$dest/lib/deps"
find "$dest" -name __pycache__ -prune -exec rm -rf {} +

# What a device run carries: this folder plus the working tree (tracked and untracked files
# that git does not ignore).
pack_bytes=$(du -sb "$dest" | cut -f1)
tree_bytes=$(git ls-files -coz --exclude-standard 2>/dev/null | xargs -0 -r stat -c %s -- 2>/dev/null \
  | awk '{s += $1} END {print s + 0}')
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
echo "packed $dest: $count libraries, $(ls "$dest"/python/stoke/_stoke.*.so 2>/dev/null | wc -l) Python module(s)," \
     "$(mib "$pack_bytes") (+ $(mib "$tree_bytes") of working tree = $(mib $((pack_bytes + tree_bytes))) carried)"
if [ $((pack_bytes + tree_bytes)) -gt "$limit_bytes" ]; then
  echo "error: $(mib $((pack_bytes + tree_bytes))) is over the 64 MiB a device run can carry" >&2
  exit 1
fi
