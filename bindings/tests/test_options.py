"""stoke.Loader's keywords are the table of options (stoke/option_table.hpp): every option, under
its Python name, with the C++ default, but for the exceptions listed here with their reasons."""

import inspect

import numpy as np
import pytest

import stoke
from helpers import FASHION, PHOTO, write_png

# Options that are no keyword of Loader(...), and why. A new option that Python does not take
# fails test_the_keywords_are_the_tables_options until it is listed here.
NOT_KEYWORDS = {
    "log": "a C++ callback, called on the loader's own threads; Python's log is stderr",
}
# Keywords that are no option: how Python builds one.
PYTHON_ONLY = {"channels": "with pipeline=: the channels its steps work on"}


def _table():
    return stoke._stoke.options()


def test_the_keywords_are_the_tables_options():
    keywords = set(inspect.signature(stoke.Loader).parameters) - {"self"}
    table = {row["python"] for row in _table()}
    assert keywords == (table - set(NOT_KEYWORDS)) | set(PYTHON_ONLY)
    assert set(NOT_KEYWORDS) <= table  # every exception is still an option


def test_the_defaults_are_the_cpp_ones():
    params = inspect.signature(stoke.Loader).parameters
    rows = {row["python"]: row for row in _table()}
    kinds = {"int": int, "count": int, "real": float, "flag": lambda t: t == "true"}
    for keyword, row in rows.items():
        if keyword in NOT_KEYWORDS or keyword == "data":
            continue
        default = params[keyword].default
        if row["kind"] in kinds and row["default"] != "auto":
            assert default == kinds[row["kind"]](row["default"]), keyword
        elif row["default"] == "":  # unset: the loader picks (an empty text, a size, a state)
            assert default in ("", None, ()), keyword
        else:
            assert str(default) == row["default"], keyword
    assert params["data"].default is None  # (None with sources=[...]: a mixture)
    # As Python has always had them.
    assert params["batch"].default == 256 and params["workers"].default == 2
    assert params["stall_target"].default == 0.02 and params["mix_switch_prob"].default == 0.5
    assert params["cache_limit"].default == "16GiB" and params["max_classes"].default == 1 << 24
    assert params["devices"].default == "cpu:1" and params["last_batch"].default == "pad"
    assert params["rank"].default is None and params["state"].default is None
    assert params["size"].default is None and params["pipeline"].default is None
    assert params["std"].default == () and params["channels"].default == 3
    assert params["verify"].default == "region" and params["min_box_size"].default == 1.0


def test_the_docstring_documents_every_keyword_with_its_line_of_the_table():
    doc = " ".join(stoke.Loader.__doc__.split())
    for row in _table():
        if row["python"] in NOT_KEYWORDS:
            continue
        assert f"{row['python']}: {' '.join(row['doc'].split())}" in doc, row["python"]
    assert "channels: with pipeline" in doc


def test_an_unknown_keyword_is_a_type_error_naming_it_and_its_likely_meaning():
    with pytest.raises(TypeError, match="unexpected keyword argument 'wrokers'; did you mean "
                                        "'workers'"):
        stoke.Loader(FASHION, wrokers=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'log'"):
        stoke.Loader(FASHION, log=print)
    with pytest.raises(TypeError, match="batch takes an int, got '256'"):
        stoke.Loader(FASHION, batch="256")
    with pytest.raises(TypeError, match="shuffle takes True or False, got 1"):
        stoke.Loader(FASHION, shuffle=1)


def test_none_leaves_an_option_at_its_default():
    def first(**kw):
        loader = stoke.Loader(FASHION, split="test", batch=20, workers=0, shuffle=False, **kw)
        return np.from_dlpack(next(iter(loader)).pixels[0]).copy()

    assert np.array_equal(first(verify=None, rank=None, size=None, seed=None), first())


def test_the_options_python_lacked_before_the_table_now_apply(tmp_path):
    # max_pixels: the photograph claims more pixels than 1000, a 20 x 20 image does not.
    write_png(tmp_path / "small.png", np.full((20, 20, 3), 90, np.uint8))
    (tmp_path / "list.txt").write_text(f"small.png\t0\n{PHOTO}\t1\n")
    loader = stoke.Loader(str(tmp_path / "list.txt"), batch=2, workers=0, size=16,
                          max_pixels=1000)
    assert sum(1 for _ in loader) == 1
    assert loader.stats()["skipped_by_reason"] == {"too_large": 1}
    # chunk and memory_budget reach the loader: each one checked there.
    with pytest.raises(ValueError, match="chunk"):
        stoke.Loader(FASHION, split="test", chunk=-1)
    with pytest.raises(ValueError, match="memory_budget"):
        stoke.Loader(FASHION, split="test", memory_budget="12 parsecs")
    with pytest.raises(ValueError, match="^task_timeout_s must be >= 0"):
        stoke.Loader(FASHION, split="test", task_timeout_s=-1.0)
    with pytest.raises(ValueError, match="^startup_timeout_s must be positive"):
        stoke.Loader(FASHION, split="test", startup_timeout_s=0)

    # Fine ones deliver the same bytes as the defaults do.
    def first(**kw):
        b = next(iter(stoke.Loader(FASHION, split="test", batch=32, workers=1, seed=2, **kw)))
        return np.from_dlpack(b.pixels[0]).copy()

    assert np.array_equal(first(chunk=5, memory_budget="256MiB", task_timeout_s=30.0,
                                startup_timeout_s=20), first())
