#!/usr/bin/env python3
"""Writes an image folder as Parquet with another program's own writer, for the Parquet tests.

    make_parquet.py ROOT OUT --writer pyarrow|polars|duckdb|datasets [--rows-per-group N]
                    [--compression C] [--files K] [--labels int|string|classlabel|none]
                    [--page-index] [--data-page-v2] [--no-dictionary] [--rows-per-page N]
                    [--image-files K] [--captions]

Samples are the folder's images in the order stoke indexes a folder (class folders sorted, the
images of each sorted by path, the label the class's position), as rows of an `image` column and
a `label` column. Each writer keeps its own defaults but for what is asked:

- pyarrow: pyarrow.parquet.write_table; the image is Hugging Face's Image struct
  {bytes: binary, path: string} unless --plain-binary.
- polars: DataFrame.write_parquet; the image a Binary column.
- duckdb: COPY ... TO (FORMAT parquet); the image a BLOB column.
- datasets: Dataset.to_parquet with Image and ClassLabel features (the Hub's layout).

--image-files K (pyarrow's Image struct, datasets) makes every K-th row's image (1: every row's) a
file of its own, as `datasets` writes images it did not embed: copied to images/CLASS/NAME beside
OUT, and the row's Image {bytes: null, path: "images/CLASS/NAME"}.

--captions (pyarrow, datasets) adds a `caption` string column: row i's caption(i) below, null
for every tenth row.

--files K splits the rows into K files OUT-00000-of-0000K.parquet, ... (else OUT is the file).
Prints the files written, one per line.
"""

import argparse
import os

from make_shards import folder_samples as shard_samples  # (this script's folder is on the path)


def folder_samples(root):
    """The class names, and the (path, label) samples in stoke's folder order."""
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    return classes, shard_samples(root)


def caption(i):
    """Row i's caption: null for every tenth row, else of a length that varies with i."""
    return None if i % 10 == 9 else f"row {i}: " + "word " * (i % 13)


def image_struct(image):
    """Hugging Face's Image value: the bytes, or an image file's relative path."""
    if isinstance(image, str):
        return {"bytes": None, "path": image}
    return {"bytes": image, "path": None}


def write_pyarrow(path, images, labels, classes, a):
    import pyarrow as pa
    import pyarrow.parquet as pq
    if a.plain_binary:
        image = pa.array(images, pa.binary())
    else:
        image = pa.array([image_struct(b) for b in images],
                         pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
    columns = {"image": image}
    if a.captions:
        columns["caption"] = pa.array(a.captions, pa.string())
    if a.labels == "string":
        columns["label"] = pa.array([classes[l] for l in labels], pa.string())
    elif a.labels != "none":
        columns["label"] = pa.array(labels, pa.int64())
    options = {}
    if a.rows_per_group:
        options["row_group_size"] = a.rows_per_group
    if a.compression:
        options["compression"] = a.compression
    if a.page_index:
        options["write_page_index"] = True
    if a.data_page_v2:
        options["data_page_version"] = "2.0"
    if a.no_dictionary:
        options["use_dictionary"] = False
    if a.rows_per_page:
        options["write_batch_size"] = a.rows_per_page
        options["data_page_size"] = 1
    pq.write_table(pa.table(columns), path, **options)


def write_polars(path, images, labels, classes, a):
    import polars as pl
    columns = {"image": pl.Series(images, dtype=pl.Binary)}
    if a.labels == "string":
        columns["label"] = [classes[l] for l in labels]
    elif a.labels != "none":
        columns["label"] = labels
    options = {}
    if a.rows_per_group:
        options["row_group_size"] = a.rows_per_group
    if a.compression:
        options["compression"] = a.compression
    pl.DataFrame(columns).write_parquet(path, **options)


def write_duckdb(path, images, labels, classes, a):
    import duckdb
    import pyarrow as pa
    columns = {"image": pa.array(images, pa.binary())}
    if a.labels == "string":
        columns["label"] = pa.array([classes[l] for l in labels], pa.string())
    elif a.labels != "none":
        columns["label"] = pa.array(labels, pa.int64())
    con = duckdb.connect()
    con.register("t", pa.table(columns))
    options = ["FORMAT parquet"]
    if a.rows_per_group:
        options.append(f"ROW_GROUP_SIZE {a.rows_per_group}")
    if a.compression:
        options.append(f"COMPRESSION {a.compression}")
    con.execute(f"COPY t TO '{path}' ({', '.join(options)})")


def write_datasets(path, images, labels, classes, a):
    import datasets
    features = {"image": datasets.Image()}
    rows = {"image": [image_struct(b) for b in images]}
    if a.captions:
        features["caption"] = datasets.Value("string")
        rows["caption"] = a.captions
    if a.labels == "string":
        features["label"] = datasets.Value("string")
        rows["label"] = [classes[l] for l in labels]
    elif a.labels != "none":
        features["label"] = datasets.ClassLabel(names=classes)
        rows["label"] = labels
    ds = datasets.Dataset.from_dict(rows, features=datasets.Features(features))
    options = {}
    if a.rows_per_group:
        options["batch_size"] = a.rows_per_group
    ds.to_parquet(path, **options)


WRITERS = {"pyarrow": write_pyarrow, "polars": write_polars, "duckdb": write_duckdb,
           "datasets": write_datasets}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("out")
    p.add_argument("--writer", choices=sorted(WRITERS), required=True)
    p.add_argument("--rows-per-group", type=int, default=0)
    p.add_argument("--rows-per-page", type=int, default=0)
    p.add_argument("--compression", default="")
    p.add_argument("--files", type=int, default=0)
    p.add_argument("--labels", choices=["int", "string", "none"], default="int")
    p.add_argument("--page-index", action="store_true")
    p.add_argument("--data-page-v2", action="store_true")
    p.add_argument("--no-dictionary", action="store_true")
    p.add_argument("--plain-binary", action="store_true")
    p.add_argument("--image-files", type=int, default=0)
    p.add_argument("--captions", action="store_true")
    a = p.parse_args()
    if a.writer == "datasets":
        os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("HF_DATASETS_CACHE", os.path.join(os.path.dirname(os.path.abspath(a.out)),
                                                                ".hf-cache"))
    classes, samples = folder_samples(a.root)
    images = [open(path, "rb").read() for path, _ in samples]
    labels = [label for _, label in samples]
    if a.image_files:
        if a.writer not in ("pyarrow", "datasets") or a.plain_binary:
            p.error("--image-files needs an Image struct (pyarrow or datasets)")
        base = os.path.dirname(os.path.abspath(a.out))
        for i, (path, _) in enumerate(samples):
            if i % a.image_files:
                continue
            relative = os.path.join("images", os.path.relpath(path, a.root))
            os.makedirs(os.path.dirname(os.path.join(base, relative)), exist_ok=True)
            with open(os.path.join(base, relative), "wb") as f:
                f.write(images[i])
            images[i] = relative
        # (datasets opens the paths relative to the working folder to size them.)
        a.out = os.path.abspath(a.out)
        os.chdir(base)
    parts = [(a.out, 0, len(samples))]
    if a.files:
        per = -(-len(samples) // a.files)
        parts = [(f"{a.out}-{k:05d}-of-{a.files:05d}.parquet", k * per,
                  min(len(samples), (k + 1) * per)) for k in range(a.files)]
    if a.captions and a.writer not in ("pyarrow", "datasets"):
        p.error("--captions is written by pyarrow or datasets")
    all_captions = [caption(i) for i in range(len(samples))] if a.captions else None
    for path, begin, end in parts:
        a.captions = all_captions[begin:end] if all_captions else None
        WRITERS[a.writer](path, images[begin:end], labels[begin:end], classes, a)
        print(path)


if __name__ == "__main__":
    main()
