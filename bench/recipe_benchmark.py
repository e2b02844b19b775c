"""Today's training recipes, per sample, through stoke, PyTorch's DataLoader and DALI's CPU pipeline.

Each recipe is the data side of a published training recipe on the JPEG corpus (decode, the
augmentations, float32 normalized CHW output with ImageNet's mean and std, batch 64, 2 workers):

  base     random-resized-crop 176 + flip (the 2018 recipe at recipe a's size: the yardstick for
           what a's ops add)
  base224  the same at 224 (the yardstick for b and c)
  a     torchvision's ResNet-50 v2 recipe: RRC 176 + flip + TrivialAugmentWide + RandomErasing 0.1
  b     DeiT: RRC 224 + flip + timm's rand-m9-mstd0.5-inc1 (bicubic) + RandomErasing 0.25 (pixel)
  c     timm's defaults: RRC 224 + flip + ColorJitter 0.4
  a_mix torchvision's ResNet-50 v2 recipe whole: a, then MixUp 0.2 / CutMix 1.0 on each batch
        (the batch's soft labels, smoothed 0.1 in stoke; torchvision smooths in its loss) and
        repeated augmentation 4 (torchvision's RASampler in the DataLoader)

Loaders, each run in a fresh process, `--repeat` rounds in rotated order, medians reported:

  stoke  stoke-bench --pipeline (the recipe in stoke's words) --dtype float32 --workers 2
  packed the same over the shards stoke-pack made of the corpus (--packed: its JPEGs re-laid out
         losslessly with restart intervals, the same images)
  torch  torch.utils.data.DataLoader over torchvision.datasets.ImageFolder (PIL decode) with the
         recipe's own transforms: torchvision.transforms.v2 as torchvision's references build
         them (a, base) and timm.data.create_transform (b, c), default_collate, 2 workers;
         a_mix: references/classification's train.py, collate_fn = RandomChoice([MixUp(0.2),
         CutMix(1.0)]) over default_collate (in the workers), sampler RASampler(repetitions=4)
  dali   nvidia.dali with device_id=None (CPU only, 2 threads): fn.decoders.image,
         fn.random_resized_crop, nvidia.dali.auto_aug.trivial_augment_wide (a) or
         rand_augment(n=2, m=9) (b: DALI has no timm magnitude noise or increasing ops),
         fn.color_twist with torchvision's ranges (c), fn.crop_mirror_normalize, and fn.erase with
         a rectangle drawn as RandomErasing draws it (constant 0: DALI's erase has no per-pixel
         noise, so b erases with zeros there)

  python3 bench/recipe_benchmark.py --corpus /tmp/corpus \\
      --torch-python /work/parity-venv/bin/python --dali-python /work/dali-venv/bin/python

The torch environment needs torch, torchvision (with transforms.v2) and timm; the DALI one
nvidia-dali. Either may be left out (--loaders). Prints a Markdown table of images/s and stoke's
ratio to each peer.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "peers"))

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)

RECIPES = {
    "base": {"size": 176, "stoke": "random_resized_crop 176 176 | horizontal_flip"},
    "base224": {"size": 224, "stoke": "random_resized_crop 224 224 | horizontal_flip"},
    "a": {"size": 176,
          "stoke": "random_resized_crop 176 176 | horizontal_flip | trivial_augment_wide | "
                   "random_erasing 0.1"},
    "b": {"size": 224,
          "stoke": "random_resized_crop 224 224 | horizontal_flip | timm_augment "
                   "rand-m9-mstd0.5-inc1 interpolation=bicubic | "
                   "random_erasing_pixel 0.25 0.02 0.333333 0.3 3.333333"},
    "a_mix": {"size": 176,
              "stoke": "random_resized_crop 176 176 | horizontal_flip | trivial_augment_wide | "
                       "random_erasing 0.1",
              "flags": ["--mixup-alpha", "0.2", "--cutmix-alpha", "1.0", "--label-smoothing",
                        "0.1", "--repeats", "4"]},
    "c": {"size": 224,
          "stoke": "random_resized_crop 224 224 | horizontal_flip | color_jitter 0.4 0.4 0.4"},
}


# ---------------------------------------------------------------------------------------------
# The peers, each run as `recipe_benchmark.py --peer NAME --recipe R ...` in its own environment.

class RetryOnPillowRefusal:
    """timm's PosterizeIncreasing asks Pillow for 0 bits at magnitude 10, which Pillow 13's
    ImageOps.posterize refuses (ValueError: about 1.5 calls in 1,000 of rand-m9-mstd0.5-inc1):
    such a call is drawn again, so that the run finishes; the few redraws are counted in its
    time."""

    def __init__(self, transform):
        self.transform = transform

    def __call__(self, image):
        for _ in range(100):
            try:
                return self.transform(image)
            except ValueError:
                continue
        return self.transform(image)


def torch_transform(recipe):
    import torch
    from torchvision.transforms import v2
    size = RECIPES[recipe]["size"]
    if recipe in ("a", "a_mix", "base", "base224"):
        # torchvision's references/classification/presets.py, ClassificationPresetTrain with
        # auto_augment_policy="ta_wide", random_erase_prob=0.1 (backend PIL).
        steps = [v2.RandomResizedCrop(size, antialias=True), v2.RandomHorizontalFlip()]
        if recipe in ("a", "a_mix"):
            steps.append(v2.TrivialAugmentWide())
        steps += [v2.PILToTensor(), v2.ToDtype(torch.float32, scale=True),
                  v2.Normalize(MEAN, STD)]
        if recipe in ("a", "a_mix"):
            steps.append(v2.RandomErasing(0.1))
        return v2.Compose(steps)
    from timm.data import create_transform
    if recipe == "b":  # DeiT's main.py: build_transform(is_train=True)
        return RetryOnPillowRefusal(create_transform(
            224, is_training=True, color_jitter=0.3, auto_augment="rand-m9-mstd0.5-inc1",
            interpolation="bicubic", re_prob=0.25, re_mode="pixel", re_count=1))
    return create_transform(224, is_training=True)  # timm's defaults: ColorJitter 0.4


class RASampler:
    """torchvision's references/classification/sampler.py RASampler (one replica), transcribed:
    the epoch's permutation with each index `repetitions` times, padded to the replicas, cut to
    floor(floor(N / 256) * 256 / replicas)."""

    def __init__(self, dataset, repetitions, seed=0):
        self.n, self.repetitions, self.seed, self.epoch = len(dataset), repetitions, seed, 0
        self.selected = int(math.floor(self.n // 256 * 256))

    def __iter__(self):
        import torch
        g = torch.Generator()
        g.manual_seed(self.seed + self.epoch)
        indices = torch.randperm(self.n, generator=g).tolist()
        indices = [i for i in indices for _ in range(self.repetitions)]
        return iter(indices[:self.selected])

    def __len__(self):
        return self.selected

    def set_epoch(self, epoch):
        self.epoch = epoch


class MixCollate:
    """references/classification/train.py's collate_fn: RandomChoice([MixUp, CutMix]) over
    default_collate (a class, not a lambda, so the workers can unpickle it)."""

    def __init__(self, num_classes):
        from torchvision.transforms import v2
        self.mix = v2.RandomChoice([v2.MixUp(alpha=0.2, num_classes=num_classes),
                                    v2.CutMix(alpha=1.0, num_classes=num_classes)])

    def __call__(self, batch):
        from torch.utils.data import default_collate
        return self.mix(*default_collate(batch))


def run_torch(args):
    import torch
    import torchvision
    from torch.utils.data import DataLoader
    import peer_common as pc
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    dataset = torchvision.datasets.ImageFolder(args.corpus, transform=torch_transform(args.recipe))
    extra = {}
    if args.recipe == "a_mix":
        extra = {"sampler": RASampler(dataset, 4), "collate_fn": MixCollate(len(dataset.classes))}
    loader = DataLoader(dataset, batch_size=args.batch, shuffle="sampler" not in extra,
                        num_workers=args.workers, persistent_workers=True, drop_last=False,
                        **extra)
    meter = pc.Meter()
    for epoch in range(args.epochs):
        if "sampler" in extra:
            extra["sampler"].set_epoch(epoch)
        for images, labels in loader:
            assert images.dtype == torch.float32 and images.shape[1] == 3
            if args.recipe == "a_mix":
                assert labels.dtype == torch.float32 and labels.shape[1] == len(dataset.classes)
            meter.batch(len(images))
    import timm
    return meter, {"torch": torch.__version__, "torchvision": torchvision.__version__,
                   "timm": timm.__version__}


def dali_erase(images, probability, size):
    """RandomErasing's rectangle (area in [0.02, 1/3] of the image, log-uniform aspect in
    [0.3, 3.3], placed uniformly) on a CHW float image, with probability `probability`; the tries
    torchvision makes until the rectangle fits are one clamped draw here."""
    from nvidia.dali import fn
    from nvidia.dali import math as dmath
    area = fn.random.uniform(range=[0.02, 1.0 / 3.0])
    log_ratio = fn.random.uniform(range=[math.log(0.3), math.log(1 / 0.3)])
    ratio = dmath.exp(log_ratio)
    h = dmath.min(dmath.sqrt(area * ratio), 0.99)
    w = dmath.min(dmath.sqrt(area / ratio), 0.99)
    y = fn.random.uniform(range=[0.0, 1.0]) * (1.0 - h)
    x = fn.random.uniform(range=[0.0, 1.0]) * (1.0 - w)
    anchor = fn.stack(y, x)
    shape = fn.stack(h, w)
    erased = fn.erase(images, anchor=anchor, shape=shape, axis_names="HW", normalized=True,
                      fill_value=0.0)
    if fn.random.coin_flip(probability=probability):
        out = erased
    else:
        out = images
    return out


def run_dali(args):
    if args.recipe == "a_mix":
        raise RuntimeError("DALI has no MixUp or CutMix operator for its CPU pipeline")
    import nvidia.dali as dali
    from nvidia.dali import fn, pipeline_def, types
    import peer_common as pc
    size = RECIPES[args.recipe]["size"]
    recipe = args.recipe

    @pipeline_def(batch_size=args.batch, num_threads=args.workers, device_id=None,
                  seed=args.seed, enable_conditionals=True)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=args.corpus, random_shuffle=True,
                                        pad_last_batch=True, name="Reader")
        images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        images = fn.random_resized_crop(images, size=[size, size], random_area=[0.08, 1.0],
                                        random_aspect_ratio=[3 / 4, 4 / 3])
        images = fn.flip(images, horizontal=fn.random.coin_flip(probability=0.5))
        if recipe == "a":
            from nvidia.dali.auto_aug import trivial_augment
            images = trivial_augment.trivial_augment_wide(images)
        elif recipe == "b":
            from nvidia.dali.auto_aug import rand_augment
            images = rand_augment.rand_augment(images, n=2, m=9)
        elif recipe == "c":
            images = fn.color_twist(images,
                                    brightness=fn.random.uniform(range=[0.6, 1.4]),
                                    contrast=fn.random.uniform(range=[0.6, 1.4]),
                                    saturation=fn.random.uniform(range=[0.6, 1.4]))
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                          mean=[m * 255.0 for m in MEAN],
                                          std=[s * 255.0 for s in STD])
        if recipe in ("a", "b"):
            images = dali_erase(images, 0.1 if recipe == "a" else 0.25, size)
        return images, labels

    p = pipe()
    p.build()
    iterations = math.ceil(p.epoch_size("Reader") / args.batch)
    meter = pc.Meter()
    for _ in range(args.epochs):
        for _ in range(iterations):
            images, _labels = p.run()
            meter.batch(len(images))
    return meter, {"nvidia-dali": dali.__version__}


def peer_main(args):
    meter, versions = (run_torch if args.peer == "torch" else run_dali)(args)
    r = meter.result()
    r.update({"versions": versions})
    print(json.dumps(r), flush=True)


# ---------------------------------------------------------------------------------------------
# The driver.

def run_stoke(args, recipe, data):
    bench = os.path.join(args.build, "bin", "stoke-bench")
    size = RECIPES[recipe]["size"]
    cmd = [bench, "--data", data, "--size", str(size), "--pipeline",
           RECIPES[recipe]["stoke"], "--dtype", "float32", "--workers", str(args.workers),
           "--batch", str(args.batch), "--epochs", str(args.epochs), "--seed", "0",
           "--on-error", "error", "--json"] + RECIPES[recipe].get("flags", [])
    if "--mixup-alpha" in cmd:  # soft labels over the corpus's classes
        classes = sum(os.path.isdir(os.path.join(args.corpus, d)) for d in os.listdir(args.corpus))
        cmd += ["--num-classes", str(classes)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         timeout=args.timeout).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return r["samples_per_s"], " ".join(cmd)


def run_peer(args, peer, recipe):
    python = args.torch_python if peer == "torch" else args.dali_python
    cmd = [python, os.path.abspath(__file__), "--peer", peer, "--recipe", recipe, "--corpus",
           args.corpus, "--batch", str(args.batch), "--workers", str(args.workers), "--epochs",
           str(args.epochs)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else
                           f"exit {p.returncode}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    return r["images_per_s"], r.get("versions", {})


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--peer", choices=("torch", "dali"), help=argparse.SUPPRESS)
    p.add_argument("--recipe", choices=sorted(RECIPES), help=argparse.SUPPRESS)
    p.add_argument("--corpus", default="/tmp/corpus",
                   help="image folder root/<class>/<image>.jpg (stoke-mkdata jpeg-corpus)")
    p.add_argument("--recipes", default="base,a,base224,b,c")
    p.add_argument("--loaders", default="stoke,torch,dali",
                   help="of stoke (the corpus folder), packed (stoke on --packed), torch, dali")
    p.add_argument("--packed", default="/tmp/packed/train-0000.tar",
                   help="the shards stoke-pack made from the corpus (its default re-layout)")
    p.add_argument("--torch-python", default=sys.executable)
    p.add_argument("--dali-python", default=sys.executable)
    p.add_argument("--build", default=os.path.join(ROOT, "build", "default"))
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--json-out")
    args = p.parse_args()
    if args.peer:
        return peer_main(args)
    recipes = args.recipes.split(",")
    loaders = args.loaders.split(",")
    runs = {(r, l): [] for r in recipes for l in loaders}
    errors, versions = {}, {}
    for round_ in range(args.repeat):
        order = loaders[round_ % len(loaders):] + loaders[:round_ % len(loaders)]
        for recipe in recipes:
            for loader in order:
                if (recipe, loader) in errors:
                    continue
                start = time.time()
                try:
                    if loader == "stoke":
                        ips, versions["stoke"] = run_stoke(args, recipe, args.corpus)
                    elif loader == "packed":
                        ips, versions["packed"] = run_stoke(args, recipe, args.packed)
                    else:
                        ips, v = run_peer(args, loader, recipe)
                        versions.update(v)
                except Exception as e:  # a peer that cannot run this recipe: say why
                    errors[(recipe, loader)] = str(e)[-300:]
                    print(f"round {round_ + 1} {recipe} {loader}: FAILED {errors[(recipe, loader)]}",
                          flush=True)
                    continue
                runs[(recipe, loader)].append(ips)
                print(f"round {round_ + 1} {recipe} {loader}: {ips:,.1f} images/s "
                      f"({time.time() - start:.0f} s, load {load_average():.2f})", flush=True)
    ours = [l for l in loaders if l in ("stoke", "packed")]
    ratio_names = [f"{s} / {l}" for s in ours for l in loaders if l not in ours]
    print("\n| recipe | " + " | ".join(f"{l} images/s" for l in loaders) + " | " +
          " | ".join(ratio_names) + " |")
    print("|---" * (len(loaders) + len(ratio_names) + 1) + "|")
    table = {}
    for recipe in recipes:
        med = {l: statistics.median(runs[(recipe, l)]) if runs[(recipe, l)] else None
               for l in loaders}
        table[recipe] = med
        cells = [f"{med[l]:,.1f}" if med[l] else "did not run" for l in loaders]
        ratios = [f"{med[s] / med[l]:.2f}x" if med.get(s) and med[l] else "-"
                  for s in ours for l in loaders if l not in ours]
        print(f"| {recipe} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    for recipe, base in (("a", "base"), ("a_mix", "base"), ("b", "base224"), ("c", "base224")):
        for loader in loaders:
            if table.get(recipe, {}).get(loader) and table.get(base, {}).get(loader):
                cost = table[base][loader] / table[recipe][loader] - 1
                print(f"{loader} {recipe}: {cost * 100:+.0f}% time per image over {base}")
    for (recipe, loader), e in errors.items():
        print(f"{loader} on {recipe} did not run: {e}")
    print("versions:", json.dumps(versions))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"runs": {f"{r}/{l}": v for (r, l), v in runs.items()},
                       "errors": {f"{r}/{l}": e for (r, l), e in errors.items()},
                       "versions": versions}, f, indent=1)


if __name__ == "__main__":
    main()
