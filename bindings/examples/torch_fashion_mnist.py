"""A PyTorch training loop over Fashion-MNIST with stoke in place of torch.utils.data.DataLoader.

    python torch_fashion_mnist.py [--steps N] [--workers W] [--batch B] [--loader stoke|torch]

With ``--loader torch`` the same loop reads the same IDX files through a torch Dataset and
DataLoader (pad-2 random crop + flip done in Python per sample), for comparison. Prints the
mean loss of every 10 steps and images per second at the end.
"""

import argparse
import gzip
import time

import numpy as np
import torch
from torch import nn

import stoke

DATA = "/usr/share/datasets/fashion-mnist"


def model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 10))


def stoke_batches(args):
    loader = stoke.Loader(DATA, batch=args.batch, workers=args.workers, dtype="float32",
                          layout="nchw", mean=[0.5], std=[0.5], seed=args.seed)
    while True:
        for batch in loader:
            # Zero-copy views of the batch; they keep its slot until they are dropped.
            yield torch.from_dlpack(batch.pixels[0]), torch.from_dlpack(batch.labels).long()


class IdxDataset(torch.utils.data.Dataset):
    """The same data and augmentation as stoke's default for small images, in Python."""

    def __init__(self):
        with gzip.open(f"{DATA}/train-images-idx3-ubyte.gz") as f:
            self.images = np.frombuffer(f.read()[16:], np.uint8).reshape(-1, 28, 28)
        with gzip.open(f"{DATA}/train-labels-idx1-ubyte.gz") as f:
            self.labels = np.frombuffer(f.read()[8:], np.uint8)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        padded = np.pad(self.images[i], 4)
        y, x = np.random.randint(0, 9, 2)
        image = padded[y:y + 28, x:x + 28]
        if np.random.rand() < 0.5:
            image = image[:, ::-1]
        t = (torch.from_numpy(image.astype(np.float32)) / 255 - 0.5) / 0.5
        return t.unsqueeze(0), int(self.labels[i])


def torch_batches(args):
    loader = torch.utils.data.DataLoader(IdxDataset(), batch_size=args.batch, shuffle=True,
                                         num_workers=args.workers, drop_last=True,
                                         persistent_workers=args.workers > 0)
    while True:
        for x, y in loader:
            yield x, y


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--loader", choices=["stoke", "torch"], default="stoke")
    args = p.parse_args()
    torch.manual_seed(args.seed)
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    batches = stoke_batches(args) if args.loader == "stoke" else torch_batches(args)
    next(batches)  # start-up (worker processes) is not part of the rate
    start = time.perf_counter()
    window = []
    for step in range(1, args.steps + 1):
        x, y = next(batches)
        loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        window.append(loss.item())
        if step % 10 == 0:  # the mean of the last 10 steps: single batches are noisy
            print(f"step {step} loss {sum(window) / len(window):.4f}", flush=True)
            window.clear()
    elapsed = time.perf_counter() - start
    print(f"{args.loader}: {args.steps * args.batch / elapsed:.1f} img/s over {args.steps} steps")


if __name__ == "__main__":
    main()
