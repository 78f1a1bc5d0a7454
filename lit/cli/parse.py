"""`lit parse` and `lit generate`: sentences to readings, MRSs to sentences.

Argument translation only: the work is done by :mod:`lit.ace` (the ACE
processes) and :mod:`lit.parse` (input records, reading selection, output
records).
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterator
from enum import Enum
from typing import Annotated, Any, Optional

import typer

from lit.ace import DEFAULT_N, DEFAULT_TIMEOUT, DEFAULT_WATCHDOG
from lit.cli._app import app
from lit.cli._common import echo_summary, progress
from lit.formats.jsonl import JsonlWriter


class _Select(str, Enum):
    ranked = "ranked"
    roundtrip = "roundtrip"
    first = "first"


class _OnError(str, Enum):
    fail = "fail"
    skip = "skip"


_GrammarOpt = Annotated[
    Optional[str],  # noqa: UP007 - evaluated by typer at runtime, also on Python 3.10
    typer.Option("--grammar", "-g", help="Grammar name (default: the default grammar; "
                 "see `lit grammar list`)."),
]
_TimeoutOpt = Annotated[
    int, typer.Option("--timeout", min=1, help="ACE's own time limit per item, in seconds.")
]
_WatchdogOpt = Annotated[
    float,
    typer.Option("--watchdog", min=0.1,
                 help="Kill and restart ACE when an item takes longer than this many "
                      "seconds (wall clock); the item is reported with an error."),
]
_OnErrorOpt = Annotated[
    _OnError,
    typer.Option("--on-error", help="Malformed input line: stop with an error naming the "
                 "line (fail), or write an error record for it and go on (skip)."),
]


def _grammar(name: str | None) -> Any:
    from lit.grammar import default_grammar, lit_home, resolve_grammar

    env = dict(os.environ)
    if name is None:
        name = default_grammar(home=lit_home(env))
    return resolve_grammar(name, env=env)


def _ace_kwargs(g: Any, timeout: int, watchdog: float) -> dict[str, Any]:
    return {
        "executable": g.ace or "ace",
        "env": dict(os.environ),
        "ace_version": g.ace_version,
        "timeout": timeout,
        "watchdog": watchdog,
    }


def _count_lines(path: str | None) -> int | None:
    if path in (None, "-"):
        return None
    try:
        with open(path, "rb") as f:
            return sum(1 for line in f if line.strip())
    except OSError:
        return None  # the reader reports the problem with the file


def _sentence_items(sentences: list[str] | None, input_path: str | None,
                    on_error: str) -> Iterator[Any]:
    from lit.formats.text import SentenceItem, read_sentences

    if sentences:
        for i, sentence in enumerate(sentences, start=1):
            yield SentenceItem(i, sentence)
    else:
        yield from read_sentences(input_path, on_error=on_error)


@app.command(
    "parse",
    epilog="Example: echo 'The dog chased the cat.' | lit parse --grammar erg-1214 --dmrs",
)
def parse_command(
    sentences: Annotated[
        Optional[list[str]],  # noqa: UP007
        typer.Argument(help="Sentences to parse (default: read --input, or stdin)."),
    ] = None,
    input_path: Annotated[
        Optional[str],  # noqa: UP007
        typer.Option("--input", "-i", metavar="FILE|-",
                     help="Read sentences from FILE ('-': stdin): plain text, one per line, "
                          "or JSONL with 'sentence' (or 'text') and 'id'."),
    ] = None,
    grammar: _GrammarOpt = None,
    n: Annotated[int, typer.Option("-n", min=1, help="At most this many readings per "
                                   "sentence.")] = DEFAULT_N,
    select: Annotated[
        _Select,
        typer.Option("--select", help="How 'selected' is chosen: ranked (the best-structured "
                     "full-clause reading the grammar regenerates the sentence from; for "
                     "images without a ranking model), roundtrip (the first such reading in "
                     "ACE's order) or first (the first reading)."),
    ] = _Select.ranked,
    dmrs: Annotated[bool, typer.Option("--dmrs", help="Add each reading as DMRS JSON.")] = False,
    tree: Annotated[bool, typer.Option("--tree", help="Add each reading's tree and "
                                       "derivation.")] = False,
    max_words: Annotated[
        Optional[int],  # noqa: UP007
        typer.Option("--max-words", min=1, help="Skip sentences with more whitespace-"
                     "separated tokens than this (recorded with the reason)."),
    ] = None,
    timeout: _TimeoutOpt = DEFAULT_TIMEOUT,
    watchdog: _WatchdogOpt = DEFAULT_WATCHDOG,
    on_error: _OnErrorOpt = _OnError.fail,
) -> None:
    """Parse sentences into MRS readings with ACE; one JSON line per sentence.

    Output lines: {"id", "sentence", "readings": [{"mrs", "dmrs"?, "tree"?,
    "derivation"?}], "selected", "error"}. A sentence without readings has
    the error "no parse"; a failed item (ACE timed out or died) has the
    reason. The exit code is 0 even if some sentences have no parse.
    """
    from lit.ace import AceGenerator, AceParser
    from lit.parse import MAX_ROUNDTRIP_REALIZATIONS

    if sentences and input_path is not None:
        raise typer.BadParameter("give sentences as arguments or with --input, not both",
                                 param_hint="--input")
    g = _grammar(grammar)
    kwargs = _ace_kwargs(g, timeout, watchdog)
    total = len(sentences) if sentences else _count_lines(input_path)
    counts: Counter[str] = Counter()
    writer = JsonlWriter(sys.stdout)
    with AceParser(g.image, n=n, **kwargs) as parser, \
            progress("parsing", total=total) as bar:
        # ACE's version is known now: the generator need not run `ace -V` again
        kwargs["ace_version"] = parser.ace_version
        # realizes readings only to select one: unpacking stops past the selection's bound
        generator = AceGenerator(g.image, max_realizations=MAX_ROUNDTRIP_REALIZATIONS,
                                 **kwargs) if select is not _Select.first else None
        try:
            for item in _sentence_items(sentences, input_path, on_error.value):
                record = _parse_one(item, parser, generator, select.value, max_words,
                                    dmrs, tree)
                counts[_parse_outcome(record)] += 1
                writer.write(record)
                bar.advance()
        finally:
            if generator is not None:
                generator.close()
    echo_summary(counts, ["parsed", "no-parse", "skipped", "errors"]
                 if counts["skipped"] else ["parsed", "no-parse", "errors"])


def _parse_one(item: Any, parser: Any, generator: Any, method: str, max_words: int | None,
               dmrs: bool, tree: bool) -> dict[str, Any]:
    from lit.interface import ParseResult, TransientFailure
    from lit.parse import select_reading
    from lit.records import parse_record

    if item.sentence is None:
        return {"id": item.id, "sentence": None, "readings": [], "selected": None,
                "error": item.error}
    words = len(item.sentence.split())
    if max_words is not None and words > max_words:
        result = ParseResult(item.sentence, (), f"skipped: {words} tokens > {max_words}")
    else:
        result = parser.parse(item.sentence)
    selected = None
    if result.readings and result.error is None:
        try:
            selected = select_reading(result, method, generator=generator)
        except TransientFailure as exc:  # the readings stand; the selection is undecided
            record = parse_record(item.id, result, None, dmrs=dmrs, tree=tree)
            record["error"] = f"{exc.failure}: selection: {exc.detail}"
            return record
    return parse_record(item.id, result, selected, dmrs=dmrs, tree=tree)


def _parse_outcome(record: dict[str, Any]) -> str:
    if record["readings"]:
        return "errors" if record["error"] else "parsed"
    error = record["error"] or "no parse"
    if error == "no parse":
        return "no-parse"
    if error.startswith("skipped"):
        return "skipped"
    return "errors"


@app.command(
    "generate",
    epilog="Example: lit parse -g erg-1214 'The dog chased the cat.' | lit generate -g erg-1214",
)
def generate_command(
    input_path: Annotated[
        Optional[str],  # noqa: UP007
        typer.Argument(metavar="[INPUT]",
                       help="SimpleMRS (one per line), `lit parse` JSONL or `lit rules apply` "
                            "JSONL; '-' or none: stdin."),
    ] = None,
    grammar: _GrammarOpt = None,
    all_readings: Annotated[
        bool, typer.Option("--all", help="With `lit parse` input: generate from every "
                           "reading, not only the selected one.")
    ] = False,
    timeout: _TimeoutOpt = DEFAULT_TIMEOUT,
    watchdog: _WatchdogOpt = DEFAULT_WATCHDOG,
    on_error: _OnErrorOpt = _OnError.fail,
) -> None:
    """Generate sentences from MRSs with ACE; one JSON line per MRS.

    Output lines: {"id", "mrs", "surfaces", "error"} (plus "sentence",
    "chain" and "reading" when the input has them). Surfaces are every
    realization, in the grammar's order. An input without an MRS (no
    parse, rule not applicable) gets a line with the reason in "error".
    """
    from lit.ace import AceGenerator
    from lit.formats.mrs import read_mrs_items

    g = _grammar(grammar)
    kwargs = _ace_kwargs(g, timeout, watchdog)
    counts: Counter[str] = Counter()
    writer = JsonlWriter(sys.stdout)
    items = read_mrs_items(input_path, all_readings=all_readings, on_error=on_error.value)
    with AceGenerator(g.image, **kwargs) as generator, \
            progress("generating", total=_count_lines(input_path)) as bar:
        for item in items:
            if item.mrs is None:
                record = {"id": item.id, **item.extra, "mrs": None, "surfaces": [],
                          "error": item.error}
                counts["skipped"] += 1
            else:
                result = generator.generate(item.mrs)
                record = {"id": item.id, **item.extra, "mrs": result.mrs,
                          "surfaces": list(result.surfaces), "error": result.error}
                if result.error:
                    counts["errors"] += 1
                elif result.surfaces:
                    counts["generated"] += 1
                else:
                    counts["no-realization"] += 1
            writer.write(record)
            bar.advance()
    echo_summary(counts, ["generated", "no-realization", "skipped", "errors"])
