"""The plain-text format: one sentence per line.

:func:`read` yields ``(lineno, sentence)`` items for ``lit transform``;
:func:`read_sentences` reads the input of ``lit parse``, where a line may
also be a JSON object with a ``sentence`` (or ``text``) and an ``id``.

Example:
    >>> import io
    >>> [item.sentence for item in read_sentences(io.StringIO('Dogs bark.\\n{"text": "Hi."}\\n'))]
    ['Dogs bark.', 'Hi.']
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from lit.errors import InputError
from lit.formats.jsonl import OnError, Skipped, _input_lines, _source_name, read_lines

__all__ = ["SentenceItem", "read", "read_sentences"]


def read(
    source: str | os.PathLike[str] | IO[str] | IO[bytes] | None, *, on_error: OnError = "fail"
) -> Iterator[tuple[int, str] | Skipped]:
    """The input items of a text file: ``(lineno, line)`` (or :class:`Skipped`)."""
    for lineno, line in read_lines(source, on_error=on_error):
        yield (lineno, line) if isinstance(line, str) else line


@dataclass(frozen=True, slots=True)
class SentenceItem:
    """One input item for parsing: *sentence* is ``None`` when *error* says why."""

    id: Any
    sentence: str | None
    error: str | None = None


def read_sentences(source: Any, *, on_error: str = "fail") -> Iterator[SentenceItem]:
    """Yield a :class:`SentenceItem` per sentence in *source*.

    *source* is a path, an open text stream, or ``None``/``"-"`` for stdin.
    Lines of plain text are sentences with their line number as id; a line
    that starts with ``{`` is a JSON object whose ``sentence`` (or ``text``)
    is parsed and whose ``id`` is kept (default: the line number). Blank
    lines are not items. A line that cannot be read raises
    :class:`~lit.errors.InputError` naming file and line, or with
    ``on_error="skip"`` becomes an item with the reason in ``error``.
    """
    name = _source_name(source)
    for lineno, obj, error in _input_lines(source, name, on_error):
        if obj is None:
            yield SentenceItem(lineno, None, error)
            continue
        if isinstance(obj, str):
            yield SentenceItem(lineno, obj)
            continue
        item_id = obj.get("id", lineno)
        text = obj.get("sentence", obj.get("text"))
        if not isinstance(text, str):
            reason = "no 'sentence' or 'text' string in the JSON object"
            if on_error != "skip":
                raise InputError(reason, filename=name, lineno=lineno)
            yield SentenceItem(item_id, None, f"invalid-input: {reason}")
            continue
        yield SentenceItem(item_id, text)
