"""A sample's fields beside its pixels: COCO boxes, masks and pass-through bytes, per device."""

import numpy as np
import pytest

import stoke
from helpers import FASHION, need, write_png, coco_set, check_boxes_cover_their_colour


def test_coco_boxes_arrive_per_device_with_the_pixels_they_cover(tmp_path):
    data = coco_set(tmp_path)
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
            checked += check_boxes_cover_their_colour(pixels, boxes, classes, counts)
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
        write_png(tmp_path / f"{i}.png", rgb)
        write_png(tmp_path / f"{i}.mask.png", np.repeat(mask[:, :, None], 3, axis=2))
        lines.append(f"{i}.png\t0\t{i}.mask.png")
    (tmp_path / "list.txt").write_text("\n".join(lines) + "\n")
    # An RGB file is not a label map: every sample is bad_mask, none can be produced.
    with pytest.raises(stoke.DataError, match="bad_mask"):
        next(iter(stoke.Loader(str(tmp_path / "list.txt"), batch=4, size=32, workers=1,
                               on_error="error")))
    for i in range(8):  # as one-channel label maps
        mask = np.zeros((40 + i, 50 - i), np.uint8)
        mask[10:30, 5:25] = i + 1
        write_png(tmp_path / f"{i}.mask.png", mask)
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
            write_png(tmp_path / "x.png", np.full((20, 20, 3), 40 * i, np.uint8))
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


def test_boxes_on_data_without_them_raise_value_error(tmp_path):
    batch = next(iter(stoke.Loader(FASHION, split="test", batch=8, workers=0)))
    assert batch.max_boxes == 0
    with pytest.raises(ValueError, match="has no boxes"):
        batch.boxes
    with pytest.raises(ValueError, match="max_boxes is 2, but"):
        stoke.Loader(FASHION, split="test", batch=8, max_boxes=2)
    data = coco_set(tmp_path, count=4)
    with pytest.raises(stoke.DataError, match="more than max_boxes 1"):
        stoke.Loader(data, batch=2, max_boxes=1, on_error="error")
