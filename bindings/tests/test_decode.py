"""decode=gpu / hybrid from Python, on host devices (the reference decode): the keywords, the
counts in stats(), and the refusals."""

import os

import numpy as np
import pytest

import stoke

# The build's test data (tests/CMakeLists.txt sets STOKE_TESTDATA for the Python tests).
JPEG = os.path.join(os.environ.get("STOKE_TESTDATA", os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "default", "testdata")), "jpeg")


def pixels(loader):
    return np.concatenate([np.from_dlpack(b.pixels[0]).copy() for b in loader])


def test_gpu_decode_on_host_devices_is_within_a_level_of_the_workers():
    cpu = stoke.Loader(JPEG, batch=32, workers=2, size=64, seed=3)
    gpu = stoke.Loader(JPEG, batch=32, workers=2, size=64, seed=3, decode="gpu")
    a, b = pixels(cpu), pixels(gpu)
    assert a.shape == b.shape == (96, 64, 64, 3)
    assert np.abs(a.astype(int) - b.astype(int)).mean() <= 1.0
    s = gpu.stats()
    assert s["device_decoded"] == 96
    assert s["worker_decoded_hybrid"] == s["worker_decoded_too_large"] == 0
    assert s["device_decode_failed"] == 0


def test_hybrid_splits_the_samples_by_seed():
    loader = stoke.Loader(JPEG, batch=32, workers=2, size=64, seed=3, decode="hybrid",
                          gpu_share=0.25)
    pixels(loader)
    s = loader.stats()
    assert s["device_decoded"] + s["worker_decoded_hybrid"] == 96
    assert 8 <= s["device_decoded"] <= 40  # 96 coins of 1/4: 24 +- 4 standard deviations


def test_a_step_the_devices_cannot_do_is_refused():
    with pytest.raises(ValueError, match="step color_jitter works on the decoded pixels"):
        stoke.Loader(JPEG, batch=32, size=64, decode="gpu",
                     pipeline=[("random_resized_crop", 64, 64), ("color_jitter", 0.4, 0.4)])
    with pytest.raises(ValueError, match="decode must be cpu, gpu or hybrid"):
        stoke.Loader(JPEG, decode="nvjpeg")
