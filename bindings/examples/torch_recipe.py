"""torchvision's classification recipe (ResNet v2 "new training recipe") with stoke as its data side.

    python torch_recipe.py --data DIR [--epochs 6] [--batch 64] [--size 176]
                           [--eval-resize 232] [--eval-crop 224] [--workers 2]
    python torch_recipe.py --make-data DIR ...   # first writes DIR/train and DIR/val

The data side is references/classification's with `--auto-augment ta_wide --random-erase 0.1
--mixup-alpha 0.2 --cutmix-alpha 1.0 --label-smoothing 0.1 --ra-reps 4 --train-crop-size 176
--val-resize-size 232 --val-crop-size 224`, all of it done by stoke: random-resized-crop, flip,
TrivialAugmentWide and RandomErasing in its worker processes, normalization, MixUp/CutMix and
the smoothed soft labels on the devices, repeated augmentation in its epoch plan. The model is
torchvision's ``resnet18(weights=None)``, trained with SGD on the soft targets; each epoch ends
with an evaluation (resize the shorter side, centre crop) on DIR/val. DIR/train and DIR/val are
image-folder trees with the same class folders.

``--make-data DIR`` writes such a pair with stoke-mkdata (from $STOKE_MKDATA, else PATH): random
crops of real photographs, one class per photograph, the validation crops drawn with another
seed. Prints ``epoch E loss L accuracy A`` per epoch, then the chance level.
"""

import argparse
import os
import shutil
import subprocess
import time

import torch
import torch.nn.functional as F
import torchvision

import stoke


def make_data(root, train_count, val_count, classes):
    """DIR/train and DIR/val from stoke-mkdata's photographs, keeping the first `classes`."""
    tool = os.environ.get("STOKE_MKDATA") or shutil.which("stoke-mkdata")
    if not tool:
        raise SystemExit("--make-data needs stoke-mkdata: set STOKE_MKDATA or put it on PATH")
    for split, count, seed in (("train", train_count, 1), ("val", val_count, 2)):
        out = os.path.join(root, split)
        if os.path.isdir(out) and os.listdir(out):
            continue
        # stoke-mkdata deals its images over every photograph (24): ask for that many more.
        subprocess.run([tool, "jpeg-corpus", "--out", out, "--count",
                        str(count * 24 // classes), "--seed", str(seed), "--long-side",
                        "160..240"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        for extra in classes_of(out)[classes:]:
            shutil.rmtree(os.path.join(out, extra))


def classes_of(folder):
    return sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d)))


def train_loader(args, classes):
    s = args.size
    return stoke.Loader(
        os.path.join(args.data, "train"), batch=args.batch, size=s, dtype="float32",
        workers=args.workers, seed=args.seed,
        pipeline=[("random_resized_crop", s, s), "horizontal_flip", "trivial_augment_wide",
                  ("random_erasing", 0.1)],
        mixup_alpha=0.2, cutmix_alpha=1.0, num_classes=classes, label_smoothing=0.1, repeats=4)


def eval_loader(args):
    return stoke.Loader(
        os.path.join(args.data, "val"), batch=args.batch, size=args.eval_crop, dtype="float32",
        workers=args.workers, shuffle=False,
        pipeline=[("resize_shorter", args.eval_resize),
                  ("center_crop", args.eval_crop, args.eval_crop)])


def evaluate(net, loader):
    net.eval()
    right = total = 0
    with torch.no_grad():
        for batch in loader:
            valid = torch.from_dlpack(batch.valid).bool()
            logits = net(torch.from_dlpack(batch.pixels[0]))
            labels = torch.from_dlpack(batch.labels).long()
            right += int(((logits.argmax(1) == labels) & valid).sum())
            total += int(valid.sum())
    net.train()
    return right / total


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", help="a folder holding train/ and val/ image-folder trees")
    p.add_argument("--make-data", metavar="DIR", help="write DIR/train and DIR/val first")
    p.add_argument("--train-count", type=int, default=768, help="--make-data's training images")
    p.add_argument("--val-count", type=int, default=240, help="--make-data's validation images")
    p.add_argument("--classes", type=int, default=12, help="--make-data's classes (at most 24)")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--size", type=int, default=176)
    p.add_argument("--eval-resize", type=int, default=232)
    p.add_argument("--eval-crop", type=int, default=224)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if args.make_data:
        make_data(args.make_data, args.train_count, args.val_count, min(args.classes, 24))
        args.data = args.data or args.make_data
    if not args.data:
        p.error("give --data or --make-data")
    classes = len(classes_of(os.path.join(args.data, "train")))
    if classes_of(os.path.join(args.data, "val")) != classes_of(os.path.join(args.data, "train")):
        raise SystemExit("train/ and val/ must have the same class folders")
    torch.manual_seed(args.seed)
    net = torchvision.models.resnet18(weights=None, num_classes=classes)
    opt = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=0.9, weight_decay=2e-5)
    train, val = train_loader(args, classes), eval_loader(args)
    steps = args.epochs * len(train)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=steps,
                                                pct_start=0.2)
    start = time.perf_counter()
    images = 0
    for epoch in range(args.epochs):
        train.set_epoch(epoch)
        losses = []
        for batch in train:
            x = torch.from_dlpack(batch.pixels[0])
            target = torch.from_dlpack(batch.soft_labels[0])  # mixed, smoothed
            loss = torch.sum(-target * F.log_softmax(net(x), dim=1), dim=1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
            images += batch.size
        accuracy = evaluate(net, val)
        print(f"epoch {epoch} loss {sum(losses) / len(losses):.4f} accuracy {accuracy:.4f}",
              flush=True)
    elapsed = time.perf_counter() - start
    print(f"{images} training images in {elapsed:.1f} s; {classes} classes, chance "
          f"{1 / classes:.4f}")


if __name__ == "__main__":
    main()
