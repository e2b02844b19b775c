#!/bin/sh
# Installs stoke into a fresh virtual environment and runs the Python test suite (CTest runs
# this as `python_bindings`). The environment is made from Debian's python3 with its
# site-packages, so numpy and torch come from python3-numpy / python3-torch (setup.sh) rather
# than gigabytes of PyPI wheels; nanobind, scikit-build-core and pytest come from PyPI.
#
#   bindings/tests/run_pytest.sh SOURCE_DIR VENV_DIR
set -eu
src=$(cd "$1" && pwd)
venv=$2
rm -rf "$venv"
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check nanobind scikit-build-core pytest
echo "building and installing stoke into $venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation "$src"
# Run from outside the source tree, so `import stoke` finds the installed package.
cd "$venv"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$src/bindings/tests"
