"""Peer: webdataset's WebDataset pipeline read by PyTorch's DataLoader, on WebDataset tar shards.

--data is a brace pattern of shards: local paths (/data/train-{000000..000010}.tar) or S3 keys
(s3://bucket/train-{000000..000010}.tar). webdataset has no S3 client of its own; it reads
every URL it cannot open itself through a "pipe:" command that writes the shard to stdout, so
s3:// keys become `pipe:curl -s -S -f --aws-sigv4 aws:amz:REGION:s3 --user KEY:SECRET
ENDPOINT/bucket/key`, from the AWS_* settings stoke reads. That is the form webdataset's
documentation gives for object stores (with `aws s3 cp` or curl); curl signs the requests
itself, so no SDK is involved.

The pipeline, as webdataset's documentation builds one for training:

    WebDataset(urls, shardshuffle=100, detshuffle=True, seed=S,
               nodesplitter=single_node_only, workersplitter=split_by_worker)
      .shuffle(1000)                      sample shuffle buffer (--shuffle-buffer)
      .decode("pil")                      PIL decode, converted to RGB; cls to int
      .to_tuple("jpg", "cls")
      .map_tuple(RandomResizedCrop(224) + RandomHorizontalFlip() + ToTensor() + Normalize, int)
      .batched(64, partial=True)          batches are made in the workers
    WebLoader(dataset, batch_size=None, num_workers=2, persistent_workers=True)

split_by_worker gives each worker every second shard; each worker shuffles its own shards in
an order that changes every epoch (detshuffle: seed + epoch), streams them through its own
1000-sample buffer and makes its own batches, so each worker ends an epoch with a short batch.
With 11 shards one worker has 6 and the other 5, and the last part of each epoch is decoded
by one worker alone; that is how split_by_worker divides the work.
"""

import numpy as np
import PIL
import torch
import torchvision
import webdataset as wds

import peer_common as pc

# Shards in webdataset's shard shuffle buffer: more than there are, so the order is a full
# permutation, as stoke's is.
SHARD_SHUFFLE = 100


def shard_urls(data):
    """webdataset's URL pattern for --data: the pattern itself for files, a curl pipe for S3."""
    if not data.startswith("s3://"):
        return data
    endpoint, key, secret, region = pc.s3_settings()
    return (f"pipe:curl -s -S -f --aws-sigv4 aws:amz:{region}:s3 --user {key}:{secret} "
            f"{endpoint}/{data[len('s3://'):]}")


def make_loader(args):
    dataset = (
        wds.WebDataset(shard_urls(args.data), shardshuffle=SHARD_SHUFFLE, detshuffle=True,
                       seed=args.seed, nodesplitter=wds.single_node_only,
                       workersplitter=wds.split_by_worker)
        .shuffle(args.shuffle_buffer)
        .decode("pil")
        .to_tuple("jpg", "cls")
        .map_tuple(pc.torchvision_train_transform(), int)
        .batched(args.batch, partial=True)
    )
    return wds.WebLoader(dataset, batch_size=None, num_workers=args.workers,
                         persistent_workers=True, pin_memory=False)


def main(argv):
    args = pc.parse_shard_args(argv, __doc__.split("\n\n")[0])
    if args.prepare:
        return 0                          # reads the tar shards as they are
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    meter = pc.Meter()
    loader = make_loader(args)
    for _ in range(args.epochs):
        for images, _labels in loader:
            meter.batch(images.shape[0])
    source = "s3" if args.data.startswith("s3://") else "local"
    pc.emit("wds", source, args, meter, {
        "webdataset": wds.__version__ if hasattr(wds, "__version__") else None,
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "pillow": PIL.__version__,
        "numpy": np.__version__,
    }, notes=f"shuffle buffer {args.shuffle_buffer}")
    return 0


if __name__ == "__main__":
    pc.run(main)
