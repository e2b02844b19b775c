"""Finds cuBLAS and NCCL inside the machine's PyTorch packages, for the carried binaries, and
nvJPEG for decode=gpu.

    python3 nvidia_libs.py          # stdout: the folders, joined by ':'; stderr: what was found
    python3 nvidia_libs.py --nvjpeg # stdout: nvJPEG's library file (for STOKE_NVJPEG), or nothing

The carried stoke-train and stoke_nn_gpu_tests link libcublas.so.13, libcublasLt.so.13 and
libnccl.so.2, which are too large to carry. PyTorch's CUDA 13 wheels install them under the
`nvidia` namespace package, whose layout differs between releases (nvidia/cu13/lib,
nvidia/cublas/lib, nvidia/nccl/lib, ...), and a namespace package may span several
site-packages folders: so every entry of nvidia.__path__ is searched, recursively.

Exit status: 0 when every library was found, 1 when some (or the package itself) is missing;
stdout then names the folders of those that were found.

nvJPEG (libnvjpeg.so.13) is in the `nvidia` packages where nvidia-nvjpeg is installed, and
torchvision's wheels carry a copy of their own under a hashed name (torchvision.libs/
libnvjpeg-<hash>.so.13), which only a full path loads: --nvjpeg prints the first found, the
`nvidia` packages first.
"""

import os
import sys

WANTED = ("libcublas.so.13", "libcublasLt.so.13", "libnccl.so.2")


def find(roots):
    """{library name: folder holding it}, the first folder found for each, walking in order."""
    found = {}
    for root in roots:
        for folder, subfolders, files in os.walk(root):
            subfolders.sort()
            for name in WANTED:
                if name in files and name not in found:
                    found[name] = folder
    return found


def nvjpeg():
    """nvJPEG's library file, or None."""
    roots = []
    try:
        import nvidia
        roots += list(nvidia.__path__)
    except ImportError:
        pass
    try:
        import importlib.util
        spec = importlib.util.find_spec("torchvision")
        if spec is not None and spec.origin:
            site = os.path.dirname(os.path.dirname(spec.origin))
            roots += [os.path.join(site, "torchvision.libs"), os.path.dirname(spec.origin)]
    except (ImportError, ValueError):
        pass
    for root in roots:
        for folder, subfolders, files in os.walk(root):
            subfolders.sort()
            for name in sorted(files):
                # libnvjpeg.so.13, or torchvision's libnvjpeg-<hash>.so.13 (not nvjpeg2k)
                if name.startswith(("libnvjpeg.so", "libnvjpeg-")) and ".so" in name:
                    return os.path.join(folder, name)
    return None


def main():
    if sys.argv[1:] == ["--nvjpeg"]:
        found = nvjpeg()
        print(f"nvidia libraries: nvJPEG: {found or 'NOT FOUND'}", file=sys.stderr)
        if found:
            print(found)
        return 0 if found else 1
    try:
        import nvidia
    except ImportError as e:
        print(f"nvidia libraries: no `nvidia` package in {sys.executable} ({e})", file=sys.stderr)
        return 1
    roots = list(nvidia.__path__)
    found = find(roots)
    for name in WANTED:
        print(f"nvidia libraries: {name}: {found.get(name, 'NOT FOUND')}", file=sys.stderr)
    print(f"nvidia libraries: searched {', '.join(roots)}", file=sys.stderr)
    folders = []
    for folder in found.values():
        if folder not in folders:
            folders.append(folder)
    print(":".join(folders))
    return 0 if len(found) == len(WANTED) else 1


if __name__ == "__main__":
    sys.exit(main())
