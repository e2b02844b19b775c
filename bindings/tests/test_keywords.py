"""stoke.Loader's keywords: configuration errors and the option words, which are the tools'."""

import numpy as np
import pytest

import stoke
from helpers import FASHION


def test_bad_configuration_raises_value_error_with_what_to_change():
    with pytest.raises(ValueError, match="batch 250 is not a multiple of 4 devices; use 248 or 252"):
        stoke.Loader(FASHION, batch=250, devices="cpu:4")
    with pytest.raises(ValueError, match="^dtype must be uint8, float32, float16 or bfloat16, "
                                         "got 'float64'$"):
        stoke.Loader(FASHION, dtype="float64")
    with pytest.raises(ValueError):
        stoke.Loader(FASHION, state="not a state")


def test_the_vocabulary_is_the_tools_one():
    def first(**kw):
        b = next(iter(stoke.Loader(FASHION, split="test", batch=50, workers=0, shuffle=False,
                                   **kw)))
        return np.from_dlpack(b.pixels[0]).copy()

    assert first(size=14).shape == (50, 14, 14, 1)
    assert np.array_equal(first(size=14), first(size="14x14"))
    assert np.array_equal(first(size=14), first(size=(14, 14)))
    assert first(size="14x21").shape == (50, 14, 21, 1)
    assert np.array_equal(first(augment="eval"), first(augment="none"))  # old spelling kept
    with pytest.raises(ValueError, match=r"^augment must be train or eval \(aliases: default, "
                                         r"none\), got 'x'$"):
        stoke.Loader(FASHION, augment="x")
    with pytest.raises(ValueError, match="^size must be HxW or N"):
        stoke.Loader(FASHION, size="14y14")
    with pytest.raises(ValueError, match="^last_batch must be pad or drop, got 'keep'$"):
        stoke.Loader(FASHION, last_batch="keep")
    with pytest.raises(ValueError, match="^verify must be whole-file or region, got 'all'$"):
        stoke.Loader(FASHION, verify="all")
