#!/usr/bin/env python3
"""Writes the parquet_pages fuzz target's seeds (tests/fuzz/corpus/parquet_pages/).

    make_parquet_seeds.py CORPUS_ROOT     (with the Python that has pyarrow, polars, duckdb and
                                           datasets: build/parquet/bin/python, setup.sh)

Each seed is one image column chunk as a writer laid it out, after the target's layout byte
(codec: bits 0-2, maximum definition level: bits 3-4, a dictionary page first: bit 5): pyarrow
with every codec, V1 and V2 data pages, dictionary and plain pages, small pages; polars, DuckDB
and datasets with their defaults. The "images" are 12 deterministic byte strings of 20 to 300
bytes, so the seeds stay small. Deterministic: the same bytes every run.
"""

import os
import random
import shutil
import sys
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq

CODECS = {"UNCOMPRESSED": 0, "SNAPPY": 1, "GZIP": 2, "BROTLI": 4, "LZ4": 7, "ZSTD": 6}


def images():
    rng = random.Random(7)
    return [bytes(rng.randrange(256) for _ in range(rng.randrange(20, 300))) for _ in range(12)]


def chunk_seed(path):
    """The layout byte and the bytes of the file's first image column chunk."""
    meta = pq.ParquetFile(path).metadata
    column = meta.row_group(0).column(0)
    start = column.data_page_offset
    dictionary = column.has_dictionary_page and column.dictionary_page_offset is not None
    if dictionary:
        start = min(start, column.dictionary_page_offset)
    with open(path, "rb") as f:
        f.seek(start)
        body = f.read(column.total_compressed_size)
    max_def = pq.ParquetFile(path).schema.column(0).max_definition_level
    layout = CODECS[column.compression] | (max_def << 3) | (0x20 if dictionary else 0)
    return bytes([layout]) + body


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = os.path.join(sys.argv[1], "parquet_pages")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    data = images()
    struct = pa.array([{"bytes": b, "path": None} for b in data],
                      pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
    with tempfile.TemporaryDirectory() as tmp:
        seeds = {}
        for codec in ("none", "snappy", "gzip", "brotli", "lz4", "zstd"):
            for version in ("1.0", "2.0"):
                for dictionary in (True, False):
                    name = f"pyarrow-{codec}-v{version[0]}-{'dict' if dictionary else 'plain'}"
                    path = os.path.join(tmp, name + ".parquet")
                    pq.write_table(pa.table({"image": struct}), path, compression=codec,
                                   data_page_version=version, use_dictionary=dictionary,
                                   write_batch_size=4, data_page_size=1)
                    seeds[name] = path
        path = os.path.join(tmp, "pyarrow-required.parquet")
        schema = pa.schema([pa.field("image", pa.binary(), nullable=False)])
        pq.write_table(pa.table({"image": pa.array(data, pa.binary())}, schema=schema), path)
        seeds["pyarrow-required"] = path

        import polars as pl
        path = os.path.join(tmp, "polars.parquet")
        pl.DataFrame({"image": pl.Series(data, dtype=pl.Binary)}).write_parquet(path)
        seeds["polars"] = path

        import duckdb
        path = os.path.join(tmp, "duckdb.parquet")
        con = duckdb.connect()
        con.register("t", pa.table({"image": pa.array(data, pa.binary())}))
        con.execute(f"COPY t TO '{path}' (FORMAT parquet)")
        seeds["duckdb"] = path

        os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
        import datasets
        path = os.path.join(tmp, "datasets.parquet")
        datasets.Dataset.from_dict({"image": [{"bytes": b, "path": None} for b in data]},
                                   features=datasets.Features({"image": datasets.Image()})
                                   ).to_parquet(path)
        seeds["datasets"] = path

        for name, path in sorted(seeds.items()):
            with open(os.path.join(out, name + ".bin"), "wb") as f:
                f.write(chunk_seed(path))


if __name__ == "__main__":
    main()
