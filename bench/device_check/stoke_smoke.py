"""Imports stoke and takes one batch on the CPU: the device check's proof that the module loads.

    python3 stoke_smoke.py DATA [--how WORDS]

DATA is an IDX folder (the carried Fashion-MNIST) or an image folder. Prints one JSON line:
the Python and stoke versions, where the module came from (--how), the batch's shapes, the
GPUs stoke sees, and whether batches carry the per-device labels (`device_labels`). Exit
status 1, with the reason on one line, when the import or the batch fails.
"""

import argparse
import json
import platform
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("data")
    p.add_argument("--how", default="", help="where the module came from, for the report")
    a = p.parse_args()
    t0 = time.perf_counter()
    try:
        import stoke
    except ImportError as e:
        print(f"stoke_smoke: cannot import stoke with Python {platform.python_version()}: {e}",
              file=sys.stderr)
        return 1
    imported = time.perf_counter() - t0
    try:
        loader = stoke.Loader(a.data, batch=64, workers=1, devices="cpu:1", dtype="float32")
        batch = next(iter(loader))
        shape = list(batch.pixels[0].shape)
        labels = list(batch.labels.shape)
        device_labels = hasattr(type(batch), "device_labels")
        batch.release()
        del loader
    except Exception as e:  # the report names it; a traceback adds nothing here
        print(f"stoke_smoke: one CPU batch from {a.data} failed: {type(e).__name__}: {e}",
              file=sys.stderr)
        return 1
    print(json.dumps({
        "test": "python_module", "python": platform.python_version(), "stoke": stoke.version(),
        "module": stoke._stoke.__file__, "how": a.how, "import_s": round(imported, 3),
        "batch_s": round(time.perf_counter() - t0 - imported, 3), "pixels": shape,
        "labels": labels, "device_labels": device_labels,
        "gpus": [g["name"] for g in stoke.devices()]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
