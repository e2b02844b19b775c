"""Shared pieces of the peer loaders run by run_peers.py and bench/shard_peers.py.

Each peer module (peer_torch.py, peer_tf.py, peer_dali.py, peer_ffcv.py, and the shard peers
peer_wds.py, peer_streaming.py, peer_litdata.py) runs in its own virtual environment and its
own process, so this module depends on the standard library and numpy only: every one of
those environments has numpy, none of them has all the others. torchvision and PIL are
imported inside the functions that use them.

A peer process runs one case (`jpeg` or `fmnist`, or `shards` for the shard peers) and ends
its output with one JSON line, the result that the driver reads.
"""

import argparse
import gzip
import io
import json
import os
import sys
import tarfile
import time

import numpy as np

# The work every loader does on the JPEG corpus; the same constants stoke uses for
# `--augment default` on image folders and `--dtype float32` on RGB data.
CROP_SIZE = 224
RRC_SCALE = (0.08, 1.0)
RRC_RATIO = (3.0 / 4.0, 4.0 / 3.0)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

# The work on Fashion-MNIST: pad 4 + random crop back to 28x28 + flip, then (x/255 - 0.5)/0.5,
# which is what stoke's `--dtype float32` does for single-channel data.
FMNIST_SIZE = 28
FMNIST_PAD = 4
FMNIST_MEAN = 0.5
FMNIST_STD = 0.5

IMAGE_EXTENSIONS = (".jpg", ".jpeg")


def parse_args(argv, description):
    """The command line every peer module accepts; run_peers.py passes all of it."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--case", choices=("jpeg", "fmnist"), required=True)
    p.add_argument("--data", required=True,
                   help="image-folder root for jpeg, IDX folder for fmnist")
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--workers", type=int, required=True,
                   help="worker processes, or threads where the framework uses threads")
    p.add_argument("--epochs", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--variant", choices=("standard", "roi"), default="standard",
                   help="jpeg only: 'roi' decodes only the random crop's window, where the "
                        "framework offers that (tf.data, DALI)")
    p.add_argument("--cache-dir", default="/tmp/stoke-peers-cache",
                   help="where a peer keeps files it derives from the data (FFCV's .beton)")
    p.add_argument("--prepare", action="store_true",
                   help="only write derived files (untimed preparation), then exit")
    a = p.parse_args(argv)
    if a.batch < 1 or a.workers < 1 or a.epochs < 1:
        p.error("--batch, --workers and --epochs must be >= 1")
    if a.variant != "standard" and a.case != "jpeg":
        p.error("--variant applies to --case jpeg only")
    return a


def parse_shard_args(argv, description):
    """The command line of the shard peers (bench/shard_peers.py passes all of it).

    --data is where the peer reads from: WebDataset shards (peer_wds.py: a brace pattern of
    paths or s3:// keys) or the peer's own converted dataset (a folder or an s3:// prefix).
    S3 settings come from AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
    AWS_REGION, the variables stoke reads. --prepare converts the tar shards in --shards into
    the peer's format in --out (untimed), then exits."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--data", help="what to read: shards, a folder or an s3:// location")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shuffle-buffer", type=int, default=1000,
                   help="samples in a sample shuffle buffer, for the peers that have one")
    p.add_argument("--cache-dir",
                   help="where a peer keeps what it downloads from S3 (made empty first)")
    p.add_argument("--prepare", action="store_true",
                   help="convert the tar shards in --shards into --out, then exit")
    p.add_argument("--shards", help="--prepare: folder of WebDataset tar shards")
    p.add_argument("--out", help="--prepare: folder the converted dataset is written to")
    a = p.parse_args(argv)
    if a.prepare:
        if not (a.shards and a.out):
            p.error("--prepare needs --shards and --out")
    elif not a.data:
        p.error("--data is required")
    if a.batch < 1 or a.workers < 1 or a.epochs < 1:
        p.error("--batch, --workers and --epochs must be >= 1")
    a.case = "shards"
    a.variant = "standard"
    return a


def shard_paths(folder):
    """The .tar files in `folder`, sorted by name."""
    paths = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".tar"))
    if not paths:
        raise ValueError(f"{folder}: no .tar shards")
    return paths


def read_shard(path):
    """Yields (key, jpeg bytes, label) for each sample of one WebDataset tar shard, in order.

    Members are grouped as webdataset groups them: the key is the name up to the first dot
    of its last path component, the rest is the field. A sample needs `jpg` (or `jpeg`) and
    `cls` (the label as decimal text), as stoke-pack writes them."""
    sample, key = {}, None
    with tarfile.open(path, "r:") as tar:
        for member in tar:
            if not member.isfile():
                continue
            folder, _, base = member.name.rpartition("/")
            stem, _, field = base.partition(".")
            k = f"{folder}/{stem}" if folder else stem
            if k != key:
                if sample:
                    yield shard_sample(path, key, sample)
                sample, key = {}, k
            sample[field.lower()] = tar.extractfile(member).read()
    if sample:
        yield shard_sample(path, key, sample)


def shard_sample(path, key, fields):
    image = fields.get("jpg", fields.get("jpeg"))
    if image is None or "cls" not in fields:
        raise ValueError(f"{path}: sample {key!r} lacks a jpg or a cls member "
                         f"(has {sorted(fields)})")
    return key, image, int(fields["cls"].decode().strip())


def s3_settings():
    """(endpoint, key, secret, region) from the environment stoke reads its S3 settings from."""
    try:
        return (os.environ["AWS_ENDPOINT_URL"].rstrip("/"), os.environ["AWS_ACCESS_KEY_ID"],
                os.environ["AWS_SECRET_ACCESS_KEY"], os.environ.get("AWS_REGION", "us-east-1"))
    except KeyError as e:
        raise SystemExit(f"S3 reads need {e.args[0]} in the environment") from None


def fresh_dir(path):
    """Makes `path` an empty folder, so that nothing downloaded by an earlier run is reused."""
    import shutil
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def decode_rgb(data):
    """A JPEG's bytes to an RGB PIL image, as torchvision's ImageFolder loader does it."""
    from PIL import Image
    with Image.open(io.BytesIO(data)) as img:
        return img.convert("RGB")


def torchvision_train_transform():
    """The JPEG work in torchvision: RandomResizedCrop(224) (PIL bilinear, antialiased),
    RandomHorizontalFlip(), ToTensor() and Normalize(ImageNet mean/std)."""
    from torchvision import transforms
    return transforms.Compose([
        transforms.RandomResizedCrop(CROP_SIZE, scale=RRC_SCALE, ratio=RRC_RATIO),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD),
    ])


def list_image_folder(root):
    """Lists root/<class>/<image> as torchvision's ImageFolder does: classes and files sorted
    by name, the label being the class's index. Returns (paths, labels, class_names)."""
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
    paths, labels = [], []
    for label, name in enumerate(classes):
        folder = os.path.join(root, name)
        for f in sorted(os.listdir(folder)):
            if f.lower().endswith(IMAGE_EXTENSIONS):
                paths.append(os.path.join(folder, f))
                labels.append(label)
    if not paths:
        raise ValueError(f"{root}: no JPEG files in root/<class>/<image> layout")
    return paths, labels, classes


def read_idx(path):
    """Reads one IDX file (plain or gzip) into a numpy array shaped by its header."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    # Magic: two zero bytes, a type code (0x08 = uint8) and the number of dimensions.
    if raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{path}: not a uint8 IDX file")
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_fashion_mnist(root):
    """The train split, as stoke-bench reads it by default: (images N x 28 x 28, labels N)."""
    images = read_idx(os.path.join(root, "train-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(root, "train-labels-idx1-ubyte.gz"))
    if len(images) != len(labels):
        raise ValueError(f"{root}: {len(images)} images but {len(labels)} labels")
    return images, labels


class Meter:
    """Throughput as stoke-bench computes it: images delivered after the first batch, divided
    by the time from the first to the last batch. The first batch pays for start-up (worker
    processes, JIT compilation, filling queues), which is reported separately."""

    def __init__(self):
        self.created = time.perf_counter()
        self.first = None
        self.last = None
        self.first_images = 0
        self.images = 0
        self.batches = 0

    def batch(self, images):
        now = time.perf_counter()
        if self.first is None:
            self.first = now
            self.first_images = images
        self.last = now
        self.images += images
        self.batches += 1

    def result(self):
        if self.batches < 2:
            raise RuntimeError("fewer than two batches delivered: nothing to time")
        active = self.last - self.first
        return {
            "images": self.images,
            "batches": self.batches,
            "images_per_s": (self.images - self.first_images) / active,
            "timed_s": active,
            "startup_s": self.first - self.created,
        }


def emit(peer, case, args, meter, versions, notes=""):
    """Prints the human-readable line and the JSON line run_peers.py reads (always last)."""
    r = meter.result()
    print(f"{peer} [{case}]: {r['images']} images in {r['batches']} batches, "
          f"{r['images_per_s']:,.1f} images/s, start-up {r['startup_s']:.2f} s")
    r.update({
        "peer": peer,
        "case": case,
        "batch": args.batch,
        "workers": args.workers,
        "epochs": args.epochs,
        "variant": args.variant,
        "versions": versions,
        "notes": notes,
    })
    print(json.dumps(r), flush=True)


def run(main):
    """Calls main(sys.argv[1:]) and exits with its status."""
    sys.exit(main(sys.argv[1:]))
