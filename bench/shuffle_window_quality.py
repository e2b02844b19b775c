#!/usr/bin/env python3
"""How random is a shuffle window? Label statistics of stoke's epoch order over tar shards.

    shuffle_window_quality.py --data 'DIR/train-{000000..000031}.tar' [--batch 256]
                              [--windows 1,2,4,8,0] [--epochs 2] [--json OUT]

Shards written in class order (stoke-pack of an image folder: class after class) are the worst
case for a locality-aware shuffle: a window of K shards holds only the classes of those shards.
For each shuffle_window (0 = every sample with every other), this reads the epochs' labels as
the loader delivers them (tiny 8x8 evaluation crops, so decoding costs little) and reports:

  distinct   mean number of distinct classes per batch
  top share  mean share of a batch taken by its most common class
  same next  how often two consecutive samples share a class (independent draws: sum of p_c^2)

against the same statistics of a full shuffle. Needs the stoke Python package.
"""

import argparse
import collections
import json
import sys


def epoch_labels(data, batch, window, epochs, workers):
    import numpy as np
    import stoke

    loader = stoke.Loader(data, batch=batch, workers=workers, size=8, augment="eval",
                          shuffle_window=window, seed=0)
    batches = []
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for b in loader:
            labels = np.from_dlpack(b.labels)
            valid = np.from_dlpack(b.valid)
            batches.append(labels[valid == 1].tolist())
    return batches


def statistics(batches):
    distinct = sum(len(set(b)) for b in batches) / len(batches)
    top = sum(collections.Counter(b).most_common(1)[0][1] / len(b) for b in batches) / len(batches)
    flat = [label for b in batches for label in b]
    same = sum(1 for a, b in zip(flat, flat[1:]) if a == b) / (len(flat) - 1)
    counts = collections.Counter(flat)
    independent = sum((c / len(flat)) ** 2 for c in counts.values())
    return {"distinct": distinct, "top_share": top, "same_next": same,
            "same_next_independent": independent, "classes": len(counts)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="the shards, in any form stoke takes")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--windows", default="1,2,4,8,0", help="shuffle_window values; 0 = all")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--json", help="also write the rows here")
    a = p.parse_args()
    rows = []
    for w in (int(v) for v in a.windows.split(",")):
        s = statistics(epoch_labels(a.data, a.batch, w, a.epochs, a.workers))
        s["window"] = w
        rows.append(s)
        print(json.dumps(s), file=sys.stderr)
    print("| shuffle_window | distinct classes / batch | top class share | same class next "
          "(independent: %.3f) |" % rows[0]["same_next_independent"])
    print("|---|---|---|---|")
    for r in rows:
        name = "all (0)" if r["window"] == 0 else str(r["window"])
        print(f"| {name} | {r['distinct']:.1f} of {r['classes']} | {r['top_share']:.2f} | "
              f"{r['same_next']:.3f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
