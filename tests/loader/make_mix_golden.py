"""Writes tests/data/mix_golden.bin and mix_boxes.txt: torchvision.transforms.v2's MixUp and CutMix and timm's
Mixup (batch, pair and elem modes) applied to one normalized chunk, given lambdas, partners and
boxes chosen here, in float32, float16 and bfloat16, with their soft labels. mixing_test.cpp
gives stoke's kernels the same lambdas and boxes and compares every byte; mix_boxes.txt holds
both references' CutMix box rules for given lambdas and centres (box_lines()).

The draws are the references' own transforms with their random draws replaced: torchvision's
make_params returns the case's lambda (and box), timm's _params_per_batch / _params_per_elem
and cutmix_bbox_and_lam return the case's. Everything else (the partner rule, the weights'
rounding, the label arithmetic) is theirs.

    /work/parity-venv/bin/python tests/loader/make_mix_golden.py   # torch, torchvision, timm

File: magic "MIXG", version 1, the chunk (n, c, h, w, num_classes as uint32, then n int32
labels and n*c*h*w float32 values, NCHW), the number of cases, then each case: its name (uint32
length + bytes), dtype (0 float32, 1 float16, 2 bfloat16), rule (0 torchvision, 1 timm), label
smoothing (float64), then per sample: partner (int32), op (uint32: 0 none, 1 MixUp, 2 CutMix),
lambda (float64: the weight the reference applied, CutMix's corrected), box (4 x int32 top,
left, bottom, right); then the mixed chunk's raw bytes and the soft labels (n x num_classes
float32)."""

import pathlib
import struct
import sys
from unittest import mock

import numpy as np
import torch
import timm.data.mixup as timm_mixup
from torchvision.transforms import v2

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from golden_writer import parse_args  # noqa: E402

N, C, H, W, CLASSES = 6, 3, 10, 14, 10
DTYPES = [(torch.float32, 0), (torch.float16, 1), (torch.bfloat16, 2)]


def chunk():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(N, C, H, W, generator=g, dtype=torch.float32) * 1.5
    labels = torch.tensor([3, 1, 4, 1, 5, 9], dtype=torch.int64)
    return x, labels


def torchvision_case(x, labels, cut, lam, box=None):
    """torchvision's MixUp or CutMix with the case's lambda (float32, as its Beta draws) and box
    (x1, y1, x2, y2). Returns (pixels, soft labels, per-sample records)."""
    if cut:
        t = v2.CutMix(alpha=1.0, num_classes=CLASSES)
        x1, y1, x2, y2 = box
        lam_adjusted = float(1.0 - (x2 - x1) * (y2 - y1) / (W * H))
        params = dict(box=box, lam_adjusted=lam_adjusted)
        applied = lam_adjusted
    else:
        t = v2.MixUp(alpha=0.2, num_classes=CLASSES)
        params = dict(lam=lam)
        applied = lam
    with mock.patch.object(type(t), "make_params", lambda self, flat: params):
        out, target = t(x.clone(), labels.clone())
    top, left, bottom, right = (box[1], box[0], box[3], box[2]) if cut else (0, 0, 0, 0)
    records = [((i - 1) % N, 2 if cut else 1, applied, (top, left, bottom, right))
               for i in range(N)]
    return out, target, records


def timm_case(x, labels, mode, lams, cuts, boxes, smoothing):
    """timm's Mixup in `mode` with its draws replaced: `lams` (one per draw; float32 per
    sample in pair and elem modes), `cuts` (CutMix or not) and `boxes` ((yl, yh, xl, xh) for each
    CutMix draw, in order, with timm's corrected lambda)."""
    mixer = timm_mixup.Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, mode=mode,
                             label_smoothing=smoothing, num_classes=CLASSES)
    box_iter = iter(boxes)
    corrected = []

    def bbox(img_shape, lam, ratio_minmax=None, correct_lam=True, count=None):
        yl, yh, xl, xh = next(box_iter)
        lam = 1. - (yh - yl) * (xh - xl) / float(img_shape[-2] * img_shape[-1])
        corrected.append(lam)
        return (yl, yh, xl, xh), lam

    draws = n_draws = {"batch": 1, "pair": N // 2, "elem": N}[mode]
    if mode == "batch":
        params = dict(_params_per_batch=lambda: (float(lams[0]), bool(cuts[0])))
    else:
        lam_arr = np.array(lams[:draws], dtype=np.float32)
        cut_arr = np.array(cuts[:draws], dtype=bool)
        params = dict(_params_per_elem=lambda count: (lam_arr.copy(), cut_arr.copy()))
    with mock.patch.multiple(mixer, **params), \
            mock.patch.object(timm_mixup, "cutmix_bbox_and_lam", bbox):
        out, _ = mixer(x.clone(), labels.clone())
    # The soft labels of a float32 batch, as timm's training scripts mix (a float16 batch would
    # have timm round the per-sample lambdas to float16 for its targets).
    box_iter = iter(boxes)
    with mock.patch.multiple(mixer, **params), \
            mock.patch.object(timm_mixup, "cutmix_bbox_and_lam", bbox):
        _, target = mixer(x.to(torch.float32).clone(), labels.clone())
    corrected = corrected[:len(corrected) // 2]
    # The per-sample records: partner n-1-i; the lambda each sample's weights came from.
    records = [None] * N
    boxes_used = iter(zip(boxes, corrected))
    for d in range(n_draws):
        members = [d, N - 1 - d] if mode == "pair" else ([d] if mode == "elem" else range(N))
        lam = lams[d]
        if mode != "batch":
            lam = float(np.float32(lam))
        if lam == 1.0:
            for i in members:
                records[i] = (i, 0, 1.0, (0, 0, 0, 0))
            continue
        if cuts[d]:
            (yl, yh, xl, xh), lam_c = next(boxes_used)
            lam_c = lam_c if mode == "batch" else float(np.float32(lam_c))
            for i in members:
                records[i] = (N - 1 - i, 2, lam_c, (yl, xl, yh, xh))
        else:
            for i in members:
                records[i] = (N - 1 - i, 1, lam, (0, 0, 0, 0))
    return out, target, records


def cases(x, labels):
    """(name, rule, smoothing, pixels, soft labels, records) for each case and dtype."""
    rng = np.random.default_rng(3)
    for dtype, code in DTYPES:
        xd = x.to(dtype)
        for k, lam in enumerate([0.3141592741012573, float(np.float32(rng.beta(0.2, 0.2))), 1.0,
                                 0.0]):
            yield (f"torchvision mixup {k}", code, 0, 0.0, *torchvision_case(xd, labels, False, lam))
        for k, box in enumerate([(3, 2, 11, 9), (0, 0, W, H), (5, 5, 5, 9), (10, 6, 14, 10)]):
            yield (f"torchvision cutmix {k}", code, 0, 0.0,
                   *torchvision_case(xd, labels, True, 0.5, box))
        yield (f"timm batch mixup", code, 1, 0.1,
               *timm_case(xd, labels, "batch", [0.71234567891], [False], [], 0.1))
        yield (f"timm batch cutmix", code, 1, 0.1,
               *timm_case(xd, labels, "batch", [0.4], [True], [(4, 9, 6, 13)], 0.1))
        yield (f"timm pair", code, 1, 0.1,
               *timm_case(xd, labels, "pair", [0.25, 0.6, 1.0], [False, True, False],
                          [(0, 9, 6, 14)], 0.1))
        yield (f"timm elem", code, 1, 0.0,
               *timm_case(xd, labels, "elem", [0.9, 0.33, 1.0, 0.47, 0.05, 0.61],
                          [True, False, False, True, False, True],
                          [(2, 8, 3, 14), (0, 10, 0, 14), (7, 9, 7, 9)], 0.0))


def box_lines():
    """The CutMix box rules themselves: torchvision's CutMix.make_params with its torch.randint
    centre and Beta draw replaced, timm's rand_bbox with numpy's randint replaced (float64 and
    float32 lambdas), over sizes odd and even and lambdas from 0 to nearly 1. One line each:
    rule, lambda (shortest round-trip decimal), float32 flag, height, width, centre y, centre x,
    then top, left, bottom, right."""
    rng = np.random.default_rng(11)
    sizes = [(176, 176), (224, 224), (37, 53), (10, 14), (1, 5), (255, 97)]
    lams = [0.0, 1e-7, 0.5, 0.9999999, 0.3] + [float(v) for v in rng.random(60)]
    lines = []
    for h, w in sizes:
        for lam in lams:
            ry, rx = int(rng.integers(h)), int(rng.integers(w))
            lam32 = float(np.float32(lam))
            t = v2.CutMix(alpha=1.0, num_classes=CLASSES)
            with mock.patch.object(t._dist, "sample", lambda shape: torch.tensor([lam32])), \
                    mock.patch("torch.randint", side_effect=[torch.tensor([rx]), torch.tensor([ry])]):
                x1, y1, x2, y2 = t.make_params([torch.zeros(1, 3, h, w)])["box"]
            lines.append(f"torchvision {lam32!r} 1 {h} {w} {ry} {rx} {y1} {x1} {y2} {x2}")
            for float32 in (False, True):
                value = np.float32(lam) if float32 else lam
                with mock.patch("numpy.random.randint", side_effect=[ry, rx]):
                    yl, yh, xl, xh = timm_mixup.rand_bbox((1, 3, h, w), value)
                lines.append(f"timm {float(value)!r} {int(float32)} {h} {w} {ry} {rx} {int(yl)} "
                             f"{int(xl)} {int(yh)} {int(xh)}")
    return lines


def raw(t):
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().tobytes()
    return t.contiguous().numpy().tobytes()


def main():
    args, capability = parse_args(__doc__, "mix_golden.bin")
    x, labels = chunk()
    blob = bytearray(b"MIXG" + struct.pack("<I", 1))
    blob += struct.pack("<5I", N, C, H, W, CLASSES)
    blob += labels.to(torch.int32).numpy().tobytes() + x.numpy().tobytes()
    all_cases = list(cases(x, labels))
    blob += struct.pack("<I", len(all_cases))
    for name, dtype, rule, smoothing, out, target, records in all_cases:
        blob += struct.pack("<I", len(name)) + name.encode()
        blob += struct.pack("<IId", dtype, rule, smoothing)
        for partner, op, lam, box in records:
            blob += struct.pack("<iId4i", partner, op, lam, *box)
        blob += raw(out)
        blob += target.to(torch.float32).contiguous().numpy().tobytes()
    args.out.write_bytes(bytes(blob))
    boxes = box_lines()
    (args.out.parent / "mix_boxes.txt").write_text(
        "# tests/loader/make_mix_golden.py: the CutMix box rules of torchvision and timm\n"
        + "\n".join(boxes) + "\n")
    print(f"{args.out}: {len(all_cases)} cases ({capability}, torch {torch.__version__}, timm "
          f"{timm_mixup.__name__.split('.')[0]} {__import__('timm').__version__})")


if __name__ == "__main__":
    main()
