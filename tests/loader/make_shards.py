#!/usr/bin/env python3
"""Writes WebDataset tar shards of an image folder with Python's own tarfile, for the shard tests.

    make_shards.py ROOT OUT_PREFIX --shards N [--format gnu|pax|ustar] [--long-names]

Samples are the folder's images in the order stoke indexes a folder (class folders sorted, the
images of each sorted by path, the label the class's position), numbered from 000000, each as
<key>.jpg (or .png: the file's own extension) and <key>.cls, split into N shards as evenly as
possible: OUT_PREFIX-000000.tar, OUT_PREFIX-000001.tar, ... --long-names puts each sample in a
folder whose name is longer than ustar's 100-byte name field.
"""

import argparse
import io
import os
import tarfile

IMAGE_EXTENSIONS = {".jpg", ".jpeg", ".png"}


def folder_samples(root):
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    samples = []
    for label, name in enumerate(classes):
        files = []
        for folder, _, names in os.walk(os.path.join(root, name)):
            files += [os.path.join(folder, n) for n in names
                      if os.path.splitext(n)[1].lower() in IMAGE_EXTENSIONS]
        samples += [(path, label) for path in sorted(files)]
    return samples


def add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0
    tar.addfile(info, io.BytesIO(data))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("prefix")
    p.add_argument("--shards", type=int, required=True)
    p.add_argument("--format", default="pax", choices=("gnu", "pax", "ustar"))
    p.add_argument("--long-names", action="store_true")
    a = p.parse_args()
    fmt = {"gnu": tarfile.GNU_FORMAT, "pax": tarfile.PAX_FORMAT, "ustar": tarfile.USTAR_FORMAT}
    samples = folder_samples(a.root)
    per = -(-len(samples) // a.shards)
    for s in range(a.shards):
        with tarfile.open(f"{a.prefix}-{s:06d}.tar", "w", format=fmt[a.format]) as tar:
            for i in range(s * per, min((s + 1) * per, len(samples))):
                path, label = samples[i]
                key = f"{i:06d}"
                if a.long_names:
                    key = "d" * 120 + f"/{key}"
                with open(path, "rb") as f:
                    add(tar, key + os.path.splitext(path)[1].lower(), f.read())
                add(tar, key + ".cls", str(label).encode())


if __name__ == "__main__":
    main()
