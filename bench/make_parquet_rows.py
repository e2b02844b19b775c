#!/usr/bin/env python3
"""Writes a synthetic Parquet image dataset of N rows, for bench/index_scale.py's parquet-N.

    make_parquet_rows.py N OUT_DIR        (a Python with pyarrow and Pillow: build/parquet/bin/python)

Files of at most 1,000,000 rows (OUT_DIR/train-00000-of-000NN.parquet, ...), row groups of
100,000, an `image` binary column of small real JPEGs (64 distinct 8 x 8 ones, cycled, about 300
bytes each) and an int64 `label` column (1,000 classes), snappy pages without a dictionary, with
an offset index: real pages, small bytes. Deterministic; a file already written is kept.
"""

import io
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

ROWS_PER_FILE = 1_000_000


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    n, out = int(sys.argv[1]), sys.argv[2]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    jpegs = []
    for _ in range(64):
        b = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(b, "JPEG",
                                                                               quality=90)
        jpegs.append(b.getvalue())
    files = max(1, -(-n // ROWS_PER_FILE))
    for f in range(files):
        path = os.path.join(out, f"train-{f:05d}-of-{files:05d}.parquet")
        if os.path.exists(path):
            continue
        rows = np.arange(f * ROWS_PER_FILE, min(n, (f + 1) * ROWS_PER_FILE))
        table = pa.table({"image": pa.array([jpegs[i % 64] for i in rows], pa.binary()),
                          "label": pa.array((rows * 7919) % 1000, pa.int64())})
        pq.write_table(table, path + ".partial", row_group_size=100_000, use_dictionary=False,
                       compression="snappy", write_page_index=True)
        os.rename(path + ".partial", path)


if __name__ == "__main__":
    main()
