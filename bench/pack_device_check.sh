#!/usr/bin/env bash
# Builds the lean configuration (no OpenCV imgcodecs, CUDA on) and packs what the device check
# runs on a GPU machine that has no Debian -dev libraries and no network: the binaries, the
# stoke library and worker in their install-tree layout, every shared library they load except
# glibc's own (from ldd), and bench/device_check.sh itself.
#
#   bench/pack_device_check.sh [DEST]      (default build/carry; prints the size)
#
# Then, on the GPU machine, from the repository root:  DEST/device_check.sh  (writes to $OUT).
# The libraries travel as lib/deps.tar.gz (gzip: 22 MiB instead of 45), unpacked there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/build/carry}
cd "$root"

cmake --preset lean -DSTOKE_CUDA=ON >/dev/null
cmake --build build/lean --target stoke-bench stoke-gpu-bench stoke_gpu_tests stoke_kernel_tests \
  stoke_nn_gpu_tests stoke-train stoke-worker stoke_loader

rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib/deps" "$dest/libexec/stoke"
cp build/lean/bin/{stoke-bench,stoke-gpu-bench,stoke_gpu_tests,stoke_kernel_tests,stoke_nn_gpu_tests,stoke-train} "$dest/bin/"
# Fashion-MNIST's test split (4 MiB) serves as the trainer's data there: no Debian packages.
mkdir -p "$dest/fashion-mnist"
for f in t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
  cp /usr/share/datasets/fashion-mnist/$f "$dest/fashion-mnist/$f"
  cp /usr/share/datasets/fashion-mnist/$f "$dest/fashion-mnist/${f/t10k/train}"
done
cp -P build/lean/lib/libstoke_loader.so* "$dest/lib/"
cp build/lean/libexec/stoke/stoke-worker "$dest/libexec/stoke/"
cp bench/device_check.sh "$dest/"

# glibc (and the dynamic loader) must come from the machine itself; the rest travels, except
# cuBLAS and NCCL (over 700 MiB): the GPU machine's PyTorch carries the same CUDA 13 builds in
# its nvidia-cublas and nvidia-nccl-cu13 packages, which device_check.sh puts on the library path.
is_system() {
  case "$(basename "$1")" in
    libstoke_loader.so*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libresolv.so.*) return 0 ;;
    libcuda.so*|libnvidia-*) return 0 ;;  # the driver belongs to the GPU machine
    libcublas.so*|libcublasLt.so*|libnccl.so*) return 0 ;;
  esac
  return 1
}
for f in "$dest"/bin/* "$dest"/lib/libstoke_loader.so.*.*.* "$dest"/libexec/stoke/stoke-worker; do
  ldd "$f" | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
  is_system "$lib" || cp -L "$lib" "$dest/lib/deps/"
done

count=$(ls "$dest/lib/deps" | wc -l)
# Compressed, the libraries take half the room (OpenBLAS alone is 36 MiB); device_check.sh
# unpacks them into /tmp.
tar -C "$dest/lib" -czf "$dest/lib/deps.tar.gz" deps
rm -rf "$dest/lib/deps"
size=$(du -sm "$dest" | cut -f1)
echo "packed $dest: $count libraries, ${size} MiB"
if [ "$size" -gt 60 ]; then
  echo "warning: ${size} MiB is close to or over the 64 MiB a device run can carry" >&2
fi
