"""Peer: FFCV (ffcv.loader.Loader), its numba-compiled CPU pipeline on threads.

FFCV reads only its own .beton files, so `--prepare` writes one from the data first (untimed);
a .beton whose source has not changed is reused.

jpeg    The .beton holds every corpus file's own JPEG bytes, unchanged (FFCV's RGBImageField
        in 'jpg' mode would decode and re-encode them at one fixed quality), and the label.
        Pipeline: RandomResizedCropRGBImageDecoder((224, 224), scale 0.08..1, ratio 3/4..4/3):
        full libjpeg-turbo decode, crop, cv2 resize (INTER_AREA); RandomHorizontalFlip(0.5);
        NormalizeImage(ImageNet mean/std, float32); ToTensor; ToTorchImage(channels_last=False),
        which copies the batch into NCHW.
fmnist  The .beton holds the 28x28x1 uint8 arrays (NDArrayField) and labels. Pipeline:
        NDArrayDecoder (shape as ints); RandomTranslate(padding=4, zeros) = pad 4 + random
        28x28 crop; RandomHorizontalFlip(0.5); (x/255 - 0.5)/0.5 to float32 by table lookup
        (FFCV's NormalizeImage handles 3 channels only); ToTensor;
        ToTorchImage(channels_last=False).

Loader: num_workers=`--workers` (threads), order=RANDOM, os_cache=True (the .beton is
memory-mapped; it sits in the page cache, as the other peers' files do), drop_last=False,
batches_ahead=3 (the default). Numba compiles the pipeline before the first batch.
"""

import hashlib
import importlib.metadata
import json
import os
from dataclasses import replace

import cv2
import numba
import numpy as np
import torch
from PIL import Image

from ffcv.fields import IntField, NDArrayField, RGBImageField
from ffcv.fields.basics import IntDecoder
from ffcv.fields.decoders import RandomResizedCropRGBImageDecoder
from ffcv.fields.ndarray import NDArrayDecoder
from ffcv.fields.rgb_image import IMAGE_MODES
from ffcv.loader import Loader, OrderOption
from ffcv.pipeline.allocation_query import AllocationQuery
from ffcv.pipeline.compiler import Compiler
from ffcv.pipeline.operation import Operation
from ffcv.transforms import (NormalizeImage, RandomHorizontalFlip, RandomTranslate, Squeeze,
                             ToTensor, ToTorchImage)
from ffcv.writer import DatasetWriter

import peer_common as pc


class OriginalJPEGField(RGBImageField):
    """Writes a JPEG file's own bytes as an RGBImageField sample in 'jpg' mode.

    Being a subclass, it is stored as a custom field; the loader reads it back with
    custom_fields={'image': RGBImageField}, and FFCV's decoders see ordinary JPEG samples."""

    def encode(self, destination, image, malloc):
        data, width, height = image
        destination["mode"] = IMAGE_MODES["jpg"]
        destination["width"] = width
        destination["height"] = height
        destination["data_ptr"], storage = malloc(data.nbytes)
        storage[:] = data


class JPEGFiles:
    """(file bytes, width, height), label for every image; the size comes from the header."""

    def __init__(self, paths, labels):
        self.paths = paths
        self.labels = labels

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with Image.open(self.paths[i]) as im:
            if im.format != "JPEG" or im.mode not in ("RGB", "L"):
                raise ValueError(f"{self.paths[i]}: {im.format} {im.mode}, expected RGB JPEG")
            width, height = im.size
        with open(self.paths[i], "rb") as f:
            data = np.frombuffer(f.read(), dtype=np.uint8)
        return (data, width, height), self.labels[i]


class ArraySamples:
    """(28x28x1 uint8, label) for every Fashion-MNIST image."""

    def __init__(self, images, labels):
        self.images = images[..., None]
        self.labels = labels

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.images[i], int(self.labels[i])


class ArrayDecoder(NDArrayDecoder):
    """NDArrayDecoder with the sample shape as Python ints.

    NDArrayField reads its shape back from the .beton as numpy uint64 values; under numpy 1.x
    uint64 + int is float64, so RandomTranslate's buffer shape (h + 2 * padding, ...) becomes
    float and torch.empty refuses it."""

    def declare_state_and_memory(self, previous_state):
        state, query = super().declare_state_and_memory(previous_state)
        shape = tuple(int(d) for d in state.shape)
        return replace(state, shape=shape), replace(query, shape=shape)


class NormalizeGray(Operation):
    """uint8 -> float32 (x - mean) / std through a 256-entry table, for single-channel images;
    the same computation as FFCV's NormalizeImage does for three channels."""

    def __init__(self, mean, std):
        super().__init__()
        self.table = ((np.arange(256) - mean) / std).astype(np.float32)

    def generate_code(self):
        table = self.table
        my_range = Compiler.get_iterator()

        def normalize(images, result):
            flat_in = images.reshape(images.shape[0], -1)
            flat_out = result.reshape(result.shape[0], -1)
            for i in my_range(images.shape[0]):
                for px in range(flat_in.shape[1]):
                    flat_out[i, px] = table[flat_in[i, px]]
            return result

        normalize.is_parallel = True
        return normalize

    def declare_state_and_memory(self, previous_state):
        return (replace(previous_state, jit_mode=True, dtype=np.dtype(np.float32)),
                AllocationQuery(previous_state.shape, np.dtype(np.float32)))


def source_key(paths):
    """Changes when any source file is added, removed, resized or touched."""
    h = hashlib.sha256()
    for p in paths:
        st = os.stat(p)
        h.update(f"{os.path.abspath(p)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def beton_path(args):
    """Writes the .beton for this case unless an up-to-date one exists; returns its path."""
    if args.case == "jpeg":
        paths, labels, _ = pc.list_image_folder(args.data)
        key = source_key(paths)
    else:
        idx = [os.path.join(args.data, f"train-{n}-idx{d}-ubyte.gz")
               for n, d in (("images", 3), ("labels", 1))]
        key = source_key(idx)
    os.makedirs(args.cache_dir, exist_ok=True)
    path = os.path.join(args.cache_dir, f"ffcv-{args.case}-{key}.beton")
    if os.path.exists(path):
        return path

    if args.case == "jpeg":
        dataset = JPEGFiles(paths, labels)
        fields = {"image": OriginalJPEGField(), "label": IntField()}
    else:
        dataset = ArraySamples(*pc.load_fashion_mnist(args.data))
        fields = {"image": NDArrayField(np.dtype(np.uint8), (pc.FMNIST_SIZE, pc.FMNIST_SIZE, 1)),
                  "label": IntField()}
    # Written under a temporary name so that an interrupted write is never taken for a result.
    partial = path + ".partial"
    DatasetWriter(partial, fields, num_workers=args.workers).from_indexed_dataset(dataset)
    os.replace(partial, path)
    with open(path + ".json", "w") as f:
        json.dump({"source": os.path.abspath(args.data), "samples": len(dataset)}, f)
    return path


def pipelines(args):
    labels = [IntDecoder(), ToTensor(), Squeeze()]
    if args.case == "jpeg":
        mean = np.array(pc.IMAGENET_MEAN) * 255.0
        std = np.array(pc.IMAGENET_STD) * 255.0
        image = [
            RandomResizedCropRGBImageDecoder((pc.CROP_SIZE, pc.CROP_SIZE),
                                             scale=pc.RRC_SCALE, ratio=pc.RRC_RATIO),
            RandomHorizontalFlip(0.5),
            NormalizeImage(mean, std, np.float32),
            ToTensor(),
            ToTorchImage(channels_last=False),
        ]
    else:
        image = [
            ArrayDecoder(),
            RandomTranslate(padding=pc.FMNIST_PAD, fill=(0,)),
            RandomHorizontalFlip(0.5),
            NormalizeGray(pc.FMNIST_MEAN * 255.0, pc.FMNIST_STD * 255.0),
            ToTensor(),
            ToTorchImage(channels_last=False),
        ]
    return {"image": image, "label": labels}


def main(argv):
    args = pc.parse_args(argv, __doc__.split("\n\n")[0])
    path = beton_path(args)
    if args.prepare:
        print(f"FFCV dataset: {path}")
        return 0
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    meter = pc.Meter()
    custom = {"image": RGBImageField} if args.case == "jpeg" else {}
    loader = Loader(path, batch_size=args.batch, num_workers=args.workers,
                    order=OrderOption.RANDOM, os_cache=True, drop_last=False, seed=args.seed,
                    pipelines=pipelines(args), custom_fields=custom)
    for _ in range(args.epochs):
        for images, _labels in loader:
            meter.batch(images.shape[0])
    pc.emit("FFCV", args.case, args, meter, {
        "ffcv": importlib.metadata.version("ffcv"),
        "numba": numba.__version__,
        "numpy": np.__version__,
        "opencv (python)": cv2.__version__,
        "torch": torch.__version__,
    })
    return 0


if __name__ == "__main__":
    pc.run(main)
