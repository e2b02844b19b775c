"""Batches and their arrays: an epoch, each device's chunk, DLPack round trips with NumPy and
PyTorch without a copy, and how long a batch's bytes live. Needs Fashion-MNIST from Debian's
dataset-fashion-mnist."""

import gc
import itertools
import time

import numpy as np
import pytest

import stoke
from helpers import FASHION, need


def test_iterates_an_epoch_with_every_test_image_once():
    loader = stoke.Loader(FASHION, split="test", batch=256, workers=2, shuffle=False,
                          devices="cpu:2")
    assert len(loader) == 40  # 10,000 = 39 x 256 + 16: the last batch is padded
    ids, valid, batches = [], 0, 0
    for batch in loader:
        assert batch.size == 256 and batch.device_count == 2
        assert [a.shape for a in batch.pixels] == [(128, 28, 28, 1)] * 2
        v = np.from_dlpack(batch.valid)
        ids.extend(np.from_dlpack(batch.sample_ids)[v == 1].tolist())
        valid += int(v.sum())
        batches += 1
    assert batches == 40 and valid == 10000
    assert sorted(ids) == list(range(10000))


@pytest.mark.parametrize("dtype", ["uint8", "float16"])
def test_each_device_has_its_chunks_labels_and_valid_flags_beside_its_pixels(dtype):
    loader = stoke.Loader(FASHION, split="test", batch=256, workers=1, shuffle=False,
                          devices="cpu:2", dtype=dtype)
    batches = list(itertools.islice(loader, 40))
    last = batches[-1]  # padded: 16 real samples, then repeats
    for batch in (batches[0], last):
        labels = np.from_dlpack(batch.labels)
        valid = np.from_dlpack(batch.valid)
        assert len(batch.device_labels) == 2 and len(batch.device_valid) == 2
        for g in range(2):
            mine = batch.device_labels[g]
            assert mine.dtype == "int32" and mine.shape == (128,) and mine.device == "cpu"
            assert np.array_equal(np.from_dlpack(mine), labels[128 * g:128 * (g + 1)])
            flags = batch.device_valid[g]
            assert flags.dtype == "uint8" and flags.shape == (128,)
            assert np.array_equal(np.from_dlpack(flags), valid[128 * g:128 * (g + 1)])
            # One dataset: every sample's source is 0, on the host and beside the pixels.
            sources = batch.device_sources[g]
            assert sources.dtype == "int32" and sources.shape == (128,)
            assert not np.from_dlpack(sources).any()
        assert np.from_dlpack(batch.sources).shape == (256,)
        assert not np.from_dlpack(batch.sources).any()
    assert np.from_dlpack(last.device_valid[0]).sum() == 16
    assert np.from_dlpack(last.device_valid[1]).sum() == 0


def test_pixels_and_labels_reach_numpy_and_torch_without_a_copy():
    torch = need("torch")
    loader = stoke.Loader(FASHION, split="test", batch=64, workers=1, shuffle=False,
                          dtype="float32", layout="nchw", mean=[0.5], std=[0.5])
    batch = next(iter(loader))
    pixels = batch.pixels[0]
    assert pixels.dtype == "float32" and pixels.device == "cpu"
    assert pixels.__dlpack_device__() == (1, 0)
    as_numpy = np.from_dlpack(pixels)
    as_torch = torch.from_dlpack(pixels)
    assert as_numpy.shape == (64, 1, 28, 28) and tuple(as_torch.shape) == (64, 1, 28, 28)
    # Both views read the same memory: the loader's batch, not a copy.
    assert as_numpy.__array_interface__["data"][0] == as_torch.data_ptr()
    assert np.array_equal(as_numpy, as_torch.numpy())
    assert as_numpy.min() >= -1.0 - 1e-6 and as_numpy.max() <= 1.0 + 1e-6
    labels = torch.from_dlpack(batch.labels)
    assert labels.dtype == torch.int32 and labels.shape == (64,)
    # The same bytes as the uint8 pipeline output, normalized: (x / 255 - 0.5) / 0.5.
    raw = stoke.Loader(FASHION, split="test", batch=64, workers=1, shuffle=False)
    u8 = np.from_dlpack(next(iter(raw)).pixels[0])  # NHWC
    expected = (u8.transpose(0, 3, 1, 2).astype(np.float32) / 255 - 0.5) / 0.5
    assert np.allclose(as_numpy, expected, atol=1e-6)


def test_held_batches_keep_their_bytes_while_the_loader_moves_on():
    torch = need("torch")
    loader = stoke.Loader(FASHION, batch=128, workers=2, prefetch=4)
    held, copies = [], []
    it = iter(loader)
    for _ in range(10):  # more batches than the 4 prefetch slots
        b = next(it)
        held.append((b, torch.from_dlpack(b.pixels[0]), np.from_dlpack(b.labels)))
        copies.append((np.from_dlpack(b.pixels[0]).copy(), np.from_dlpack(b.labels).copy()))
    for _ in range(30):
        next(it)
    for (batch, pixels, labels), (want_pixels, want_labels) in zip(held, copies):
        assert np.array_equal(pixels.numpy(), want_pixels)
        assert np.array_equal(labels, want_labels)


def test_a_slot_returns_only_when_the_last_reference_is_gone():
    torch = need("torch")
    loader = stoke.Loader(FASHION, split="test", batch=100, workers=1)
    it = iter(loader)
    batch = next(it)
    tensor = torch.from_dlpack(batch.pixels[0])
    before = loader.stats()["released"]
    del batch
    gc.collect()
    assert loader.stats()["released"] == before  # the tensor still reads the slot
    del tensor
    gc.collect()
    assert loader.stats()["released"] == before + 1


def test_release_drops_the_batch_hold_but_not_the_arrays():
    loader = stoke.Loader(FASHION, split="test", batch=100, workers=1)
    batch = next(iter(loader))
    labels = np.from_dlpack(batch.labels)
    want = labels.copy()
    batch.release()
    gc.collect()
    assert np.array_equal(labels, want)


def test_a_released_batch_raises_on_every_attribute_and_its_arrays_stay_valid():
    loader = stoke.Loader(FASHION, split="test", batch=100, workers=1)
    batch = next(iter(loader))
    labels = batch.labels
    want = np.from_dlpack(labels).copy()
    batch.release()
    for name in ("epoch", "index", "size", "padded", "device_count", "pixels", "labels", "valid",
                 "sample_ids"):
        with pytest.raises(stoke.Error, match="this batch was released"):
            getattr(batch, name)
    batch.release()  # again: harmless
    gc.collect()
    # An array taken before holds its own share of the slot, so it stays readable.
    assert np.array_equal(np.from_dlpack(labels), want)


def test_next_releases_the_gil_while_it_waits(tmp_path):
    import threading
    big = "/usr/share/backgrounds/mate/abstract/Elephants_5640x3172.jpg"
    (tmp_path / "list.txt").write_text("".join(f"{big}\t0\n" for _ in range(8)))
    loader = stoke.Loader(str(tmp_path / "list.txt"), batch=8, workers=1, size=64)
    count, stop = [0], threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    thread = threading.Thread(target=spin)
    thread.start()
    start = time.perf_counter()
    before = count[0]
    next(iter(loader))  # 8 decodes of a 5640x3172 JPEG in the worker
    waited = time.perf_counter() - start
    during = count[0] - before
    stop.set()
    thread.join()
    # Holding the GIL in next() would freeze the spinning thread for the whole wait.
    assert waited > 0.05
    assert during > 1000, f"{during} iterations in {waited:.3f} s"
