"""Parquet: a dataset written by Hugging Face datasets' Dataset.to_parquet (the Hub's layout: an
Image feature and a ClassLabel feature) is read by stoke as the same images in a folder are, and
its ClassLabel names are the loader's class_names."""

import os
import subprocess

import numpy as np
import pytest

import stoke
from helpers import write_png

SOURCE = os.path.join(os.path.dirname(__file__), "..", "..")


def parquet_python():
    """The Python that has datasets (setup.sh's build/parquet); run_pytest.sh requires it."""
    python = os.environ.get("STOKE_PARQUET_PYTHON", "")
    if not python or not os.path.exists(python):
        if os.environ.get("STOKE_PYTEST_PARQUET") == "1":
            pytest.fail("STOKE_PARQUET_PYTHON (a Python with datasets) is not set")
        pytest.skip("STOKE_PARQUET_PYTHON (a Python with datasets) is not set")
    return python


def test_a_datasets_parquet_file_delivers_the_folders_batches_and_class_names(tmp_path):
    python = parquet_python()
    rng = np.random.default_rng(3)
    classes = ["cat", "dog", "eel"]
    for c in classes:
        (tmp_path / "images" / c).mkdir(parents=True)
        for i in range(5):
            write_png(tmp_path / "images" / c / f"{i}.png",
                      rng.integers(0, 256, (40 + i, 50, 3), dtype=np.uint8))
    parquet = tmp_path / "train.parquet"
    subprocess.run([python, os.path.join(SOURCE, "tests", "loader", "make_parquet.py"),
                    str(tmp_path / "images"), str(parquet), "--writer", "datasets"],
                   check=True, stdout=subprocess.DEVNULL)

    def batches(data):
        loader = stoke.Loader(str(data), batch=5, workers=1, size=32, seed=4, devices="cpu:1")
        out = [(np.from_dlpack(b.pixels[0]).copy(), np.from_dlpack(b.labels).copy())
               for b in loader]
        return loader, out

    folder, from_folder = batches(tmp_path / "images")
    loader, from_parquet = batches(parquet)
    assert loader.dataset_size == 15
    assert loader.class_names == classes == folder.class_names
    assert len(from_parquet) == len(from_folder) == 3
    for (p, l), (fp, fl) in zip(from_parquet, from_folder):
        assert np.array_equal(p, fp) and np.array_equal(l, fl)


def test_bytes_field_names_a_column_whose_values_arrive_as_bytes(tmp_path):
    python = parquet_python()
    for c in ("cat", "dog"):
        (tmp_path / "images" / c).mkdir(parents=True)
        for i in range(3):
            write_png(tmp_path / "images" / c / f"{i}.png", np.full((20, 20, 3), 40 * i, np.uint8))
    parquet = tmp_path / "train.parquet"
    subprocess.run([python, os.path.join(SOURCE, "tests", "loader", "make_parquet.py"),
                    str(tmp_path / "images"), str(parquet), "--writer", "datasets", "--captions"],
                   check=True, stdout=subprocess.DEVNULL)
    loader = stoke.Loader(str(parquet), bytes_field="caption", batch=2, workers=1, size=16,
                          shuffle=False, devices="cpu:1")
    seen = []
    for batch in loader:
        data = np.from_dlpack(batch.bytes[0])
        counts = np.from_dlpack(batch.byte_counts[0])
        seen += [bytes(data[k, :counts[k]]).decode() for k in range(2)]
    # (make_parquet.py's captions: "row I: " and I % 13 words)
    assert seen == [f"row {i}: " + "word " * i for i in range(6)]
