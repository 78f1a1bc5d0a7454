"""Delimited tables with a header row (the ``tsv`` and ``csv`` formats)."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from typing import IO, Any

from lit.errors import InputError
from lit.formats.jsonl import Skipped, open_text


def read_table(source: str | os.PathLike[str] | IO[str] | None, delimiter: str,
               on_error: str = "fail") -> Iterator[dict[str, str] | Skipped]:
    """Rows of *source* as dicts keyed by the header row.

    Blank rows are not items. A row with the wrong number of columns or
    invalid UTF-8 raises :class:`~lit.errors.InputError` naming the line, or
    with *on_error* ``"skip"`` is yielded as a :class:`Skipped` record.
    """
    name = "<stdin>" if source in (None, "-") else str(getattr(source, "name", source))
    f = open_text(source)
    owned = isinstance(source, (str, os.PathLike)) and source != "-"
    try:
        quoting: Any = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
        reader = csv.reader(f, delimiter=delimiter, quoting=quoting)
        header = next(reader, None)
        if header is None:
            return
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            text = delimiter.join(row)
            reason = None
            if len(row) != len(header):
                reason = f"{len(row)} columns, header has {len(header)}"
            else:
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError as exc:
                    reason = f"invalid UTF-8 at column {exc.start + 1}"
            if reason is None:
                yield dict(zip(header, row, strict=True))
            elif on_error == "skip":
                yield Skipped(reader.line_num, reason, text.encode("utf-8", "replace").decode())
            else:
                raise InputError(reason + "; fix the line or pass --on-error skip",
                                 filename=name, lineno=reader.line_num)
    finally:
        if owned:
            f.close()
