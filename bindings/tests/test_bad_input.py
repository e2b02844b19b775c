"""Bad input: damaged, undecodable and hostile files, under both error policies."""

import shutil

import numpy as np
import pytest

import stoke
from helpers import PHOTO, write_shard


def test_verify_region_delivers_what_the_crop_needs_of_a_damaged_file(tmp_path):
    data = open(PHOTO, "rb").read()
    lines = []
    for i in range(16):  # even lines intact, odd ones without their last tenth
        name = f"{i:02d}.jpg"
        (tmp_path / name).write_bytes(data if i % 2 == 0 else data[: len(data) * 9 // 10])
        lines.append(f"{name}\t{i}")
    (tmp_path / "damaged.txt").write_text("\n".join(lines) + "\n")
    for i in range(16):
        (tmp_path / f"ok{i:02d}.jpg").write_bytes(data)
    (tmp_path / "intact.txt").write_text("".join(f"ok{i:02d}.jpg\t{i}\n" for i in range(16)))

    def epoch(lst, verify):
        loader = stoke.Loader(str(tmp_path / lst), batch=16, workers=1, size=32, verify=verify,
                              shuffle=False, seed=7)
        b = next(iter(loader))
        pixels = np.from_dlpack(b.pixels[0]).copy()
        ids = np.from_dlpack(b.sample_ids).tolist()
        return pixels, ids, loader.stats()["skipped"]

    _, _, whole_skipped = epoch("damaged.txt", "whole-file")
    assert whole_skipped == 8  # every damaged file, whatever its crop
    want, _, _ = epoch("intact.txt", "region")
    got, ids, region_skipped = epoch("damaged.txt", "region")
    # Random-resized crops that end above the last tenth never reach the damage: those files are
    # delivered, with the pixels of the intact file at the same position.
    delivered = [i for i in range(1, 16, 2) if ids[i] == i]
    assert delivered and region_skipped == 8 - len(delivered)
    for i in delivered:
        assert np.array_equal(got[i], want[i])


def test_bad_input_under_on_error_error_raises_data_error_naming_the_path(tmp_path):
    shutil.copy(PHOTO, tmp_path / "good.jpg")
    (tmp_path / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 this is not a JPEG")
    (tmp_path / "list.txt").write_text("good.jpg\t0\nbroken.jpg\t1\n")
    loader = stoke.Loader(str(tmp_path / "list.txt"), batch=2, workers=1, size=32,
                          on_error="error", shuffle=False)
    with pytest.raises(stoke.DataError, match="broken.jpg"):
        for _ in loader:
            pass
    skipping = stoke.Loader(str(tmp_path / "list.txt"), batch=2, workers=1, size=32)
    assert sum(1 for _ in skipping) == 1
    assert skipping.stats()["skipped"] == 1


def test_max_classes_bounds_the_labels_the_data_states(tmp_path):
    photo = open(PHOTO, "rb").read()
    huge = write_shard(tmp_path / "huge.tar", [("000000.jpg", photo), ("000000.cls", b"2147483647")])
    with pytest.raises(stoke.DataError, match=r"huge\.tar:000000\.cls: label 2147483647 is not "
                                              r"below max_classes 16777216 \(labels are "
                                              r"0\.\.16777215; raise max_classes"):
        stoke.Loader(huge, batch=1, workers=0)
    five = write_shard(tmp_path / "five.tar", [("000000.jpg", photo), ("000000.cls", b"5")])
    with pytest.raises(stoke.DataError, match="label 5 is not below max_classes 5"):
        stoke.Loader(five, batch=1, workers=0, max_classes=5)
    batch = next(iter(stoke.Loader(five, batch=1, workers=0, size=16, max_classes=6)))
    assert np.from_dlpack(batch.labels).tolist() == [5]
    with pytest.raises(ValueError, match="^max_classes must be positive"):
        stoke.Loader(five, batch=1, workers=0, max_classes=0)


def test_a_member_name_with_a_newline_and_an_escape_is_shown_escaped(tmp_path, capfd):
    photo = open(PHOTO, "rb").read()
    evil = "x\n\x1b[31mstoke: forged line\x1b[0m/000001"
    # (Its image is empty: indexing leaves it out and names it.)
    shard = write_shard(tmp_path / "evil.tar", [("000000.jpg", photo), ("000000.cls", b"0"),
                                           (evil + ".jpg", b""), (evil + ".cls", b"1")])
    shown = "x\\n\\x1b[31mstoke: forged line\\x1b[0m/000001.jpg"
    with pytest.raises(stoke.DataError) as e:
        for _ in stoke.Loader(shard, batch=2, workers=1, size=16, on_error="error",
                              shuffle=False):
            pass
    assert shown in str(e.value) and "\x1b" not in str(e.value) and "\n" not in str(e.value)
    capfd.readouterr()
    assert sum(1 for _ in stoke.Loader(shard, batch=2, workers=1, size=16, shuffle=False)) == 1
    err = capfd.readouterr().err
    assert "\x1b" not in err
    assert [line for line in err.splitlines() if shown in line] != []
    assert all(line.startswith("stoke: ") for line in err.splitlines())
