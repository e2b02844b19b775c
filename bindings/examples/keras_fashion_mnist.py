"""Keras 3 model.fit fed by a keras.utils.PyDataset that wraps a stoke loader.

    KERAS_BACKEND=jax python keras_fashion_mnist.py [--steps N] [--workers W] [--batch B]

Runs on the JAX backend by default (CPU is enough). Prints the mean loss of every 10 steps.
"""

import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402

import stoke  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist"


class StokeDataset(keras.utils.PyDataset):
    """A stoke loader as a Keras dataset. stoke delivers an epoch's batches in order, which is
    how model.fit asks for them (index 0, 1, ... each epoch); index 0 starts the next epoch."""

    def __init__(self, loader: stoke.Loader, **kwargs):
        super().__init__(**kwargs)
        self.loader = loader
        self.epoch = -1
        self.batches = None

    def __len__(self):
        return len(self.loader)

    def __getitem__(self, index):
        if index == 0 or self.batches is None:
            self.epoch += 1
            self.loader.set_epoch(self.epoch)
            self.batches = iter(self.loader)
        batch = next(self.batches)
        # Zero-copy NumPy views; Keras copies them into the backend's arrays.
        return np.from_dlpack(batch.pixels[0]), np.from_dlpack(batch.labels)


class MeanLoss(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.losses = []

    def on_train_batch_end(self, batch, logs=None):
        self.losses.append(float(logs["loss"]))
        if len(self.losses) % 10 == 0:
            # Keras reports the running mean since the epoch began; turn it back into steps.
            n = len(self.losses)
            last = self.losses[-1] * n - (self.losses[-11] * (n - 10) if n > 10 else 0)
            print(f"step {n} loss {last / 10:.4f}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args()
    loader = stoke.Loader(DATA, batch=args.batch, workers=args.workers, dtype="float32",
                          layout="nhwc", mean=[0.5], std=[0.5])
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input((28, 28, 1)),
        keras.layers.Conv2D(32, 3, padding="same", use_bias=False),
        keras.layers.BatchNormalization(), keras.layers.ReLU(), keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(64, 3, padding="same", use_bias=False),
        keras.layers.BatchNormalization(), keras.layers.ReLU(), keras.layers.MaxPooling2D(),
        keras.layers.Flatten(), keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.SGD(0.01, momentum=0.9),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(StokeDataset(loader), epochs=1, steps_per_epoch=args.steps, verbose=0,
              callbacks=[MeanLoss()])


if __name__ == "__main__":
    main()
