#!/usr/bin/env python3
"""Writes crafted shards, sidecars and list files whose headers, records and labels claim
sizes, lengths and counts that wrap 64-bit sums or size tables, for the hostile-input tests.

    make_hostile_shards.py OUT_DIR IMAGE [BAD_IMAGE]

IMAGE is a real JPEG (every shard's first sample, 000000, is it and label 0, so each shard holds
one good sample before what is crafted); BAD_IMAGE (default: IMAGE cut to 300 bytes) is the image
of the sample whose member name holds a newline and a terminal escape. Python's standard library
only. Files written (each described where it is made):

    size-wrap-dir.tar     size-wrap-file.tar    pax-size-wrap.tar    pax-length-wrap.tar
    sidecar-wrap.tar(.idx)  label-cls.tar  label-cls-max.tar  label-json.tar  label-box.tar
    box-deep.tar  box-inf.tar  box-size.tar
    labels.list           many-shards.list      evil-name.tar
"""

import io
import json
import os
import sys
import tarfile

BLOCK = 512
WRAP_SIZE = 2**64 - 512  # data + size wraps back to the header itself


def octal(value, width):
    """A numeric header field as GNU tar and Python write it: width - 1 octal digits and a NUL."""
    return b"%0*o\0" % (width - 1, value)


def header(name, size_field, kind=b"0"):
    """One ustar header block with a correct checksum; size_field is the raw 12-byte field."""
    h = bytearray(BLOCK)
    raw = name.encode("utf-8", "surrogateescape")
    h[0:len(raw[:100])] = raw[:100]
    h[100:108] = octal(0o644, 8)
    h[108:116] = octal(0, 8)
    h[116:124] = octal(0, 8)
    h[124:136] = size_field
    h[136:148] = octal(0, 12)
    h[156:157] = kind
    h[257:265] = b"ustar\x0000"
    h[148:156] = b" " * 8
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


def base256(value):
    """GNU's base-256 size field: the first byte's high bit set, the value big-endian."""
    return bytes([0x80]) + value.to_bytes(11, "big")


def member(name, data, kind=b"0"):
    data = bytes(data)
    return header(name, octal(len(data), 12), kind) + data + bytes(-len(data) % BLOCK)


def end():
    return bytes(2 * BLOCK)


def good_sample(image):
    return member("000000.jpg", image) + member("000000.cls", b"0")


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def tar_of(members):
    """A shard of (name, bytes) members written by Python's tarfile (pax format)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def pax_record(key, value):
    """One pax record, "<length> key=value\n", its length counting its own digits."""
    body = b" %s=%s\n" % (key, value)
    length = len(body) + 1
    while len(b"%d" % length) + len(body) != length:
        length += 1
    return b"%d" % length + body


def pax(records):
    """A pax extended header ('x') holding `records` (bytes) as its data."""
    return member("PaxHeader/hostile", records, b"x")


def pax_length_wrap():
    """Records whose third claims length 2^64 - 6: at + length wraps back to the second record,
    whose end leads to the third again (the walk went round forever)."""
    second = b"6 a=b\n"  # 6 bytes; ends where the third starts
    third = b"%d a=b\n" % (2**64 - 6)
    # The first record ends with the newline the third's wrapped end points at.
    body = b" comment=" + b"x" * 20 + b"\n"
    length = len(body) + 2
    first = b"%d" % length + body
    assert len(first) == length
    return first + second + third


def main():
    out, image_path = sys.argv[1], sys.argv[2]
    with open(image_path, "rb") as f:
        image = f.read()
    if len(sys.argv) > 3:
        with open(sys.argv[3], "rb") as f:
            bad_image = f.read()
    else:
        bad_image = image[:300]
    os.makedirs(out, exist_ok=True)
    p = lambda name: os.path.join(out, name)

    # A directory entry and a regular member whose base-256 size is 2^64 - 512.
    write(p("size-wrap-dir.tar"),
          good_sample(image) + header("dir/", base256(WRAP_SIZE), b"5") + end())
    write(p("size-wrap-file.tar"),
          good_sample(image) + header("000001.jpg", base256(WRAP_SIZE)) + end())
    # A pax size= record of 2^64 - 512 for the member that follows (its own field says 0).
    write(p("pax-size-wrap.tar"),
          good_sample(image) + pax(pax_record(b"size", b"%d" % WRAP_SIZE))
          + header("000001.jpg", octal(0, 12)) + end())
    write(p("pax-length-wrap.tar"),
          good_sample(image) + pax(pax_length_wrap()) + member("000001.jpg", image)
          + member("000001.cls", b"1") + end())

    # A sidecar whose member offset + size wraps to 100 bytes (inside the shard).
    shard = good_sample(image) + end()
    write(p("sidecar-wrap.tar"), shard)
    write(p("sidecar-wrap.tar.idx"),
          ("# stoke shard index 1 %d\n000000.jpg\t%d\t200\n000000.cls\t%d\t1\t0\n"
          % (len(shard), 2**64 - 100, BLOCK * 2 + len(image) + (-len(image) % BLOCK)))
          .encode())

    # Labels that would size the class table: a .cls, a json:label field, a box class, a list.
    write(p("label-cls.tar"),
          tar_of([("000000.jpg", image), ("000000.cls", b"2147483647")]))
    write(p("label-cls-max.tar"),  # the largest label the default bound accepts
          tar_of([("000000.jpg", image), ("000000.cls", b"16777215")]))
    write(p("label-json.tar"),
          tar_of([("000000.jpg", image), ("000000.json", b'{"label": 2147483647}')]))
    boxes = json.dumps({"boxes": [[1, 1, 5, 5], [2, 2, 8, 8]], "classes": [3, 2147483647]})
    write(p("label-box.tar"),
          tar_of([("000000.jpg", image), ("000000.cls", b"0"), ("000000.json", boxes.encode())]))
    # Box members the index must refuse without holding them (sample 000001 after a good
    # 000000): 4 MiB of nested brackets (a DOM of every level), a corner past float's range (an
    # infinite box), a stated width past int's range.
    good_boxes = json.dumps({"boxes": [[1, 1, 5, 5]], "classes": [0]}).encode()
    bad_boxes = {
        "box-deep.tar": b'{"boxes": ' + b"[" * (4 << 20) + b"]" * (4 << 20) + b"}",
        "box-inf.tar": json.dumps({"boxes": [[1, 1, 1e300, 5]], "classes": [0]}).encode(),
        "box-size.tar": json.dumps({"boxes": [[1, 1, 5, 5]], "classes": [0],
                                    "width": 2**32 + 64, "height": 64}).encode(),
    }
    for name, boxes in bad_boxes.items():
        write(p(name), tar_of([("000000.jpg", image), ("000000.cls", b"0"),
                               ("000000.json", good_boxes), ("000001.jpg", image),
                               ("000001.cls", b"0"), ("000001.json", boxes)]))
    write(p("image.jpg"), image)
    write(p("labels.list"), b"image.jpg\t0\nimage.jpg\t2147483647\n")

    # Twelve lines of a million shards each.
    write(p("many-shards.list"), b"s-{000000..999999}.tar\n" * 12)

    # A member name holding a newline and a terminal escape that, printed raw, forge a red
    # "stoke:" line; its image is empty, so indexing leaves it out and names it (a sample that
    # fails later is named by its place in the shard).
    evil = "x\n\x1b[31mstoke: forged line\x1b[0m/000001"
    write(p("evil-name.tar"),
          tar_of([("000000.jpg", image), ("000000.cls", b"0"), (evil + ".jpg", b""),
                  (evil + ".cls", b"1")]))


if __name__ == "__main__":
    main()
