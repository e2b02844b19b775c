#!/usr/bin/env python3
"""Builds a small object-detection set in COCO format from real photographs, deterministically.

  python3 bench/make_detection_set.py --out DIR [--photos SRC] [--variants LIST] [--overlay DIR]

For stoke's end-to-end detection tests and examples: real photographs, boxes that were checked
by eye, category ids with gaps, a crowd box, and photos with no annotation.

The photographs
---------------
Nine photos bundled with scikit-image, in its `skimage/data` folder (the files ship inside the
package; nothing is downloaded). They are identical, byte for byte, in the PyPI wheel of
scikit-image 0.25.2 and in Debian 12's python3-skimage 0.19.3-8; the script checks each file's
SHA-256, since the boxes below belong to these exact pixels. Any of these gives them:

  python3 -m venv /tmp/sk && /tmp/sk/bin/pip install scikit-image==0.25.2
  apt-get install python3-skimage      (Debian 12: /usr/lib/python3/dist-packages/skimage/data)
  pip download --no-deps scikit-image==0.25.2 &&      (the photos alone: 5 MB in SRC)
      unzip -j scikit_image-0.25.2-*.whl 'skimage/data/*.png' 'skimage/data/*.jpg' -d SRC

`--photos SRC` names the folder holding them; without it the script looks for an installed
scikit-image (found without importing it) and then Debian's path above. scikit-image itself is
not needed at run time: only the files.

Their terms, as scikit-image's documentation of each image (skimage/data/_fetchers.py) states:
astronaut (NASA; no known copyright restrictions, public domain), camera (CC0, Lav Varshney),
chelsea (CC0, Stefan van der Walt), clock_motion (public domain, Stefan van der Walt), coffee
(CC0, Rachel Michetti), coins (Brooklyn Museum collection; no known copyright restrictions),
hubble_deep_field (NASA; "may be freely used in the public domain"), rocket (SpaceX; released
in the public domain), motorcycle_left (Middlebury 2014 stereo benchmark, Scharstein et al.;
scikit-image states no licence for it).

The boxes
---------
Each photo's boxes are written out below as xyxy pixel edges in the photo's own pixels (a box
[x0, y0, x1, y1] covers columns x0..x1-1 and rows y0..y1-1). They were read off a coordinate
grid drawn over the zoomed photo (the coins' from a threshold of the photo, then checked) and
then checked by eye on the overlays that `--overlay DIR` draws, for every output image, and
moved until each sits tightly on its object. Run with `--overlay` and look at the PNGs to
check them again.

Category ids are COCO 2017's where the class is one of COCO's (person 1, bicycle 2,
motorcycle 4, bench 15, cat 17, bottle 44, cup 47, spoon 50, clock 85); the others take ids
from 101 up with gaps, so that a reader must map ids to contiguous classes.
  - hubble_deep_field (galaxies, none of the categories) has no annotation in any variant;
  - the bottom row of coins is one annotation with iscrowd 1 (a box around a group of
    objects, not labelled one by one, as COCO does for crowds); the other 18 coins have their
    own boxes. `area` is the box's area (there are no segmentation masks).

The images
----------
Each photo gives up to five images, `images/<photo>_<variant>.jpg` (`--variants`):
  full   the photo as it is;
  half   scaled to half its width and height;
  wide   scaled to 5/4 of its width and 2/3 of its height (a different aspect ratio);
  tall   scaled to 2/3 of its width and 5/4 of its height;
  crop   a hand-picked window of the photo (below), scaled by 3/2.
A variant is a window of the photo scaled to a size, and its boxes go through the same
arithmetic: x' = (x - window_x0) * out_width / window_width, likewise for y (Pillow's resize
maps the window's edges onto the output's edges, so this is exact). A box is clipped to the
window and kept when at least MIN_VISIBLE (0.3) of its area remains.

With all variants: 45 images (the 5 of hubble_deep_field without annotations), 229 annotations
(5 of them crowd), 21 categories.

Output: DIR/images/*.jpg and DIR/instances.json (`file_name` relative to DIR, where stoke's
COCO reader looks by default). Images are RGB JPEGs (the grey photos as three equal
channels) written by Pillow at quality 90, 4:2:0, baseline, not optimised, no metadata, after
Pillow's Lanczos resampling. So the same Pillow gives the same bytes every run, and
instances.json is the same with any Pillow (between Pillow 9.4, Debian 12's, and 13.0 only
the `wide` images' bytes differ). Needs Python 3 and Pillow (Debian: python3-pil), nothing else.
"""
import argparse
import hashlib
import importlib.util
import json
import os
import sys
from dataclasses import dataclass, field

try:
    from PIL import Image, ImageDraw
except ImportError:
    sys.exit("make_detection_set: needs Pillow (apt-get install python3-pil or pip install pillow)")

JPEG_QUALITY = 90
MIN_VISIBLE = 0.3  # a clipped box is kept when this share of its area is left in the window
VARIANTS = ("full", "half", "wide", "tall", "crop")
DEBIAN_SKIMAGE_DATA = "/usr/lib/python3/dist-packages/skimage/data"
INSTALL_HINT = ("pip install scikit-image==0.25.2 (or apt-get install python3-skimage), "
                "or pass --photos with a folder holding scikit-image's data images")

# COCO 2017 ids for COCO's classes; the rest from 101 up, with gaps.
CATEGORIES = {
    "person": 1, "bicycle": 2, "motorcycle": 4, "bench": 15, "cat": 17, "bottle": 44,
    "cup": 47, "spoon": 50, "clock": 85,
    "face": 101, "eye": 103, "nose": 105, "flag": 107, "helmet": 109, "rocket": 111,
    "tower": 113, "camera": 115, "tripod": 117, "saucer": 119, "box": 121, "coin": 123,
}


@dataclass
class Photo:
    name: str
    file: str
    sha256: str
    crop: tuple  # the `crop` variant's window, xyxy
    boxes: list  # (category, x0, y0, x1, y1)
    crowd: list = field(default_factory=list)  # the same, annotated with iscrowd 1


PHOTOS = [
    Photo("astronaut", "astronaut.png",
          "88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5",
          crop=(120, 0, 512, 300),
          boxes=[("person", 19, 14, 362, 512), ("face", 182, 74, 262, 182),
                 ("helmet", 277, 343, 512, 512), ("flag", 0, 0, 97, 512),
                 ("rocket", 353, 0, 458, 270)]),
    Photo("camera", "camera.png",
          "b0793d2adda0fa6ae899c03989482bff9a42d3d5690fc7e3648f2795d730c23a",
          crop=(150, 50, 450, 350),
          boxes=[("person", 0, 64, 332, 512), ("face", 178, 130, 256, 192),
                 ("camera", 258, 138, 326, 190), ("tripod", 230, 182, 402, 510)]),
    Photo("chelsea", "chelsea.png",
          "596aa1e7cb875eb79f437e310381d26b338a81c2da23439704a73c4651e8c4bb",
          crop=(100, 50, 380, 290),
          boxes=[("cat", 0, 0, 400, 300), ("eye", 135, 83, 211, 146),
                 ("eye", 294, 108, 343, 164), ("nose", 238, 226, 284, 264)]),
    Photo("clock_motion", "clock_motion.png",
          "f029226b28b642e80113d86622e9b215ee067a0966feaf5e60604a1e05733955",
          crop=(100, 60, 320, 250),
          boxes=[("clock", 142, 95, 282, 214)]),
    Photo("coffee", "coffee.png",
          "cc02f8ca188b167c775a7101b5d767d1e71792cf762c33d6fa15a4599b5a8de7",
          crop=(150, 0, 450, 340),
          boxes=[("cup", 173, 18, 409, 304), ("saucer", 77, 72, 480, 384),
                 ("spoon", 325, 66, 424, 326)]),
    Photo("coins", "coins.png",
          "f8d773fc9cfa6f4d8e5942dc34d0a0788fcaed2a4fefbbed0aef5398d7ef4cba",
          crop=(0, 90, 250, 303),
          boxes=[("coin", 21, 35, 67, 74), ("coin", 80, 39, 121, 74),
                 ("coin", 132, 30, 179, 74), ("coin", 192, 30, 240, 73),
                 ("coin", 256, 34, 297, 72), ("coin", 305, 15, 365, 72),
                 ("coin", 24, 104, 68, 146), ("coin", 84, 107, 122, 145),
                 ("coin", 133, 109, 174, 145), ("coin", 185, 105, 227, 145),
                 ("coin", 245, 96, 297, 144), ("coin", 317, 105, 357, 145),
                 ("coin", 25, 178, 63, 216), ("coin", 79, 174, 125, 217),
                 ("coin", 134, 179, 175, 217), ("coin", 189, 170, 237, 217),
                 ("coin", 251, 172, 298, 217), ("coin", 315, 156, 380, 218)],
          crowd=[("coin", 18, 233, 382, 290)]),
    Photo("hubble_deep_field", "hubble_deep_field.jpg",
          "3a19c5dd8a927a9334bb1229a6d63711b1c0c767fb27e2286e7c84a3e2c2f5f4",
          crop=(200, 100, 700, 400), boxes=[]),
    Photo("motorcycle_left", "motorcycle_left.png",
          "db18e9c4157617403c3537a6ba355dfeafe9a7eabb6b9b94cb33f6525dd49179",
          crop=(300, 0, 741, 330),
          boxes=[("motorcycle", 92, 76, 682, 450), ("bench", 38, 107, 290, 308),
                 ("bicycle", 0, 144, 43, 224), ("bottle", 401, 52, 420, 93),
                 ("box", 528, 31, 589, 99), ("box", 591, 65, 635, 99),
                 ("box", 635, 77, 679, 102), ("box", 612, 187, 684, 275)]),
    Photo("rocket", "rocket.jpg",
          "c2dd0de7c538df8d111e479619b129464d0269d0ae5fd18ca91d33a7fdfea95c",
          crop=(150, 100, 500, 427),
          boxes=[("rocket", 308, 126, 337, 406), ("tower", 0, 0, 89, 427),
                 ("tower", 558, 0, 640, 427), ("tower", 166, 122, 207, 427),
                 ("tower", 437, 122, 481, 427)]),
]


def find_photos_dir(given):
    """The folder with the photos: --photos, else an installed scikit-image's data folder."""
    if given:
        return given
    spec = importlib.util.find_spec("skimage")  # locates the package without importing it
    candidates = [os.path.join(d, "data") for d in (spec.submodule_search_locations or [])] \
        if spec else []
    candidates.append(DEBIAN_SKIMAGE_DATA)
    for d in candidates:
        if os.path.isfile(os.path.join(d, PHOTOS[0].file)):
            return d
    sys.exit(f"make_detection_set: scikit-image's data images were not found; {INSTALL_HINT}")


def load_photo(folder, photo):
    """The photo as RGB, after checking that it is the exact file the boxes were drawn on."""
    path = os.path.join(folder, photo.file)
    if not os.path.isfile(path):
        sys.exit(f"make_detection_set: {path} is missing; {INSTALL_HINT}")
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != photo.sha256:
        sys.exit(f"make_detection_set: {path} is not the photo the boxes were drawn on "
                 f"(SHA-256 {digest}, expected {photo.sha256})")
    with Image.open(path) as im:
        return im.convert("RGB")


def variant_geometry(variant, photo, width, height):
    """(window xyxy in the photo, output width, output height) for one variant."""
    full = (0, 0, width, height)
    if variant == "full":
        return full, width, height
    if variant == "half":
        return full, width // 2, height // 2
    if variant == "wide":
        return full, width * 5 // 4, height * 2 // 3
    if variant == "tall":
        return full, width * 2 // 3, height * 5 // 4
    x0, y0, x1, y1 = photo.crop
    return photo.crop, (x1 - x0) * 3 // 2, (y1 - y0) * 3 // 2


def transform_box(box, window, out_w, out_h):
    """The box clipped to the window and scaled as the image is, or None when too little is left."""
    wx0, wy0, wx1, wy1 = window
    x0, y0, x1, y1 = box
    cx0, cy0, cx1, cy1 = max(x0, wx0), max(y0, wy0), min(x1, wx1), min(y1, wy1)
    if cx1 <= cx0 or cy1 <= cy0:
        return None
    if (cx1 - cx0) * (cy1 - cy0) < MIN_VISIBLE * (x1 - x0) * (y1 - y0):
        return None
    sx, sy = out_w / (wx1 - wx0), out_h / (wy1 - wy0)
    return ((cx0 - wx0) * sx, (cy0 - wy0) * sy, (cx1 - wx0) * sx, (cy1 - wy0) * sy)


def make_image(rgb, window, out_w, out_h):
    """The window of the photo at the output size (Lanczos; the photo itself when unchanged)."""
    if window == (0, 0, rgb.width, rgb.height) and (out_w, out_h) == rgb.size:
        return rgb
    return rgb.crop(window).resize((out_w, out_h), Image.Resampling.LANCZOS)


def save_jpeg(im, path):
    # Fixed settings, no EXIF or ICC, so the bytes depend only on the pixels and the encoder.
    im.save(path, "JPEG", quality=JPEG_QUALITY, subsampling=2, optimize=False,
            progressive=False)


def draw_overlay(im, anns, path):
    """The image with its boxes and category names drawn: for checking the boxes by eye."""
    names = {v: k for k, v in CATEGORIES.items()}
    over = im.copy()
    d = ImageDraw.Draw(over)
    for a in anns:
        x, y, w, h = a["bbox"]
        color = (255, 160, 0) if a["iscrowd"] else (0, 255, 0)
        d.rectangle([x, y, x + w - 1, y + h - 1], outline=color, width=1)
        label = names[a["category_id"]] + (" (crowd)" if a["iscrowd"] else "")
        d.text((x + 2, y + 2), label, fill=color)
    over.save(path)


def annotate(photo, window, out_w, out_h, image_id, first_id):
    """The COCO annotations of one variant of a photo, numbered from first_id."""
    anns = []
    for crowd, boxes in ((0, photo.boxes), (1, photo.crowd)):
        for category, *box in boxes:
            t = transform_box(box, window, out_w, out_h)
            if t is None:
                continue
            w, h = t[2] - t[0], t[3] - t[1]
            anns.append({"id": first_id + len(anns), "image_id": image_id,
                         "category_id": CATEGORIES[category], "bbox": [t[0], t[1], w, h],
                         "area": w * h, "iscrowd": crowd})
    return anns


def build(photos_dir, out_dir, variants, overlay_dir):
    """Writes the images and instances.json; returns the COCO dictionary."""
    os.makedirs(os.path.join(out_dir, "images"), exist_ok=True)
    if overlay_dir:
        os.makedirs(overlay_dir, exist_ok=True)
    images, annotations = [], []
    for photo in PHOTOS:
        rgb = load_photo(photos_dir, photo)
        for variant in variants:
            window, out_w, out_h = variant_geometry(variant, photo, rgb.width, rgb.height)
            image_id = len(images) + 1
            file_name = f"images/{photo.name}_{variant}.jpg"
            im = make_image(rgb, window, out_w, out_h)
            save_jpeg(im, os.path.join(out_dir, file_name))
            images.append({"id": image_id, "file_name": file_name, "width": out_w,
                           "height": out_h})
            anns = annotate(photo, window, out_w, out_h, image_id, len(annotations) + 1)
            annotations += anns
            if overlay_dir:
                draw_overlay(im, anns, os.path.join(overlay_dir, f"{photo.name}_{variant}.png"))
    categories = [{"id": i, "name": n} for n, i in sorted(CATEGORIES.items(), key=lambda c: c[1])]
    coco = {"info": {"description": "stoke detection test set (bench/make_detection_set.py)"},
            "images": images, "annotations": annotations, "categories": categories}
    with open(os.path.join(out_dir, "instances.json"), "w") as f:
        json.dump(coco, f, indent=1)
        f.write("\n")
    return coco


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", required=True, help="output folder (created; files in it replaced)")
    p.add_argument("--photos", help="folder with scikit-image's data images "
                   "(default: an installed scikit-image's)")
    p.add_argument("--variants", default=",".join(VARIANTS),
                   help=f"comma-separated, of {','.join(VARIANTS)} (default: all)")
    p.add_argument("--overlay", metavar="DIR", help="also write each image with its boxes drawn, "
                   "as DIR/<image>.png")
    a = p.parse_args()
    variants = [v for v in a.variants.split(",") if v]
    bad = [v for v in variants if v not in VARIANTS]
    if bad or not variants:
        p.error(f"--variants: unknown {bad}; choose from {','.join(VARIANTS)}")
    coco = build(find_photos_dir(a.photos), a.out, variants, a.overlay)
    print(f"wrote {len(coco['images'])} images, {len(coco['annotations'])} annotations, "
          f"{len(coco['categories'])} categories to {a.out}")


if __name__ == "__main__":
    main()
