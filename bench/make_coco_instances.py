#!/usr/bin/env python3
"""Writes a synthetic COCO instances file shaped like the real ones, to measure what reading
one costs (peak memory, time) without downloading COCO.

    python3 bench/make_coco_instances.py OUT.json                  # train2017-sized, ~450 MB
    python3 bench/make_coco_instances.py OUT.json --images 8000 --annotations 58000   # ~30 MB

The layout follows instances_train2017.json: info, licenses, images (with their URLs and dates),
annotations (polygon segmentations, area, bbox, iscrowd; about 1% crowd annotations with RLE
counts), then categories (80, ids 1..90 with gaps, as COCO's). Boxes lie inside their images, so
the whole file reads without errors. Deterministic for a given --seed. Standard library only.
"""

import argparse
import json
import random
import sys

# COCO's 80 category ids (1..90 with ten gaps).
COCO_IDS = [i for i in range(1, 91) if i not in (12, 26, 29, 30, 45, 66, 68, 69, 71, 83)]


def polygon(rng, points):
    coords = ",".join(f"{rng.uniform(0, 640):.2f}" for _ in range(2 * points))
    return "[[" + coords + "]]"


def rle(rng, h, w):
    counts = ",".join(str(rng.randint(1, 400)) for _ in range(rng.randint(40, 120)))
    return '{"counts":[' + counts + '],"size":[' + str(h) + "," + str(w) + "]}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="the JSON file to write")
    p.add_argument("--images", type=int, default=118287, help="default: train2017's count")
    p.add_argument("--annotations", type=int, default=860001, help="default: train2017's count")
    p.add_argument("--points", type=int, default=26,
                   help="polygon points per annotation (26: about train2017's bytes per one)")
    p.add_argument("--seed", type=int, default=2017)
    a = p.parse_args()
    if a.images < 1 or a.annotations < 0 or a.points < 3:
        sys.exit("make_coco_instances: --images >= 1, --annotations >= 0 and --points >= 3")
    rng = random.Random(a.seed)
    # Segmentations are not read by the loader: a pool of them, reused, keeps this fast.
    polygons = [polygon(rng, a.points + rng.randint(-8, 8)) for _ in range(4096)]
    sizes = [(rng.choice((480, 427, 375, 640, 500)), rng.choice((640, 480, 500, 427)))
             for _ in range(a.images)]
    ids = rng.sample(range(1, 600000), a.images)
    with open(a.out, "w", buffering=1 << 20) as f:
        f.write('{"info":{"description":"synthetic COCO-shaped instances","version":"1.0",'
                '"year":2017},"licenses":[')
        f.write(",".join(json.dumps({"url": f"http://creativecommons.org/licenses/{i}/",
                                     "id": i, "name": f"License {i}"}) for i in range(1, 9)))
        f.write('],"images":[')
        for i, (h, w) in enumerate(sizes):
            name = f"{ids[i]:012d}.jpg"
            f.write(("," if i else "") + '{"license":' + str(1 + i % 8) + ',"file_name":"' + name +
                    '","coco_url":"http://images.cocodataset.org/train2017/' + name +
                    '","height":' + str(h) + ',"width":' + str(w) +
                    ',"date_captured":"2013-11-14 11:18:45","flickr_url":'
                    '"http://farm9.staticflickr.com/8186/8119368305_4e622c8349_z.jpg","id":' +
                    str(ids[i]) + "}")
        f.write('],"annotations":[')
        for k in range(a.annotations):
            i = rng.randrange(a.images)
            h, w = sizes[i]
            bw, bh = rng.uniform(1, w / 2), rng.uniform(1, h / 2)
            x, y = rng.uniform(0, w - bw), rng.uniform(0, h - bh)
            crowd = 1 if rng.random() < 0.01 else 0
            seg = rle(rng, h, w) if crowd else polygons[k % len(polygons)]
            f.write(("," if k else "") + '{"segmentation":' + seg + ',"area":' +
                    f"{bw * bh * 0.6:.4f}" + ',"iscrowd":' + str(crowd) + ',"image_id":' +
                    str(ids[i]) + ',"bbox":[' + f"{x:.2f},{y:.2f},{bw:.2f},{bh:.2f}" +
                    '],"category_id":' + str(rng.choice(COCO_IDS)) + ',"id":' + str(k + 1) + "}")
        f.write('],"categories":[')
        f.write(",".join(json.dumps({"supercategory": "thing", "id": c, "name": f"class{c}"})
                         for c in COCO_IDS))
        f.write("]}\n")


if __name__ == "__main__":
    main()
