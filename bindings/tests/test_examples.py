"""The package as installed, and the examples in bindings/examples training with it."""

import os

import pytest

import stoke
from helpers import need


def test_devices_lists_gpus_without_touching_cuda():
    gpus = stoke.devices()
    assert isinstance(gpus, list)
    for g in gpus:
        assert {"index", "name", "uuid", "pci_bus_id", "memory_bytes"} <= set(g)


def test_the_installed_package_carries_its_worker():
    # The library finds it beside itself: no environment variable, no PATH lookup.
    package = os.path.dirname(stoke.__file__)
    worker = os.path.join(package, "libexec", "stoke", "stoke-worker")
    assert os.access(worker, os.X_OK)


def test_the_pytorch_example_trains_with_the_loss_going_down():
    need("torch")
    import subprocess
    import sys
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "torch_fashion_mnist.py")
    out = subprocess.run([sys.executable, example, "--steps", "60", "--workers", "1"],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    losses = [float(line.split()[-1]) for line in out.splitlines() if line.startswith("step ")]
    assert len(losses) == 6, out
    assert losses[-1] < losses[0] * 0.8, out


def test_the_recipe_example_trains_resnet18_on_stokes_mixed_soft_labels(tmp_path):
    # torchvision's v2 recipe's data side (TrivialAugmentWide, erasing, MixUp/CutMix, label
    # smoothing, repeats 4) at 64 px: the loss goes down and the held-out crops are recognized
    # far above chance.
    need("torch")
    need("torchvision")
    import subprocess
    import sys
    mkdata = os.environ.get("STOKE_MKDATA")
    if not mkdata:
        pytest.skip("STOKE_MKDATA names no stoke-mkdata (ctest sets it)")
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "torch_recipe.py")
    out = subprocess.run([sys.executable, example, "--make-data", str(tmp_path), "--size", "64",
                          "--eval-resize", "73", "--eval-crop", "64", "--epochs", "8",
                          "--workers", "1"],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    epochs = [line.split() for line in out.splitlines() if line.startswith("epoch ")]
    assert len(epochs) == 8, out
    losses = [float(e[3]) for e in epochs]
    accuracy = float(epochs[-1][5])
    chance = float(out.split("chance ")[-1])
    assert losses[-1] < losses[0] * 0.8, out
    assert accuracy > 3 * chance, out


def test_the_detection_example_trains_faster_rcnn_with_the_loss_going_down():
    need("torch")
    need("torchvision")
    import subprocess
    import sys
    data = os.environ.get("STOKE_DETECTION_SET")
    if not data:
        pytest.skip("STOKE_DETECTION_SET names no detection set (ctest sets it)")
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "torch_detection.py")
    out = subprocess.run([sys.executable, example, "--data", data, "--steps", "30", "--batch",
                          "2", "--size", "224", "--workers", "1"],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    losses = [float(line.split()[-1]) for line in out.splitlines() if line.startswith("step ")]
    assert len(losses) == 3, out
    assert losses[-1] < losses[0] * 0.8, out


def test_the_keras_example_fits_with_the_loss_going_down():
    os.environ.setdefault("KERAS_BACKEND", "jax")  # before Keras is first imported
    need("jax")
    need("keras")
    import subprocess
    import sys
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "keras_fashion_mnist.py")
    env = dict(os.environ, KERAS_BACKEND="jax", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, example, "--steps", "40", "--workers", "1"], env=env,
                         capture_output=True, text=True, timeout=600, check=True).stdout
    losses = [float(line.split()[-1]) for line in out.splitlines() if line.startswith("step ")]
    assert len(losses) == 4, out
    assert losses[-1] < losses[0] * 0.8, out
