"""The device check's table: one row per result, with its goal where it has one.

    python3 summary.py LOGS STEPS SECONDS [--dry REASON]     (markdown on stdout)

LOGS holds each step's output as NAME.txt; STEPS is device_check.sh's steps.txt, one
"NAME: STATUS (N s)" line per step. A row whose step produced no result says why instead:
no GPU (the dry run), timed out, failed with its exit status and last line, or skipped when
the time budget was spent. Standard library only.
"""

import argparse
import json
import pathlib
import re


class Steps:
    def __init__(self, logs, steps_file):
        self.logs = pathlib.Path(logs)
        self.status = {}
        path = pathlib.Path(steps_file)
        for line in path.read_text().splitlines() if path.exists() else []:
            m = re.match(r"^(\S+): (.*?)(?: \((\d+) s\))?$", line.strip())
            if m:
                self.status[m.group(1)] = m.group(2)

    def text(self, name):
        p = self.logs / f"{name}.txt"
        return p.read_text(errors="replace") if p.exists() else ""

    def jsons(self, name):
        rows = []
        for line in self.text(name).splitlines():
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass
        return rows

    def why_not(self, name):
        """What to show for a step that left no result."""
        status = self.status.get(name)
        if status is None:
            return "not run"
        if status == "ok":
            return "no result in its output (see log.txt)"
        if status.startswith("rc="):
            last = [l for l in self.text(name).splitlines() if l.strip()]
            return f"failed ({status}): {last[-1][:160]}" if last else f"failed ({status})"
        return status


def met(ok):
    return "met" if ok else "NOT met"


def gtest_row(steps, name, title):
    t = steps.text(name)
    passed = re.search(r"\[  PASSED  \] (\d+) test", t)
    failed = re.search(r"(\d+) FAILED TEST", t)
    if not passed and not failed:
        return (title, steps.why_not(name), "all pass")
    p, f = (int(passed.group(1)) if passed else 0), (int(failed.group(1)) if failed else 0)
    return (title, f"{p} passed, {f} failed", "all pass: " + met(f == 0 and p > 0))


def bandwidth_rows(steps):
    rows = []
    h = steps.jsons("h2d")
    if h:
        h = h[0]
        rows.append(("H2D from page-locked arena",
                     f'{h["registered_arena_gbps"]:.1f} GB/s vs cudaHostAlloc '
                     f'{h["host_alloc_gbps"]:.1f} GB/s (pageable {h["pageable_gbps"]:.1f}): '
                     f'{h["arena_vs_pinned"]:.2f}x', "goal >= 0.80: " + met(h["arena_vs_pinned"] >= 0.8)))
    else:
        rows.append(("H2D from page-locked arena", steps.why_not("h2d"), "goal >= 0.80"))
    norms = steps.jsons("normalize")
    for n in norms:
        rows.append((f'normalize -> {n["dtype"]} NCHW, {n["batch"]}x{n["size"]}x{n["size"]}x3',
                     f'{n["kernel_gbps"]:.0f} GB/s vs D2D copy {n["d2d_copy_gbps"]:.0f} GB/s: '
                     f'{n["kernel_vs_copy"]:.2f}x ({n["images_per_s"]:,.0f} img/s)',
                     "goal >= 0.60: " + met(n["kernel_vs_copy"] >= 0.6)))
    if not norms:
        rows.append(("normalize kernel vs D2D copy", steps.why_not("normalize"), "goal >= 0.60"))
    return rows


def python_row(steps):
    p = steps.jsons("python_module")
    if not p:
        return ("Python module (stoke for python3)", steps.why_not("python_module"), "")
    p = p[0]
    return (f'Python module, Python {p["python"]}',
            f'stoke {p["stoke"]} ({p["how"]}), one CPU batch {"x".join(map(str, p["pixels"]))} in '
            f'{p["batch_s"]:.2f} s; device_labels: {"yes" if p["device_labels"] else "no"}', "")


def resnet_rows(steps):
    """The two ResNet-50 runs and their ratio."""
    runs = {}
    rows = []
    for name, title in (("resnet50_stoke", "ResNet-50 training fed by stoke"),
                        ("resnet50_torch", "ResNet-50 training fed by DataLoader")):
        r = next((j for j in steps.jsons(name) if j.get("test") == "resnet50"), None)
        if r is None or "skipped" in r:
            rows.append((title, r["skipped"] if r else steps.why_not(name),
                         "data stall < 2%" if name == "resnet50_stoke" else ""))
            continue
        runs[r["loader"]] = r
        what = (f'{r["images_per_s"]:,.0f} img/s, data stall {100 * r["data_stall"]:.1f}%, '
                f'{r["steps_measured"]} x {r["batch"]} ({r["workers"]} workers, {r["dtype"]} '
                f'{r["layout"]}, labels: {r["labels"]}), loss {r["loss_first"]} -> {r["loss_last"]}')
        goal = ""
        if r["loader"] == "stoke":
            waited = r.get("stoke_wait_fraction")
            what += (f'; stoke: waited {"?" if waited is None else f"{100 * waited:.1f}%"}, '
                     f'"{r.get("stoke_verdict", "")}"')
            goal = "data stall < 2%: " + met(r["data_stall"] < 0.02)
        rows.append((title, what, goal))
    if "stoke" in runs and "torch" in runs:
        s, t = runs["stoke"], runs["torch"]
        ratio = s["images_per_s"] / t["images_per_s"]
        same = s["steps_measured"] == t["steps_measured"] and s["batch"] == t["batch"]
        note = "" if same else " (NOT the same steps: a run hit --max-seconds)"
        rows.append(("ResNet-50 img/s, stoke vs DataLoader", f"{ratio:.2f}x{note}",
                     "goal >= 1.00: " + met(ratio >= 1.0)))
    else:
        rows.append(("ResNet-50 img/s, stoke vs DataLoader", "needs both runs", "goal >= 1.00"))
    return rows


def dlpack_row(steps):
    """The Python module's CUDA arrays in PyTorch (dlpack_cuda.py)."""
    title = "Python DLPack on cuda:0 (zero copy, host bytes, stream order)"
    rows = steps.jsons("dlpack_cuda")
    total = next((r for r in rows if "passed" in r), None)
    if total is None:
        skipped = next((r["skipped"] for r in rows if "skipped" in r), None)
        return (title, skipped or steps.why_not("dlpack_cuda"), "all pass")
    failed = [f'{r["check"]} {r["kind"]}' for r in rows if r.get("ok") is False]
    info = [f'{r["equal"]}/{r["batches"]} equal with stream=-1'
            for r in rows if str(r.get("info", "")).startswith("unsynchronized")]
    what = f'{total["passed"]} passed, {total["failed"]} failed'
    if failed:
        what += " (" + ", ".join(failed) + ")"
    if info:
        what += "; unsynchronized control: " + ", ".join(info)
    return (title, what, "all pass: " + met(total["failed"] == 0 and total["passed"] > 0))


def decode_rows(steps):
    """decode=gpu against the goals (docs/BENCHMARKS.md, "Decoding on the GPU")."""
    runs = {(r["corpus"], r["run"]): r for r in steps.jsons("decode") if "run" in r}
    skipped = next((r["skipped"] for r in steps.jsons("decode") if "skipped" in r), None)
    if not runs:
        return [("decode=gpu", skipped or steps.why_not("decode"), "")]
    rows = []
    for (corpus, run), r in runs.items():
        if "error" in r:
            rows.append((f"decode {corpus}: {run}", "failed: " + r["error"], ""))
        elif "images_per_s" in r:
            what = f'{r["images_per_s"]:,.0f} img/s'
            if "device_decoded" in r:
                workers = sum(r.get(k, 0) for k in (
                    "worker_decoded_hybrid", "worker_decoded_not_jpeg",
                    "worker_decoded_unsupported", "worker_decoded_too_large"))
                what += (f', {r["device_decoded"]} on the GPU ({r["device_decode_s"]:.1f} s), '
                         f'{workers} by workers, {r["device_decode_failed"]} failed, consumer '
                         f'waited {100 * r["wait_fraction"]:.0f}%')
            rows.append((f"decode {corpus}: {run}", what, ""))
        elif run == "pixels":
            rows.append((f"decode {corpus}: pixels gpu vs cpu",
                         f'mean {r["mean"]:.2f}, p99 {r["p99"]}, max {r["max"]} levels',
                         "mean <= 1, p99 <= 4: " + met(r["mean"] <= 1 and r["p99"] <= 4)))
    cores = [k for k in runs if k[0] == "standard" and k[1].startswith("cpu,")
             and not k[1].startswith("cpu, 4 ")]

    def ratio(title, a, b, goal):
        if "images_per_s" in runs.get(a, {}) and "images_per_s" in runs.get(b, {}):
            x = runs[a]["images_per_s"] / runs[b]["images_per_s"]
            rows.append((title, f"{x:.2f}x", f"goal >= {goal}: " + met(x >= goal)))
        else:
            rows.append((title, "needs both runs", f"goal >= {goal}"))

    ratio("decode=gpu 4 workers vs decode=cpu 4 workers", ("standard", "gpu, 4 workers"),
          ("standard", "cpu, 4 workers"), 3)
    if cores:
        ratio("decode=gpu 4 workers vs decode=cpu every core", ("standard", "gpu, 4 workers"),
              cores[0], 1)
    ratio("decode=gpu vs torchvision's GPU path", ("standard", "gpu, 4 workers"),
          ("standard", "torchvision GPU"), 1.5)
    camera_cores = [k for k in runs if k[0] == "camera" and k[1].startswith("cpu,")]
    if camera_cores:
        ratio("camera: decode=gpu 4 workers vs decode=cpu every core", ("camera", "gpu, 4 workers"),
              camera_cores[0], 5)
    r = next((j for j in steps.jsons("resnet50_stoke_gpu_decode") if j.get("test") == "resnet50"),
             None)
    if r is None or "skipped" in r:
        rows.append(("ResNet-50 fed by decode=gpu, 4 workers",
                     r["skipped"] if r else steps.why_not("resnet50_stoke_gpu_decode"),
                     "data stall < 2%"))
    else:
        rows.append(("ResNet-50 fed by decode=gpu, 4 workers",
                     f'{r["images_per_s"]:,.0f} img/s, data stall {100 * r["data_stall"]:.1f}%',
                     "data stall < 2%: " + met(r["data_stall"] < 0.02)))
    return rows


def loader_rows(steps):
    rows = []
    for name in ("e2e_cuda", "e2e_host"):
        es = steps.jsons(name)
        for e in es:
            rows.append((f'loader end to end, {e["devices"]} {e["dtype"]}, {e["workers"]} workers',
                         f'{e["samples_per_s"]:,.0f} img/s, consumer waited '
                         f'{100 * e["wait_fraction"]:.0f}%, staging {e["staging"]}, host copies '
                         f'{e["host_copy_bytes"]} B', ""))
        if not es:
            rows.append((f"loader end to end ({name[4:]})", steps.why_not(name), ""))
    for name in ("train_cuda", "train_host"):
        m = re.search(r"done: test accuracy ([0-9.]+), ([0-9.]+) s, ([0-9,]+) img/s, "
                      r"data stall ([0-9.]+)%", steps.text(name))
        title = f"stoke-train 3 epochs, {name[6:]}"
        rows.append((title, f"{m.group(3)} img/s, data stall {m.group(4)}%, test accuracy "
                            f"{m.group(1)}, {m.group(2)} s" if m else steps.why_not(name), ""))
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("logs")
    p.add_argument("steps")
    p.add_argument("seconds", type=int)
    p.add_argument("--dry", default="", help="why this was a dry run (no GPU)")
    a = p.parse_args()
    steps = Steps(a.logs, a.steps)
    rows = [python_row(steps),
            gtest_row(steps, "kernel_tests", "kernel tests (GPU vs CPU reference, bit-identical)"),
            *bandwidth_rows(steps),
            *resnet_rows(steps),
            *decode_rows(steps),
            gtest_row(steps, "gpu_tests", "loader GPU tests"),
            dlpack_row(steps),
            gtest_row(steps, "nn_gpu_tests", "trainer ops and trainer on the GPU vs CPU reference"),
            *loader_rows(steps)]
    if a.dry:
        print(f"**Dry run: no GPU ({a.dry}).** GPU steps were not run; nothing here is a "
              f"measurement.\n")
    print("| check | result | goal |\n|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1].replace('|', '/')} | {r[2]} |")
    print("\nsteps: " + ", ".join(f"{k} {v}" for k, v in steps.status.items()))
    print(f"total {a.seconds} s")


if __name__ == "__main__":
    main()
