"""Pipelines given as steps: detection steps, timm's strings, random_affine, AugMix and random
erasing, and the ops each sample got (Batch.applied_ops)."""

import numpy as np
import pytest

import stoke
from helpers import FASHION, coco_set, check_boxes_cover_their_colour


def test_a_pipeline_of_detection_steps_moves_the_boxes_with_the_pixels(tmp_path):
    data = coco_set(tmp_path)
    steps = [("scale_jitter", 60, 140), ("box_crop", 64, 64, 0.6), ("vertical_flip", 1.0),
             "horizontal_flip"]
    loader = stoke.Loader(data, batch=4, size=64, pipeline=steps, workers=1, seed=5)
    checked = 0
    for batch in loader:
        geometry = np.from_dlpack(batch.geometry)
        assert (geometry[:, 2] < 0).all()  # every sample mirrored top-bottom
        pixels = np.from_dlpack(batch.pixels[0])
        boxes = np.from_dlpack(batch.boxes[0])
        classes = np.from_dlpack(batch.box_classes[0])
        counts = np.from_dlpack(batch.box_counts[0])
        checked += check_boxes_cover_their_colour(pixels, boxes, classes, counts)
    assert checked > 8
    with pytest.raises(ValueError, match="is not one of"):
        stoke.Loader(data, size=64, pipeline=["rotate"])
    with pytest.raises(ValueError, match="needs size="):
        stoke.Loader(data, pipeline=["horizontal_flip"])
    with pytest.raises(ValueError, match="takes \\(height, width"):
        stoke.Loader(data, size=64, pipeline=[("box_crop", 64)])


def test_timm_strings_take_words_and_report_pillow_ops(tmp_path):
    steps = [("resize", 32, 32),
             ("timm_augment", "rand-m9-mstd0.5-inc1", "interpolation=bicubic", "fill=1,2,3"),
             ("timm_augment", "augmix-m5-w3")]
    loader = stoke.Loader(FASHION, split="test", batch=50, workers=1, size=32, channels=3,
                          pipeline=steps, seed=4)
    batch = next(iter(loader))
    seen = set()
    for ops in batch.applied_ops:
        assert len(ops) <= 2 + 13  # n, then 3 chains of a mark and up to 3 ops, and the blend
        for op in ops:
            seen.add(op[0])
            if op[0] in ("pil_rotate", "pil_shear_x", "pil_translate_y_rel"):
                name, value, flt, fill = op
                assert isinstance(value, float) and flt in (2, 3) and isinstance(fill, tuple)
            if op[0] == "pil_posterize":
                assert isinstance(op[1], int)
            if op[0] == "timm_augmix_chain":
                assert len(op) == 5 and isinstance(op[2], int) and op[4] is False
    assert "timm_augmix_chain" in seen and "timm_augmix_blend" in seen
    assert any(name.startswith("pil_") for name in seen)
    with pytest.raises(ValueError, match="section 'x3': unknown key 'x'"):
        stoke.Loader(FASHION, size=32, channels=3, pipeline=[("timm_augment", "rand-m9-x3")])
    with pytest.raises(ValueError, match="pipeline step resize: 'x' is not a number"):
        stoke.Loader(FASHION, size=32, pipeline=[("resize", 32, "x")])


def test_random_affine_records_its_warp_and_its_boxes_hold_their_pixels(tmp_path):
    data = coco_set(tmp_path)
    steps = [("resize", 64, 64), ("random_affine_bilinear", -20, 20, 0.1, 0.2, 0.9, 1.1, -5, 5)]
    loader = stoke.Loader(data, batch=4, size=64, pipeline=steps, workers=1, seed=5)
    warped = 0
    for batch in loader:
        pixels = np.from_dlpack(batch.pixels[0])
        boxes = np.from_dlpack(batch.boxes[0])
        classes = np.from_dlpack(batch.box_classes[0])
        counts = np.from_dlpack(batch.box_counts[0])
        for i, ops in enumerate(batch.applied_ops):
            (op,) = ops  # ('affine_bilinear', angle, tx, ty, scale, shear_x, shear_y, fill)
            name, angle, tx, ty, scale, shear_x, shear_y, fill = op
            assert name == "affine_bilinear"
            assert -20 <= angle <= 20 and 0.9 <= scale <= 1.1 and -5 <= shear_x <= 5
            assert tx == int(tx) and abs(tx) <= 6 and ty == int(ty) and abs(ty) <= 13
            assert shear_y == 0 and fill == 0
            warped += 1
            for k in range(counts[i]):
                # Every bright pixel of the box's colour lies inside its box (the box around
                # the moved rectangle's corners, clipped to the image).
                ys, xs = np.nonzero(pixels[i, :, :, classes[i, k]] >= 128)
                x1, y1, x2, y2 = boxes[i, k]
                assert (xs >= x1 - 1).all() and (xs + 1 <= x2 + 1).all()
                assert (ys >= y1 - 1).all() and (ys + 1 <= y2 + 1).all()
    assert warped == 12
    with pytest.raises(ValueError, match="takes \\(degrees\\) or"):
        stoke.Loader(data, size=64, pipeline=[("random_affine", 10, 0.1, 0.1)])
    with pytest.raises(ValueError, match="translate_x must be a fraction"):
        stoke.Loader(data, size=64, pipeline=[("random_affine", -10, 10, 1.5, 0)])


def test_augmix_takes_its_settings_as_words_and_records_its_chains():
    def first_batch(steps):
        return next(iter(stoke.Loader(FASHION, split="test", batch=8, size=32, channels=1,
                                      pipeline=steps, workers=0, seed=3)))
    batch = first_batch([("resize", 32, 32),
                         ("augmix", "width=2", "depth=1", "interpolation=nearest", "fill=128")])
    again = first_batch([("resize", 32, 32),
                         ("augmix", "fill=128", "interpolation=nearest", "depth=1", "width=2")])
    assert np.array_equal(np.from_dlpack(batch.pixels[0]), np.from_dlpack(again.pixels[0]))
    assert batch.applied_ops == again.applied_ops
    for ops in batch.applied_ops:
        name, m0, chains, interpolation, fill = ops[0]
        assert (name, chains, interpolation, fill) == ("augmix", 2, "nearest", 128.0)
        assert [op[0] for op in ops[1::2]] == ["augmix_chain"] * 2  # one op per chain
        assert [op[2] for op in ops[1::2]] == [1, 1]
        assert abs(m0 + ops[1][1] + ops[3][1] - 1) < 1e-5
    defaults = first_batch([("resize", 32, 32), "augmix"])
    assert {ops[0][3:] for ops in defaults.applied_ops} == {("bilinear", None)}
    with pytest.raises(ValueError, match="interpolation must be nearest or bilinear, got 'bicubic'"):
        first_batch([("resize", 32, 32), ("augmix", "interpolation=bicubic")])
    with pytest.raises(ValueError, match="'severity' is not one of its settings"):
        first_batch([("resize", 32, 32), ("augmix", "severity")])
    with pytest.raises(ValueError, match="severity is given twice"):
        first_batch([("resize", 32, 32), ("augmix", "severity=2", "severity=3")])


def test_random_erasing_erases_the_normalized_output_where_applied_ops_say():
    def first_batch(pipeline):
        loader = stoke.Loader(FASHION, split="test", batch=64, workers=1, seed=3, size=28,
                              dtype="float32", channels=1, pipeline=pipeline)
        batch = next(iter(loader))
        return np.from_dlpack(batch.pixels[0]).copy(), batch.applied_ops

    plain, plain_ops = first_batch(["horizontal_flip"])
    erased, ops = first_batch(["horizontal_flip", ("random_erasing", 1.0, 0.1, 0.3, 0.5, 2.0, 3.0)])
    assert plain_ops == [[]] * 64
    assert erased.shape == plain.shape == (64, 1, 28, 28)
    for n, sample_ops in enumerate(ops):
        assert len(sample_ops) == 1
        name, top, left, height, width, *values = sample_ops[0]
        assert name == "erase" and values == [3.0, 3.0, 3.0]
        inside = np.zeros((28, 28), bool)
        inside[top:top + height, left:left + width] = True
        assert (erased[n, 0][inside] == 3.0).all()
        assert (erased[n, 0][~inside] == plain[n, 0][~inside]).all()
    _, noisy = first_batch(["horizontal_flip", ("random_erasing_pixel", 1.0)])
    assert {o[0][0] for o in noisy} == {"erase_noise"} and len(noisy[0][0]) == 6
    with pytest.raises(ValueError, match="needs a float dtype"):
        stoke.Loader(FASHION, split="test", size=28, pipeline=["random_erasing_pixel"])


def test_pipeline_steps_lists_the_vocabulary_the_loader_takes():
    steps = dict(stoke.pipeline_steps())
    assert steps["random_solarize"] == "(threshold[, probability])"
    assert steps["box_crop"].startswith("(height, width[, min_visible")
    assert {"random_resized_crop", "timm_augment", "augmix", "random_erasing_color",
            "random_affine_bilinear", "auto_augment_svhn"} <= steps.keys()
    # Every listed name is a step the loader takes, and a name it does not take is named as such,
    # with the whole list.
    for name in steps:
        with pytest.raises(ValueError) as raised:
            stoke.Loader(FASHION, size=28, pipeline=[(name, "x" * 3)])
        assert f"'{name}' is not one of" not in str(raised.value), name
    with pytest.raises(ValueError) as raised:
        stoke.Loader(FASHION, size=28, pipeline=["rotate"])
    for name in steps:
        assert name in str(raised.value)
    assert "stoke.pipeline_steps()" in stoke.Loader.__doc__
