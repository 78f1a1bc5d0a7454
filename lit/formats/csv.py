"""The CSV format: comma-separated columns with a header row, quoted as usual."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import IO

from lit.formats._table import read_table
from lit.formats.jsonl import Skipped

__all__ = ["read"]


def read(source: str | os.PathLike[str] | IO[str] | None, *, on_error: str = "fail"
         ) -> Iterator[dict[str, str] | Skipped]:
    """Rows as dicts (see :func:`lit.formats._table.read_table`)."""
    return read_table(source, ",", on_error)
