"""Detection training with stoke: torchvision's Faster R-CNN (MobileNetV3-Large FPN, random
weights) on a COCO-format set, its boxes moved with the pixels by stoke's workers.

    python torch_detection.py --data DIR/instances.json [--steps N] [--batch B] [--size S]

Any COCO instances file works (``image_root=`` if its images are elsewhere); the small set of
real photographs that ``bench/make_detection_set.py`` writes is the one the tests use. Prints
the mean loss of every 10 steps and images per second at the end. CPU only.
"""

import argparse
import json
import time

import torch
import torchvision

import stoke


def targets_of(batch):
    """The batch's real samples (valid == 1) as torchvision detection targets: boxes in output
    pixels and labels 1..C (0 is torchvision's background)."""
    valid = torch.from_dlpack(batch.valid).bool()
    boxes = torch.from_dlpack(batch.boxes[0])
    classes = torch.from_dlpack(batch.box_classes[0])
    counts = torch.from_dlpack(batch.box_counts[0])
    keep = [i for i in range(batch.size) if valid[i]]
    targets = [{"boxes": boxes[i, :counts[i]].clone(),
                "labels": classes[i, :counts[i]].long() + 1} for i in keep]
    return keep, targets


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="a COCO instances JSON file")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--size", type=int, default=320, help="output side in pixels")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.manual_seed(args.seed)
    with open(args.data) as f:
        classes = len(json.load(f)["categories"])

    # Pixels as float32 NCHW in 0..1 (mean 0, std 1): the model normalizes them itself.
    loader = stoke.Loader(args.data, batch=args.batch, workers=args.workers, size=args.size,
                          augment="train", dtype="float32", layout="nchw", mean=[0.0],
                          std=[1.0], seed=args.seed)
    net = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_fpn(
        weights=None, weights_backbone=None, num_classes=classes + 1, min_size=args.size,
        max_size=args.size)
    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=0.02, momentum=0.9, weight_decay=1e-4)

    step, window, images, started = 0, [], 0, time.perf_counter()
    while step < args.steps:
        for batch in loader:
            keep, targets = targets_of(batch)
            pixels = torch.from_dlpack(batch.pixels[0])
            losses = net([pixels[i] for i in keep], targets)
            loss = sum(losses.values())
            opt.zero_grad()
            loss.backward()
            opt.step()
            window.append(loss.item())
            images += len(keep)
            step += 1
            if step % 10 == 0:
                print(f"step {step} loss {sum(window) / len(window):.4f}", flush=True)
                window = []
            if step == args.steps:
                break
    elapsed = time.perf_counter() - started
    print(f"{images} images in {elapsed:.1f} s: {images / elapsed:.1f} images/s "
          f"({classes} classes, {loader.stats()['skipped']} skipped)")


if __name__ == "__main__":
    main()
