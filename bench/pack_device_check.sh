#!/usr/bin/env bash
# Builds the lean configuration (no OpenCV imgcodecs, CUDA on) and packs what the device check
# runs on a GPU machine that has no Debian -dev libraries and no network: the binaries, the
# stoke library and worker in their install-tree layout, every shared library they load except
# glibc's own (from ldd), and bench/device_check.sh itself.
#
#   bench/pack_device_check.sh [DEST]      (default build/carry; prints the size)
#
# Then, on the GPU machine, from the repository root:  DEST/device_check.sh  (writes to $OUT).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/build/carry}
cd "$root"

cmake --preset lean -DSTOKE_CUDA=ON >/dev/null
cmake --build build/lean --target stoke-bench stoke-gpu-bench stoke_gpu_tests stoke_kernel_tests \
  stoke-worker stoke_loader

rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib/deps" "$dest/libexec/stoke"
cp build/lean/bin/{stoke-bench,stoke-gpu-bench,stoke_gpu_tests,stoke_kernel_tests} "$dest/bin/"
cp -P build/lean/lib/libstoke_loader.so* "$dest/lib/"
cp build/lean/libexec/stoke/stoke-worker "$dest/libexec/stoke/"
cp bench/device_check.sh "$dest/"

# glibc (and the dynamic loader) must come from the machine itself; the rest travels.
is_system() {
  case "$(basename "$1")" in
    libstoke_loader.so*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libresolv.so.*) return 0 ;;
    libcuda.so*|libnvidia-*) return 0 ;;  # the driver belongs to the GPU machine
  esac
  return 1
}
for f in "$dest"/bin/* "$dest"/lib/libstoke_loader.so.*.*.* "$dest"/libexec/stoke/stoke-worker; do
  ldd "$f" | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
  is_system "$lib" || cp -L "$lib" "$dest/lib/deps/"
done

count=$(ls "$dest/lib/deps" | wc -l)
size=$(du -sm "$dest" | cut -f1)
echo "packed $dest: $count libraries, ${size} MiB"
if [ "$size" -gt 60 ]; then
  echo "warning: ${size} MiB is close to or over the 64 MiB a device run can carry" >&2
fi
