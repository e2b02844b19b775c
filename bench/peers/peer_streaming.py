"""Peer: MosaicML Streaming's StreamingDataset read by PyTorch's DataLoader, on the shards'
samples converted to Streaming's MDS format.

Streaming cannot read tar shards, so --prepare converts them once (untimed): MDSWriter with
columns {"jpg": "bytes", "cls": "int"}, no compression and size_limit 16 MiB, the size of
stoke-pack's shards. Each image is stored as the JPEG bytes it has in the tar shard (MDS's own
"jpeg" encoding would decode and re-encode it).

--data is the MDS folder (read in place: `local=DIR`, no remote) or an s3:// prefix
(`remote=s3://bucket/prefix`, `local=--cache-dir`, made empty first so every run downloads
the shards). Streaming's S3 client is boto3 with `endpoint_url=$S3_ENDPOINT_URL`; it is set
from AWS_ENDPOINT_URL when missing, and boto3 takes the credentials from the AWS_* variables.

    StreamingDataset(shuffle=True, shuffle_seed=S, batch_size=64, defaults otherwise:
                     shuffle_algo py1e, predownload 8 x batch, no cache limit)
      __getitem__: PIL decode + convert("RGB"), RandomResizedCrop(224) + RandomHorizontalFlip()
                   + ToTensor() + Normalize
    DataLoader(dataset, batch_size=64, num_workers=2, drop_last=False, pin_memory=False)

Streaming partitions the sample space over the workers and reshuffles it every epoch. The
workers are started anew each epoch (DataLoader's default). Reading from S3 sometimes fails in
a worker that reads a sample of a shard that is not fully there ("IndexError: Relative sample
index N is not present in the shard.NNNNN.mds file", or bytes PIL cannot identify). That
happened more often with persistent_workers=True. bench/peers/README.md has the details.
"""

import os

import numpy as np
import PIL
import streaming
import torch
import torchvision
from streaming import MDSWriter, StreamingDataset
from streaming.base.util import clean_stale_shared_memory
from torch.utils.data import DataLoader

import peer_common as pc

SHARD_BYTES = 1 << 24


class TrainSamples(StreamingDataset):
    """MDS samples decoded and augmented as torchvision's ImageFolder pipeline does it."""

    def __init__(self, transform, **kwargs):
        super().__init__(**kwargs)
        self.transform = transform

    def __getitem__(self, index):
        sample = super().__getitem__(index)
        return self.transform(pc.decode_rgb(sample["jpg"])), sample["cls"]


def prepare(args):
    pc.fresh_dir(args.out)
    n = 0
    with MDSWriter(out=args.out, columns={"jpg": "bytes", "cls": "int"}, compression=None,
                   size_limit=SHARD_BYTES) as writer:
        for path in pc.shard_paths(args.shards):
            for _key, image, label in pc.read_shard(path):
                writer.write({"jpg": image, "cls": label})
                n += 1
    print(f"streaming: wrote {n} samples to {args.out}")


def make_dataset(args):
    kwargs = {"shuffle": True, "shuffle_seed": args.seed, "batch_size": args.batch}
    if args.data.startswith("s3://"):
        endpoint, _key, _secret, _region = pc.s3_settings()
        os.environ.setdefault("S3_ENDPOINT_URL", endpoint)
        if not args.cache_dir:
            raise SystemExit("reading from S3 needs --cache-dir")
        kwargs.update(remote=args.data, local=pc.fresh_dir(args.cache_dir))
    else:
        kwargs.update(local=args.data)
    return TrainSamples(pc.torchvision_train_transform(), **kwargs)


def main(argv):
    args = pc.parse_shard_args(argv, __doc__.split("\n\n")[0])
    if args.prepare:
        prepare(args)
        return 0
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    # A run that was killed leaves Streaming's shared-memory segments behind.
    clean_stale_shared_memory()
    meter = pc.Meter()
    loader = DataLoader(make_dataset(args), batch_size=args.batch, num_workers=args.workers,
                        drop_last=False, pin_memory=False)
    for _ in range(args.epochs):
        for images, _labels in loader:
            meter.batch(images.shape[0])
    source = "s3" if args.data.startswith("s3://") else "local"
    pc.emit("streaming", source, args, meter, {
        "mosaicml-streaming": streaming.__version__,
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "pillow": PIL.__version__,
        "numpy": np.__version__,
    })
    return 0


if __name__ == "__main__":
    pc.run(main)
