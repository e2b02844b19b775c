"""stoke's GPU arrays in PyTorch through DLPack: zero copy, the host run's bytes, stream order.

    python3 dlpack_cuda.py DATA [--batches 12] [--workers 4] [--dry]

DATA is an image folder (DATA/<class>/<image>.jpg) or an IDX folder. For each output kind
(float32 NCHW, bfloat16 NHWC, uint8 NHWC) one loader delivers onto cuda:0 and one, with the
same seed and options, onto a host device (cpu:1), and these are checked:

  zero_copy     torch.from_dlpack(batch.pixels[0]) is a cuda:0 tensor of the array's shape and
                dtype; a second from_dlpack of the same array has the same data pointer, and
                neither allocates (torch.cuda.memory_allocated() unchanged)
  host_bytes    every batch's pixels, labels and device labels equal the host device's, byte
                for byte (the GPU normalize kernel against the CPU reference, through the loader)
  stream_order  on a side stream that first sleeps (torch.cuda._sleep), the pixels are read
                (cloned) after from_dlpack, then every Python reference to the batch is dropped
                at once and the next batches are taken while that stream still sleeps: the
                clones must still equal the host run (stoke waited for the consumer's stream
                before rewriting the device buffers, as torch's record_stream does)
  stream_zero   __dlpack__(stream=0) is refused with a clear error (0 is ambiguous in DLPack)

Also reported, not a check: the same stream-order run through __dlpack__(stream=-1) (no
synchronization asked for), which shows whether the check above could have failed here.

Output: one JSON line per check, {"test": "dlpack_cuda", "check": ..., "ok": ...}, then a
summary line {"test": "dlpack_cuda", "passed": N, "failed": M}. Exit status 0 when every check
passed (or the dry run), 1 when one failed, 3 PyTorch missing, 4 no CUDA device, 5 no stoke.
"""

import argparse
import json
import os
import sys

KINDS = (("float32", "nchw"), ("bfloat16", "nhwc"), ("uint8", "nhwc"))
SLEEP_CYCLES = 60_000_000  # about 30 ms at the H200's clock: longer than taking a batch


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("data")
    p.add_argument("--batches", type=int, default=12)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--dry", action="store_true", help="print 'no GPU' and exit (the dry run)")
    a = p.parse_args()
    if a.dry or os.environ.get("DEVICE_CHECK_DRY") == "1":
        print(json.dumps({"test": "dlpack_cuda", "skipped": "no GPU"}))
        return 0
    try:
        import torch
    except ImportError as e:
        print(f"dlpack_cuda: no PyTorch ({e})", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("dlpack_cuda: no CUDA device for PyTorch", file=sys.stderr)
        return 4
    try:
        import stoke
    except ImportError as e:
        print(f"dlpack_cuda: cannot import stoke ({e})", file=sys.stderr)
        return 5

    image_folder = not any(n.endswith("-ubyte") or n.endswith("-ubyte.gz") for n in os.listdir(a.data))
    results = []

    def report(check, kind, ok, **what):
        row = {"test": "dlpack_cuda", "check": check, "kind": kind, "ok": bool(ok), **what}
        results.append(row)
        print(json.dumps(row), flush=True)

    def loader(devices, dtype, layout):
        opts = dict(batch=a.batch, devices=devices, workers=a.workers, dtype=dtype, layout=layout,
                    seed=1234)
        if image_folder:
            opts.update(size=96, augment="train")
        return stoke.Loader(a.data, **opts)

    def host_batches(dtype, layout):
        """The host device's first batches: (pixels, labels) as CPU tensors."""
        out = []
        it = iter(loader("cpu:1", dtype, layout))
        for _ in range(a.batches):
            b = next(it)
            out.append((torch.from_dlpack(b.pixels[0]).clone(), torch.from_dlpack(b.labels).clone()))
            b.release()
        return out

    def run_on_side_stream(dtype, layout, synchronized):
        """Reads each batch on a sleeping side stream, drops it at once, and goes on; returns
        the clones (pixels, device labels) once the stream has passed them."""
        side = torch.cuda.Stream(device="cuda:0")
        clones = []
        it = iter(loader("cuda:0", dtype, layout))
        for _ in range(a.batches):
            b = next(it)
            with torch.cuda.stream(side):
                torch.cuda._sleep(SLEEP_CYCLES)
                if synchronized:
                    x = torch.from_dlpack(b.pixels[0])
                    y = torch.from_dlpack(b.device_labels[0])
                else:
                    x = torch.utils.dlpack.from_dlpack(b.pixels[0].__dlpack__(stream=-1))
                    y = torch.utils.dlpack.from_dlpack(b.device_labels[0].__dlpack__(stream=-1))
                clones.append((x.clone(), y.clone()))
            del x, y
            b.release()
            del b
        side.synchronize()
        return [(x.cpu(), y.cpu()) for x, y in clones]

    for dtype, layout in KINDS:
        kind = f"{dtype} {layout}"
        host = host_batches(dtype, layout)

        # zero_copy and host_bytes, on the current (default) stream.
        it = iter(loader("cuda:0", dtype, layout))
        same = 0
        zero_copy = None
        for i in range(a.batches):
            b = next(it)
            arr = b.pixels[0]
            before = torch.cuda.memory_allocated()
            t1 = torch.from_dlpack(arr)
            t2 = torch.from_dlpack(arr)
            grew = torch.cuda.memory_allocated() - before
            if zero_copy is None:
                zero_copy = dict(device=str(t1.device), shape=list(t1.shape),
                                 array_shape=list(arr.shape), dtype=str(t1.dtype).split(".")[-1],
                                 array_dtype=arr.dtype, same_pointer=t1.data_ptr() == t2.data_ptr(),
                                 allocated_bytes=grew)
            labels = torch.from_dlpack(b.device_labels[0]).cpu()
            if torch.equal(t1.cpu(), host[i][0]) and torch.equal(labels, host[i][1]) and \
                    torch.equal(torch.from_dlpack(b.labels), host[i][1]):
                same += 1
            del t1, t2, arr
            b.release()
        report("zero_copy", kind,
               zero_copy["device"] == "cuda:0" and zero_copy["shape"] == zero_copy["array_shape"]
               and zero_copy["dtype"] == dtype and zero_copy["same_pointer"]
               and zero_copy["allocated_bytes"] == 0, **zero_copy)
        report("host_bytes", kind, same == a.batches, batches=a.batches, equal=same)

        clones = run_on_side_stream(dtype, layout, synchronized=True)
        equal = sum(torch.equal(c[0], h[0]) and torch.equal(c[1], h[1]) for c, h in zip(clones, host))
        report("stream_order", kind, equal == a.batches, batches=a.batches, equal=equal,
               sleep_cycles=SLEEP_CYCLES)
        if dtype == "float32":
            clones = run_on_side_stream(dtype, layout, synchronized=False)
            equal = sum(torch.equal(c[0], h[0]) and torch.equal(c[1], h[1])
                        for c, h in zip(clones, host))
            print(json.dumps({"test": "dlpack_cuda", "info": "unsynchronized (stream=-1)",
                              "kind": kind, "batches": a.batches, "equal": equal}), flush=True)

    b = next(iter(loader("cuda:0", "float32", "nchw")))
    try:
        b.pixels[0].__dlpack__(stream=0)
        report("stream_zero", "float32 nchw", False, error=None)
    except Exception as e:  # stoke.ConfigError is expected; anything else is reported as is
        report("stream_zero", "float32 nchw", "ambiguous" in str(e), error=f"{type(e).__name__}: {e}")
    b.release()

    failed = sum(not r["ok"] for r in results)
    print(json.dumps({"test": "dlpack_cuda", "passed": len(results) - failed, "failed": failed}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
