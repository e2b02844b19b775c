"""decode=gpu on a GPU machine: stoke's device decoders against its workers and against
torchvision's own GPU path (a device-check step; it runs by hand too).

    python3 decode_check.py CORPUS [--seconds 12] [--batch 256] [--camera 160] [--dry]
                            [--devices cpu:1]   (the script's own smoke test, without a GPU)

On cuda:0, random-resized-crop 224 + flip + float32 normalize:
  rate     images/s of stoke with decode=cpu and 4 workers, decode=cpu with every core,
           decode=gpu with 4 workers and decode=hybrid (gpu_share 0.5) with 4 workers; and of
           torchvision's GPU path on the same files (torchvision.io.decode_jpeg(list,
           device="cuda") per batch, then v2.RandomResizedCrop(224) + RandomHorizontalFlip on
           each image on the GPU, then the normalize), files read by 8 threads;
  camera   camera-sized photographs (4000x3000, made here from the corpus with sensor-like
           noise, JPEG quality 92): decode=gpu with 4 workers against decode=cpu with every core
           (batch 64, max_compressed_bytes 8 MiB, prefetch 6);
  pixels   uint8 batches of decode=gpu against decode=cpu with the same seed (the same crops):
           the mean and the 99th percentile of the absolute difference, on both corpora;
  stats    what the devices decoded, what the workers did instead and why, and the devices'
           decode time (Stats).
One JSON line per measurement, {"test": "decode", ...} (a measurement that fails gives its
"error" and the others still run). With --dry (no GPU) it checks its arguments and prints
{"test": "decode", "skipped": "no GPU"}. Exit status 0 unless a measurement failed.
"""

import argparse
import concurrent.futures
import json
import os
import sys
import time

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def emit(**fields):
    print(json.dumps({"test": "decode", **fields}), flush=True)


def files_of(root):
    out = []
    for d in sorted(os.listdir(root)):
        sub = os.path.join(root, d)
        if os.path.isdir(sub):
            out += [os.path.join(sub, f) for f in sorted(os.listdir(sub)) if f.endswith(".jpg")]
    return out


DEVICES = "cuda:0"


def sync(torch):
    if DEVICES.startswith("cuda"):
        torch.cuda.synchronize()


def stoke_rate(stoke, torch, data, seconds, **options):
    """Images per second a consumer that touches every batch on the GPU gets, after 3 batches."""
    loader = stoke.Loader(data, devices=DEVICES, size=224, augment="train", seed=1,
                          mean=MEAN, std=STD, **options)
    seen, taken, started = 0, 0, None
    while started is None or time.perf_counter() - started < seconds:
        for b in loader:  # (an epoch at a time; the next pass continues with the next epoch)
            x = torch.from_dlpack(b.pixels[0])
            x.sum()  # the consumer reads the batch (on its stream, after stoke's)
            taken += 1
            if started is None and taken == 3:
                sync(torch)
                started = time.perf_counter()
            elif started is not None:
                seen += x.shape[0]
            if started is not None and time.perf_counter() - started >= seconds:
                break
    sync(torch)
    elapsed = time.perf_counter() - started
    s = loader.stats()
    return seen / elapsed, {k: s[k] for k in (
        "device_decoded", "device_decode_s", "device_decode_failed", "worker_decoded_hybrid",
        "worker_decoded_not_jpeg", "worker_decoded_unsupported", "worker_decoded_too_large",
        "wait_fraction")}


def torchvision_rate(torch, files, batch, seconds):
    """torchvision's GPU path on the same files: batched nvJPEG decode, v2 transforms on the GPU."""
    import torchvision
    from torchvision.transforms import v2

    crop = v2.RandomResizedCrop(224, antialias=True)
    flip = v2.RandomHorizontalFlip()
    mean = torch.tensor(MEAN, device="cuda").view(1, 3, 1, 1)
    std = torch.tensor(STD, device="cuda").view(1, 3, 1, 1)
    pool = concurrent.futures.ThreadPoolExecutor(8)
    seen, started, i = 0, None, 0
    while started is None or time.perf_counter() - started < seconds:
        names = [files[(i + k) % len(files)] for k in range(batch)]
        i += batch
        datas = list(pool.map(torchvision.io.read_file, names))
        images = torchvision.io.decode_jpeg(datas, device="cuda",
                                            mode=torchvision.io.ImageReadMode.RGB)
        x = torch.stack([flip(crop(im)) for im in images])
        x = (x.float() / 255 - mean) / std
        x.sum()
        if started is None and i >= 3 * batch:
            torch.cuda.synchronize()
            started = time.perf_counter()
        elif started is not None:
            seen += batch
    torch.cuda.synchronize()
    return seen / (time.perf_counter() - started)


def pixel_difference(stoke, torch, data, batches, **options):
    """Mean and 99th percentile of |gpu - cpu| over `batches` uint8 batches, same crops."""
    runs = {}
    for decode in ("cpu", "gpu"):
        loader = stoke.Loader(data, devices=DEVICES, size=224, augment="train", seed=5,
                              dtype="uint8", decode=decode, **options)
        got = []
        for n, b in enumerate(loader):
            if n == batches:
                break
            got.append(torch.from_dlpack(b.pixels[0]).clone())
        runs[decode] = torch.cat(got)
    d = (runs["gpu"].int() - runs["cpu"].int()).abs().flatten()
    counts = torch.bincount(d, minlength=256).cumsum(0)
    p99 = int(torch.searchsorted(counts, torch.tensor(0.99 * d.numel(), device=d.device,
                                                      dtype=counts.dtype)))
    return float(d.float().mean()), p99, int(d.max())


def camera_photo(job):
    """One 4000x3000 photograph-like JPEG: a corpus image enlarged, with sensor-like noise."""
    source, out, seed = job
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    big = Image.open(source).convert("RGB").resize((4000, 3000), Image.BICUBIC)
    noisy = np.asarray(big, dtype=np.float32) + rng.normal(0, 3, (3000, 4000, 3))
    Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)).save(out, quality=92)
    return os.path.getsize(out)


def make_camera_corpus(files, folder, count):
    os.makedirs(os.path.join(folder, "c00"), exist_ok=True)
    jobs = [(files[i % len(files)], os.path.join(folder, "c00", f"{i:05d}.jpg"), i)
            for i in range(count)]
    with concurrent.futures.ProcessPoolExecutor(os.cpu_count()) as pool:
        sizes = list(pool.map(camera_photo, jobs))
    return sum(sizes) / len(sizes)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("data", help="a JPEG folder DIR/<class>/<image>.jpg")
    p.add_argument("--seconds", type=float, default=12, help="each rate's measurement")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--camera", type=int, default=96, help="camera photographs to make (0: none)")
    p.add_argument("--scratch", default="/tmp/stoke-decode-check")
    p.add_argument("--dry", action="store_true", help="check the arguments only (no GPU)")
    p.add_argument("--devices", default="cuda:0",
                   help="cpu:1 runs the stoke measurements on a host device (no torchvision run)")
    a = p.parse_args()
    global DEVICES
    DEVICES = a.devices
    if a.seconds <= 0 or a.batch <= 0 or a.camera < 0:
        p.error("--seconds and --batch must be positive, --camera 0 or more")
    if a.dry or os.environ.get("DEVICE_CHECK_DRY") == "1":
        emit(skipped="no GPU")
        return 0
    files = files_of(a.data) if os.path.isdir(a.data) else []
    if not files:
        print(f"decode_check: no .jpg images in class folders of {a.data}", file=sys.stderr)
        return 2
    import torch
    import stoke

    cores = os.cpu_count()
    failures = []

    def measure(corpus, run, what):
        """One measurement's row, or an error row: a failure does not end the others."""
        try:
            emit(corpus=corpus, run=run, **what())
        except Exception as e:  # noqa: BLE001 (reported, and the exit status says so)
            failures.append(run)
            emit(corpus=corpus, run=run, error=f"{type(e).__name__}: {e}")

    def rate(data, **options):
        images_per_s, stats = stoke_rate(stoke, torch, data, a.seconds, **options)
        return dict(images_per_s=images_per_s, **stats)

    def pixels(data, batches, **options):
        mean, p99, worst = pixel_difference(stoke, torch, data, batches, **options)
        return dict(mean=mean, p99=p99, max=worst)

    common = dict(batch=a.batch, dtype="float32")
    for label, options in (("cpu, 4 workers", dict(decode="cpu", workers=4)),
                           (f"cpu, {cores} workers", dict(decode="cpu", workers=cores)),
                           ("gpu, 4 workers", dict(decode="gpu", workers=4)),
                           ("hybrid 0.5, 4 workers", dict(decode="hybrid", gpu_share=0.5,
                                                          workers=4))):
        measure("standard", label, lambda: rate(a.data, **common, **options))
    if DEVICES.startswith("cuda"):
        measure("standard", "torchvision GPU", lambda: dict(
            images_per_s=torchvision_rate(torch, files, a.batch, a.seconds)))
    measure("standard", "pixels", lambda: pixels(a.data, 8, batch=a.batch, workers=4, prefetch=4))
    if a.camera > 0:
        camera = os.path.join(a.scratch, "camera")
        started = time.perf_counter()
        measure("camera", "made", lambda: dict(
            images=a.camera, mean_bytes=make_camera_corpus(files, camera, a.camera),
            seconds=time.perf_counter() - started))
        big = dict(batch=64, dtype="float32", max_compressed_bytes=8 << 20, prefetch=6)
        for label, options in ((f"cpu, {cores} workers", dict(decode="cpu", workers=cores)),
                               ("gpu, 4 workers", dict(decode="gpu", workers=4))):
            measure("camera", label, lambda: rate(camera, **big, **options))
        measure("camera", "pixels", lambda: pixels(camera, 2, batch=64, workers=4,
                                                   max_compressed_bytes=8 << 20, prefetch=4))
    if failures:
        print(f"decode_check: failed: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
