"""Finds cuBLAS and NCCL inside the machine's PyTorch packages, for the carried binaries.

    python3 nvidia_libs.py      # stdout: the folders, joined by ':'; stderr: what was found

The carried stoke-train and stoke_nn_gpu_tests link libcublas.so.13, libcublasLt.so.13 and
libnccl.so.2, which are too large to carry. PyTorch's CUDA 13 wheels install them under the
`nvidia` namespace package, whose layout differs between releases (nvidia/cu13/lib,
nvidia/cublas/lib, nvidia/nccl/lib, ...), and a namespace package may span several
site-packages folders: so every entry of nvidia.__path__ is searched, recursively.

Exit status: 0 when every library was found, 1 when some (or the package itself) is missing;
stdout then names the folders of those that were found.
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


def main():
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
