"""The TSV format: tab-separated columns with a header row (e.g. MNLI's files)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import IO

from lit.formats._table import read_table
from lit.formats.jsonl import Skipped

__all__ = ["read"]


def read(source: str | os.PathLike[str] | IO[str] | None, *, on_error: str = "fail"
         ) -> Iterator[dict[str, str] | Skipped]:
    """Rows as dicts (see :func:`lit.formats._table.read_table`); no quoting."""
    return read_table(source, "\t", on_error)
