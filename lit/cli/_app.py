"""The root ``lit`` Typer application, shared by the command modules.

Command modules (``lit/cli/<name>.py``) import :data:`app` and register
their commands on it; ``lit/cli/__init__.py`` imports them all. They only
translate arguments into calls of library functions.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import click
import typer
from typer.core import TyperGroup

from lit.__about__ import __version__
from lit.errors import LitError

logger = logging.getLogger("lit")


class _State:
    """Options of the root command, available to subcommands via ``ctx.obj``."""

    __slots__ = ("verbosity", "quiet")

    def __init__(self) -> None:
        self.verbosity = 0
        self.quiet = False


class _LitGroup(TyperGroup):
    """Map :class:`LitError` to a one-line message and exit code 1.

    Tracebacks are shown only with ``-vv`` (debug). Ctrl-C exits with 130;
    a closed output pipe (``lit ... | head``) ends the run quietly with 141.
    """

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except LitError as exc:
            state = ctx.obj if isinstance(ctx.obj, _State) else None
            if state is not None and state.verbosity >= 2:
                raise
            click.echo(f"lit: error: {exc}", err=True)
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            click.echo("lit: interrupted", err=True)
            raise typer.Exit(130) from None
        except BrokenPipeError:
            # the reader went away (`lit ... | head`): stop quietly, as a tool
            # killed by SIGPIPE does; stdout is pointed at /dev/null so that
            # the interpreter's final flush does not raise again
            _silence_stdout()
            raise typer.Exit(_EXIT_BROKEN_PIPE) from None


_EXIT_BROKEN_PIPE = 128 + 13  # what a shell reports for a process killed by SIGPIPE


def _silence_stdout() -> None:
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (e.g. CliRunner)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


app = typer.Typer(
    name="lit",
    cls=_LitGroup,
    help="Linguistically-Informed Transformations: contrast sets from MRS with ACE and the ERG.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"lit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    verbose: int = typer.Option(
        0, "--verbose", "-v", count=True,
        help="More log output on stderr (-vv: debug, tracebacks).",
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="Only errors on stderr; no progress bars or summaries."
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Show the version."
    ),
) -> None:
    """Parse, transform and regenerate sentences with a grammar's guarantee of well-formedness."""
    state = _State()
    state.verbosity = verbose
    state.quiet = quiet
    ctx.obj = state
    _configure_logging(verbose, quiet)


def _configure_logging(verbose: int, quiet: bool) -> None:
    level = logging.WARNING
    if quiet:
        level = logging.ERROR
    elif verbose == 1:
        level = logging.INFO
    elif verbose >= 2:
        level = logging.DEBUG
    root = logging.getLogger("lit")
    root.setLevel(level)
    if not any(getattr(h, "_lit_cli", False) for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("lit: %(levelname)s: %(message)s"))
        handler._lit_cli = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    for h in root.handlers:
        if getattr(h, "_lit_cli", False) and isinstance(h, logging.StreamHandler):
            # CliRunner swaps sys.stderr per invocation; follow it (assign rather
            # than setStream(), which flushes the previous, possibly closed, stream)
            h.stream = sys.stderr
