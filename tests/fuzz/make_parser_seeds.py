#!/usr/bin/env python3
"""Writes the seed corpora of the parser fuzz targets (tests/fuzz/corpus/<target>/).

    make_parser_seeds.py CORPUS_ROOT SEEDGEN

CORPUS_ROOT is tests/fuzz/corpus; SEEDGEN is the stoke_fuzz_parser_seedgen binary of the fuzz
build, run last (it writes sidecar/ from the shards in tar/, state/ and png_label_map/).

    tar/          shards as Python's tarfile writes them (ustar with its prefix field, GNU with
                  'L' long names, a directory and a symlink, pax with path= and size= records
                  and a global header) and as GNU tar writes them (--format=gnu, posix, ustar);
                  records of one block (no padding past the two end blocks) to keep them small
    shard_list/   dataset strings (brace ranges, alternatives, comma lists, URLs) and list files
                  (comments, CRLF, relative and absolute names, an image list)
    coco/         COCO instances files in the layout of instances_val2017.json
    shard_json/   WebDataset .json members: labels, boxes and classes, image sizes

Deterministic: member mtimes, owners and modes are fixed.
"""

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

tarfile.RECORDSIZE = tarfile.BLOCKSIZE  # no padding to 10 KiB records

JPEG_STUB = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9"


def sample_members(key, label):
    meta = {"label": label, "width": 64, "height": 48,
            "boxes": [[4.0, 6.5, 30.0, 40.0]], "classes": [label]}
    return [(key + ".jpg", JPEG_STUB),
            (key + ".cls", b"%d\n" % label),
            (key + ".json", json.dumps(meta).encode())]


def python_tar(path, fmt, members, extra=None, pax_headers=None):
    with tarfile.open(path, "w", format=fmt, pax_headers=pax_headers or {}) as tar:
        for name, data, *kind in members + (extra or []):
            info = tarfile.TarInfo(name)
            info.mtime = 0
            info.uid = info.gid = 1000
            info.uname = info.gname = "stoke"
            if kind and kind[0] == "dir":
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            elif kind and kind[0] == "symlink":
                info.type = tarfile.SYMTYPE
                info.linkname = data.decode()
                tar.addfile(info)
            else:
                info.size = len(data)
                info.mode = 0o644
                if kind and kind[0] == "pax_size":
                    info.pax_headers = {"size": str(len(data)), "comment": "stoke seed"}
                tar.addfile(info, io.BytesIO(data))


def gnu_tar(path, fmt, members):
    with tempfile.TemporaryDirectory() as root:
        for name, data in members:
            os.makedirs(os.path.join(root, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(root, name), "wb") as f:
                f.write(data)
        names = [name for name, _ in members]
        # A posix archive's extended headers are named without the PID GNU tar puts there.
        pax = (["--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime"]
               if fmt == "posix" else [])
        subprocess.run(["tar", "--format=" + fmt, "--blocking-factor=1", "--sort=none",
                        "--mtime=@0", "--owner=0", "--group=0", "--numeric-owner",
                        "--mode=a=r,u+w"] + pax +
                       ["-C", root, "-cf", os.path.abspath(path)] + names, check=True)


def write_tars(out):
    os.makedirs(out, exist_ok=True)
    long_folder = "imagenet/train/" + "n01440764_tench_" * 6  # over ustar's 100-byte name
    python_tar(os.path.join(out, "python_ustar_prefix.tar"), tarfile.USTAR_FORMAT,
               sample_members("train/000000", 0) + sample_members(long_folder + "/000001", 7))
    python_tar(os.path.join(out, "python_gnu_longname.tar"), tarfile.GNU_FORMAT,
               sample_members(long_folder + "x" * 40 + "/000002", 3),
               extra=[("train/", b"", "dir"), ("train/latest.jpg", b"000000.jpg", "symlink")])
    python_tar(os.path.join(out, "python_pax.tar"), tarfile.PAX_FORMAT,
               [(long_folder + "é/000003.jpg", JPEG_STUB, "pax_size"),
                (long_folder + "é/000003.cls", b"12")],
               pax_headers={"comment": "webdataset shard"})
    gnu_tar(os.path.join(out, "gnutar_gnu_longname.tar"), "gnu",
            sample_members(long_folder + "/gnu/000004", 5))
    gnu_tar(os.path.join(out, "gnutar_posix.tar"), "posix",
            sample_members(long_folder + "/posix/000005", 9))
    gnu_tar(os.path.join(out, "gnutar_ustar.tar"), "ustar",
            sample_members("val/000006", 1) + sample_members("val/000007", 2))


SHARD_LISTS = {
    "range_padded": "train-{000000..000099}.tar",
    "range_descending": "shards/part-{9..0}.tar",
    "alternatives": "{train,extra}-{0..3}.tar",
    "comma_list": "a.tar,b-{0..2}.tar,https://data.example.com/c-{00..03}.tar",
    "s3_url": "s3://bucket/imagenet/train-{0000..0015}.tar",
    "list_file": ("# ImageNet shards\r\n"
                  "train-{000000..000003}.tar\r\n"
                  "\r\n"
                  "/data/extra/extra-000000.tar\r\n"
                  "../other/val-{0,1}.tar\r\n"
                  "https://user@data.example.com/shards/train-{04..07}.tar?x=1\r\n"
                  "s3://bucket/train-000008.tar\r\n"),
    "image_list": "images/cat/0001.jpg\t3\nimages/dog/0002.jpg\t5\n",
    "unmatched_brace": "train-{000000..000003.tar",
}

COCO_IMAGES = [
    {"license": 4, "file_name": "000000397133.jpg",
     "coco_url": "http://images.cocodataset.org/val2017/000000397133.jpg",
     "height": 427, "width": 640, "date_captured": "2013-11-14 17:02:52",
     "flickr_url": "http://farm7.staticflickr.com/6116/6255196340_da26cf2c9e_z.jpg",
     "id": 397133},
    {"license": 1, "file_name": "000000037777.jpg",
     "coco_url": "http://images.cocodataset.org/val2017/000000037777.jpg",
     "height": 230, "width": 352, "date_captured": "2013-11-14 20:55:31",
     "flickr_url": "http://farm9.staticflickr.com/8429/7839199426_f6d48aa585_z.jpg",
     "id": 37777},
    {"license": 4, "file_name": "000000252219.jpg",
     "coco_url": "http://images.cocodataset.org/val2017/000000252219.jpg",
     "height": 428, "width": 640, "date_captured": "2013-11-14 22:32:02",
     "flickr_url": "http://farm4.staticflickr.com/3446/3232237447_13d84bd0a1_z.jpg",
     "id": 252219},
]
COCO_CATEGORIES = [
    {"supercategory": "person", "id": 1, "name": "person"},
    {"supercategory": "vehicle", "id": 2, "name": "bicycle"},
    {"supercategory": "kitchen", "id": 44, "name": "bottle"},
    {"supercategory": "furniture", "id": 62, "name": "chair"},
    {"supercategory": "appliance", "id": 78, "name": "microwave"},
]
COCO_ANNOTATIONS = [
    {"segmentation": [[224.24, 297.18, 228.29, 297.18, 234.91, 298.29, 240.87, 302.13,
                       245.69, 309.18, 249.0, 314.12, 226.09, 320.0]],
     "area": 1481.3806, "iscrowd": 0, "image_id": 252219,
     "bbox": [224.24, 297.18, 24.76, 22.82], "category_id": 1, "id": 124713},
    {"segmentation": [[100.0, 200.0, 150.0, 200.0, 150.0, 260.0]], "area": 1500.0,
     "iscrowd": 0, "image_id": 397133, "bbox": [102.49, 118.47, 7.9, 17.31],
     "category_id": 44, "id": 82445},
    {"segmentation": {"counts": [272, 2, 4, 4, 4, 4, 2, 9, 1, 2, 16, 43, 143, 24],
                      "size": [230, 352]},
     "area": 2307, "iscrowd": 1, "image_id": 37777,
     "bbox": [44, 60, 240, 90], "category_id": 62, "id": 900100037777},
    {"segmentation": [[290.0, 55.0, 340.0, 55.0, 340.0, 100.0]], "area": 1250.5,
     "iscrowd": 0, "image_id": 37777, "bbox": [290.72, 55.65, 61.28, 44.57],
     "category_id": 78, "id": 1088530},
]


def write_coco(out):
    os.makedirs(out, exist_ok=True)
    doc = {"info": {"description": "COCO 2017 Dataset", "url": "http://cocodataset.org",
                    "version": "1.0", "year": 2017, "contributor": "COCO Consortium",
                    "date_created": "2017/09/01"},
           "licenses": [{"url": "http://creativecommons.org/licenses/by-nc-sa/2.0/", "id": 1,
                         "name": "Attribution-NonCommercial-ShareAlike License"}],
           "images": COCO_IMAGES, "annotations": COCO_ANNOTATIONS,
           "categories": COCO_CATEGORIES}
    with open(os.path.join(out, "instances_val2017_excerpt.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    bad = dict(doc, annotations=COCO_ANNOTATIONS + [
        {"iscrowd": 0, "image_id": 397133, "bbox": [600.0, 400.0, 80.0, 60.0],
         "category_id": 1, "id": 5},
        {"iscrowd": 0, "image_id": 397133, "bbox": [10.0, 10.0, 0.0, 5.0],
         "category_id": 2, "id": 6}])
    with open(os.path.join(out, "instances_bad_boxes.json"), "w") as f:
        json.dump(bad, f, indent=1)
    empty = {"images": [COCO_IMAGES[0]], "annotations": [], "categories": COCO_CATEGORIES[:1]}
    with open(os.path.join(out, "instances_no_annotations.json"), "w") as f:
        json.dump(empty, f)


SHARD_JSON = {
    "label_only": {"label": 281},
    "boxes": {"label": 1, "width": 640, "height": 427,
              "boxes": [[102.49, 118.47, 110.39, 135.78], [224.24, 297.18, 249.0, 320.0]],
              "classes": [43, 0]},
    "boxes_no_size": {"boxes": [[0, 0, 1, 1]], "classes": [0], "caption": "a tench"},
    "empty_boxes": {"label": 0, "boxes": [], "classes": []},
    "metadata": {"key": "000123", "label": 7, "url": "https://example.com/x.jpg",
                 "tags": ["fish", {"lang": "en"}], "score": 0.87, "nsfw": False, "extra": None},
}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    root, seedgen = sys.argv[1], sys.argv[2]
    for target in ("tar", "shard_list", "coco", "shard_json", "sidecar", "state",
                   "png_label_map"):
        shutil.rmtree(os.path.join(root, target), ignore_errors=True)
    write_tars(os.path.join(root, "tar"))
    os.makedirs(os.path.join(root, "shard_list"))
    for name, text in SHARD_LISTS.items():
        with open(os.path.join(root, "shard_list", name), "w", newline="") as f:
            f.write(text)
    write_coco(os.path.join(root, "coco"))
    os.makedirs(os.path.join(root, "shard_json"))
    for name, doc in SHARD_JSON.items():
        with open(os.path.join(root, "shard_json", name + ".json"), "w") as f:
            json.dump(doc, f)
    subprocess.run([seedgen, root], check=True)


if __name__ == "__main__":
    main()
