"""What the Python tests share: the data they read and the files they write."""

import os

import numpy as np
import pytest

FASHION = "/usr/share/datasets/fashion-mnist"
PHOTO = "/usr/share/backgrounds/mate/desktop/GreenTraditional.jpg"


def need(module):
    """Imports `module`, or skips; run_pytest.sh sets STOKE_PYTEST_<MODULE>=1 where it must run."""
    if os.environ.get(f"STOKE_PYTEST_{module.upper()}") == "1":
        return __import__(module)
    return pytest.importorskip(module)


def write_png(path, pixels):
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


def coco_set(folder, count=12):
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
        write_png(folder / f"{i}.png", rgb)
    categories = [{"id": 15, "name": "blue"}, {"id": 4, "name": "red"}, {"id": 8, "name": "green"}]
    path = folder / "instances.json"
    path.write_text(json.dumps({"images": images, "annotations": annotations,
                                "categories": categories}))
    return str(path)


def check_boxes_cover_their_colour(pixels, boxes, classes, counts):
    """Each real box is, within 1.5 px, the bright region of its class's colour channel (the
    coco_set images). Returns how many boxes were checked."""
    checked = 0
    for i in range(len(counts)):
        for k in range(counts[i]):
            ys, xs = np.nonzero(pixels[i, :, :, classes[i, k]] >= 128)
            seen = [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1]
            assert np.allclose(boxes[i, k], seen, atol=1.5), (boxes[i, k], seen)
            checked += 1
    return checked


def write_shard(path, members):
    """A tar shard of (name, bytes) members."""
    import io
    import tarfile

    with tarfile.open(path, "w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return str(path)
