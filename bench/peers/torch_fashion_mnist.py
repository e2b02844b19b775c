#!/usr/bin/python3
"""Peer benchmark: PyTorch's torch.utils.data.DataLoader on stoke's Fashion-MNIST work.

What it measures
    The same work as `stoke-bench` with its defaults (Fashion-MNIST train split, 28x28,
    `--augment default`): every sample is padded with 4 pixels of zeros on each side,
    randomly cropped back to 28x28 and flipped left-right with probability 0.5. Output is
    uint8 (1x28x28 per sample) with an int label, no normalisation - the same as stoke's.
    Samples go through a plain map-style Dataset whose __getitem__ does the augmentation one
    sample at a time with numpy (np.pad + slicing + np.flip), the way a typical DataLoader user
    writes it, and DataLoader's default collate stacks them into a batch of 256.

    The data is read directly from Debian's dataset-fashion-mnist IDX gzip files
    (/usr/share/datasets/fashion-mnist); torchvision is not used.

    Throughput is computed the way stoke computes Stats::samples_per_s: samples delivered after
    the first batch, divided by the time from the first to the last batch, over all epochs.
    startup_s is from the start of construction (reading the IDX files, building the Dataset
    and DataLoader) to the first delivered batch, like stoke's "construction to first batch".
    The consumer only counts the batches; it does not touch the pixels.

    Differences from stoke worth knowing when comparing numbers:
      * drop_last=False: the last batch of an epoch is short (60000 = 234 x 256 + 96), whereas
        stoke's default pads it to a full batch and counts the padding in its samples.
      * persistent_workers=True when --workers > 0, so worker start-up is paid once (in
        startup_s), not once per epoch.

How to run
    /usr/bin/python3 bench/peers/torch_fashion_mnist.py --workers 2 --epochs 2 --json

    Use Debian's python (/usr/bin/python3) with python3-torch and python3-numpy installed:
        apt-get install --no-install-recommends python3-torch python3-numpy
    A pyenv or venv python3 earlier on PATH will not see Debian's packages.
    With --json the last line of output is one JSON object:
        {"peer": "torch.utils.data.DataLoader", "torch": ..., "workers": N, "batch": B,
         "epochs": E, "samples": ..., "samples_per_s": ..., "startup_s": ...}
"""

import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path, header_bytes, magic):
    """Reads one gzip'd IDX file; returns a uint8 numpy array shaped by its header."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    found = int.from_bytes(raw[0:4], "big")
    if found != magic:
        raise ValueError(f"{path}: IDX magic {found:#x}, expected {magic:#x}")
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range((header_bytes - 4) // 4)]
    return np.frombuffer(raw, dtype=np.uint8, offset=header_bytes).reshape(dims)


class FashionMnistTrain(Dataset):
    """Fashion-MNIST train split with stoke's default 28x28 training augmentation."""

    def __init__(self, root, pad=4, size=28):
        # 16-byte header (magic, count, rows, cols) for images, 8 (magic, count) for labels.
        self.images = read_idx(os.path.join(root, "train-images-idx3-ubyte.gz"), 16, 0x803)
        self.labels = read_idx(os.path.join(root, "train-labels-idx1-ubyte.gz"), 8, 0x801)
        if len(self.images) != len(self.labels):
            raise ValueError(f"{len(self.images)} images but {len(self.labels)} labels")
        self.pad = pad
        self.size = size

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        # np.random is safe to use here: DataLoader reseeds numpy's global generator in every
        # worker (torch >= 1.9), so workers do not repeat each other's crops and flips.
        img = np.pad(self.images[i], self.pad)                     # 36x36, zeros around
        span = img.shape[0] - self.size                            # 8: offsets 0..8
        y = np.random.randint(0, span + 1)
        x = np.random.randint(0, span + 1)
        img = img[y:y + self.size, x:x + self.size]                # random 28x28 crop
        if np.random.rand() < 0.5:
            img = np.flip(img, axis=1)                             # horizontal flip
        return torch.from_numpy(np.ascontiguousarray(img)).unsqueeze(0), int(self.labels[i])


def worker_init_fn(worker_id):
    # One intra-op thread per worker: with N worker processes on a small machine (2 cores
    # here) the default torch thread pool in each worker would oversubscribe the cores.
    # stoke's workers are single-threaded too.
    torch.set_num_threads(1)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=DEFAULT_DATA, help=f"IDX folder (default {DEFAULT_DATA})")
    p.add_argument("--workers", type=int, default=2, help="DataLoader num_workers (default 2)")
    p.add_argument("--epochs", type=int, default=1, help="epochs to run (default 1)")
    p.add_argument("--batch", type=int, default=256, help="batch size (default 256)")
    p.add_argument("--seed", type=int, default=0, help="shuffle/augmentation seed (default 0)")
    p.add_argument("--json", action="store_true", help="end the output with one JSON object")
    a = p.parse_args(argv)
    if a.workers < 0 or a.epochs < 1 or a.batch < 1:
        p.error("--workers must be >= 0, --epochs and --batch >= 1")
    return a


def main(argv):
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)

    created = time.perf_counter()
    dataset = FashionMnistTrain(args.data)
    loaded = time.perf_counter()
    loader = DataLoader(
        dataset,
        batch_size=args.batch,
        shuffle=True,
        num_workers=args.workers,
        drop_last=False,
        persistent_workers=args.workers > 0,
        pin_memory=False,
        worker_init_fn=worker_init_fn if args.workers > 0 else None,
    )

    samples = 0
    batches = 0
    first_batch = 0
    first = last = None
    for _ in range(args.epochs):
        for images, labels in loader:
            now = time.perf_counter()
            if first is None:
                first = now
                first_batch = len(labels)
            last = now
            samples += len(labels)
            batches += 1

    active_s = last - first
    samples_per_s = (samples - first_batch) / active_s if active_s > 0 else 0.0
    startup_s = first - created

    print(f"torch.utils.data.DataLoader (torch {torch.__version__}): {len(dataset)} samples x "
          f"{args.epochs} epochs, batch {args.batch}, workers {args.workers}"
          f"{' (in-process)' if args.workers == 0 else ''}")
    print(f"  delivered  {batches} batches, {samples} samples")
    print(f"  throughput {samples_per_s:,.0f} samples/s")
    print(f"  startup    {startup_s:.3f} s (construction to first batch; "
          f"reading the IDX files {loaded - created:.3f} s)")
    if args.json:
        print(json.dumps({
            "peer": "torch.utils.data.DataLoader",
            "torch": torch.__version__,
            "workers": args.workers,
            "batch": args.batch,
            "epochs": args.epochs,
            "samples": samples,
            "samples_per_s": samples_per_s,
            "startup_s": startup_s,
        }))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
