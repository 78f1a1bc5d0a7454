"""Resumable streaming output: continue a killed run without loss or duplicates.

A long run writes its results as JSONL, one complete line per record,
flushed after each (:class:`lit.formats.jsonl.JsonlWriter`). If the run is stopped
-- Ctrl-C, a kill, a crash, a full disk -- the output file holds the records
finished so far, possibly followed by one partial line from a write that
was cut off. :func:`scan_output` repairs and reads such a file:

1. everything after the last newline (a partial record) is truncated away;
2. every complete line is parsed, and *key* maps it to the key of the input
   it came from;
3. the set of finished keys is returned, so the caller feeds only the
   missing inputs to the pipeline and appends their records.

A complete line that is not a JSON object is not something an interrupted
run can produce; it raises :class:`~lit.errors.InputError` naming the file
and line instead of being skipped.

Example:
    >>> import json, pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "out.jsonl"
    >>> _ = path.write_text('{"id": "a"}\\n{"id": "b"}\\n{"id": "c", "sen')
    >>> state = scan_output(path, key=lambda r: r["id"])
    >>> sorted(state.done), state.records, state.truncated > 0
    (['a', 'b'], 2, True)
    >>> [x for x in pending(["a", "b", "c", "d"], state, key=str)]
    ['c', 'd']
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

from lit.errors import InputError

__all__ = ["ResumeState", "scan_output", "pending", "open_output"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_CHUNK = 1 << 16


@dataclass(frozen=True, slots=True)
class ResumeState:
    """What an earlier, interrupted run left in its output file.

    Attributes:
        path: the output file
        done: keys of the inputs whose records are complete in the file
        records: number of complete records (lines) in the file
        truncated: bytes of a partial last line that were removed
        duplicates: records whose key was already seen earlier in the file
    """

    path: Path
    done: frozenset[Hashable] = field(default_factory=frozenset)
    records: int = 0
    truncated: int = 0
    duplicates: int = 0

    def is_done(self, key: Hashable) -> bool:
        """Whether the input with *key* already has its record."""
        return key in self.done


def _truncate_partial_line(path: Path) -> int:
    """Cut *path* after its last newline; return how many bytes were removed."""
    with open(path, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        end = size
        while end > 0:
            start = max(0, end - _CHUNK)
            f.seek(start)
            chunk = f.read(end - start)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                keep = start + newline + 1
                break
            end = start
        else:
            keep = 0
        if keep < size:
            f.truncate(keep)
            f.flush()
            os.fsync(f.fileno())
        return size - keep


def scan_output(
    path: str | os.PathLike[str],
    key: Callable[[dict[str, Any]], Hashable],
) -> ResumeState:
    """Repair *path* after an interruption and report which inputs are done.

    A missing or empty file means nothing is done yet.

    Args:
        path: the JSONL output file of the interrupted run
        key: maps one output record to the key of its input item

    Returns:
        A :class:`ResumeState`.

    Raises:
        InputError: a complete line is not a JSON object, or *key* fails on
            it (the message names file and line)
    """
    path = Path(path)
    if not path.exists():
        return ResumeState(path)
    truncated = _truncate_partial_line(path)
    if truncated:
        logger.warning("%s: removed a partial last line (%d bytes) left by an interrupted run",
                       path, truncated)
    done: set[Hashable] = set()
    records = duplicates = 0
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"cannot resume: not a JSON line ({exc.msg}, column {exc.colno}); "
                    f"is this the output of an earlier run? Fix or remove the file",
                    filename=path, lineno=lineno,
                ) from exc
            if not isinstance(record, dict):
                raise InputError(
                    f"cannot resume: expected a JSON object, got {type(record).__name__}",
                    filename=path, lineno=lineno,
                )
            try:
                k = key(record)
            except (KeyError, TypeError, ValueError) as exc:
                raise InputError(
                    f"cannot resume: the record has no usable key ({exc!r}); "
                    f"is this the output of the same command?",
                    filename=path, lineno=lineno,
                ) from exc
            records += 1
            if k in done:
                duplicates += 1
            done.add(k)
    if duplicates:
        logger.warning("%s: %d records repeat a key seen earlier in the file", path, duplicates)
    return ResumeState(path, frozenset(done), records, truncated, duplicates)


def pending(items: Iterable[T], state: ResumeState, key: Callable[[T], Hashable]) -> Iterator[T]:
    """Yield the items of *items* whose key is not done in *state* (lazily)."""
    for item in items:
        if key(item) not in state.done:
            yield item


def open_output(
    path: str | os.PathLike[str],
    *,
    resume: bool = False,
    key: Callable[[dict[str, Any]], Hashable] | None = None,
) -> tuple[IO[str], ResumeState]:
    """Open an output file for a run, resuming an interrupted one if asked.

    Without *resume* the file is created or overwritten. With *resume* it
    is scanned and repaired with :func:`scan_output` (which needs *key*)
    and opened for appending.

    Returns:
        ``(stream, state)``; the caller closes *stream*.
    """
    path = Path(path)
    if resume:
        if key is None:
            raise ValueError("resume needs a key function")
        state = scan_output(path, key)
        mode = "a"
    else:
        state = ResumeState(path)
        mode = "w"
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    stream = open(path, mode, encoding="utf-8", errors="surrogateescape", newline="\n")
    return stream, state
