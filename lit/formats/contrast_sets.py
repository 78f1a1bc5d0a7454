"""The ``contrast-sets`` output format: one line per original item.

The records of ``lit transform`` are grouped by :func:`lit.contrast.contrast_sets`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import IO, Any

from lit.formats.jsonl import JsonlWriter

__all__ = ["write"]


def write(records: Iterable[Mapping[str, Any]], stream: IO[str]) -> int:
    """Group *records* into contrast sets and write one JSON line per set."""
    from lit.contrast import contrast_sets

    writer = JsonlWriter(stream)
    for cs in contrast_sets(records):
        writer.write(cs)
    return writer.count
