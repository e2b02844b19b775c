#!/bin/sh
# Builds the stoke wheel, installs it into fresh virtual environments and runs the Python test
# suite (CTest runs this as `python_bindings`).
#
#   bindings/tests/run_pytest.sh SOURCE_DIR WORK_DIR
#
# Two environments, because Debian's PyTorch 1.13 needs NumPy 1.x and current JAX needs NumPy 2:
#   torch/  Debian's python3 with its site-packages: numpy and torch from python3-numpy and
#           python3-torch (setup.sh) rather than gigabytes of PyPI wheels. The whole suite, the
#           PyTorch example included; the PyTorch tests must run (STOKE_PYTEST_TORCH=1).
#   keras/  the same python3 without them: Keras 3 and jax[cpu] from PyPI (no CUDA wheels),
#           for the Keras example (STOKE_PYTEST_KERAS=1).
set -eu
src=$(cd "$1" && pwd)
work=$2
rm -rf "$work"
mkdir -p "$work/wheels"
pip_q="-m pip install -q --disable-pip-version-check"

/usr/bin/python3 -m venv --system-site-packages "$work/torch"
"$work/torch/bin/python" $pip_q nanobind scikit-build-core pytest webdataset wids
echo "building the stoke wheel"
"$work/torch/bin/python" -m pip wheel -q --disable-pip-version-check --no-build-isolation \
  --no-deps -w "$work/wheels" "$src"
"$work/torch/bin/python" $pip_q "$work"/wheels/stoke-*.whl

/usr/bin/python3 -m venv "$work/keras"
"$work/keras/bin/python" $pip_q pytest keras "jax[cpu]" "$work"/wheels/stoke-*.whl

# From outside the source tree, so `import stoke` finds the installed package.
cd "$work"
echo "== suite (NumPy, PyTorch)"
STOKE_PYTEST_TORCH=1 STOKE_PYTEST_TORCHVISION=1 STOKE_PYTEST_WIDS=1 STOKE_PYTEST_PARQUET=1 "$work/torch/bin/python" -m pytest -q -p no:cacheprovider "$src/bindings/tests"
echo "== Keras on JAX"
STOKE_PYTEST_KERAS=1 KERAS_BACKEND=jax JAX_PLATFORMS=cpu "$work/keras/bin/python" -m pytest -q -p no:cacheprovider \
  -k keras "$src/bindings/tests"
