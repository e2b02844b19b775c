"""Peer: tf.data with tensorflow-cpu.

jpeg    from_tensor_slices over the (path, label) list of the image folder, shuffled each epoch;
        map with num_parallel_calls=workers: tf.io.read_file, tf.io.decode_jpeg(channels=3),
        a random-resized-crop window from tf.image.sample_distorted_bounding_box (area 0.08..1,
        aspect ratio 3/4..4/3, 10 attempts, whole image otherwise) cut with tf.slice and resized
        to 224x224 by tf.image.resize (bilinear, float32), tf.image.random_flip_left_right,
        ImageNet mean/std, transposed to CHW; then batch, prefetch(AUTOTUNE).
        --variant roi: the window is sampled on tf.io.extract_jpeg_shape and only it is
        decoded, by tf.io.decode_and_crop_jpeg (the way TensorFlow's ImageNet input pipelines
        do it); the rest is the same.
fmnist  from_tensor_slices over the in-memory arrays, shuffled each epoch (buffer = whole
        split); map: tf.pad by 4 with zeros, tf.image.random_crop back to 28x28,
        random_flip_left_right, (x/255 - 0.5)/0.5, CHW; then batch, prefetch(AUTOTUNE).

tf.data runs the map on its own thread pool, so `--workers` is the number of parallel map calls
and the size of that pool. Each call is kept to one thread (max_intra_op_parallelism=1), as a
DataLoader worker or a stoke worker is, so the peer uses `--workers` cores. The last batch of an
epoch is short (drop_remainder=False).
"""

import os

# Quiets TensorFlow's start-up chatter (CPU instruction notices, oneDNN notes) on stderr.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import peer_common as pc  # noqa: E402


def jpeg_dataset(args):
    paths, labels, _ = pc.list_image_folder(args.data)
    mean = tf.constant(pc.IMAGENET_MEAN, tf.float32)
    std = tf.constant(pc.IMAGENET_STD, tf.float32)
    no_boxes = tf.zeros([1, 0, 4], tf.float32)

    def crop_window(shape):
        # With no boxes given, the whole image is the box and min_object_covered=0 leaves
        # only the area and aspect-ratio constraints: RandomResizedCrop's sampling.
        begin, size, _ = tf.image.sample_distorted_bounding_box(
            shape, bounding_boxes=no_boxes, min_object_covered=0.0,
            aspect_ratio_range=pc.RRC_RATIO, area_range=pc.RRC_SCALE, max_attempts=10,
            use_image_if_no_bounding_boxes=True)
        return begin, size

    def load(path, label):
        data = tf.io.read_file(path)
        if args.variant == "roi":
            begin, size = crop_window(tf.io.extract_jpeg_shape(data))
            window = tf.stack([begin[0], begin[1], size[0], size[1]])
            image = tf.io.decode_and_crop_jpeg(data, window, channels=3)
        else:
            image = tf.io.decode_jpeg(data, channels=3)
            begin, size = crop_window(tf.shape(image))
            image = tf.slice(image, begin, size)
        image = tf.image.resize(image, [pc.CROP_SIZE, pc.CROP_SIZE], method="bilinear")
        image = tf.image.random_flip_left_right(image)
        image = (image * (1.0 / 255.0) - mean) / std
        return tf.transpose(image, [2, 0, 1]), label

    ds = tf.data.Dataset.from_tensor_slices((paths, np.array(labels, np.int32)))
    ds = ds.shuffle(len(paths), seed=args.seed, reshuffle_each_iteration=True)
    return ds.map(load, num_parallel_calls=args.workers)


def fmnist_dataset(args):
    images, labels = pc.load_fashion_mnist(args.data)
    pad = pc.FMNIST_PAD
    size = pc.FMNIST_SIZE

    def augment(image, label):
        image = tf.pad(image, [[pad, pad], [pad, pad], [0, 0]])
        image = tf.image.random_crop(image, [size, size, 1])
        image = tf.image.random_flip_left_right(image)
        image = (tf.cast(image, tf.float32) * (1.0 / 255.0) - pc.FMNIST_MEAN) / pc.FMNIST_STD
        return tf.transpose(image, [2, 0, 1]), label

    ds = tf.data.Dataset.from_tensor_slices((images[..., None], labels.astype(np.int32)))
    ds = ds.shuffle(len(images), seed=args.seed, reshuffle_each_iteration=True)
    return ds.map(augment, num_parallel_calls=args.workers)


def main(argv):
    args = pc.parse_args(argv, __doc__.split("\n\n")[0])
    if args.prepare:
        return 0
    tf.random.set_seed(args.seed)

    meter = pc.Meter()
    ds = jpeg_dataset(args) if args.case == "jpeg" else fmnist_dataset(args)
    ds = ds.batch(args.batch, drop_remainder=False).prefetch(tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.threading.private_threadpool_size = args.workers
    options.threading.max_intra_op_parallelism = 1
    ds = ds.with_options(options)

    for _ in range(args.epochs):
        for images, _labels in ds:
            meter.batch(images.shape[0])
    peer = "tf.data" if args.variant == "standard" else "tf.data roi"
    pc.emit(peer, args.case, args, meter, {
        "tensorflow-cpu": tf.__version__,
        "numpy": np.__version__,
    })
    return 0


if __name__ == "__main__":
    pc.run(main)
