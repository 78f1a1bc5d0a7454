"""`lit transform`: contrast sets and augmentation data from NLI pairs or sentences.

Argument translation only: the work is done by :mod:`lit.pipeline` (and
:mod:`lit.spec`, :mod:`lit.nli`, :mod:`lit.rerank`, :mod:`lit.contrast`).
"""

from __future__ import annotations

import csv
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

from lit.ace import DEFAULT_TIMEOUT, DEFAULT_WATCHDOG
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
from lit.errors import InputError, LitError
from lit.rerank import DEFAULT_LM

logger = logging.getLogger(__name__)

_FORMATS = ("auto", "jsonl", "tsv", "csv", "text")
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
        "--select", help="Reading selection: roundtrip (first reading that regenerates the "
                         "sentence) or first.")] = "roundtrip",
    readings: Annotated[int, typer.Option(
        "--readings", "-n", min=1, help="Readings per parse to select from.")] = 10,
    max_words: Annotated[Optional[int], typer.Option(  # noqa: UP007
        "--max-words", min=1, help="Skip sentences with more whitespace-separated words "
                                   "than this without parsing them (no-parse: too long).")
    ] = None,
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
             "1: none). With --engine ray: actors (default: the cluster's CPUs).")] = None,
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
    from lit.grammar import lit_home
    from lit.nli import LabelTable
    from lit.pipeline import NliFields, Report, Transformer
    from lit.rules import RuleSet
    from lit.spec import parse_specs

    _choice("--input-format", input_format, _FORMATS)
    _choice("--format", output_format, ("jsonl", "contrast-sets"))
    _choice("--select", select, ("roundtrip", "first"))
    _choice("--on-error", on_error, ("fail", "skip"))
    _choice("--engine", engine, ("local", "ray"))
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

    env = dict(os.environ)
    quiet = is_quiet(ctx)
    ruleset = RuleSet.load(rules_dir or ())
    fmt = _format_of(input, input_format) if hf is None else "hf"
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

    items, total, label_names = _read_items(input, fmt, hf, on_error)
    reranker = make_reranker(lm, gguf_file, device, batch_size)
    rep = Report(specs={s.text: Counter() for s in specs})  # every spec, even with no items
    # what the ACE-bound stage needs, in this process and in every worker
    options: dict[str, Any] = dict(grammar=grammar, rules=ruleset, select=select, verify=verify,
                                   n=readings, home=lit_home(env), env=env, max_words=max_words,
                                   ace_options={"timeout": timeout, "watchdog": watchdog})
    parse_cache = _parse_cache(cache, no_cache, env)
    transformer = Transformer(
        **options, reranker=reranker, labels=table, candidates=candidates, keep_mrs=keep_mrs,
        cache=parse_cache, prepare_map=_prepare_map(engine, workers, ray_address, options,
                                                    parse_cache),
    )
    done: Any = frozenset()
    if output is not None:
        from lit.pipeline import record_keys
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
    from lit.jsonl import JsonlWriter

    writer = JsonlWriter(out)
    bar_cm: Any = nullcontext(_NoBar()) if quiet else progress("transform", total=total)
    with transformer, bar_cm as bar:
        if single:
            records = _sentence_records(transformer, items, specs, sentence_field, id_field,
                                        done)
        else:
            records = transformer.transform_pairs(items, specs, fields=fields,
                                                  label_names=label_names, done=done)
        counted = _count(records, rep, len(specs), bar)
        if output_format == "contrast-sets":
            from lit.contrast import contrast_sets

            for cs in contrast_sets(counted):
                writer.write(cs)
        else:
            for record in counted:
                writer.write(record)
    if output is not None:
        out.close()
    summary = rep.to_dict()
    summary.update(input=hf or input or "-", rules=rules,
                   grammar=getattr(transformer.profile, "name", grammar),
                   lm=None if reranker is None else lm, verify=verify)
    if report is not None:
        try:
            report.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise LitError(f"cannot write report {report}: {exc.strerror}") from exc
    if not quiet:
        typer.echo(rep.summary(), err=True)


class _NoBar:
    def advance(self, n: int = 1) -> None:
        pass


def _choice(option: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise typer.BadParameter(f"{value!r}; choose from {', '.join(allowed)}",
                                 param_hint=option)


def _format_of(path: str | None, fmt: str) -> str:
    if fmt != "auto":
        return fmt
    if path in (None, "-"):
        return "jsonl"
    suffix = Path(path).suffix.lower()
    return {".tsv": "tsv", ".csv": "csv", ".txt": "text"}.get(suffix, "jsonl")


def _count(records: Any, rep: Any, n_specs: int, bar: Any) -> Iterator[dict[str, Any]]:
    n = 0
    for record in records:
        rep.add(record)
        n += 1
        if n % n_specs == 0:
            rep.items += 1
            bar.advance(1)
        yield record


def _line_count(path: str) -> int | None:
    try:
        with open(path, "rb") as f:
            return sum(1 for line in f if line.strip())
    except OSError:
        return None


def _read_items(path: str | None, fmt: str, hf: str | None, on_error: str
                ) -> tuple[Any, int | None, list[str] | None]:
    """(items, total or None, label names or None) for the input."""
    from lit.jsonl import read_jsonl, read_lines

    if fmt == "hf":
        assert hf is not None
        ds = _load_hf(hf)
        from lit.pipeline import _label_names

        names = _label_names(ds, "label") or _label_names(ds, "gold_label")
        return ds, len(ds), names
    total = None if path in (None, "-") else _line_count(path)
    mode: Any = on_error
    if fmt == "jsonl":
        return (rec for _, rec in read_jsonl(path, on_error=mode)), total, None
    if fmt == "text":
        return ((lineno, line) if isinstance(line, str) else line
                for lineno, line in read_lines(path, on_error=mode)), total, None
    return _read_table(path, "\t" if fmt == "tsv" else ",", on_error), total, None


def _read_table(path: str | None, delimiter: str, on_error: str = "fail") -> Iterator[Any]:
    """Rows as dicts; a bad row (column count, invalid UTF-8) raises InputError
    naming the line, or with *on_error* "skip" is a Skipped record."""
    from lit.jsonl import Skipped, open_text

    name = "<stdin>" if path in (None, "-") else path
    f = open_text(path)
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
        if path not in (None, "-"):
            f.close()


def _load_hf(spec: str) -> Any:
    parts = spec.rsplit(":", 2) if spec.count(":") >= 2 else spec.rsplit(":", 1)
    if len(parts) < 2 or not all(parts):
        raise typer.BadParameter(f"{spec!r}; expected NAME[:CONFIG]:SPLIT, e.g. snli:validation",
                                 param_hint="--hf")
    name, config, split = (parts[0], None, parts[1]) if len(parts) == 2 else parts
    try:
        import datasets
    except ImportError as exc:
        raise LitError("--hf needs the 'datasets' package: pip install 'lit-mrs[hf]'") from exc
    try:
        if Path(name).is_dir() and (Path(name) / "dataset_dict.json").exists():
            return datasets.load_from_disk(name)[split]
        if Path(name).is_dir() and (Path(name) / "dataset_info.json").exists():
            return datasets.load_from_disk(name)
        return datasets.load_dataset(name, config, split=split)
    except KeyError as exc:
        raise LitError(f"--hf {spec}: no split {split!r}") from exc
    except (OSError, ValueError, FileNotFoundError) as exc:
        raise LitError(f"--hf {spec}: cannot load the dataset: {exc}") from exc


def _sentence_records(transformer: Any, items: Any, specs: Any, sentence_field: str | None,
                      id_field: str | None, done: Any = frozenset()
                      ) -> Iterator[dict[str, Any]]:
    def sentences() -> Iterator[Any]:
        for pos, item in enumerate(items, start=1):
            if isinstance(item, dict):
                key = sentence_field or ("sentence" if "sentence" in item else "sentence1")
                item_id = item.get(id_field) if id_field else item.get("id", pos)
                yield (item_id, item.get(key))
            else:
                yield item

    return transformer.transform_sentences(sentences(), specs, done=done)


def _parse_cache(path: Path | None, no_cache: bool, env: dict[str, str]) -> Any:
    """The parse cache to use (``None`` with --no-cache).

    The location is --cache, else ``LIT_CACHE``, else ``$LIT_HOME/cache``.
    Where the default location is not writable (a shared or read-only
    ``LIT_HOME``, as in the container image) the run goes on without a cache
    and says so; a location the user named must work.
    """
    if no_cache:
        return None
    from lit.cache import ParseCache, default_cache_path
    from lit.grammar import lit_home

    if path is None and env.get("LIT_CACHE"):
        path = Path(env["LIT_CACHE"])
    if path is None:
        path = default_cache_path(lit_home(env))
        if not _writable(path):
            logger.warning("parse cache off: %s is not writable; set LIT_CACHE or pass "
                           "--cache PATH (--no-cache silences this)", path)
            return None
    return ParseCache(path)


def _writable(path: Path) -> bool:
    """Whether *path* (a file, maybe not yet there) can be created or written."""
    if path.exists():
        return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return os.access(parent, os.W_OK | os.X_OK)


def _prepare_map(engine: str, workers: int | None, address: str | None,
                 options: dict[str, Any], cache: Any) -> Any:
    """The worker pool running the ACE-bound stage, or ``None`` to run it inline."""
    from functools import partial

    from lit.pipeline import open_worker, prepare_jobs

    backend: Any
    extra: dict[str, Any] = {}
    if engine == "ray":
        from lit import ray_engine as backend

        backend.import_ray()  # fail now, with the install hint, not inside the run
        extra["address"] = address
    else:
        from lit import engine as backend

        workers = workers or backend.default_workers()
        if workers == 1:
            return None
    # resolve (and checksum) the grammar once here, not once per worker
    from lit.grammar import Grammar, default_grammar, resolve_grammar

    grammar = options.get("grammar")
    if not isinstance(grammar, Grammar):
        home = options.get("home")
        grammar = resolve_grammar(grammar or default_grammar(home=home), home=home,
                                  env=options.get("env"))
    worker_options = dict(options, grammar=grammar, cache=None if cache is None else cache.path)
    return partial(backend.ordered_map, prepare_jobs, workers=workers, init=open_worker,
                   initargs=(worker_options,), **extra)
