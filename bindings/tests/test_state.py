"""Saving and resuming: state() strings and state_dict() dicts, onto other workers, batches and
devices."""

import itertools

import numpy as np
import pytest

import stoke
from helpers import FASHION


def test_resuming_from_state_continues_with_the_same_batches():
    first = stoke.Loader(FASHION, batch=64, workers=2, seed=7)
    it = iter(first)
    for _ in range(3):
        next(it)
    state = first.state()
    want = [np.from_dlpack(next(it).sample_ids).copy() for _ in range(2)]
    resumed = stoke.Loader(FASHION, batch=64, workers=1, seed=7, state=state)
    got = [np.from_dlpack(b.sample_ids).copy() for b, _ in zip(resumed, range(2))]
    assert all(np.array_equal(a, b) for a, b in zip(want, got))


def test_load_state_dict_resumes_with_the_bytes_of_an_uninterrupted_run():
    def take(it, n):  # exactly n batches (zip with a range would pull one more)
        return [(np.from_dlpack(b.pixels[0]).tobytes(), np.from_dlpack(b.labels).tobytes())
                for b in itertools.islice(it, n)]

    # Uninterrupted: 8 batches of an epoch of 157 (10,000 / 64, padded).
    whole = take(iter(stoke.Loader(FASHION, split="test", batch=64, workers=2, seed=11)), 8)
    first = stoke.Loader(FASHION, split="test", batch=64, workers=2, seed=11)
    it = iter(first)
    assert take(it, 3) == whole[:3]
    saved = first.state_dict()
    assert saved == {"seed": 11, "epoch": 0, "position": 192, "next_batch": 3,
                     "dataset_size": 10000, "global_batch": 64}
    del first, it
    # A new loader, other workers and another seed, as a restarted job builds it.
    second = stoke.Loader(FASHION, split="test", batch=64, workers=1, seed=0)
    second.load_state_dict(saved)
    assert second.state_dict() == saved
    assert take(iter(second), 5) == whole[3:]


def test_load_state_dict_refuses_a_bad_dict_and_keeps_the_loader_working():
    loader = stoke.Loader(FASHION, split="test", batch=64, workers=1)
    with pytest.raises(ValueError, match="state_dict lacks 'next_batch'"):
        loader.load_state_dict({"seed": 0, "epoch": 0})
    other = dict(loader.state_dict(), dataset_size=60000)
    with pytest.raises(ValueError, match="another dataset size or seed"):
        loader.load_state_dict(other)
    with pytest.raises(ValueError, match="position must be in 0..10000"):
        loader.load_state_dict(dict(loader.state_dict(), position=10001))
    # A mixture's per-source counts: read, and refused by a loader of one dataset.
    with pytest.raises(ValueError, match="saved by a mixture of 2 sources"):
        loader.load_state_dict(dict(loader.state_dict(), sources=[0, 0]))
    with pytest.raises(ValueError, match="state_dict\\['sources'\\] is not a list of integers"):
        loader.load_state_dict(dict(loader.state_dict(), sources="0,0"))
    assert next(iter(loader)).size == 64


def test_load_state_dict_continues_the_epoch_with_another_batch_and_devices():
    first = stoke.Loader(FASHION, split="test", batch=64, workers=0, seed=5)
    seen = []
    for b in itertools.islice(iter(first), 3):
        seen.extend(np.from_dlpack(b.sample_ids)[np.from_dlpack(b.valid) == 1].tolist())
    saved = first.state_dict()
    second = stoke.Loader(FASHION, split="test", batch=96, devices="cpu:4", workers=1)
    second.load_state_dict(saved)
    assert second.state_dict()["position"] == 192
    for b in second:
        seen.extend(np.from_dlpack(b.sample_ids)[np.from_dlpack(b.valid) == 1].tolist())
    assert sorted(seen) == list(range(10000))  # every sample of the epoch once


def test_load_state_dict_reads_a_dict_saved_without_a_position():
    loader = stoke.Loader(FASHION, split="test", batch=64, workers=0, seed=5)
    old = {"seed": 5, "epoch": 1, "next_batch": 3, "dataset_size": 10000, "global_batch": 64}
    loader.load_state_dict(old)
    assert loader.state_dict() == dict(old, position=192)
