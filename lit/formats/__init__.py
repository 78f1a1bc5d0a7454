"""Input readers and output writers, found by name: one module per format.

A format is a module ``lit.formats.<name>`` (``-`` in the name as ``_``)
with a ``read(source, *, on_error)`` function yielding input items, a
``write(records, stream)`` function writing output records, or both. A new
format is one new module; :data:`INPUT_FORMATS` and :data:`OUTPUT_FORMATS`
list the built-in ones.

Input items are what :meth:`lit.Transformer.transform_pairs` and
``transform_sentences`` take: dicts (JSONL, TSV, CSV), ``(lineno,
sentence)`` pairs (text), or :class:`~lit.formats.jsonl.Skipped` lines
(with ``on_error="skip"``). Malformed input raises
:class:`~lit.errors.InputError` naming file and line otherwise.

Example:
    >>> format_of("pairs.tsv"), format_of("-")
    ('tsv', 'jsonl')
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import IO, Any

from lit.errors import LitError

__all__ = [
    "INPUT_FORMATS",
    "OUTPUT_FORMATS",
    "Input",
    "format_of",
    "read_input",
    "write_output",
]

#: formats of input files (``hf`` reads a Hugging Face dataset instead)
INPUT_FORMATS = ("jsonl", "tsv", "csv", "text")
#: formats of ``lit transform`` output
OUTPUT_FORMATS = ("jsonl", "contrast-sets")

_SUFFIXES = {".tsv": "tsv", ".csv": "csv", ".txt": "text"}


@dataclass(frozen=True, slots=True)
class Input:
    """Items read from one input, with what is known about them.

    Attributes:
        items: the items, read lazily
        total: how many there are, if known cheaply (for progress bars)
        label_names: names of integer gold labels (a dataset's ClassLabel)
    """

    items: Iterable[Any]
    total: int | None = None
    label_names: list[str] | None = None


def _module(name: str, kind: str) -> ModuleType:
    known = INPUT_FORMATS + ("hf",) if kind == "read" else OUTPUT_FORMATS
    if name not in known:
        raise LitError(f"unknown {'input' if kind == 'read' else 'output'} format {name!r}; "
                       f"choose from {', '.join(known)}")
    return importlib.import_module(f"lit.formats.{name.replace('-', '_')}")


def format_of(path: str | os.PathLike[str] | None, fmt: str = "auto") -> str:
    """The input format of *path*: *fmt* unless ``"auto"``, else by suffix
    (``.tsv``, ``.csv``, ``.txt``; anything else and stdin: ``jsonl``)."""
    if fmt != "auto":
        return fmt
    if path is None or path == "-":
        return "jsonl"
    return _SUFFIXES.get(Path(path).suffix.lower(), "jsonl")


def _line_count(path: str | os.PathLike[str]) -> int | None:
    try:
        with open(path, "rb") as f:
            return sum(1 for line in f if line.strip())
    except OSError:
        return None


def read_input(source: str | os.PathLike[str] | IO[str] | None, fmt: str = "auto", *,
               on_error: str = "fail") -> Input:
    """Read *source* (a path, a stream, ``None``/``"-"`` for stdin) as *fmt*.

    With *fmt* ``"hf"``, *source* is a dataset spec ``NAME[:CONFIG]:SPLIT``
    (see :func:`lit.formats.hf.load`).

    Raises:
        LitError: unknown format; InputError: (while reading) a malformed line
    """
    name = format_of(None if hasattr(source, "read") else source, fmt)
    module = _module(name, "read")
    if name == "hf":
        dataset = module.load(str(source))
        return Input(dataset, len(dataset), module.label_names(dataset))
    total = None
    if isinstance(source, (str, os.PathLike)) and source != "-":
        total = _line_count(source)
    return Input(module.read(source, on_error=on_error), total)


def write_output(records: Iterable[Mapping[str, Any]], stream: IO[str],
                 fmt: str = "jsonl") -> int:
    """Write *records* to *stream* in output format *fmt*; return the lines written."""
    return int(_module(fmt, "write").write(records, stream))
