"""`lit transform`: contrast sets and augmentation data from NLI pairs or sentences.

Argument translation only: the work is done by :mod:`lit.pipeline` (and
:mod:`lit.spec`, :mod:`lit.nli`, :mod:`lit.rerank`, :mod:`lit.contrast`).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from lit.ace import DEFAULT_MAX_REALIZATIONS, DEFAULT_TIMEOUT, DEFAULT_WATCHDOG
from lit.cli._app import app
from lit.cli._common import (
    DEFAULT_BATCH_SIZE,
    BatchSizeOption,
    DeviceOption,
    GgufFileOption,
    LmOption,
    is_quiet,
    make_reranker,
    progress,
)
from lit.errors import LitError
from lit.formats import INPUT_FORMATS, OUTPUT_FORMATS
from lit.parse import SELECT_METHODS
from lit.rerank import DEFAULT_LM

logger = logging.getLogger(__name__)

_EPILOG = (
    "Example: lit transform --grammar erg-1214 --rules \"f;p+i,m;o,pa;pa,i;i,p;f\" "
    "--report report.json examples/snli_sample.jsonl > contrast.jsonl"
)


@app.command("transform", epilog=_EPILOG)
def transform_command(
    ctx: typer.Context,
    rules: Annotated[str, typer.Option(
        "--rules", "-r",
        help="Specs, comma-separated: 'f;p+i,m;o' (premise;hypothesis, '+' composes, "
             "'o' = untouched); single-sentence chains like 'p+i' for plain text.")],
    input: Annotated[Optional[str], typer.Argument(  # noqa: UP007
        help="Input file (JSONL, TSV, CSV or text); - or nothing reads stdin.")] = None,
    input_format: Annotated[str, typer.Option(
        "--input-format", "-f",
        help="Input format: auto (by file extension; stdin: jsonl), jsonl, tsv, csv, "
             "text (one sentence per line).")] = "auto",
    hf: Annotated[Optional[str], typer.Option(  # noqa: UP007
        "--hf", help="Read a Hugging Face dataset instead: NAME[:CONFIG]:SPLIT (a local "
                     "cache, hub name, or a directory saved with save_to_disk); needs "
                     "lit-mrs\\[hf].")] = None,
    premise_field: Annotated[Optional[str], typer.Option(  # noqa: UP007
        "--premise-field", help="Premise field/column (default: sentence1, or premise).")] = None,
    hypothesis_field: Annotated[Optional[str], typer.Option(  # noqa: UP007
        "--hypothesis-field",
        help="Hypothesis field/column (default: sentence2, or hypothesis).")] = None,
    label_field: Annotated[Optional[str], typer.Option(  # noqa: UP007
        "--label-field", help="Gold label field/column (default: gold_label, or label).")] = None,
    id_field: Annotated[Optional[str], typer.Option(  # noqa: UP007
        "--id-field", help="Id field (default: id, pairID, idx or guid; else the item number)."
    )] = None,
    sentence_field: Annotated[Optional[str], typer.Option(  # noqa: UP007
        "--sentence-field",
        help="For single-sentence specs on JSONL/TSV/CSV: the sentence field.")] = None,
    grammar: Annotated[Optional[str], typer.Option(  # noqa: UP007
        "--grammar", "-g", help="Grammar (default: the default grammar; see `lit grammar list`)."
    )] = None,
    lm: LmOption = DEFAULT_LM,
    gguf_file: GgufFileOption = None,
    device: DeviceOption = None,
    batch_size: BatchSizeOption = DEFAULT_BATCH_SIZE,
    candidates: Annotated[Optional[int], typer.Option(  # noqa: UP007
        "--candidates", "-k", min=1,
        help="Keep the top K candidates with their scores in each record.")] = None,
    keep_mrs: Annotated[bool, typer.Option(
        "--keep-mrs", help="Add the transformed MRSs to the records.")] = False,
    verify: Annotated[bool, typer.Option(
        "--verify", help="Re-parse the chosen sentence and check the intended change; "
                         "failing candidates fall to the next.")] = False,
    labels: Annotated[Optional[Path], typer.Option(  # noqa: UP007
        "--labels", help="Label table (TOML) instead of the built-in rules/labels.toml.")
    ] = None,
    rules_dir: Annotated[Optional[list[Path]], typer.Option(  # noqa: UP007
        "--rules-dir", help="More rule files or directories of *.toml (repeatable).")] = None,
    select: Annotated[str, typer.Option(
        "--select", help="Reading selection: ranked (the best-structured full-clause reading "
                         "that regenerates the sentence), roundtrip (the first such reading) "
                         "or first.")] = "ranked",
    readings: Annotated[int, typer.Option(
        "--readings", "-n", min=1, help="Readings per parse to select from.")] = 10,
    max_words: Annotated[Optional[int], typer.Option(  # noqa: UP007
        "--max-words", min=1, help="Skip sentences with more whitespace-separated words "
                                   "than this without parsing them (no-parse: too long).")
    ] = None,
    max_realizations: Annotated[int, typer.Option(
        "--max-realizations", min=1,
        help="Refuse a transformed MRS with more realizations than this (no-realization: "
             "more than N realizations); the cap bounds ACE's work on long sentences.")
    ] = DEFAULT_MAX_REALIZATIONS,
    timeout: Annotated[int, typer.Option(
        "--timeout", min=1, help="ACE's own time limit per item, in seconds.")
    ] = DEFAULT_TIMEOUT,
    watchdog: Annotated[float, typer.Option(
        "--watchdog", min=0.1,
        help="Kill and restart ACE when an item takes longer than this many seconds (wall "
             "clock); the item is recorded as an error.")] = DEFAULT_WATCHDOG,
    report: Annotated[Optional[Path], typer.Option(  # noqa: UP007
        "--report", help="Write a JSON summary: per spec, items transformed and skipped by "
                         "reason.")] = None,
    output_format: Annotated[str, typer.Option(
        "--format", help="Output: jsonl (one record per item and spec) or contrast-sets "
                         "(one set per original item).")] = "jsonl",
    on_error: Annotated[str, typer.Option(
        "--on-error", help="Malformed input lines: fail (exit 1 naming the line) or skip "
                           "(an invalid-input record per spec).")] = "fail",
    output: Annotated[Optional[Path], typer.Option(  # noqa: UP007
        "--output", "-o", help="Write the records to FILE instead of stdout (needed by "
                               "--resume).")] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue an interrupted run: keep the complete records already in "
                         "--output and append only the missing ones.")] = False,
    workers: Annotated[Optional[int], typer.Option(  # noqa: UP007
        "--workers", "-j", min=1,
        help="Worker processes, each with its own ACE processes (default: the CPU count; "
             "1: a worker thread, no processes). With --engine ray: actors (default: the "
             "cluster's CPUs).")] = None,
    cache: Annotated[Optional[Path], typer.Option(  # noqa: UP007
        "--cache", help="Parse cache file (SQLite; default: $LIT_CACHE, else "
                   "$LIT_HOME/cache/parses.sqlite)."
    )] = None,
    no_cache: Annotated[bool, typer.Option(
        "--no-cache", help="Neither read nor write the parse cache.")] = False,
    engine: Annotated[str, typer.Option(
        "--engine", help="Where the workers run: local (processes on this machine) or ray "
                         "(actors on a Ray cluster; needs the ray extra of lit-mrs).")] = "local",
    ray_address: Annotated[Optional[str], typer.Option(  # noqa: UP007
        "--ray-address", help="Ray cluster to join (e.g. auto or ray://head:10001; default: "
                              "start a local Ray instance).")] = None,
) -> None:
    """Transform NLI pairs (or sentences) with rule specs; write labelled records as JSONL.

    Each input item yields one line per spec, with status ok, skipped or
    error and a reason; a summary goes to stderr (and --report).
    """
    from lit.cache import open_cache
    from lit.formats import format_of, read_input, write_output
    from lit.grammar import default_grammar, lit_home, resolve_grammar, with_checksum
    from lit.nli import LabelTable
    from lit.pipeline import Transformer
    from lit.records import NliFields, Report
    from lit.rules import RuleSet
    from lit.spec import parse_specs
    from lit.workers import ENGINES, worker_map

    _choice("--input-format", input_format, ("auto", *INPUT_FORMATS))
    _choice("--format", output_format, OUTPUT_FORMATS)
    _choice("--select", select, SELECT_METHODS)
    _choice("--on-error", on_error, ("fail", "skip"))
    _choice("--engine", engine, ENGINES)
    if resume and output is None:
        raise typer.BadParameter("needs --output FILE (the file to continue)",
                                 param_hint="--resume")
    if resume and output_format == "contrast-sets":
        raise typer.BadParameter("cannot continue contrast-sets output; use --format jsonl",
                                 param_hint="--resume")
    if ray_address is not None and engine != "ray":
        raise typer.BadParameter("needs --engine ray", param_hint="--ray-address")
    if hf is not None and input not in (None, "-"):
        raise typer.BadParameter("give either INPUT or --hf, not both", param_hint="--hf")
    if hf is not None:
        from lit.formats.hf import split_spec

        try:
            split_spec(hf)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--hf") from exc

    env = dict(os.environ)
    home = lit_home(env)
    quiet = is_quiet(ctx)
    ruleset = RuleSet.load(rules_dir or ())
    fmt = format_of(input, input_format) if hf is None else "hf"
    specs = parse_specs(rules, ruleset, pair=None if fmt != "text" else False)
    single = not specs[0].is_pair
    if any(s.is_pair == single for s in specs):
        raise typer.BadParameter("mixes pair specs (a;b) and single-sentence specs",
                                 param_hint="--rules")
    if fmt == "text" and not single:
        raise typer.BadParameter("plain-text input needs single-sentence specs like 'p+i'",
                                 param_hint="--rules")
    table = LabelTable.load(labels, rules=ruleset) if labels is not None else None

    fields = None
    if any(f is not None for f in (premise_field, hypothesis_field, label_field, id_field)):
        base = NliFields()
        fields = NliFields(premise_field or base.premise, hypothesis_field or base.hypothesis,
                           label_field or base.label, id_field)

    source = input if hf is None else hf
    items = read_input(source, fmt, on_error=on_error)
    reranker = make_reranker(lm, gguf_file, device, batch_size)
    rep = Report(specs={s.text: Counter() for s in specs})  # every spec, even with no items
    resolved = resolve_grammar(grammar or default_grammar(home=home), home=home, env=env)
    parse_cache = None if no_cache else open_cache(cache, env=env)
    if parse_cache is not None:
        resolved = with_checksum(resolved)  # once here, not once per worker
    # what the ACE-bound stage needs, in this process and in every worker
    options: dict[str, Any] = dict(grammar=resolved, rules=ruleset, select=select,
                                   verify=verify, n=readings, max_words=max_words, env=env,
                                   max_realizations=max_realizations,
                                   ace_options={"timeout": timeout, "watchdog": watchdog})
    prepare_map = worker_map(
        dict(options, cache=None if parse_cache is None else parse_cache.path),
        engine=engine, workers=workers, address=ray_address)
    transformer = Transformer(
        **options, reranker=reranker, labels=table, candidates=candidates, keep_mrs=keep_mrs,
        cache=parse_cache, prepare_map=prepare_map,
    )
    done: Any = frozenset()
    if output is not None:
        from lit.records import record_keys
        from lit.resume import open_output

        try:
            # record_keys() counts repeated ids, so duplicate ids resume exactly once
            out, state = open_output(output, resume=resume, key=record_keys())
        except OSError as exc:
            raise LitError(f"cannot open output {output}: {exc.strerror}") from exc
        done = state.done
        if resume and not quiet:
            typer.echo(f"resuming: {state.records} records already in {output}", err=True)
    else:
        out = sys.stdout
    bar_cm: Any = nullcontext(_NoBar()) if quiet else progress("transform", total=items.total)
    with transformer, bar_cm as bar:
        if single:
            records = transformer.transform_sentences(
                _sentences(items.items, sentence_field, id_field), specs, done=done)
        else:
            records = transformer.transform_pairs(items.items, specs, fields=fields,
                                                  label_names=items.label_names, done=done)
        write_output(_count(records, rep, len(specs), bar), out, output_format)
    if output is not None:
        out.close()
    summary = rep.to_dict()
    summary.update(input=hf or input or "-", rules=rules, grammar=resolved.profile.name,
                   lm=None if reranker is None else lm, verify=verify,
                   ace_requests=dict(sorted(transformer.requests.items())))
    if report is not None:
        try:
            report.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise LitError(f"cannot write report {report}: {exc.strerror}") from exc
    if not quiet:
        typer.echo(rep.summary(), err=True)
        if transformer.requests:
            typer.echo("ACE requests: " + ", ".join(
                f"{n} {kind}" for kind, n in sorted(transformer.requests.items())), err=True)


class _NoBar:
    def advance(self, n: int = 1) -> None:
        pass


def _choice(option: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise typer.BadParameter(f"{value!r}; choose from {', '.join(allowed)}",
                                 param_hint=option)


def _count(records: Any, rep: Any, n_specs: int, bar: Any) -> Iterator[dict[str, Any]]:
    n = 0
    for record in records:
        rep.add(record)
        n += 1
        if n % n_specs == 0:
            rep.items += 1
            bar.advance(1)
        yield record


def _sentences(items: Any, sentence_field: str | None, id_field: str | None) -> Iterator[Any]:
    """Plain-sentence items from any input: a dict's sentence field (default
    ``sentence``, else ``sentence1``) and id, or the item as it is."""
    for pos, item in enumerate(items, start=1):
        if isinstance(item, dict):
            key = sentence_field or ("sentence" if "sentence" in item else "sentence1")
            item_id = item.get(id_field) if id_field else item.get("id", pos)
            yield (item_id, item.get(key))
        else:
            yield item


