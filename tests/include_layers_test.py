#!/usr/bin/env python3
"""Checks that loader/src's folders include only downward (docs/ARCHITECTURE.md, "Which folder
may include which").

The folders form layers, lowest first:

    common < remote < data < plan < decode < augment < ipc < worker
        < device < tuning < api < consumer < prefetch < supervision < root

A file may include a header of its own folder, of a lower layer, or a public header
(`stoke/...`). The first eight folders are worker-side (stoke_core, which stoke-worker links), the
rest loader-side: a worker-side file never includes a loader-side header, and the message says
so on its own, since such an include also breaks the link boundary. Headers of other targets are
placed in a layer by name (OTHER_TARGETS). An include that resolves to no file of loader/src and
no such header, and a folder of loader/src that is in no layer, are errors too, so that nothing
goes unchecked.

The folder is also the link boundary: with --cmake, the sources loader/CMakeLists.txt gives
stoke_core and stoke-worker must lie in worker-side folders, and those it gives stoke_loader in
loader-side ones.

    include_layers_test.py SRC_DIR [--cmake CMAKELISTS]
                                       every #include of SRC_DIR (and the targets' sources);
                                       exit 1 naming each violation
    include_layers_test.py --self-test the check itself, on small trees with planted violations
"""

import os
import re
import sys
import tempfile

ROOT = "root"  # the files directly in loader/src
LAYERS = ["common", "remote", "data", "plan", "decode", "augment", "ipc", "worker",
          "device", "tuning", "api", "consumer", "prefetch", "supervision", ROOT]
WORKER_SIDE = {"common", "remote", "data", "plan", "decode", "augment", "ipc", "worker"}
# Headers that live outside loader/src but are included by bare name, and the lowest layer that
# may include them: the CUDA status check (kernels/src/cuda_check, its own INTERFACE target) is
# for the CUDA backend, which is loader-side; the AVX2 dispatch (kernels/src/cpu_features) is
# for any layer.
OTHER_TARGETS = {"cuda_check.hpp": "device", "cpu_features.hpp": "common"}
SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cu", ".cuh", ".inc", ".in")
INCLUDE = re.compile(r'^\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)')
# The targets of loader/CMakeLists.txt whose sources are checked, and whether each is worker-side.
TARGET_SIDES = {"stoke_core": True, "stoke-worker": True, "stoke_loader": False}
TARGET_CALL = re.compile(
    r"\b(?:add_library|add_executable|target_sources)\(\s*([\w-]+)\b([^)]*)\)")
TARGET_SOURCE = re.compile(r"\bsrc/([\w/]+\.(?:cpp|cu))\b")
ORDER = " < ".join(f"{name}/" if name != ROOT else name for name in LAYERS)


def shown(layer):
    return "the root" if layer == ROOT else f"{layer}/"


def folder_of(relative_path):
    """The layer of a path relative to the source root: its first folder, or the root."""
    parts = relative_path.split("/")
    return parts[0] if len(parts) > 1 and parts[0] in LAYERS else ROOT


def exists(src, relative_path):
    full = os.path.join(src, relative_path)
    # A generated header is checked where its template (name.in) lies.
    return os.path.isfile(full) or os.path.isfile(full + ".in")


def resolve(src, includer, name):
    """The layer `name` (as written in an #include of `includer`) belongs to; None for a system
    or public header; raises ValueError when it cannot be placed."""
    if name.startswith("stoke/"):
        return None
    here = os.path.dirname(includer)
    # As the compiler does for quoted includes: the includer's folder first, then -I src.
    for candidate in (os.path.normpath(os.path.join(here, name)), os.path.normpath(name)):
        if candidate.startswith(".."):
            continue
        if exists(src, candidate):
            return folder_of(candidate.replace(os.sep, "/"))
    if name in OTHER_TARGETS:
        return OTHER_TARGETS[name]
    raise ValueError("it is no file of loader/src and no known header of another target "
                     "(add it to OTHER_TARGETS in tests/include_layers_test.py with its layer)")


def broken_rule(own, target):
    """Why a file of layer `own` may not include a header of layer `target`, or None."""
    if target is None or target == own or LAYERS.index(target) < LAYERS.index(own):
        return None
    if own in WORKER_SIDE and target not in WORKER_SIDE:
        return (f"{shown(own)} is worker-side (stoke_core, linked into stoke-worker) and may "
                f"not include a loader-side header ({shown(target)}); worker-side folders never "
                "include device/, tuning/, api/, consumer/, prefetch/, supervision/ or the root")
    return (f"{shown(own)} may not include {shown(target)}, a higher layer; a folder includes "
            f"only its own, lower layers and stoke/ ({ORDER})")


def check(src):
    """Every violation under `src`, as 'path:line: #include "x": why'."""
    problems = []
    for entry in sorted(os.listdir(src)):
        if os.path.isdir(os.path.join(src, entry)) and entry not in LAYERS:
            problems.append(f"{os.path.join(src, entry)}/: a folder in no layer; place it in "
                            "LAYERS (tests/include_layers_test.py) and docs/ARCHITECTURE.md")
    for directory, folders, files in os.walk(src):
        folders.sort()
        for file_name in sorted(files):
            if not file_name.endswith(SOURCE_SUFFIXES):
                continue
            path = os.path.join(directory, file_name)
            includer = os.path.relpath(path, src).replace(os.sep, "/")
            own = folder_of(includer)
            with open(path, encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    quoted, angled = m.group(1), m.group(2)
                    if angled is not None and folder_of(angled) == ROOT:
                        continue  # a system header
                    name = quoted if quoted is not None else angled
                    where = f"{os.path.join(src, includer)}:{number}: #include \"{name}\""
                    try:
                        target = resolve(src, includer, name)
                    except ValueError as e:
                        problems.append(f"{where}: cannot tell which folder it is in: {e}")
                        continue
                    why = broken_rule(own, target)
                    if why:
                        problems.append(f"{where}: {why}")
    return problems


def check_targets(cmake_path):
    """Every source a target of `cmake_path` compiles from the wrong side of the boundary."""
    problems = []
    with open(cmake_path, encoding="utf-8") as f:
        text = f.read()
    for m in TARGET_CALL.finditer(text):
        target, body = m.group(1), m.group(2)
        if target not in TARGET_SIDES:
            continue
        worker_side = TARGET_SIDES[target]
        for source in TARGET_SOURCE.finditer(body):
            layer = folder_of(source.group(1))
            if (layer in WORKER_SIDE) == worker_side:
                continue
            line = text.count("\n", 0, m.start(2) + source.start()) + 1
            where = f"{cmake_path}:{line}: src/{source.group(1)} in {target}"
            if worker_side:
                worker_folders = ", ".join(f"{name}/" for name in LAYERS if name in WORKER_SIDE)
                problems.append(f"{where}: {target} is worker-side and compiles only "
                                f"{worker_folders}; {shown(layer)} is the loader's "
                                "(stoke_loader)")
            else:
                problems.append(f"{where}: {shown(layer)} is worker-side: its sources belong "
                                "to stoke_core, which stoke-worker links")
    return problems


def main_check(src, cmake_path=None):
    if not os.path.isdir(src):
        print(f"include_layers_test: {src}: no such folder", file=sys.stderr)
        return 2
    problems = check(src)
    if cmake_path is not None:
        problems += check_targets(cmake_path)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"include_layers_test: {len(problems)} problem(s) with the layer order "
              f"({ORDER}); see docs/ARCHITECTURE.md, \"Which folder may include which\"",
              file=sys.stderr)
        return 1
    targets = f", and {cmake_path} keeps each target to its side" if cmake_path else ""
    print(f"include_layers_test: every #include of {src} points down ({ORDER}){targets}")
    return 0


def plant(root, files):
    for relative_path, text in files.items():
        path = os.path.join(root, relative_path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def verdict(title, problems, expected):
    """Whether `problems` is what a case expects: none, or one naming every part of `expected`."""
    text = "\n".join(problems)
    ok = not problems if not expected else len(problems) == 1 and all(e in text for e in expected)
    print(f"{'ok  ' if ok else 'FAIL'} {title}" + (f"\n     {text}" if text else ""))
    return ok


INCLUDE_TREE = {
    "common/align.hpp": "#pragma once\n",
    "common/build_info.hpp.in": "#pragma once\n",
    "data/view.hpp": '#pragma once\n#include <vector>\n#include "common/align.hpp"\n',
    "data/view.cpp": '#include "data/view.hpp"\n#include "stoke/error.hpp"\n',
    "augment/step.hpp": '#pragma once\n#include "data/view.hpp"\n',
    "ipc/layout.hpp": '#pragma once\n#include "augment/step.hpp"\n#include "data/view.hpp"\n',
    "worker/run.cpp": '#include "common/build_info.hpp"\n#include "ipc/layout.hpp"\n',
    "device/staging.hpp": "#pragma once\n",
    "device/staging.cpp": '#include "staging.hpp"\n#include "cuda_check.hpp"\n',
    "tuning/tuner.cpp": '#include "device/staging.hpp"\n',
    "config.hpp": '#pragma once\n#include "ipc/layout.hpp"\n',
    "config.cpp": '#include "config.hpp"\n#include "tuning/tuner.cpp"\n',
}
# (what is planted in INCLUDE_TREE, what the one problem it makes must say)
INCLUDE_CASES = [
    ("a tree that follows the rule", {}, []),
    ("data/ including ipc/", {"data/bad.hpp": '#pragma once\n\n#include "ipc/layout.hpp"\n'},
     ["data/bad.hpp:3:", '"ipc/layout.hpp"', "data/ may not include ipc/, a higher layer"]),
    ("augment/ including ipc/",
     {"augment/bad.cpp": '#include "data/view.hpp"\n#include "ipc/layout.hpp"\n'},
     ["augment/bad.cpp:2:", "augment/ may not include ipc/"]),
    ("worker/ including a root header", {"worker/bad.cpp": '#include "config.hpp"\n'},
     ["worker/bad.cpp:1:", "worker/ is worker-side", "loader-side header (the root)"]),
    ("data/ including device/ through angle brackets",
     {"data/bad.cpp": "#include <device/staging.hpp>\n"},
     ["data/bad.cpp:1:", "data/ is worker-side", "(device/)"]),
    ("device/ including tuning/", {"device/bad.cpp": '#include "tuning/tuner.cpp"\n'},
     ["device/bad.cpp:1:", "device/ may not include tuning/"]),
    ("ipc/ including the CUDA status check", {"ipc/bad.hpp": '#include "cuda_check.hpp"\n'},
     ["ipc/bad.hpp:1:", "ipc/ is worker-side"]),
    ("a folder in no layer", {"network/fetch.cpp": '#include "data/view.hpp"\n'},
     ["network/: a folder in no layer"]),
    ("remote/ including data/", {"remote/bad.cpp": '#include "data/view.hpp"\n'},
     ["remote/bad.cpp:1:", "remote/ may not include data/, a higher layer"]),
    ("consumer/ including supervision/",
     {"supervision/pool.hpp": "#pragma once\n",
      "consumer/bad.cpp": '#include "supervision/pool.hpp"\n'},
     ["consumer/bad.cpp:1:", "consumer/ may not include supervision/"]),
    ("plan/ including api/", {"api/config.hpp": "#pragma once\n",
                              "plan/bad.hpp": '#include "api/config.hpp"\n'},
     ["plan/bad.hpp:1:", "plan/ is worker-side", "(api/)"]),
    ("an include that names nothing known", {"common/bad.hpp": '#include "nowhere.hpp"\n'},
     ["common/bad.hpp:1:", "cannot tell which folder it is in"]),
]

TARGETS_CMAKE = """add_library(stoke_core OBJECT
  src/data/view.cpp
  src/worker/run.cpp)
target_sources(stoke_core PRIVATE src/data/extra.cpp)
add_library(stoke_loader SHARED
  $<TARGET_OBJECTS:stoke_core>
  src/config.cpp
  src/device/staging.cpp)
add_executable(stoke-worker src/worker/main.cpp)
"""
# (the text of TARGETS_CMAKE replaced, by what, what the one problem must say)
TARGET_CASES = [
    ("targets that keep to their side", ("", ""), []),  # (replacing "" changes nothing)
    ("stoke_core compiling a root source",
     ("src/worker/run.cpp)", "src/worker/run.cpp\n  src/pipeline.cpp)"),
     ["CMakeLists.txt:4: src/pipeline.cpp in stoke_core", "the root is the loader's"]),
    ("stoke_loader compiling a data/ source",
     ("src/config.cpp", "src/config.cpp\n  src/data/state.cpp"),
     ["CMakeLists.txt:8: src/data/state.cpp in stoke_loader", "data/ is worker-side"]),
]


def self_test():
    """The check passes trees that follow the rules and names each planted violation."""
    failures = 0
    for title, extra, expected in INCLUDE_CASES:
        with tempfile.TemporaryDirectory() as root:
            plant(root, {**INCLUDE_TREE, **extra})
            failures += not verdict(title, check(root), expected)
    for title, (old, new), expected in TARGET_CASES:
        with tempfile.TemporaryDirectory() as root:
            plant(root, {"CMakeLists.txt": TARGETS_CMAKE.replace(old, new)})
            failures += not verdict(title, check_targets(os.path.join(root, "CMakeLists.txt")),
                                    expected)
    if failures:
        print(f"include_layers_test --self-test: {failures} case(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    args = sys.argv[1:]
    if len(args) == 3 and args[1] == "--cmake":
        sys.exit(main_check(args[0], args[2]))
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main_check(args[0]))
