#!/usr/bin/env bash
# The device check's Python step: an importable stoke for this machine's python3, proven by one
# CPU batch, and the folder to put on PYTHONPATH for the steps after it.
#
#   python_module.sh CARRY SCRATCH      writes the folder to SCRATCH/stoke_pythonpath
#
# The pack carries the module built for the GPU machine's Python (3.12) and for the packing
# machine's own, side by side in CARRY/python/stoke. When none of them imports here (another
# Python, a library it cannot load) or DEVICE_CHECK_BUILD_MODULE=1, it is built here from the
# carried sources (build_module.sh: CMake, nanobind and a C++ compiler, no -dev libraries).
set -uo pipefail
carry=$1
scratch=$2
python=python3
here=$(cd "$(dirname "$0")" && pwd)
rm -f "$scratch/stoke_pythonpath"
echo "python: $(command -v "$python") ($("$python" -c 'import sys; print(sys.version.split()[0])' 2>&1))"

path=$carry/python
how="carried"
if [ "${DEVICE_CHECK_BUILD_MODULE:-0}" = 1 ] || ! PYTHONPATH=$path "$python" -c 'import stoke'; then
  [ "${DEVICE_CHECK_BUILD_MODULE:-0}" = 1 ] || echo "the carried module does not import with $python: building it here"
  path=$scratch/python
  rm -rf "$path"
  t=$(date +%s)
  "$here/build_module.sh" "$python" "$carry" "$path" "$scratch/module-build" || exit 1
  how="built here in $(($(date +%s) - t)) s"
fi
PYTHONPATH=$path "$python" "$here/stoke_smoke.py" "$carry/fashion-mnist" --how "$how" || exit 1
echo "$path" >"$scratch/stoke_pythonpath"
