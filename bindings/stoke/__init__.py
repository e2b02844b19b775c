"""stoke: multi-process data loading and preprocessing for training.

Worker processes decode and augment images in C++ into a shared-memory arena; each batch has
exactly ``batch`` samples, split into one equal chunk per device, and its arrays reach PyTorch,
JAX and NumPy zero-copy through DLPack::

    import stoke, torch
    loader = stoke.Loader("/usr/share/datasets/fashion-mnist", batch=256, workers=2,
                          dtype="float32")
    for epoch in range(10):
        loader.set_epoch(epoch)
        for batch in loader:
            x = torch.from_dlpack(batch.pixels[0])          # 256 x 1 x 28 x 28 float32
            y = torch.from_dlpack(batch.labels).long()
"""

from __future__ import annotations

import difflib
import inspect
import json
import operator
import os
import textwrap

from . import _stoke
from ._stoke import Array, Batch, DataError, Error

__all__ = ["Loader", "Batch", "Array", "DataError", "Error", "devices", "pipeline_steps", "version",
           "__version__"]
__version__: str = _stoke.version()


def version() -> str:
    """The version of the stoke library, e.g. ``"0.1.0"``."""
    return _stoke.version()


def pipeline_steps() -> list:
    """Every step ``pipeline=`` takes: a list of ``(name, usage)`` tuples, e.g.
    ``("random_solarize", "(threshold[, probability])")``, read from the steps' own definitions
    (the same names and usage ``stoke-bench --pipeline`` and its messages use).
    """
    return _stoke.pipeline_steps()


def devices() -> list:
    """The GPUs this process may use, discovered without creating a CUDA context.

    A list of dicts with ``index`` (CUDA ordinal), ``name``, ``uuid``, ``pci_bus_id`` and
    ``memory_bytes``; empty on a machine without a GPU.
    """
    return _stoke.devices()


def _step(step):
    """A pipeline step as (name, [numbers], [words]): from "name", ("name", numbers...) or, for
    timm_augment and augmix, ("timm_augment", "rand-m9-mstd0.5-inc1", "interpolation=bicubic",
    ...) and ("augmix", "severity=2", "interpolation=nearest")."""
    if isinstance(step, str):
        return (step, [], [])
    if not isinstance(step, (tuple, list)) or not step or not isinstance(step[0], str):
        raise ValueError(f"a pipeline step is a name or a (name, numbers...) tuple, got {step!r}")
    numbers, words = [], []
    for v in step[1:]:
        if isinstance(v, str):
            words.append(v)
            continue
        try:
            numbers.append(float(v))
        except (TypeError, ValueError):
            raise ValueError(f"pipeline step {step[0]}: its arguments must be numbers (or, for "
                             f"timm_augment and augmix, words), got {step[1:]!r}") from None
    return (step[0], numbers, words)


# The keywords of Loader(...), made from the table of options (stoke/option_table.hpp): every
# option is a keyword under its Python name, with its default and its doc, except those whose
# kind Python cannot give (a C++ callback). `channels` is Python's own: the pipeline's.
_OPTIONS = _stoke.options()
_NOT_KEYWORDS = {"callback"}
_KEYWORDS = {row["python"]: row for row in _OPTIONS if row["kind"] not in _NOT_KEYWORDS}
_CHANNELS_DOC = "with pipeline: the channels its steps work on, 3 (RGB) or 1 (gray)"

# What each kind of option takes in Python, for the docstring.
_PYTHON_FORMS = {
    "path": "a str or os.PathLike",
    "count": 'an int, or "auto"',
    "optional_int": "an int, or None for the default",
    "bytes": 'an int (bytes), or a str such as "16GiB" or "500MB"',
    "size": 'an int N (N x N), a (height, width) tuple, or a str "HxW" / "N"',
    "reals": "a sequence of floats",
    "state": "a Loader.state() str, or None",
    "sources": 'a list of dicts, e.g. [{"data": "/data/a", "weight": 0.7}, {"data": "/data/b", '
               '"repeat": 2, "label_offset": "auto"}], or their JSON text',
    "pipeline": 'a list of step names and (name, numbers...) tuples, e.g. [("resize", 256, 256), '
                '"horizontal_flip"]; timm_augment and augmix take their settings as strs; '
                'stoke.pipeline_steps() lists every step and what it takes',
}


def _python_default(row):
    """The option's default (the C++ Options{}'s, as text) as a Python value."""
    kind, text = row["kind"], row["default"]
    if kind == "int":
        return int(text)
    if kind == "count":
        return text if text == "auto" else int(text)
    if kind == "bytes":
        return int(text) if text.isdigit() else text
    if kind == "real":
        return float(text)
    if kind == "flag":
        return text == "true"
    if kind == "reals":
        return tuple(float(v) for v in text.split(",")) if text else ()
    if kind == "optional_int":
        return int(text) if text else None
    if kind in ("size", "state", "pipeline", "sources"):
        return text or None  # unset: the loader picks
    return text


def _wrong(keyword, wants, value):
    return TypeError(f"{keyword} takes {wants}, got {value!r}")


def _text(keyword, kind, value):
    """A keyword's Python value as its option's text, which the C++ table reads (and checks)."""
    if kind == "path":
        text = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
        if not isinstance(text, str):
            raise _wrong(keyword, "a str or os.PathLike", value)
        return text
    if kind in ("int", "optional_int", "count"):
        if kind == "count" and isinstance(value, str):
            return value  # "auto", or a word the table refuses with the accepted ones
        try:
            return str(operator.index(value))
        except TypeError:
            raise _wrong(keyword, 'an int or "auto"' if kind == "count" else "an int",
                         value) from None
    if kind == "bytes":
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ValueError(f"{keyword} must be bytes (an int) or a size such as '16GiB', "
                             f"got {value!r}")
        return str(value)
    if kind == "real":
        if isinstance(value, (str, bytes)):
            raise _wrong(keyword, "a number", value)
        return repr(float(value))
    if kind == "flag":
        if not isinstance(value, bool) and type(value).__name__ not in ("bool", "bool_"):
            raise _wrong(keyword, "True or False", value)
        return "true" if value else "false"
    if kind == "size":
        if isinstance(value, str):
            return value  # "HxW" or "N", as the tools' --size
        if isinstance(value, int):
            return str(value)
        h, w = (int(v) for v in value)
        return f"{h}x{w}"
    if kind == "reals":
        return ",".join(repr(float(v)) for v in value)
    if kind == "sources" and not isinstance(value, str):
        if not isinstance(value, (list, tuple)) or not all(isinstance(s, dict) for s in value):
            raise _wrong(keyword, "a list of dicts (one per source)", value)
        return json.dumps([{k: os.fspath(v) if isinstance(v, os.PathLike) else v
                            for k, v in s.items()} for s in value],
                          default=lambda v: v.item() if hasattr(v, "item") else str(v))
    if not isinstance(value, str):
        raise _wrong(keyword, "a str", value)
    return value


def _arguments():
    """The docstring's Args: every keyword, its doc, its Python form where it has one."""
    lines = ["    Args:"]
    for keyword, row in _KEYWORDS.items():
        doc = row["doc"]
        if row["kind"] in _PYTHON_FORMS:
            doc += f" ({_PYTHON_FORMS[row['kind']]})"
        elif row["words"]:
            doc += " (" + ", ".join(f'"{w}"' for w in row["words"]) + ")"
        if keyword != "data":
            doc += f"; default {_python_default(row)!r}"
        lines.append(_wrap(f"{keyword}: {doc}."))
        if keyword == "pipeline":
            lines.append(_wrap(f"channels: {_CHANNELS_DOC}; default 3."))
    return "\n".join(lines) + "\n"


def _wrap(text):
    return textwrap.fill(text, 96, initial_indent=" " * 8, subsequent_indent=" " * 12,
                         break_on_hyphens=False, break_long_words=False)


def _signature():
    P = inspect.Parameter
    params = [P("self", P.POSITIONAL_OR_KEYWORD)]
    for keyword, row in _KEYWORDS.items():
        if keyword == "data":
            params.append(P("data", P.POSITIONAL_OR_KEYWORD, default=None))
            continue
        params.append(P(keyword, P.KEYWORD_ONLY, default=_python_default(row)))
        if keyword == "pipeline":
            params.append(P("channels", P.KEYWORD_ONLY, default=3))
    return inspect.Signature(params)


class Loader(_stoke.Loader):
    def __init__(self, data=None, **options):
        options["data"] = data  # (None with sources=[...]: a mixture)
        texts, steps, channels = {}, [], 3
        for keyword, value in options.items():
            row = _KEYWORDS.get(keyword)
            if row is None and keyword != "channels":
                close = difflib.get_close_matches(keyword, list(_KEYWORDS) + ["channels"], n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise TypeError(f"Loader() got an unexpected keyword argument {keyword!r}{hint}")
            if value is None:
                continue  # the option's default
            if keyword == "channels":
                channels = operator.index(value)
            elif row["kind"] == "pipeline":
                steps = [_step(s) for s in value]
            else:
                texts[row["name"]] = _text(keyword, row["kind"], value)
        super().__init__(texts, steps, channels)


Loader.__doc__ = ("""Delivers batches of a dataset, decoded and augmented by worker processes.

    Iterating a loader yields the batches of the current epoch, in order; the next iteration
    continues with the following epoch (or call ``set_epoch``). ``len(loader)`` is the number of
    batches per epoch. The delivered bytes depend only on the data, the pipeline, ``seed``,
    the epoch, ``batch``, ``rank`` and ``world``, never on ``workers`` (nor on the pool
    growing or shrinking while it runs).

    ``state_dict()`` / ``load_state_dict(d)`` save and restore the position as a dict of ints
    (the torchdata ``StatefulDataLoader`` and Lightning convention), beside ``state()``. A
    loader with another ``world``, ``devices`` or ``batch`` may load it: the epoch continues
    from the saved sample position.

    ``stats()`` reports the data-stall monitor: how long the consumer waited for batches and how
    long it computed between them (whole run and a moving window), the demand it could take, a
    ``verdict`` line ("input-bound: ... try 4 workers" or "not input-bound: ..."), GPU
    utilization on CUDA devices when NVML is available, and with ``workers="auto"`` every
    sizing ``decision`` with its reason.

    Every keyword is an option of the C++ ``stoke::Options`` (docs/USAGE.md, "All options"); None
    leaves one at its default.

""" + _arguments() + """
    Raises:
        ValueError: invalid configuration, with what to change.
        TypeError: a keyword it does not take, or a value of the wrong type.
        stoke.Error: the workers could not start.
    """)
Loader.__init__.__signature__ = _signature()
