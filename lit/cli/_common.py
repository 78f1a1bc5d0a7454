"""Helpers shared by the command modules: progress, summaries, output streams."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Optional

import click
import typer
from rich.console import Console

from lit.rerank import DEFAULT_LM

if TYPE_CHECKING:  # pragma: no cover
    from lit.rerank import Reranker

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

__all__ = [
    "stderr_console",
    "progress",
    "is_quiet",
    "echo_summary",
    "format_counts",
    "LmOption",
    "GgufFileOption",
    "DeviceOption",
    "BatchSizeOption",
    "make_reranker",
]


def stderr_console() -> Console:
    """A rich console on the *current* stderr (CliRunner replaces it per run)."""
    return Console(file=sys.stderr, stderr=True)


def _current_context() -> Any:
    """The active command context.

    typer >= 0.29 ships its own copy of click (``typer._click``), whose context
    stack is separate from the ``click`` package's; look in both.
    """
    ctx = None
    try:
        from typer._click.globals import get_current_context
    except ImportError:  # older typer: plain click only
        pass
    else:
        ctx = get_current_context(silent=True)
    return ctx if ctx is not None else click.get_current_context(silent=True)


def is_quiet(ctx: Any = None) -> bool:
    """Whether the root ``-q`` was given (looked up from *ctx* or the active context)."""
    ctx = ctx or _current_context()
    while ctx is not None:
        obj = ctx.obj
        if obj is not None and hasattr(obj, "quiet"):
            return bool(obj.quiet)
        ctx = ctx.parent
    return False


class _NullProgress:
    def advance(self, n: int = 1) -> None:
        pass

    def update(self, **kwargs: Any) -> None:
        pass


class _Bar:
    def __init__(self, progress: Progress, task: Any) -> None:
        self._progress = progress
        self._task = task

    def advance(self, n: int = 1) -> None:
        self._progress.advance(self._task, n)

    def update(self, **kwargs: Any) -> None:
        self._progress.update(self._task, **kwargs)


@contextmanager
def progress(description: str, total: int | None = None) -> Iterator[_Bar | _NullProgress]:
    """A progress bar on stderr; a no-op when quiet or stderr is not a TTY."""
    if is_quiet() or not sys.stderr.isatty():
        yield _NullProgress()
        return
    columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
               MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=stderr_console(), transient=True) as p:
        yield _Bar(p, p.add_task(description, total=total))


def format_counts(counts: Counter[str] | dict[str, int], order: list[str] | None = None) -> str:
    """``412 parsed, 9 no-parse, 2 errors`` from a counter (zero counts kept if ordered)."""
    keys = order or [k for k, _ in Counter(counts).most_common()]
    return ", ".join(f"{counts.get(k, 0)} {k}" for k in keys)


def echo_summary(counts: Counter[str] | dict[str, int], order: list[str] | None = None) -> None:
    """Print the one-line end-of-run summary on stderr (unless quiet)."""
    if not is_quiet():
        click.echo(format_counts(counts, order), err=True)


# -- language-model options shared by `lit transform` and `lit rerank` ---------

LmOption = Annotated[str, typer.Option(
    "--lm", help="Reranking LM: a Hugging Face model id, a local directory, a .gguf file, "
                 "or 'none' (grammar order).")]
GgufFileOption = Annotated[Optional[str], typer.Option(  # noqa: UP007 - typer, Python 3.10
    "--gguf-file", help="GGUF file inside the --lm directory or hub repo (needs "
                        "lit-mrs\\[gguf]).")]
DeviceOption = Annotated[Optional[str], typer.Option(  # noqa: UP007
    "--device", help="LM device: cpu, cuda, cuda:1 ... (default: cuda if available).")]
BatchSizeOption = Annotated[int, typer.Option(
    "--batch-size", min=1, help="Sentences per LM batch (halved on out-of-memory).")]
DEFAULT_BATCH_SIZE = 16


def make_reranker(lm: str = DEFAULT_LM, gguf_file: str | None = None, device: str | None = None,
                  batch_size: int = DEFAULT_BATCH_SIZE) -> Reranker | None:
    """The reranker the LM options describe; ``None`` for ``--lm none`` (grammar order)."""
    if lm.lower() == "none":
        return None
    from lit.rerank import Reranker

    return Reranker(lm, gguf_file=gguf_file, device=device, batch_size=batch_size)
