"""Peer: PyTorch's DataLoader with worker processes.

jpeg    torchvision.datasets.ImageFolder (PIL decode, converted to RGB) with
        RandomResizedCrop(224) (scale 0.08..1, ratio 3/4..4/3, bilinear), RandomHorizontalFlip(),
        ToTensor(), Normalize(ImageNet mean/std): float32 CHW per image, collated into batches.
fmnist  a map-style Dataset over the in-memory numpy array: np.pad by 4 with zeros, a random
        28x28 crop, a flip with p=0.5 and (x/255 - 0.5)/0.5, per sample, collated into batches.

Both: shuffle=True, drop_last=False (the last batch of an epoch is short), pin_memory=False,
persistent_workers=True so worker start-up is paid once, before the first batch. DataLoader
already limits each worker to one intra-op thread, so two workers use two cores.
"""

import numpy as np
import PIL
import torch
import torchvision
from torch.utils.data import DataLoader, Dataset
from torchvision import datasets

import peer_common as pc


class FashionMnist(Dataset):
    """Fashion-MNIST from memory with the training augmentation, one sample at a time."""

    def __init__(self, images, labels):
        self.images = images
        self.labels = labels.astype(np.int64)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        # numpy's global generator is reseeded in every worker by DataLoader (torch >= 1.9),
        # so the workers do not repeat each other's crops and flips.
        img = np.pad(self.images[i], pc.FMNIST_PAD)
        y, x = np.random.randint(0, 2 * pc.FMNIST_PAD + 1, size=2)
        img = img[y:y + pc.FMNIST_SIZE, x:x + pc.FMNIST_SIZE]
        if np.random.rand() < 0.5:
            img = img[:, ::-1]
        out = (img.astype(np.float32) * (1.0 / 255.0) - pc.FMNIST_MEAN) / pc.FMNIST_STD
        return torch.from_numpy(out[None]), self.labels[i]


def make_dataset(args):
    if args.case == "jpeg":
        return datasets.ImageFolder(args.data, transform=pc.torchvision_train_transform())
    return FashionMnist(*pc.load_fashion_mnist(args.data))


def main(argv):
    args = pc.parse_args(argv, __doc__.split("\n\n")[0])
    if args.prepare:
        return 0
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)

    meter = pc.Meter()
    loader = DataLoader(make_dataset(args), batch_size=args.batch, shuffle=True,
                        num_workers=args.workers, persistent_workers=True,
                        drop_last=False, pin_memory=False)
    for _ in range(args.epochs):
        for images, _labels in loader:
            meter.batch(images.shape[0])
    pc.emit("torch", args.case, args, meter, {
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "pillow": PIL.__version__,
        "numpy": np.__version__,
    })
    return 0


if __name__ == "__main__":
    pc.run(main)
