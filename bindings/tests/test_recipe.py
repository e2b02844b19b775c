"""A training recipe's data options: MixUp and CutMix with soft labels, and repeated augmentation."""

import numpy as np
import pytest

import stoke
from helpers import FASHION


def test_mixup_and_cutmix_deliver_soft_labels_per_device_and_each_samples_mixing():
    def loader(**mixing):
        return stoke.Loader(FASHION, split="test", batch=16, workers=1, seed=5, devices="cpu:2",
                            dtype="float32", size=28, **mixing)
    plain = next(iter(loader()))
    mixed = next(iter(loader(mixup_alpha=0.2, cutmix_alpha=1.0, num_classes=10,
                             label_smoothing=0.1)))
    assert mixed.num_classes == 10 and plain.num_classes == 0
    m = mixed.mixing
    assert m["partner"].shape == (16,) and m["box"].shape == (16, 4)
    assert m["label_weights"].shape == (16, 2) and m["lam"].dtype == np.float64
    labels = np.from_dlpack(mixed.labels)
    for g in range(2):
        soft = np.from_dlpack(mixed.soft_labels[g])
        assert soft.shape == (8, 10) and soft.dtype == np.float32
        assert np.allclose(soft.sum(1), 1.0, atol=1e-5)
        x = np.from_dlpack(mixed.pixels[g])
        base = np.from_dlpack(plain.pixels[g])
        for i in range(8):
            n = 8 * g + i
            p = int(m["partner"][n])  # within this device's chunk
            assert 0 <= p < 8
            if m["op"][n] == 2:  # CutMix: the partner's pixels inside the box, its own outside
                top, left, bottom, right = m["box"][n]
                inside = np.zeros((28, 28), bool)
                inside[top:bottom, left:right] = True
                assert np.array_equal(x[i][:, inside], base[p][:, inside])
                assert np.array_equal(x[i][:, ~inside], base[i][:, ~inside])
            elif m["op"][n] == 1:
                w_self, w_partner = m["label_weights"][n]
                want = (base[p] * w_partner).astype(np.float32) + (base[i] * w_self).astype(np.float32)
                assert np.array_equal(x[i], want)
            if labels[n] != labels[8 * g + p]:
                assert abs(soft[i][labels[8 * g + p]] - (m["label_weights"][n][1] * 0.9 + 0.01)) < 1e-6
    with pytest.raises(ValueError, match="set num_classes"):
        loader(mixup_alpha=0.2)
    with pytest.raises(ValueError, match="^mix_rule must be torchvision or timm, got 'dali'$"):
        loader(mixup_alpha=0.2, num_classes=10, mix_rule="dali")
    with pytest.raises(ValueError, match="this loader does not mix"):
        plain.mixing
    with pytest.raises(ValueError, match="soft labels"):
        plain.soft_labels


def test_repeats_keep_rasamplers_epoch_and_deal_each_sample_k_times():
    loader = stoke.Loader(FASHION, split="test", batch=64, workers=1, seed=1, devices="cpu:2",
                          repeats=3)
    assert len(loader) == (10000 // 256 * 256 // 2 + 31) // 32  # RASampler's samples, per device
    counts = {}
    for batch in loader:
        ids = np.from_dlpack(batch.sample_ids)[np.from_dlpack(batch.valid) == 1]
        for i in ids.tolist():
            counts[i] = counts.get(i, 0) + 1
    assert sum(counts.values()) == 9984
    assert set(counts.values()) == {3}
