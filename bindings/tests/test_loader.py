"""The Python bindings: an epoch, DLPack round trips with NumPy and PyTorch, batch lifetimes,
error mapping and resume. Needs Fashion-MNIST from Debian's dataset-fashion-mnist."""

import gc
import itertools
import time
import os
import shutil
import subprocess

import numpy as np
import pytest

import stoke

FASHION = "/usr/share/datasets/fashion-mnist"


def need(module):
    """Imports `module`, or skips; run_pytest.sh sets STOKE_PYTEST_<MODULE>=1 where it must run."""
    if os.environ.get(f"STOKE_PYTEST_{module.upper()}") == "1":
        return __import__(module)
    return pytest.importorskip(module)
PHOTO = "/usr/share/backgrounds/mate/desktop/GreenTraditional.jpg"


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


def test_bad_configuration_raises_value_error_with_what_to_change():
    with pytest.raises(ValueError, match="batch 250 is not a multiple of 4 devices; use 248 or 252"):
        stoke.Loader(FASHION, batch=250, devices="cpu:4")
    with pytest.raises(ValueError, match="^dtype must be uint8, float32, float16 or bfloat16, "
                                         "got 'float64'$"):
        stoke.Loader(FASHION, dtype="float64")
    with pytest.raises(ValueError):
        stoke.Loader(FASHION, state="not a state")


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


def test_verify_region_delivers_what_the_crop_needs_of_a_damaged_file(tmp_path):
    data = open(PHOTO, "rb").read()
    lines = []
    for i in range(16):  # even lines intact, odd ones without their last tenth
        name = f"{i:02d}.jpg"
        (tmp_path / name).write_bytes(data if i % 2 == 0 else data[: len(data) * 9 // 10])
        lines.append(f"{name}\t{i}")
    (tmp_path / "damaged.txt").write_text("\n".join(lines) + "\n")
    for i in range(16):
        (tmp_path / f"ok{i:02d}.jpg").write_bytes(data)
    (tmp_path / "intact.txt").write_text("".join(f"ok{i:02d}.jpg\t{i}\n" for i in range(16)))

    def epoch(lst, verify):
        loader = stoke.Loader(str(tmp_path / lst), batch=16, workers=1, size=32, verify=verify,
                              shuffle=False, seed=7)
        b = next(iter(loader))
        pixels = np.from_dlpack(b.pixels[0]).copy()
        ids = np.from_dlpack(b.sample_ids).tolist()
        return pixels, ids, loader.stats()["skipped"]

    _, _, whole_skipped = epoch("damaged.txt", "whole-file")
    assert whole_skipped == 8  # every damaged file, whatever its crop
    want, _, _ = epoch("intact.txt", "region")
    got, ids, region_skipped = epoch("damaged.txt", "region")
    # Random-resized crops that end above the last tenth never reach the damage: those files are
    # delivered, with the pixels of the intact file at the same position.
    delivered = [i for i in range(1, 16, 2) if ids[i] == i]
    assert delivered and region_skipped == 8 - len(delivered)
    for i in delivered:
        assert np.array_equal(got[i], want[i])


def test_bad_input_under_on_error_error_raises_data_error_naming_the_path(tmp_path):
    shutil.copy(PHOTO, tmp_path / "good.jpg")
    (tmp_path / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 this is not a JPEG")
    (tmp_path / "list.txt").write_text("good.jpg\t0\nbroken.jpg\t1\n")
    loader = stoke.Loader(str(tmp_path / "list.txt"), batch=2, workers=1, size=32,
                          on_error="error", shuffle=False)
    with pytest.raises(stoke.DataError, match="broken.jpg"):
        for _ in loader:
            pass
    skipping = stoke.Loader(str(tmp_path / "list.txt"), batch=2, workers=1, size=32)
    assert sum(1 for _ in skipping) == 1
    assert skipping.stats()["skipped"] == 1


def _write_png(path, pixels):
    """A uint8 array as a PNG: (h, w, 3) RGB, or (h, w) one-channel (a label map). zlib and
    struct only: no imaging library needed."""
    import struct
    import zlib

    h, w = pixels.shape[:2]
    colour = 2 if pixels.ndim == 3 else 0
    raw = b"".join(b"\0" + pixels[y].tobytes() for y in range(h))

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", w, h, 8, colour, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) +
                     chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _coco_set(folder, count=12):
    """Images with one rectangle per class, each in its class's colour only (class 0: red,
    1: green, 2: blue; category ids 4, 8, 15), and their instances.json."""
    import json

    images, annotations = [], []
    for i in range(count):
        w, h = 100 + (i * 37) % 90, 80 + (i * 53) % 70
        rgb = np.zeros((h, w, 3), np.uint8)
        images.append({"id": i + 1, "file_name": f"{i}.png", "width": w, "height": h})
        for k in range(i % 3 + 1):
            bw, bh = 20 + (i * 11 + k * 17) % 30, 18 + (i * 7 + k * 23) % 30
            x, y = (i * 13 + k * 41) % (w - bw), (i * 29 + k * 31) % (h - bh)
            rgb[y:y + bh, x:x + bw, k] = 255
            annotations.append({"id": len(annotations) + 1, "image_id": i + 1,
                                "category_id": [4, 8, 15][k], "bbox": [x, y, bw, bh],
                                "iscrowd": 0})
        _write_png(folder / f"{i}.png", rgb)
    categories = [{"id": 15, "name": "blue"}, {"id": 4, "name": "red"}, {"id": 8, "name": "green"}]
    path = folder / "instances.json"
    path.write_text(json.dumps({"images": images, "annotations": annotations,
                                "categories": categories}))
    return str(path)


def _check_boxes_cover_their_colour(pixels, boxes, classes, counts):
    """Each real box is, within 1.5 px, the bright region of its class's colour channel (the
    _coco_set images). Returns how many boxes were checked."""
    checked = 0
    for i in range(len(counts)):
        for k in range(counts[i]):
            ys, xs = np.nonzero(pixels[i, :, :, classes[i, k]] >= 128)
            seen = [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1]
            assert np.allclose(boxes[i, k], seen, atol=1.5), (boxes[i, k], seen)
            checked += 1
    return checked


def test_coco_boxes_arrive_per_device_with_the_pixels_they_cover(tmp_path):
    data = _coco_set(tmp_path)
    loader = stoke.Loader(data, batch=4, devices="cpu:2", size=64, workers=2, seed=3)
    checked = 0
    for batch in loader:
        assert batch.max_boxes == 3
        assert [a.shape for a in batch.boxes] == [(2, 3, 4)] * 2
        assert [a.dtype for a in batch.box_classes] == ["int32"] * 2
        assert [a.shape for a in batch.box_counts] == [(2,)] * 2
        for g in range(2):
            pixels = np.from_dlpack(batch.pixels[g])
            boxes = np.from_dlpack(batch.boxes[g])
            classes = np.from_dlpack(batch.box_classes[g])
            counts = np.from_dlpack(batch.box_counts[g])
            for i in range(2):
                assert (classes[i, counts[i]:] == -1).all()
                assert (boxes[i, counts[i]:] == 0).all()
            checked += _check_boxes_cover_their_colour(pixels, boxes, classes, counts)
    assert checked > 8
    torch = need("torch")  # DLPack into torch, as a detection model takes its targets
    batch = next(iter(loader))
    assert torch.from_dlpack(batch.boxes[1]).shape == (2, 3, 4)


def test_masks_from_a_list_file_arrive_per_device_with_their_pixels(tmp_path):
    lines = []
    for i in range(8):
        h, w = 40 + i, 50 - i
        rgb = np.zeros((h, w, 3), np.uint8)
        mask = np.zeros((h, w), np.uint8)
        rgb[10:30, 5:25, 1] = 255  # a green square, labelled i + 1
        mask[10:30, 5:25] = i + 1
        _write_png(tmp_path / f"{i}.png", rgb)
        _write_png(tmp_path / f"{i}.mask.png", np.repeat(mask[:, :, None], 3, axis=2))
        lines.append(f"{i}.png\t0\t{i}.mask.png")
    (tmp_path / "list.txt").write_text("\n".join(lines) + "\n")
    # An RGB file is not a label map: every sample is bad_mask, none can be produced.
    with pytest.raises(stoke.DataError, match="bad_mask"):
        next(iter(stoke.Loader(str(tmp_path / "list.txt"), batch=4, size=32, workers=1,
                               on_error="error")))
    for i in range(8):  # as one-channel label maps
        mask = np.zeros((40 + i, 50 - i), np.uint8)
        mask[10:30, 5:25] = i + 1
        _write_png(tmp_path / f"{i}.mask.png", mask)
    loader = stoke.Loader(str(tmp_path / "list.txt"), batch=4, devices="cpu:2", size=32,
                          workers=2, mask_ignore=250)
    for batch in loader:
        assert [m.shape for m in batch.masks] == [(2, 32, 32)] * 2
        assert [m.dtype for m in batch.masks] == ["uint8"] * 2
        ids = np.from_dlpack(batch.sample_ids)
        for g in range(2):
            masks = np.from_dlpack(batch.masks[g])
            green = np.from_dlpack(batch.pixels[g])[:, :, :, 1]
            for i in range(2):
                labels = set(np.unique(masks[i]).tolist())
                assert labels <= {0, int(ids[2 * g + i]) + 1, 250}
                square = masks[i] == ids[2 * g + i] + 1
                assert ((green[i] >= 128) == square).mean() > 0.95
    with pytest.raises(ValueError, match="has no masks"):
        next(iter(stoke.Loader(FASHION, split="test", batch=8, workers=0))).masks


def test_pass_through_bytes_from_shards_arrive_untouched(tmp_path):
    import io
    import tarfile

    captions = [f"a photo of thing {i}" + "!" * i for i in range(6)]
    with tarfile.open(tmp_path / "s.tar", "w") as tar:
        for i, text in enumerate(captions):
            _write_png(tmp_path / "x.png", np.full((20, 20, 3), 40 * i, np.uint8))
            for ext, data in ((".png", (tmp_path / "x.png").read_bytes()),
                              (".cls", str(i).encode()), (".txt", text.encode())):
                info = tarfile.TarInfo(f"{i:06d}{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    loader = stoke.Loader(str(tmp_path / "s.tar"), bytes_field="txt", batch=2, devices="cpu:2",
                          size=16, workers=1, shuffle=False)
    seen = []
    for batch in loader:
        assert batch.max_bytes == len(captions[-1])
        for g in range(2):
            data = np.from_dlpack(batch.bytes[g])
            counts = np.from_dlpack(batch.byte_counts[g])
            assert data.shape == (1, batch.max_bytes) and data.dtype == np.uint8
            seen.append(bytes(data[0, :counts[0]]).decode())
    assert seen == captions
    with pytest.raises(ValueError, match="has no pass-through bytes"):
        next(iter(stoke.Loader(FASHION, split="test", batch=8, workers=0))).bytes


def test_a_pipeline_of_detection_steps_moves_the_boxes_with_the_pixels(tmp_path):
    data = _coco_set(tmp_path)
    steps = [("scale_jitter", 60, 140), ("box_crop", 64, 64, 0.6), ("vertical_flip", 1.0),
             "horizontal_flip"]
    loader = stoke.Loader(data, batch=4, size=64, pipeline=steps, workers=1, seed=5)
    checked = 0
    for batch in loader:
        geometry = np.from_dlpack(batch.geometry)
        assert (geometry[:, 2] < 0).all()  # every sample mirrored top-bottom
        pixels = np.from_dlpack(batch.pixels[0])
        boxes = np.from_dlpack(batch.boxes[0])
        classes = np.from_dlpack(batch.box_classes[0])
        counts = np.from_dlpack(batch.box_counts[0])
        checked += _check_boxes_cover_their_colour(pixels, boxes, classes, counts)
    assert checked > 8
    with pytest.raises(ValueError, match="is not one of"):
        stoke.Loader(data, size=64, pipeline=["rotate"])
    with pytest.raises(ValueError, match="needs size="):
        stoke.Loader(data, pipeline=["horizontal_flip"])
    with pytest.raises(ValueError, match="takes \\(height, width"):
        stoke.Loader(data, size=64, pipeline=[("box_crop", 64)])


def test_timm_strings_take_words_and_report_pillow_ops(tmp_path):
    steps = [("resize", 32, 32),
             ("timm_augment", "rand-m9-mstd0.5-inc1", "interpolation=bicubic", "fill=1,2,3"),
             ("timm_augment", "augmix-m5-w3")]
    loader = stoke.Loader(FASHION, split="test", batch=50, workers=1, size=32, channels=3,
                          pipeline=steps, seed=4)
    batch = next(iter(loader))
    seen = set()
    for ops in batch.applied_ops:
        assert len(ops) <= 2 + 13  # n, then 3 chains of a mark and up to 3 ops, and the blend
        for op in ops:
            seen.add(op[0])
            if op[0] in ("pil_rotate", "pil_shear_x", "pil_translate_y_rel"):
                name, value, flt, fill = op
                assert isinstance(value, float) and flt in (2, 3) and isinstance(fill, tuple)
            if op[0] == "pil_posterize":
                assert isinstance(op[1], int)
            if op[0] == "timm_augmix_chain":
                assert len(op) == 5 and isinstance(op[2], int) and op[4] is False
    assert "timm_augmix_chain" in seen and "timm_augmix_blend" in seen
    assert any(name.startswith("pil_") for name in seen)
    with pytest.raises(ValueError, match="section 'x3': unknown key 'x'"):
        stoke.Loader(FASHION, size=32, channels=3, pipeline=[("timm_augment", "rand-m9-x3")])
    with pytest.raises(ValueError, match="pipeline step resize: 'x' is not a number"):
        stoke.Loader(FASHION, size=32, pipeline=[("resize", 32, "x")])


def test_random_affine_records_its_warp_and_its_boxes_hold_their_pixels(tmp_path):
    data = _coco_set(tmp_path)
    steps = [("resize", 64, 64), ("random_affine_bilinear", -20, 20, 0.1, 0.2, 0.9, 1.1, -5, 5)]
    loader = stoke.Loader(data, batch=4, size=64, pipeline=steps, workers=1, seed=5)
    warped = 0
    for batch in loader:
        pixels = np.from_dlpack(batch.pixels[0])
        boxes = np.from_dlpack(batch.boxes[0])
        classes = np.from_dlpack(batch.box_classes[0])
        counts = np.from_dlpack(batch.box_counts[0])
        for i, ops in enumerate(batch.applied_ops):
            (op,) = ops  # ('affine_bilinear', angle, tx, ty, scale, shear_x, shear_y, fill)
            name, angle, tx, ty, scale, shear_x, shear_y, fill = op
            assert name == "affine_bilinear"
            assert -20 <= angle <= 20 and 0.9 <= scale <= 1.1 and -5 <= shear_x <= 5
            assert tx == int(tx) and abs(tx) <= 6 and ty == int(ty) and abs(ty) <= 13
            assert shear_y == 0 and fill == 0
            warped += 1
            for k in range(counts[i]):
                # Every bright pixel of the box's colour lies inside its box (the box around
                # the moved rectangle's corners, clipped to the image).
                ys, xs = np.nonzero(pixels[i, :, :, classes[i, k]] >= 128)
                x1, y1, x2, y2 = boxes[i, k]
                assert (xs >= x1 - 1).all() and (xs + 1 <= x2 + 1).all()
                assert (ys >= y1 - 1).all() and (ys + 1 <= y2 + 1).all()
    assert warped == 12
    with pytest.raises(ValueError, match="takes \\(degrees\\) or"):
        stoke.Loader(data, size=64, pipeline=[("random_affine", 10, 0.1, 0.1)])
    with pytest.raises(ValueError, match="translate_x must be a fraction"):
        stoke.Loader(data, size=64, pipeline=[("random_affine", -10, 10, 1.5, 0)])


def test_augmix_takes_its_settings_as_words_and_records_its_chains():
    def first_batch(steps):
        return next(iter(stoke.Loader(FASHION, split="test", batch=8, size=32, channels=1,
                                      pipeline=steps, workers=0, seed=3)))
    batch = first_batch([("resize", 32, 32),
                         ("augmix", "width=2", "depth=1", "interpolation=nearest", "fill=128")])
    again = first_batch([("resize", 32, 32),
                         ("augmix", "fill=128", "interpolation=nearest", "depth=1", "width=2")])
    assert np.array_equal(np.from_dlpack(batch.pixels[0]), np.from_dlpack(again.pixels[0]))
    assert batch.applied_ops == again.applied_ops
    for ops in batch.applied_ops:
        name, m0, chains, interpolation, fill = ops[0]
        assert (name, chains, interpolation, fill) == ("augmix", 2, "nearest", 128.0)
        assert [op[0] for op in ops[1::2]] == ["augmix_chain"] * 2  # one op per chain
        assert [op[2] for op in ops[1::2]] == [1, 1]
        assert abs(m0 + ops[1][1] + ops[3][1] - 1) < 1e-5
    defaults = first_batch([("resize", 32, 32), "augmix"])
    assert {ops[0][3:] for ops in defaults.applied_ops} == {("bilinear", None)}
    with pytest.raises(ValueError, match="interpolation must be nearest or bilinear, got 'bicubic'"):
        first_batch([("resize", 32, 32), ("augmix", "interpolation=bicubic")])
    with pytest.raises(ValueError, match="'severity' is not one of its settings"):
        first_batch([("resize", 32, 32), ("augmix", "severity")])
    with pytest.raises(ValueError, match="severity is given twice"):
        first_batch([("resize", 32, 32), ("augmix", "severity=2", "severity=3")])


def test_boxes_on_data_without_them_raise_value_error(tmp_path):
    batch = next(iter(stoke.Loader(FASHION, split="test", batch=8, workers=0)))
    assert batch.max_boxes == 0
    with pytest.raises(ValueError, match="has no boxes"):
        batch.boxes
    with pytest.raises(ValueError, match="max_boxes is 2, but"):
        stoke.Loader(FASHION, split="test", batch=8, max_boxes=2)
    data = _coco_set(tmp_path, count=4)
    with pytest.raises(stoke.DataError, match="more than max_boxes 1"):
        stoke.Loader(data, batch=2, max_boxes=1, on_error="error")


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


def test_devices_lists_gpus_without_touching_cuda():
    gpus = stoke.devices()
    assert isinstance(gpus, list)
    for g in gpus:
        assert {"index", "name", "uuid", "pci_bus_id", "memory_bytes"} <= set(g)


def test_the_pytorch_example_trains_with_the_loss_going_down():
    need("torch")
    import subprocess
    import sys
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "torch_fashion_mnist.py")
    out = subprocess.run([sys.executable, example, "--steps", "60", "--workers", "1"],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    losses = [float(line.split()[-1]) for line in out.splitlines() if line.startswith("step ")]
    assert len(losses) == 6, out
    assert losses[-1] < losses[0] * 0.8, out


def test_the_recipe_example_trains_resnet18_on_stokes_mixed_soft_labels(tmp_path):
    # torchvision's v2 recipe's data side (TrivialAugmentWide, erasing, MixUp/CutMix, label
    # smoothing, repeats 4) at 64 px: the loss goes down and the held-out crops are recognized
    # far above chance.
    need("torch")
    need("torchvision")
    import subprocess
    import sys
    mkdata = os.environ.get("STOKE_MKDATA")
    if not mkdata:
        pytest.skip("STOKE_MKDATA names no stoke-mkdata (ctest sets it)")
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "torch_recipe.py")
    out = subprocess.run([sys.executable, example, "--make-data", str(tmp_path), "--size", "64",
                          "--eval-resize", "73", "--eval-crop", "64", "--epochs", "8",
                          "--workers", "1"],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    epochs = [line.split() for line in out.splitlines() if line.startswith("epoch ")]
    assert len(epochs) == 8, out
    losses = [float(e[3]) for e in epochs]
    accuracy = float(epochs[-1][5])
    chance = float(out.split("chance ")[-1])
    assert losses[-1] < losses[0] * 0.8, out
    assert accuracy > 3 * chance, out


def test_the_detection_example_trains_faster_rcnn_with_the_loss_going_down():
    need("torch")
    need("torchvision")
    import subprocess
    import sys
    data = os.environ.get("STOKE_DETECTION_SET")
    if not data:
        pytest.skip("STOKE_DETECTION_SET names no detection set (ctest sets it)")
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "torch_detection.py")
    out = subprocess.run([sys.executable, example, "--data", data, "--steps", "30", "--batch",
                          "2", "--size", "224", "--workers", "1"],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    losses = [float(line.split()[-1]) for line in out.splitlines() if line.startswith("step ")]
    assert len(losses) == 3, out
    assert losses[-1] < losses[0] * 0.8, out


def test_the_keras_example_fits_with_the_loss_going_down():
    os.environ.setdefault("KERAS_BACKEND", "jax")  # before Keras is first imported
    need("jax")
    need("keras")
    import subprocess
    import sys
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "keras_fashion_mnist.py")
    env = dict(os.environ, KERAS_BACKEND="jax", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, example, "--steps", "40", "--workers", "1"], env=env,
                         capture_output=True, text=True, timeout=600, check=True).stdout
    losses = [float(line.split()[-1]) for line in out.splitlines() if line.startswith("step ")]
    assert len(losses) == 4, out
    assert losses[-1] < losses[0] * 0.8, out


def test_the_installed_package_carries_its_worker():
    # The library finds it beside itself: no environment variable, no PATH lookup.
    package = os.path.dirname(stoke.__file__)
    worker = os.path.join(package, "libexec", "stoke", "stoke-worker")
    assert os.access(worker, os.X_OK)


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


def test_stoke_pack_shards_are_read_alike_by_webdataset_and_by_stoke(tmp_path):
    """stoke-pack's shards are plain WebDataset: webdataset reads every sample with its key and
    label, and stoke reads the same labels, in the same order, as from the IDX files."""
    wds = need("webdataset")
    pack = os.environ.get("STOKE_PACK")
    if not pack:
        pytest.skip("STOKE_PACK (the stoke-pack executable) is not set")
    subprocess.run([pack, "--no-progress", "--data", FASHION, "--split", "test",
                    "--out", str(tmp_path / "fm-%06d.tar"), "--shard-samples", "2500"],
                   check=True, stdout=subprocess.DEVNULL)
    urls = [str(tmp_path / f"fm-{i:06d}.tar") for i in range(4)]
    keys, labels = [], []
    for sample in wds.WebDataset(urls, shardshuffle=False, empty_check=False):
        keys.append(sample["__key__"])
        labels.append(int(sample["cls"]))
        assert sample["png"][:8] == b"\x89PNG\r\n\x1a\n"
    assert keys == [f"{i:06d}" for i in range(10000)]

    def stoke_labels(data, **kw):
        loader = stoke.Loader(data, batch=500, workers=1, shuffle=False, devices="cpu:1", **kw)
        return np.concatenate([np.from_dlpack(b.labels).copy() for b in loader]).tolist()

    from_idx = stoke_labels(FASHION, split="test")
    assert from_idx == labels
    assert stoke_labels(str(tmp_path / "fm-{000000..000003}.tar"), size=28) == labels
    # The dataset-level index stoke-pack wrote beside them: stoke plans from it (the same
    # labels in the same order), and webdataset's own wids reads it as its shard index.
    index = str(tmp_path / "fm.wids.json")
    assert stoke_labels(index, size=28) == labels
    wids = need("wids")
    listed = wids.ShardListDataset(index)
    assert len(listed) == 10000
    for i in (0, 2499, 2500, 9999):
        assert listed[i]["__key__"] == f"{i:06d}" and int(listed[i][".cls"]) == labels[i]


def _servers():
    """bench/local_servers.py: nginx and SeaweedFS on 127.0.0.1, as the C++ tests run them."""
    import importlib.util
    path = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "local_servers.py")
    spec = importlib.util.spec_from_file_location("local_servers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _need_server(available, what):
    if available:
        return
    if os.environ.get("STOKE_REQUIRE_SERVERS") == "1":
        pytest.fail(f"{what} is not installed")
    pytest.skip(f"{what} is not installed (CI installs it; see .ci/run)")


def test_shards_over_http_and_s3_take_the_same_keywords_and_give_the_same_batches(
        tmp_path, monkeypatch):
    pack = os.environ.get("STOKE_PACK")
    if not pack:
        pytest.skip("STOKE_PACK (the stoke-pack executable) is not set")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    _need_server(os.access(nginx, os.X_OK), "nginx")
    weed = os.environ.get("STOKE_WEED", "")
    _need_server(os.access(weed, os.X_OK), "SeaweedFS (weed)")
    servers = _servers()
    shards = tmp_path / "shards"
    subprocess.run([pack, "--no-progress", "--data", FASHION, "--split", "test",
                    "--out", str(shards / "fm-%06d.tar"), "--shard-samples", "2500"],
                   check=True, stdout=subprocess.DEVNULL)
    monkeypatch.setenv("STOKE_CACHE_DIR", str(tmp_path / "cache"))

    def digest(data, next_epoch_hits=0, **kw):
        loader = stoke.Loader(data, batch=500, workers=2, size=28, seed=5, shuffle_window=2, **kw)
        h = []
        for b in loader:
            h.append((np.from_dlpack(b.pixels[0]).tobytes(), np.from_dlpack(b.labels).tobytes()))
        # Each shard counts once an epoch, when the consumer's epoch first wants it: with the
        # last batch out the consumer wants the next epoch's, so the prefetcher's walk counts
        # those uses as hits (the copies are on disk) as it gets to them, and no more.
        deadline = time.monotonic() + 10
        while loader.stats()["cache_hits"] < next_epoch_hits and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)  # a count past it would show now
        return h, loader.stats()

    expected, local = digest(str(shards / "fm-{000000..000003}.tar"))
    assert local["shard_cache"] == "off (no remote shards)"
    shard_bytes = sum(f.stat().st_size for f in shards.glob("*.tar"))
    with servers.NginxServer(shards, str(tmp_path / "nginx")) as url:
        got, stats = digest(url + "/fm-{000000..000003}.tar", next_epoch_hits=4,
                            cache_dir=str(tmp_path / "shard-cache"), cache_limit="64MiB")
        assert got == expected
        assert stats["shard_cache"].startswith("on: " + str(tmp_path / "shard-cache" / "shards"))
        assert stats["cache_bytes_fetched"] == shard_bytes
        # 4 misses for this epoch, and exactly the next epoch's 4 uses as hits.
        assert stats["cache_misses"] == 4 and stats["cache_hits"] == 4
        got, stats = digest(url + "/fm-{000000..000003}.tar", cache_limit=0)
        assert got == expected
        assert stats["shard_cache"].startswith("off (cache_limit 0)")
        with pytest.raises(ValueError, match="cache_limit '12 parsecs'"):
            stoke.Loader(url + "/fm-000000.tar", batch=100, cache_limit="12 parsecs")
    with servers.SeaweedServer(weed, str(tmp_path / "weed")) as s3:
        s3.put_folder("pytest", shards, prefix="fm/")
        for k, v in s3.env({}).items():
            monkeypatch.setenv(k, v)
        assert digest("s3://pytest/fm/fm-{000000..000003}.tar")[0] == expected
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
        with pytest.raises(stoke.Error, match=r"403.*bucket 'pytest'"):
            stoke.Loader("s3://pytest/fm/fm-000000.tar", batch=100)


def _shard(path, members):
    """A tar shard of (name, bytes) members."""
    import io
    import tarfile

    with tarfile.open(path, "w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return str(path)


def test_max_classes_bounds_the_labels_the_data_states(tmp_path):
    photo = open(PHOTO, "rb").read()
    huge = _shard(tmp_path / "huge.tar", [("000000.jpg", photo), ("000000.cls", b"2147483647")])
    with pytest.raises(stoke.DataError, match=r"huge\.tar:000000\.cls: label 2147483647 is not "
                                              r"below max_classes 16777216 \(labels are "
                                              r"0\.\.16777215; raise max_classes"):
        stoke.Loader(huge, batch=1, workers=0)
    five = _shard(tmp_path / "five.tar", [("000000.jpg", photo), ("000000.cls", b"5")])
    with pytest.raises(stoke.DataError, match="label 5 is not below max_classes 5"):
        stoke.Loader(five, batch=1, workers=0, max_classes=5)
    batch = next(iter(stoke.Loader(five, batch=1, workers=0, size=16, max_classes=6)))
    assert np.from_dlpack(batch.labels).tolist() == [5]
    with pytest.raises(ValueError, match="^max_classes must be positive"):
        stoke.Loader(five, batch=1, workers=0, max_classes=0)


def test_a_member_name_with_a_newline_and_an_escape_is_shown_escaped(tmp_path, capfd):
    photo = open(PHOTO, "rb").read()
    evil = "x\n\x1b[31mstoke: forged line\x1b[0m/000001"
    shard = _shard(tmp_path / "evil.tar", [("000000.jpg", photo), ("000000.cls", b"0"),
                                           (evil + ".jpg", photo[:300]), (evil + ".cls", b"1")])
    shown = "x\\n\\x1b[31mstoke: forged line\\x1b[0m/000001.jpg"
    with pytest.raises(stoke.DataError) as e:
        for _ in stoke.Loader(shard, batch=2, workers=1, size=16, on_error="error",
                              shuffle=False):
            pass
    assert shown in str(e.value) and "\x1b" not in str(e.value) and "\n" not in str(e.value)
    capfd.readouterr()
    assert sum(1 for _ in stoke.Loader(shard, batch=2, workers=1, size=16, shuffle=False)) == 1
    err = capfd.readouterr().err
    assert "\x1b" not in err
    assert [line for line in err.splitlines() if shown in line] != []
    assert all(line.startswith("stoke: ") for line in err.splitlines())


def test_random_erasing_erases_the_normalized_output_where_applied_ops_say():
    def first_batch(pipeline):
        loader = stoke.Loader(FASHION, split="test", batch=64, workers=1, seed=3, size=28,
                              dtype="float32", channels=1, pipeline=pipeline)
        batch = next(iter(loader))
        return np.from_dlpack(batch.pixels[0]).copy(), batch.applied_ops

    plain, plain_ops = first_batch(["horizontal_flip"])
    erased, ops = first_batch(["horizontal_flip", ("random_erasing", 1.0, 0.1, 0.3, 0.5, 2.0, 3.0)])
    assert plain_ops == [[]] * 64
    assert erased.shape == plain.shape == (64, 1, 28, 28)
    for n, sample_ops in enumerate(ops):
        assert len(sample_ops) == 1
        name, top, left, height, width, *values = sample_ops[0]
        assert name == "erase" and values == [3.0, 3.0, 3.0]
        inside = np.zeros((28, 28), bool)
        inside[top:top + height, left:left + width] = True
        assert (erased[n, 0][inside] == 3.0).all()
        assert (erased[n, 0][~inside] == plain[n, 0][~inside]).all()
    _, noisy = first_batch(["horizontal_flip", ("random_erasing_pixel", 1.0)])
    assert {o[0][0] for o in noisy} == {"erase_noise"} and len(noisy[0][0]) == 6
    with pytest.raises(ValueError, match="needs a float dtype"):
        stoke.Loader(FASHION, split="test", size=28, pipeline=["random_erasing_pixel"])


def test_mixup_and_cutmix_deliver_soft_labels_per_device_and_each_samples_mixing():
    def loader(**mixing):
        return stoke.Loader(FASHION, split="test", batch=16, workers=1, seed=5, devices="cpu:2",
                            dtype="float32", size=28, **mixing)
    plain = next(iter(loader()))
    mixed = next(iter(loader(mixup_alpha=0.2, cutmix_alpha=1.0, num_classes=10,
                             label_smoothing=0.1)))
    assert mixed.num_classes == 10 and plain.num_classes == 0
    m = mixed.mixing
    assert m["partner"].shape == (16,) and m["box"].shape == (16, 4)
    assert m["label_weights"].shape == (16, 2) and m["lam"].dtype == np.float64
    labels = np.from_dlpack(mixed.labels)
    for g in range(2):
        soft = np.from_dlpack(mixed.soft_labels[g])
        assert soft.shape == (8, 10) and soft.dtype == np.float32
        assert np.allclose(soft.sum(1), 1.0, atol=1e-5)
        x = np.from_dlpack(mixed.pixels[g])
        base = np.from_dlpack(plain.pixels[g])
        for i in range(8):
            n = 8 * g + i
            p = int(m["partner"][n])  # within this device's chunk
            assert 0 <= p < 8
            if m["op"][n] == 2:  # CutMix: the partner's pixels inside the box, its own outside
                top, left, bottom, right = m["box"][n]
                inside = np.zeros((28, 28), bool)
                inside[top:bottom, left:right] = True
                assert np.array_equal(x[i][:, inside], base[p][:, inside])
                assert np.array_equal(x[i][:, ~inside], base[i][:, ~inside])
            elif m["op"][n] == 1:
                w_self, w_partner = m["label_weights"][n]
                want = (base[p] * w_partner).astype(np.float32) + (base[i] * w_self).astype(np.float32)
                assert np.array_equal(x[i], want)
            if labels[n] != labels[8 * g + p]:
                assert abs(soft[i][labels[8 * g + p]] - (m["label_weights"][n][1] * 0.9 + 0.01)) < 1e-6
    with pytest.raises(ValueError, match="set num_classes"):
        loader(mixup_alpha=0.2)
    with pytest.raises(ValueError, match="^mix_rule must be torchvision or timm, got 'dali'$"):
        loader(mixup_alpha=0.2, num_classes=10, mix_rule="dali")
    with pytest.raises(ValueError, match="this loader does not mix"):
        plain.mixing
    with pytest.raises(ValueError, match="soft labels"):
        plain.soft_labels


def test_repeats_keep_rasamplers_epoch_and_deal_each_sample_k_times():
    loader = stoke.Loader(FASHION, split="test", batch=64, workers=1, seed=1, devices="cpu:2",
                          repeats=3)
    assert len(loader) == (10000 // 256 * 256 // 2 + 31) // 32  # RASampler's samples, per device
    counts = {}
    for batch in loader:
        ids = np.from_dlpack(batch.sample_ids)[np.from_dlpack(batch.valid) == 1]
        for i in ids.tolist():
            counts[i] = counts.get(i, 0) + 1
    assert sum(counts.values()) == 9984
    assert set(counts.values()) == {3}
