"""Peer: litdata's StreamingDataset read by its StreamingDataLoader, on the shards' samples
converted with litdata.optimize.

litdata cannot read tar shards, so --prepare converts them once (untimed):
litdata.optimize(fn, inputs=the shard paths, chunk_bytes=16 MiB, the size of stoke-pack's
shards, num_workers=1), where fn yields {"jpg": the JPEG bytes as they are in the shard,
"cls": the label} for each sample of a shard. Bytes are stored as they are (litdata's bytes
serializer), so nothing is re-encoded.

--data is the optimized folder, or an s3:// prefix with `cache_dir=--cache-dir` (made empty
first, so every run downloads the chunks). litdata fetches the index with boto3 and the chunks
with obstore; both get the endpoint and the credentials from storage_options, filled from the
AWS_* settings stoke reads. obstore refuses plain-http endpoints unless its client option
allow_http is set, and litdata builds its obstore client from a fixed set of options
(litdata.streaming.downloader._OBSTORE_CLIENT_OPTIONS) that lacks it, so for an http://
endpoint such as the local SeaweedFS this adds allow_http to that set before the workers
start; nothing else of litdata's is changed.

    StreamingDataset(input_dir, shuffle=True, seed=S, defaults otherwise: chunk order shuffled
                     over the workers, items shuffled within windows of 256, 2 chunks
                     downloaded ahead)
      __getitem__: PIL decode + convert("RGB"), RandomResizedCrop(224) + RandomHorizontalFlip()
                   + ToTensor() + Normalize
    StreamingDataLoader(dataset, batch_size=64, num_workers=2, drop_last=False,
                        pin_memory=False)

Workers are started anew each epoch, as StreamingDataLoader does by default.
"""

import litdata
import numpy as np
import PIL
import torch
import torchvision
from litdata import StreamingDataLoader, StreamingDataset

import peer_common as pc

CHUNK_BYTES = 1 << 24


class TrainSamples(StreamingDataset):
    """litdata samples decoded and augmented as torchvision's ImageFolder pipeline does it."""

    def __init__(self, image_transform, **kwargs):
        super().__init__(**kwargs)
        self.image_transform = image_transform

    def __getitem__(self, index):
        sample = super().__getitem__(index)
        return self.image_transform(pc.decode_rgb(sample["jpg"])), sample["cls"]


def shard_samples(path):
    for _key, image, label in pc.read_shard(path):
        yield {"jpg": image, "cls": label}


def prepare(args):
    pc.fresh_dir(args.out)
    litdata.optimize(fn=shard_samples, inputs=pc.shard_paths(args.shards),
                     output_dir=args.out, chunk_bytes=CHUNK_BYTES, num_workers=1)
    print(f"litdata: wrote {args.out}")


def allow_plain_http():
    """Lets obstore, which litdata downloads chunks with, talk to an http:// endpoint."""
    from litdata.streaming import downloader
    downloader._OBSTORE_CLIENT_OPTIONS = dict(downloader._OBSTORE_CLIENT_OPTIONS,
                                              allow_http="true")


def make_dataset(args):
    kwargs = {"input_dir": args.data, "shuffle": True, "seed": args.seed}
    if args.data.startswith("s3://"):
        endpoint, key, secret, region = pc.s3_settings()
        if not args.cache_dir:
            raise SystemExit("reading from S3 needs --cache-dir")
        if endpoint.startswith("http://"):
            allow_plain_http()
        kwargs.update(cache_dir=pc.fresh_dir(args.cache_dir), storage_options={
            "endpoint_url": endpoint, "aws_access_key_id": key,
            "aws_secret_access_key": secret, "region_name": region})
    return TrainSamples(pc.torchvision_train_transform(), **kwargs)


def main(argv):
    args = pc.parse_shard_args(argv, __doc__.split("\n\n")[0])
    if args.prepare:
        prepare(args)
        return 0
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    # Like torch's DataLoader workers, one intra-op thread per worker process.
    torch.set_num_threads(1)
    meter = pc.Meter()
    loader = StreamingDataLoader(make_dataset(args), batch_size=args.batch,
                                 num_workers=args.workers, drop_last=False, pin_memory=False)
    for _ in range(args.epochs):
        for images, _labels in loader:
            meter.batch(images.shape[0])
    source = "s3" if args.data.startswith("s3://") else "local"
    pc.emit("litdata", source, args, meter, {
        "litdata": litdata.__version__,
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "pillow": PIL.__version__,
        "numpy": np.__version__,
    })
    return 0


if __name__ == "__main__":
    pc.run(main)
