#!/usr/bin/env bash
# Builds stoke's Python module for one interpreter from a packed copy (bench/pack_device_check.sh)
# and lays out an importable package: PACKAGE_DIR/stoke/{__init__.py, py.typed, _stoke.*.so}.
#
#   build_module.sh PYTHON CARRY PACKAGE_DIR [BUILD_DIR]
#
# CARRY is the packed folder: python-src/ (bindings/src/'s files, include/stoke/*.hpp,
# stoke/*.py, the nanobind wheel, and the headers of the Python the pack was made for), device_check/CMakeLists.txt
# and lib/libstoke_loader.so. Nothing else is needed: no OpenCV or other -dev library, no network.
# The interpreter's own headers are used when it has them, else the carried ones of its version.
# Several interpreters may build into one PACKAGE_DIR: each finds its own _stoke.cpython-3NN-*.so.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: build_module.sh PYTHON CARRY PACKAGE_DIR [BUILD_DIR]" >&2; exit 2; }
python=$1
carry=$(cd "$2" && pwd)
mkdir -p "$3/stoke"
pkg=$(cd "$3" && pwd)/stoke
build=${4:-$(mktemp -d "${TMPDIR:-/tmp}/stoke-module.XXXXXX")}
mkdir -p "$build"
src=$carry/python-src

version=$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
# nanobind comes from the carried wheel, so every build uses the version the pack was tested with.
wheel=$(ls "$src"/nanobind-*.whl 2>/dev/null | head -n 1)
[ -n "$wheel" ] || { echo "build_module.sh: no nanobind wheel in $src" >&2; exit 1; }
rm -rf "$build/nanobind" && mkdir -p "$build/nanobind"
"$python" -m zipfile -e "$wheel" "$build/nanobind"

include_args=()
if ! "$python" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
  headers=$src/python$version-include.tar.gz
  [ -f "$headers" ] || { echo "build_module.sh: $python has no Python.h and none for $version was carried" >&2; exit 1; }
  tar -C "$build" -xzf "$headers"
  include_args=(-DPython_INCLUDE_DIR="$build/python$version")
  echo "build_module.sh: using the carried Python $version headers"
fi

# pip's cmake and ninja live beside the interpreter when they are not on PATH.
PATH=$PATH:$(dirname "$python")
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
PYTHONPATH=$build/nanobind cmake -S "$carry/device_check" -B "$build/cmake" "${generator[@]}" \
  -DPython_EXECUTABLE="$python" "${include_args[@]}" -DSTOKE_SOURCE="$src" \
  -DSTOKE_LIBRARY="$carry/lib/libstoke_loader.so" -DSTOKE_PACKAGE_DIR="$pkg" >"$build/configure.log" \
  || { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build/cmake" --parallel "${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
cp "$src"/stoke/__init__.py "$src"/stoke/py.typed "$pkg/"
suffix=$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
[ -f "$pkg/_stoke$suffix" ] || { echo "build_module.sh: no $pkg/_stoke$suffix after the build" >&2; exit 1; }
echo "build_module.sh: _stoke$suffix for Python $version in $pkg"
