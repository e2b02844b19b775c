#!/usr/bin/env python3
"""ResNet-50 training fed by stoke or by PyTorch's DataLoader: images/s and data stall.

    resnet50_check.py --data DIR --loader stoke|torch [--batch 256] [--warmup 30] [--steps 300]
                      [--workers 16] [--dtype bfloat16] [--max-seconds 100] [--device cuda]
    resnet50_check.py --dry ...    (or DEVICE_CHECK_DRY=1): prints "no GPU" and exits 0

The model and the loop are the same for both loaders: torchvision's resnet50(weights=None) in
channels_last, bf16 autocast, SGD with momentum, cross-entropy, cuDNN autotuning on. DIR is an
image folder, DIR/<class>/<image>.jpg (stoke-gpu-bench make-corpus writes one). The work per
image is the same for both: random-resized-crop 224 (scale 0.08..1), horizontal flip,
(x / 255 - mean) / std with ImageNet's mean and std.

  stoke  stoke.Loader(devices="cuda:0", dtype bfloat16 or float16, layout "nhwc"): the batch is
         normalized on the GPU and reaches the model zero-copy (torch.from_dlpack on
         batch.pixels[0]); labels from batch.device_labels[0] where the module has it, else
         the host labels copied over (non_blocking).
  torch  torchvision.datasets.ImageFolder with RandomResizedCrop, RandomHorizontalFlip,
         ToTensor, Normalize, in a DataLoader with pin_memory and persistent workers; float32
         batches copied to the GPU (non_blocking) and made channels_last there.

One epoch is the corpus repeated just often enough to hold the warm-up and measured steps
(--repeat), for both loaders: no epoch boundary, where a DataLoader restarts its pipeline,
falls inside the run, so what is measured is the steady state of a long epoch.

Data stall: the time the loop spent getting the next batch (next(), and the enqueued copy to
the GPU where there is one) over the measured wall time. The host stays at most one step ahead
of the GPU (it waits for the previous step's event), so a loader that cannot keep up shows as
waiting here rather than hiding behind a deep launch queue.

--device cpu runs the same loop on the CPU (stoke on "cpu:1", float32 model, no autocast): a
smoke test of this script on a machine without a GPU, not a measurement.

Output: one JSON line, {"test": "resnet50", "loader": ..., "images_per_s": ..., "data_stall": ...}.
Exit status: 0 measured (or the dry run), 2 bad arguments, 3 PyTorch or torchvision missing,
4 no CUDA device, 5 stoke missing or failing to start, 1 the run failed; the reason on one line.
"""

import argparse
import json
import math
import os
import sys
import tempfile
import time
import traceback

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
IMAGE_EXTENSIONS = (".jpg", ".jpeg")


class Failure(Exception):
    """Ends the run with an exit status and a one-line reason."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="image folder DIR/<class>/<image>.jpg")
    p.add_argument("--loader", required=True, choices=("stoke", "torch"))
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--warmup", type=int, default=30, help="steps before the measurement")
    p.add_argument("--steps", type=int, default=300, help="steps measured")
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--size", type=int, default=224, help="crop size")
    p.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16"),
                   help="what stoke delivers (the DataLoader delivers float32)")
    p.add_argument("--repeat", default="auto",
                   help="corpus passes per epoch, or auto: enough for warm-up + steps")
    p.add_argument("--max-seconds", type=float, default=100.0,
                   help="stop measuring after this long (the steps done are reported)")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--decode", default="cpu", choices=("cpu", "gpu", "hybrid"),
                   help="stoke: where JPEGs are decoded (docs/USAGE.md, Decoding on the GPU)")
    p.add_argument("--dry", action="store_true", help="print 'no GPU' and exit (the dry run)")
    a = p.parse_args(argv)
    for name in ("batch", "steps", "workers", "size"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be 1 or more")
    if a.warmup < 0:
        p.error("--warmup must be 0 or more")
    if a.repeat != "auto" and not (a.repeat.isdigit() and int(a.repeat) >= 1):
        p.error(f"--repeat must be a count of 1 or more, or auto, not {a.repeat!r}")
    return a


def corpus_files(root):
    """[(path, label)] in ImageFolder's order: classes sorted, files sorted within each."""
    if not os.path.isdir(root):
        raise Failure(1, f"{root}: no such folder (make one with stoke-gpu-bench make-corpus)")
    classes = sorted(d.name for d in os.scandir(root) if d.is_dir())
    files = []
    for label, name in enumerate(classes):
        for folder, _, names in sorted(os.walk(os.path.join(root, name))):
            files += [(os.path.join(folder, n), label) for n in sorted(names)
                      if n.lower().endswith(IMAGE_EXTENSIONS)]
    if not files:
        raise Failure(1, f"{root}: no .jpg images in class folders")
    return files


def repeat_count(args, images):
    if args.repeat != "auto":
        return int(args.repeat)
    return max(1, math.ceil((args.warmup + args.steps) * args.batch / images))


def stoke_batches(torch, args, device, files, repeat, scratch):
    """The stoke loader and an endless iterator of (pixels, labels, host objects to keep)."""
    try:
        import stoke
    except ImportError as e:
        raise Failure(5, f"cannot import stoke ({e}); put the stoke package on PYTHONPATH")
    # A list file repeats the corpus within one epoch (paths absolute, labels as ImageFolder's).
    listing = os.path.join(scratch, "corpus.txt")
    with open(listing, "w") as f:
        for _ in range(repeat):
            f.writelines(f"{os.path.abspath(path)}\t{label}\n" for path, label in files)
    devices = f"cuda:{device.index or 0}" if device.type == "cuda" else "cpu:1"
    try:
        loader = stoke.Loader(listing, batch=args.batch, devices=devices, workers=args.workers,
                              size=args.size, augment="train", dtype=args.dtype, layout="nhwc",
                              mean=IMAGENET_MEAN, std=IMAGENET_STD, decode=args.decode)
    except (ValueError, stoke.Error) as e:
        raise Failure(5, f"stoke.Loader: {e}")

    def batches():
        while True:  # each pass over the loader is one epoch; the next continues with the next
            for b in loader:
                # NHWC bytes seen as an NCHW tensor in channels_last strides: no copy.
                x = torch.from_dlpack(b.pixels[0]).permute(0, 3, 1, 2)
                device_labels = getattr(b, "device_labels", None)
                if device_labels:
                    labels_from["labels"] = "device_labels"
                    yield x, torch.from_dlpack(device_labels[0]).long(), None
                else:
                    labels_from["labels"] = "host labels"
                    host = torch.from_dlpack(b.labels)
                    # The host labels stay referenced until their step is done (the copy may
                    # still be reading them).
                    yield x, host.to(device, non_blocking=True).long(), host

    labels_from = {"labels": ""}  # which labels the batches came with, for the report
    return loader, batches(), labels_from


def torch_batches(torch, args, device, files, repeat):
    """The DataLoader and an endless iterator of (pixels, labels, host objects to keep)."""
    from torch.utils.data import DataLoader, RandomSampler
    from torchvision import datasets, transforms

    transform = transforms.Compose([
        transforms.RandomResizedCrop(args.size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD),
    ])
    dataset = datasets.ImageFolder(args.data, transform=transform)
    if len(dataset) != len(files):
        raise Failure(1, f"ImageFolder found {len(dataset)} images, the listing {len(files)}")
    # Without replacement: one epoch is `repeat` shuffled passes, as stoke's list file.
    sampler = RandomSampler(dataset, num_samples=repeat * len(dataset))
    pin = device.type == "cuda"
    loader = DataLoader(dataset, batch_size=args.batch, sampler=sampler, drop_last=True,
                        num_workers=args.workers, pin_memory=pin, persistent_workers=True)

    def batches():
        while True:
            for x, y in loader:
                gpu_x = x.to(device, non_blocking=True).contiguous(memory_format=torch.channels_last)
                yield gpu_x, y.to(device, non_blocking=True), (x, y)

    return loader, batches(), {"labels": "host labels"}


def train(torch, torchvision, args, device, batches):
    """Runs warm-up + measured steps; returns the measurement."""
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet50(weights=None)
    model = model.to(device, memory_format=torch.channels_last)
    criterion = torch.nn.CrossEntropyLoss()
    # The linear scaling rule: 0.1 for a batch of 256.
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1 * args.batch / 256, momentum=0.9,
                                weight_decay=1e-4)
    on_gpu = device.type == "cuda"
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    wait = 0.0
    start = None
    measured = 0
    losses = []
    previous = None  # the last step's (event, host objects it may still read)
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            sync()
            start = time.perf_counter()
            wait = 0.0
        t0 = time.perf_counter()
        x, y, keep = next(batches)
        if start is not None:
            wait += time.perf_counter() - t0
        if not on_gpu:
            x = x.float()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=on_gpu):
            loss = criterion(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step == args.warmup or step == args.warmup + args.steps - 1:
            losses.append(loss.detach())
        if on_gpu:
            event = torch.cuda.Event()
            event.record()
            if previous is not None:
                previous[0].synchronize()
            previous = (event, keep)
        if start is not None:
            measured += 1
            if time.perf_counter() - start > args.max_seconds:
                losses.append(loss.detach())
                break
    sync()
    seconds = time.perf_counter() - start
    return {
        "steps_measured": measured, "capped": measured < args.steps,
        "seconds": round(seconds, 3), "images_per_s": round(measured * args.batch / seconds, 1),
        "data_stall": round(wait / seconds, 4), "wait_s": round(wait, 3),
        "loss_first": round(losses[0].float().item(), 4),
        "loss_last": round(losses[-1].float().item(), 4),
    }


def run(args):
    try:
        import torch
        import torchvision
    except ImportError as e:
        raise Failure(3, f"needs PyTorch and torchvision: {e}")
    if args.device == "cuda":
        if not torch.cuda.is_available():
            raise Failure(4, f"no GPU: PyTorch {torch.__version__} (CUDA {torch.version.cuda}) "
                             f"sees no CUDA device")
        device = torch.device("cuda", 0)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    files = corpus_files(args.data)
    repeat = repeat_count(args, len(files))
    report = {"test": "resnet50", "loader": args.loader, "device": str(device),
              "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else "",
              "torch": torch.__version__, "torchvision": torchvision.__version__,
              "batch": args.batch, "warmup": args.warmup, "steps": args.steps,
              "workers": args.workers, "images": len(files), "repeat": repeat,
              "dtype": args.dtype if args.loader == "stoke" else "float32",
              "layout": "nhwc" if args.loader == "stoke" else "nchw",
              "decode": args.decode if args.loader == "stoke" else "cpu"}
    with tempfile.TemporaryDirectory(prefix="resnet50-check-") as scratch:
        if args.loader == "stoke":
            loader, batches, labels = stoke_batches(torch, args, device, files, repeat, scratch)
        else:
            loader, batches, labels = torch_batches(torch, args, device, files, repeat)
        report.update(train(torch, torchvision, args, device, batches))
        report.update(labels)
        if args.loader == "stoke":
            stats = loader.stats()
            report.update({"stoke_verdict": stats.get("verdict", ""),
                           "stoke_wait_fraction": stats.get("wait_fraction"),
                           "stoke_window_wait_fraction": stats.get("window_wait_fraction"),
                           "stoke_staging": stats.get("staging", "")})
        del batches, loader
    return report


def main(argv):
    args = parse_args(argv)
    if args.dry or os.environ.get("DEVICE_CHECK_DRY") == "1":
        print(json.dumps({"test": "resnet50", "loader": args.loader, "skipped": "no GPU"}))
        print(f"resnet50_check ({args.loader}): no GPU (dry run)", file=sys.stderr)
        return 0
    try:
        print(json.dumps(run(args)), flush=True)
        return 0
    except Failure as e:
        print(f"resnet50_check ({args.loader}): {e}", file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print(f"resnet50_check ({args.loader}): interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # one line with where it happened, not the whole traceback
        where = traceback.extract_tb(e.__traceback__)[-1]
        print(f"resnet50_check ({args.loader}): {type(e).__name__}: {e} "
              f"(at {os.path.basename(where.filename)}:{where.lineno})", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
