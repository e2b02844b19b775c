"""WebDataset shards: stoke-pack's shards read alike by webdataset and by stoke, and shards over
HTTP and S3 through the shard cache."""

import os
import shutil
import subprocess
import time

import numpy as np
import pytest

import stoke
from helpers import FASHION, need


def test_stoke_pack_shards_are_read_alike_by_webdataset_and_by_stoke(tmp_path):
    """stoke-pack's shards are plain WebDataset: webdataset reads every sample with its key and
    label, and stoke reads the same labels, in the same order, as from the IDX files."""
    wds = need("webdataset")
    pack = os.environ.get("STOKE_PACK")
    if not pack:
        pytest.skip("STOKE_PACK (the stoke-pack executable) is not set")
    subprocess.run([pack, "--no-progress", "--data", FASHION, "--split", "test",
                    "--out", str(tmp_path / "fm-%06d.tar"), "--shard-samples", "2500"],
                   check=True, stdout=subprocess.DEVNULL)
    urls = [str(tmp_path / f"fm-{i:06d}.tar") for i in range(4)]
    keys, labels = [], []
    for sample in wds.WebDataset(urls, shardshuffle=False, empty_check=False):
        keys.append(sample["__key__"])
        labels.append(int(sample["cls"]))
        assert sample["png"][:8] == b"\x89PNG\r\n\x1a\n"
    assert keys == [f"{i:06d}" for i in range(10000)]

    def stoke_labels(data, **kw):
        loader = stoke.Loader(data, batch=500, workers=1, shuffle=False, devices="cpu:1", **kw)
        return np.concatenate([np.from_dlpack(b.labels).copy() for b in loader]).tolist()

    from_idx = stoke_labels(FASHION, split="test")
    assert from_idx == labels
    assert stoke_labels(str(tmp_path / "fm-{000000..000003}.tar"), size=28) == labels
    # The dataset-level index stoke-pack wrote beside them: stoke plans from it (the same
    # labels in the same order), and webdataset's own wids reads it as its shard index.
    index = str(tmp_path / "fm.wids.json")
    assert stoke_labels(index, size=28) == labels
    wids = need("wids")
    listed = wids.ShardListDataset(index)
    assert len(listed) == 10000
    for i in (0, 2499, 2500, 9999):
        assert listed[i]["__key__"] == f"{i:06d}" and int(listed[i][".cls"]) == labels[i]


def _servers():
    """bench/local_servers.py: nginx and SeaweedFS on 127.0.0.1, as the C++ tests run them."""
    import importlib.util
    path = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "local_servers.py")
    spec = importlib.util.spec_from_file_location("local_servers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _need_server(available, what):
    if available:
        return
    if os.environ.get("STOKE_REQUIRE_SERVERS") == "1":
        pytest.fail(f"{what} is not installed")
    pytest.skip(f"{what} is not installed (CI installs it; see .ci/run)")


def test_shards_over_http_and_s3_take_the_same_keywords_and_give_the_same_batches(
        tmp_path, monkeypatch):
    pack = os.environ.get("STOKE_PACK")
    if not pack:
        pytest.skip("STOKE_PACK (the stoke-pack executable) is not set")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    _need_server(os.access(nginx, os.X_OK), "nginx")
    weed = os.environ.get("STOKE_WEED", "")
    _need_server(os.access(weed, os.X_OK), "SeaweedFS (weed)")
    servers = _servers()
    shards = tmp_path / "shards"
    subprocess.run([pack, "--no-progress", "--data", FASHION, "--split", "test",
                    "--out", str(shards / "fm-%06d.tar"), "--shard-samples", "2500"],
                   check=True, stdout=subprocess.DEVNULL)
    monkeypatch.setenv("STOKE_CACHE_DIR", str(tmp_path / "cache"))

    def digest(data, next_epoch_hits=0, **kw):
        loader = stoke.Loader(data, batch=500, workers=2, size=28, seed=5, shuffle_window=2, **kw)
        h = []
        for b in loader:
            h.append((np.from_dlpack(b.pixels[0]).tobytes(), np.from_dlpack(b.labels).tobytes()))
        # Each shard counts once an epoch, when the consumer's epoch first wants it: with the
        # last batch out the consumer wants the next epoch's, so the prefetcher's walk counts
        # those uses as hits (the copies are on disk) as it gets to them, and no more.
        deadline = time.monotonic() + 10
        while loader.stats()["cache_hits"] < next_epoch_hits and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)  # a count past it would show now
        return h, loader.stats()

    expected, local = digest(str(shards / "fm-{000000..000003}.tar"))
    assert local["shard_cache"] == "off (no remote shards)"
    shard_bytes = sum(f.stat().st_size for f in shards.glob("*.tar"))
    with servers.NginxServer(shards, str(tmp_path / "nginx")) as url:
        got, stats = digest(url + "/fm-{000000..000003}.tar", next_epoch_hits=4,
                            cache_dir=str(tmp_path / "shard-cache"), cache_limit="64MiB")
        assert got == expected
        assert stats["shard_cache"].startswith("on: " + str(tmp_path / "shard-cache" / "shards"))
        assert stats["cache_bytes_fetched"] == shard_bytes
        # 4 misses for this epoch, and exactly the next epoch's 4 uses as hits.
        assert stats["cache_misses"] == 4 and stats["cache_hits"] == 4
        got, stats = digest(url + "/fm-{000000..000003}.tar", cache_limit=0)
        assert got == expected
        assert stats["shard_cache"].startswith("off (cache_limit 0)")
        with pytest.raises(ValueError, match="cache_limit '12 parsecs'"):
            stoke.Loader(url + "/fm-000000.tar", batch=100, cache_limit="12 parsecs")
    with servers.SeaweedServer(weed, str(tmp_path / "weed")) as s3:
        s3.put_folder("pytest", shards, prefix="fm/")
        for k, v in s3.env({}).items():
            monkeypatch.setenv(k, v)
        assert digest("s3://pytest/fm/fm-{000000..000003}.tar")[0] == expected
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
        with pytest.raises(stoke.Error, match=r"403.*bucket 'pytest'"):
            stoke.Loader("s3://pytest/fm/fm-000000.tar", batch=100)
