"""The worker pool: the stall monitor's report, workers="auto" and a live resize."""

import time

import numpy as np
import pytest

import stoke
from helpers import FASHION


def test_stats_report_the_stall_monitor_and_its_verdict():
    loader = stoke.Loader(FASHION, split="test", batch=100, workers=1, shuffle=False,
                          monitor_window=10)
    started = time.monotonic()
    for batch in loader:
        time.sleep(0.002)  # a consumer computing 2 ms per batch
    elapsed = time.monotonic() - started
    s = loader.stats()
    assert s["window_batches"] == 10
    assert 0 <= s["window_wait_fraction"] <= 1
    assert s["compute_s"] >= 98 * 0.002  # 100 batches, the first one is start-up
    # 100 samples per at least 2 ms of compute, and the compute is part of the elapsed time. The
    # demand is the window's (its last 10 batches), whose sleeps may each run a little longer
    # than the run's average batch when the consumer never waits: hence the margin.
    assert 0.8 * 100 * 98 / elapsed <= s["demand_samples_per_s"] <= 50000
    assert s["verdict"].startswith(("input-bound: ", "not input-bound: ")), s["verdict"]
    assert s["gpu_monitor"] == "off (host devices)" and s["gpus"] == []


def test_auto_workers_and_a_live_resize_deliver_the_same_bytes():
    def epoch(loader):
        return [np.from_dlpack(b.pixels[0]).copy() for b in loader]

    fixed = epoch(stoke.Loader(FASHION, split="test", batch=200, workers=2, seed=5))
    auto = stoke.Loader(FASHION, split="test", batch=200, workers="auto", prefetch="auto",
                        seed=5)
    assert auto.stats()["workers"] == 1 and auto.stats()["workers_auto"]
    got = []
    for i, b in enumerate(auto):
        if i == 10:
            auto.resize_workers(3)
        got.append(np.from_dlpack(b.pixels[0]).copy())
    assert all(np.array_equal(a, b) for a, b in zip(fixed, got)) and len(got) == len(fixed)
    s = auto.stats()
    assert not s["workers_auto"]  # a manual size turns the tuning off
    with pytest.raises(ValueError, match="auto"):
        stoke.Loader(FASHION, split="test", workers="many")
    with pytest.raises(ValueError, match="1..512"):
        auto.resize_workers(0)
