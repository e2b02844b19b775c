"""Mixtures from Python: sources=[{...}] as the C++ Options::sources, a mixture file as data,
each sample's source in the batch, per-source counts in stats() and the state dict."""

import json

import numpy as np
import pytest

import stoke
from helpers import FASHION


def mixture(**kw):
    return stoke.Loader(sources=[{"data": FASHION, "split": "test", "weight": 3},
                                 {"data": FASHION, "split": "train", "weight": 1}],
                        epoch_samples=400, batch=40, workers=0, seed=7, **kw)


def test_every_batch_holds_each_sources_share_and_names_it():
    loader = mixture()
    assert len(loader) == 10
    assert loader.dataset_size == 70000
    for batch in loader:
        sources = np.from_dlpack(batch.sources)
        ids = np.from_dlpack(batch.sample_ids)
        assert (sources == 0).sum() == 30 and (sources == 1).sum() == 10
        assert ((ids < 10000) == (sources == 0)).all()  # the test split's ids come first
    stats = loader.stats()
    assert stats["source_samples"] == [300, 100]
    assert stats["source_samples_epoch"] == [300, 100]


def test_the_state_dict_counts_each_source_and_resumes_the_rest():
    loader = mixture()
    it = iter(loader)
    first = [np.from_dlpack(next(it).sample_ids).copy() for _ in range(3)]
    state = loader.state_dict()
    assert state["sources"] == [90, 30]
    rest = mixture()
    rest.load_state_dict(state)
    later = [np.from_dlpack(b.sample_ids).copy() for b in rest]
    whole = [np.from_dlpack(b.sample_ids).copy() for b in mixture()]
    assert len(later) == 7
    assert np.array_equal(np.concatenate(first + later), np.concatenate(whole))


def test_a_mixture_file_and_its_json_text_read_as_the_list(tmp_path):
    sources = [{"data": FASHION, "split": "test", "weight": 3},
               {"data": FASHION, "split": "train", "weight": 1}]
    path = tmp_path / "mix.json"
    path.write_text(json.dumps({"sources": sources, "epoch_samples": 400}))
    from_file = stoke.Loader(str(path), batch=40, workers=0, seed=7)
    from_text = stoke.Loader(sources=json.dumps(sources), epoch_samples=400, batch=40, workers=0,
                             seed=7)
    expected = [np.from_dlpack(b.sample_ids).copy() for b in mixture()]
    for loader in (from_file, from_text):
        got = [np.from_dlpack(b.sample_ids).copy() for b in loader]
        assert len(got) == len(expected) == 10
        assert all(np.array_equal(a, b) for a, b in zip(got, expected))


def test_bad_sources_are_errors_that_say_what_is_wrong():
    with pytest.raises(TypeError, match="a list of dicts"):
        stoke.Loader(sources=[FASHION])
    with pytest.raises(ValueError, match='"wieght" is not a source\'s key'):
        stoke.Loader(sources=[{"data": FASHION, "wieght": 1}])
    with pytest.raises(ValueError, match="not both"):
        stoke.Loader(FASHION, sources=[{"data": FASHION}, {"data": FASHION, "split": "test"}])
