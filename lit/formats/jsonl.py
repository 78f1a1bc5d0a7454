"""The JSONL format, and the line reader every text format builds on.

Every reader yields ``(lineno, record)`` pairs so that errors and skips can
name the line they come from. Malformed lines raise :class:`~lit.errors.InputError`
naming file and line, unless *on_error* is ``"skip"``, in which case a
:class:`Skipped` record is yielded instead: nothing is dropped silently.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal, cast

from lit.errors import InputError, LitError

__all__ = [
    "Skipped",
    "OnError",
    "open_text",
    "read_jsonl",
    "read_lines",
    "dumps",
    "write_jsonl",
    "JsonlWriter",
]

OnError = Literal["fail", "skip"]


@dataclass(frozen=True, slots=True)
class Skipped:
    """A line that could not be read, with the reason; counted, never dropped."""

    lineno: int
    reason: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"lineno": self.lineno, "reason": self.reason, "text": self.text}


def _name(source: str | os.PathLike[str] | IO[str] | IO[bytes]) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return getattr(source, "name", "<stream>")


def open_text(source: str | os.PathLike[str] | IO[str] | IO[bytes] | None) -> IO[str]:
    """Open *source* for reading text; ``None`` or ``"-"`` is standard input.

    Bytes are decoded as UTF-8 with ``surrogateescape`` so that invalid
    bytes reach the reader, which reports them with their line number.
    Universal newlines are used, so CRLF files read like LF files.
    """
    if source is None or source == "-":
        return io.TextIOWrapper(
            sys.stdin.buffer, encoding="utf-8", errors="surrogateescape", newline=None
        )
    if isinstance(source, (str, os.PathLike)):
        try:
            return open(source, encoding="utf-8", errors="surrogateescape", newline=None)
        except FileNotFoundError as exc:
            raise InputError("no such file", filename=source) from exc
        except IsADirectoryError as exc:
            raise InputError("is a directory, not a file", filename=source) from exc
    if isinstance(source, io.TextIOBase):
        return source
    binary = cast(IO[bytes], source)
    return io.TextIOWrapper(binary, encoding="utf-8", errors="surrogateescape")


def _check_text(line: str, name: str, lineno: int) -> None:
    try:
        line.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"invalid UTF-8 at column {exc.start + 1}", filename=name, lineno=lineno
        ) from None


def read_lines(
    source: str | os.PathLike[str] | IO[str] | IO[bytes] | None,
    *,
    on_error: OnError = "fail",
) -> Iterator[tuple[int, str | Skipped]]:
    """Yield ``(lineno, text)`` for each line of *source* (newline stripped).

    Blank lines are yielded too (as empty strings) so callers can account
    for them. Invalid UTF-8 raises :class:`InputError` or, with
    ``on_error="skip"``, yields a :class:`Skipped`.
    """
    f = open_text(source)
    owned = isinstance(source, (str, os.PathLike)) and source != "-"
    name = _name(source) if source not in (None, "-") else "<stdin>"
    try:
        for lineno, line in enumerate(f, start=1):
            line = line.rstrip("\r\n")
            try:
                _check_text(line, name, lineno)
            except InputError as exc:
                if on_error == "fail":
                    raise
                text = line.encode("utf-8", "replace").decode()
                yield lineno, Skipped(lineno, exc.message, text)
                continue
            yield lineno, line
    finally:
        if owned:
            f.close()


def read_jsonl(
    source: str | os.PathLike[str] | IO[str] | IO[bytes] | None,
    *,
    on_error: OnError = "fail",
) -> Iterator[tuple[int, dict[str, Any] | Skipped]]:
    """Yield ``(lineno, object)`` for each JSON object line in *source*.

    Blank lines are skipped silently only if they are whitespace (they carry
    no item). A line that is not a JSON object raises :class:`InputError`
    naming file and line, or with ``on_error="skip"`` yields a
    :class:`Skipped` with the reason.

    Example:
        >>> import io
        >>> list(read_jsonl(io.StringIO('{"id": 1}\\n\\n{"id": 2}\\n')))
        [(1, {'id': 1}), (3, {'id': 2})]
    """
    name = _source_name(source)
    for lineno, line in read_lines(source, on_error=on_error):
        if isinstance(line, Skipped):
            yield lineno, line
            continue
        if not line.strip():
            continue
        obj = _json_object(line, name, lineno, skip=on_error != "fail")
        if isinstance(obj, str):
            yield lineno, Skipped(lineno, obj, line)
        else:
            yield lineno, obj


def _source_name(source: Any) -> str:
    """*source*'s name for messages: ``<stdin>`` for ``None`` or ``"-"``."""
    if source is None or source == "-":
        return "<stdin>"
    return str(_name(source))


def _json_object(line: str, name: str, lineno: int, *, skip: bool) -> dict[str, Any] | str:
    """The JSON object on *line*, or with *skip* the reason it is not one.

    Raises:
        InputError: *line* is not a JSON object and *skip* is false
    """
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        reason = f"malformed JSON: {exc.msg} (column {exc.colno})"
    else:
        if isinstance(obj, dict):
            return obj
        reason = f"expected a JSON object, got {type(obj).__name__}"
    if skip:
        return reason
    raise InputError(
        reason + "; fix the line or pass --on-error skip", filename=name, lineno=lineno
    )


# Characters that str.splitlines() and many JSONL readers treat as line breaks,
# but json.dumps(ensure_ascii=False) leaves raw inside strings: escape them so
# that one record is always one line.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def dumps(record: Mapping[str, Any]) -> str:
    """Serialize *record* as one JSON line (no trailing newline).

    Non-ASCII text is kept as is, except the Unicode line separators
    U+0085, U+2028 and U+2029, which are written as JSON escapes so that a
    reader splitting on them (``str.splitlines``) still sees one line.
    """
    return json.dumps(record, ensure_ascii=False, separators=(", ", ": ")).translate(_LINE_BREAKS)


class JsonlWriter:
    """Write records one complete line at a time.

    Each record is serialized fully before anything is written, and the
    stream is flushed after each line, so an interrupted run leaves only
    whole lines behind. Write failures (disk full, I/O errors) raise a
    :class:`~lit.errors.LitError` naming the stream and how many records
    were written, instead of truncating silently; a closed pipe raises
    :class:`BrokenPipeError`.
    """

    def __init__(self, stream: IO[str], *, flush: bool = True) -> None:
        self.stream = stream
        self.flush = flush
        self.count = 0

    def write(self, record: Mapping[str, Any]) -> None:
        line = dumps(record) + "\n"
        try:
            self.stream.write(line)
            if self.flush:
                self.stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise LitError(
                f"cannot write output to {_name(self.stream)}: {exc.strerror or exc}; "
                f"{self.count} complete records were written before the failure"
            ) from exc
        self.count += 1


def write_jsonl(records: Iterable[Mapping[str, Any]], stream: IO[str]) -> int:
    """Write *records* to *stream* as JSONL; return how many were written."""
    writer = JsonlWriter(stream)
    for record in records:
        writer.write(record)
    return writer.count


def path_or_none(value: str | os.PathLike[str] | None) -> Path | None:
    return None if value is None or value == "-" else Path(value)


def read(
    source: str | os.PathLike[str] | IO[str] | IO[bytes] | None, *, on_error: OnError = "fail"
) -> Iterator[dict[str, Any] | Skipped]:
    """The input items of a JSONL file: its objects (or :class:`Skipped` lines)."""
    return (record for _, record in read_jsonl(source, on_error=on_error))


def write(records: Iterable[Mapping[str, Any]], stream: IO[str]) -> int:
    """The ``jsonl`` output format: one record per line (see :func:`write_jsonl`)."""
    return write_jsonl(records, stream)
def _input_lines(
    source: Any, name: str, on_error: str
) -> Iterator[tuple[int, str | dict[str, Any] | None, str | None]]:
    """Yield ``(lineno, value, error)`` for each non-blank line of *source*.

    *value* is the stripped text of a plain line, or the JSON object on a
    line that starts with ``{``. A line that cannot be read raises
    :class:`~lit.errors.InputError`, or with ``on_error="skip"`` comes with
    *value* ``None`` and the reason in *error*.
    """
    skip = on_error == "skip"
    for lineno, line in read_lines(source, on_error="skip" if skip else "fail"):
        if isinstance(line, Skipped):
            yield lineno, None, f"invalid-input: {line.reason}"
        elif not line.strip():
            continue
        elif not line.lstrip().startswith("{"):
            yield lineno, line.strip(), None
        else:
            obj = _json_object(line, name, lineno, skip=skip)
            if isinstance(obj, str):
                yield lineno, None, f"invalid-input: {obj}"
            else:
                yield lineno, obj, None


