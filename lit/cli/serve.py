"""`lit serve`: the local web explorer for readings, rules and candidates.

Argument translation only: the work is done by :mod:`lit.serve`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from lit.ace import DEFAULT_TIMEOUT, DEFAULT_WATCHDOG
from lit.cli._app import app
from lit.cli._common import (
    DEFAULT_BATCH_SIZE,
    BatchSizeOption,
    DeviceOption,
    GgufFileOption,
    LmOption,
    make_reranker,
)
from lit.errors import LitError
from lit.rerank import DEFAULT_LM

_EPILOG = ("Example: lit serve --grammar erg-1214 --lm none --workers 2, then open "
           "http://127.0.0.1:8765")


@app.command("serve", epilog=_EPILOG)
def serve_command(
    ctx: typer.Context,
    grammar: Annotated[Optional[str], typer.Option(  # noqa: UP007 - typer, Python 3.10
        "--grammar", "-g", help="Grammar (default: the default grammar; see `lit grammar list`)."
    )] = None,
    lm: LmOption = DEFAULT_LM,
    gguf_file: GgufFileOption = None,
    device: DeviceOption = None,
    batch_size: BatchSizeOption = DEFAULT_BATCH_SIZE,
    host: Annotated[str, typer.Option(
        "--host", help="Address to listen on. The default answers this machine only; "
                       "another address lets anyone who reaches it use ACE (no login).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(
        "--port", "-p", min=0, max=65535, help="Port to listen on (0: a free port).")] = 8765,
    workers: Annotated[int, typer.Option(
        "--workers", "-j", min=1, max=64,
        help="ACE backends (a parser and a generator process each) shared by all requests; "
             "more requests wait in line.")] = 1,
    select: Annotated[str, typer.Option(
        "--select", help="Reading selection: ranked (the best-structured full-clause reading "
                         "that regenerates the sentence), roundtrip (the first such reading) "
                         "or first.")] = "ranked",
    readings: Annotated[int, typer.Option(
        "--readings", "-n", min=1, max=100, help="Readings per parse.")] = 10,
    rules_dir: Annotated[Optional[list[Path]], typer.Option(  # noqa: UP007
        "--rules-dir", help="More rule files or directories of *.toml (repeatable).")] = None,
    labels: Annotated[Optional[Path], typer.Option(  # noqa: UP007
        "--labels", help="Label table (TOML) instead of the built-in rules/labels.toml.")
    ] = None,
    request_timeout: Annotated[float, typer.Option(
        "--request-timeout", min=1.0,
        help="Seconds a request may take, waiting for ACE included (then 504).")] = 120.0,
    queue_timeout: Annotated[float, typer.Option(
        "--queue-timeout", min=0.0,
        help="Seconds a request waits for a free ACE backend (then 503).")] = 30.0,
    max_words: Annotated[int, typer.Option(
        "--max-words", min=1, help="Longest sentence accepted, in words.")] = 50,
    max_chars: Annotated[int, typer.Option(
        "--max-chars", min=1, help="Longest sentence accepted, in characters.")] = 1000,
    timeout: Annotated[int, typer.Option(
        "--timeout", min=1, help="ACE's own time limit per item, in seconds.")
    ] = DEFAULT_TIMEOUT,
    watchdog: Annotated[float, typer.Option(
        "--watchdog", min=0.1, help="Kill and restart ACE when an item takes longer than this "
                                    "many seconds (wall clock).")] = DEFAULT_WATCHDOG,
) -> None:
    """Explore readings, rules and candidates in a web page served on this machine.

    Type a sentence or an NLI pair, see its readings as DMRS graphs and
    which one is selected, pick chains or specs, and see the candidates
    with their scores and labels. A JSON API (/api/parse, /api/transform,
    /api/rules, /api/labels, /api/info) returns the records of the command
    line. Ctrl-C stops the server and its ACE processes.
    """
    from lit.grammar import lit_home
    from lit.parse import SELECT_METHODS
    from lit.serve.app import missing, serve
    from lit.serve.explore import Limits

    if select not in SELECT_METHODS:
        raise typer.BadParameter(f"{select!r}; choose from {', '.join(SELECT_METHODS)}",
                                 param_hint="--select")
    hint = missing()
    if hint is not None:
        raise LitError(hint)
    env = dict(os.environ)
    verbosity = getattr(ctx.obj, "verbosity", 0)
    rules = None
    if rules_dir:
        from lit.rules import RuleSet

        rules = RuleSet.load(rules_dir)
    table = None
    if labels is not None:
        from lit.nli import LabelTable
        from lit.rules import RuleSet

        rules = rules or RuleSet.load()
        table = LabelTable.load(labels, rules=rules)
    limits = Limits(max_words=max_words, max_chars=max_chars, request_timeout=request_timeout,
                    queue_timeout=queue_timeout)

    def listening(url: str, local: bool) -> None:
        if local:
            typer.echo(f"lit serve: listening on {url} (local only); Ctrl-C stops", err=True)
        else:
            typer.echo(f"lit serve: listening on {url}: reachable from other machines, "
                       "with no login; Ctrl-C stops", err=True)

    serve(
        grammar, host=host, port=port, workers=workers,
        reranker=make_reranker(lm, gguf_file, device, batch_size), lm_name=lm,
        rules=rules, labels=table, select=select, n=readings, limits=limits,
        home=lit_home(env), env=env,
        ace_options={"timeout": timeout, "watchdog": min(watchdog, request_timeout)},
        on_listen=listening,
        log_level="debug" if verbosity >= 2 else "info" if verbosity == 1 else "warning",
    )
