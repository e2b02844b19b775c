"""Peer: NVIDIA DALI, CPU-only pipeline (device_id=None: no GPU is opened or needed).

jpeg    fn.readers.file over the image folder (labels from the sorted class folders,
        random_shuffle=True with DALI's default shuffle buffer, pad_last_batch=True),
        fn.decoders.image(device="cpu", output_type=RGB), fn.random_resized_crop(224x224,
        random_area 0.08..1, random_aspect_ratio 3/4..4/3, linear interpolation),
        fn.crop_mirror_normalize(ImageNet mean/std, float32, CHW,
        mirror=fn.random.coin_flip(probability=0.5)).
        --variant roi: fn.decoders.image_random_crop (same area and aspect-ratio ranges, 10
        attempts) decodes only the crop's window, fn.resize to 224x224 (linear, antialiased),
        then the same fn.crop_mirror_normalize.
fmnist  fn.external_source fed by a Python callable that gathers each batch from the in-memory
        array in a per-epoch random order (last batch short); fn.slice with a random integer
        anchor in -4..4 on each axis and out_of_bounds_policy="pad" (zeros): the same as padding
        by 4 and cropping 28x28 at a random offset; then fn.crop_mirror_normalize
        (mean 127.5, std 127.5, float32, CHW, random mirror).

num_threads=`--workers`: DALI runs its CPU operators on a pool of threads. The pipeline is run
with pipe.run(): ceil(N / batch) iterations per epoch for jpeg, until the source ends the
epoch for fmnist. In the jpeg case DALI's reader pads the last batch of an epoch with copies of
its last sample (as stoke pads it), and those rows are counted, as stoke counts its padding.
"""

import math

import numpy as np
import nvidia.dali as dali
from nvidia.dali import fn, pipeline_def, types

import peer_common as pc


def jpeg_pipeline(args):
    @pipeline_def(batch_size=args.batch, num_threads=args.workers, device_id=None,
                  seed=args.seed)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=args.data, random_shuffle=True,
                                        pad_last_batch=True, name="Reader")
        if args.variant == "roi":
            images = fn.decoders.image_random_crop(jpegs, device="cpu", output_type=types.RGB,
                                                   random_area=list(pc.RRC_SCALE),
                                                   random_aspect_ratio=list(pc.RRC_RATIO),
                                                   num_attempts=10)
            images = fn.resize(images, size=[pc.CROP_SIZE, pc.CROP_SIZE])
        else:
            images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
            images = fn.random_resized_crop(images, size=[pc.CROP_SIZE, pc.CROP_SIZE],
                                            random_area=list(pc.RRC_SCALE),
                                            random_aspect_ratio=list(pc.RRC_RATIO))
        images = fn.crop_mirror_normalize(
            images, dtype=types.FLOAT, output_layout="CHW",
            mean=[m * 255.0 for m in pc.IMAGENET_MEAN],
            std=[s * 255.0 for s in pc.IMAGENET_STD],
            mirror=fn.random.coin_flip(probability=0.5))
        return images, labels

    p = pipe()
    p.build()
    return p, p.epoch_size("Reader")


class FashionMnistSource:
    """Batches of Fashion-MNIST for fn.external_source, reshuffled every epoch."""

    def __init__(self, images, labels, batch, seed):
        self.images = images[..., None]            # N x 28 x 28 x 1, layout HWC
        self.labels = labels.astype(np.int32)
        self.batch = batch
        self.rng = np.random.default_rng(seed)
        self.epoch = -1
        self.order = None

    def __call__(self, info):
        if info.epoch_idx != self.epoch:
            self.epoch = info.epoch_idx
            self.order = self.rng.permutation(len(self.images))
        start = info.iteration * self.batch
        if start >= len(self.images):
            raise StopIteration
        idx = self.order[start:start + self.batch]
        return self.images[idx], self.labels[idx]


def fmnist_pipeline(args):
    images, labels = pc.load_fashion_mnist(args.data)
    source = FashionMnistSource(images, labels, args.batch, args.seed)
    pad = pc.FMNIST_PAD
    size = pc.FMNIST_SIZE

    @pipeline_def(batch_size=args.batch, num_threads=args.workers, device_id=None,
                  seed=args.seed)
    def pipe():
        images, labels = fn.external_source(source=source, num_outputs=2, batch=True,
                                            batch_info=True, layout=["HWC", ""])
        # An integer anchor is absolute; with "pad" the window may leave the image, and what
        # lies outside reads as zeros.
        # `values` draws uniformly from the listed integers; an integer `range` would round a
        # continuous draw and give the two end offsets half the weight of the others.
        anchor = fn.random.uniform(values=list(range(-pad, pad + 1)), shape=[2],
                                   dtype=types.INT32)
        images = fn.slice(images, anchor, np.array([size, size], np.int32), axis_names="HW",
                          out_of_bounds_policy="pad", fill_values=0)
        images = fn.crop_mirror_normalize(
            images, dtype=types.FLOAT, output_layout="CHW",
            mean=[pc.FMNIST_MEAN * 255.0], std=[pc.FMNIST_STD * 255.0],
            mirror=fn.random.coin_flip(probability=0.5))
        return images, labels

    p = pipe()
    p.build()
    return p


def main(argv):
    args = pc.parse_args(argv, __doc__.split("\n\n")[0])
    if args.prepare:
        return 0

    meter = pc.Meter()
    if args.case == "jpeg":
        p, size = jpeg_pipeline(args)
        iterations = math.ceil(size / args.batch)
        for _ in range(args.epochs):
            for _ in range(iterations):
                images, _labels = p.run()
                meter.batch(len(images))
    else:
        p = fmnist_pipeline(args)
        for _ in range(args.epochs):
            # The source ends an epoch by raising StopIteration; DALI passes it on once the
            # batches before it are delivered, and reset() starts the next epoch.
            while True:
                try:
                    images, _labels = p.run()
                except StopIteration:
                    p.reset()
                    break
                meter.batch(len(images))
    peer = "DALI" if args.variant == "standard" else "DALI roi"
    pc.emit(peer, args.case, args, meter, {
        "nvidia-dali": dali.__version__,
        "numpy": np.__version__,
    })
    return 0


if __name__ == "__main__":
    pc.run(main)
