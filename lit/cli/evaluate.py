"""`lit evaluate`, `lit predict`, `lit analyze`: measure models and describe datasets.

Argument translation only: the work is done by :mod:`lit.evaluate`,
:mod:`lit.predict` and :mod:`lit.analyze`. This layer reads the environment
(grammar locations for ``lit analyze`` on raw input) and chooses the output
streams: results (JSON, JSONL) on stdout, tables on stdout unless ``--json``
is given (then on stderr), logs and summaries on stderr.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import click
import typer
from rich.console import Console

from lit.cli._app import app
from lit.cli._common import echo_summary, progress

_JsonOpt = Annotated[
    bool,
    typer.Option("--json", help="Write the results as one JSON object on stdout "
                 "(the table then goes to stderr)."),
]
_PlotOpt = Annotated[
    Optional[Path],  # noqa: UP007 - evaluated by typer at runtime, also on Python 3.10
    typer.Option("--plot", help="Also write a bar chart to this PNG file (needs matplotlib, "
                 "from the 'plot' extra of lit-mrs).", dir_okay=False, writable=True),
]


def _quiet(ctx: Any) -> bool:
    """Whether the root command got -q (``is_quiet()`` without a context cannot
    see typer's own click contexts, so the context is passed down)."""
    while ctx is not None:
        if getattr(ctx.obj, "quiet", None) is not None:
            return bool(ctx.obj.quiet)
        ctx = ctx.parent
    return False


def _table_console(ctx: typer.Context, as_json: bool) -> Console | None:
    """Where the table goes: stdout, or stderr with --json; None when quiet with --json."""
    if not as_json:
        return _console(sys.stdout)
    if _quiet(ctx):
        return None
    return _console(sys.stderr)


def _console(stream: Any) -> Console:
    # a table piped to a file is not cut to 80 columns
    tty = hasattr(stream, "isatty") and stream.isatty()
    return Console(file=stream, stderr=stream is sys.stderr, width=None if tty else 160)


def _summary(ctx: typer.Context, counts: dict[str, int]) -> None:
    if not _quiet(ctx):
        echo_summary(counts, order=list(counts))


def _show(ctx: typer.Context, result: Any, table: Callable[[Any], Any],
          draw: Callable[[Any, Path], None], *, as_json: bool, plot: Path | None) -> None:
    """Output *result*: ``table(result)`` (see :func:`_table_console`), its
    ``to_dict()`` as JSON with --json, and ``draw(result, plot)`` with --plot."""
    console = _table_console(ctx, as_json)
    if console is not None:
        console.print(table(result))
    if as_json:
        _write_json(result.to_dict())
    if plot is not None:
        draw(result, plot)


def _write_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


# -- lit evaluate -------------------------------------------------------------


def _check_missing(value: str) -> str:
    if value not in ("exclude", "wrong"):
        raise typer.BadParameter(f"{value!r} is not one of 'exclude', 'wrong'")
    return value


@app.command(
    "evaluate",
    epilog="Example: lit evaluate contrast.jsonl predictions.jsonl --plot metrics.png",
)
def evaluate_cmd(
    ctx: typer.Context,
    transformed: Annotated[
        str, typer.Argument(help="`lit transform` output (JSONL); - reads stdin.")
    ],
    predictions: Annotated[
        Optional[str],  # noqa: UP007
        typer.Argument(help="Predictions, JSONL {\"id\", \"label\"}: originals by their id, "
                       "contrast items by <orig id>:<spec>. Omit with --pred-field."),
    ] = None,
    pred_field: Annotated[
        Optional[str],  # noqa: UP007
        typer.Option("--pred-field", help="Read predictions from this field of the transform "
                     "records (original: original.FIELD) instead of a predictions file."),
    ] = None,
    label_field: Annotated[
        str, typer.Option("--label-field", help="Field of the predictions file holding the "
                          "predicted label.")
    ] = "label",
    missing: Annotated[
        str,
        typer.Option("--missing", metavar="[exclude|wrong]", callback=_check_missing,
                     help="Missing predictions: leave those items/sets out (exclude) or "
                     "count them as wrong. Either way they are reported."),
    ] = "exclude",
    unsorted: Annotated[
        bool, typer.Option("--unsorted/--adjacent", help="Whether records of one original may "
                           "be spread over the file (grouped in memory).")
    ] = True,
    as_json: _JsonOpt = False,
    plot: _PlotOpt = None,
) -> None:
    """Score a model on contrast sets: Acc@Ori, Acc@Ctr, consistency, contrast consistency.

    Metrics are given per spec, per phenomenon and overall; only records
    with status "ok" are contrast items. See README "Evaluating models".
    """
    from lit import evaluate as ev_mod  # noqa: PLC0415

    if predictions is None and pred_field is None:
        raise typer.BadParameter("give a PREDICTIONS file or --pred-field FIELD")
    if predictions == "-" and transformed in (None, "-"):
        raise typer.BadParameter("only one of TRANSFORMED and PREDICTIONS can be stdin")
    preds = None
    if predictions is not None:
        preds = ev_mod.read_predictions(predictions, label_field=label_field)
    source = "<stdin>" if transformed == "-" else transformed
    result = ev_mod.evaluate_records(
        ev_mod.read_transform(transformed),
        preds,
        pred_field=pred_field,
        missing=missing,  # type: ignore[arg-type]
        adjacent=not unsorted,
        source=source,
    )
    _show(ctx, result, ev_mod.evaluation_table, ev_mod.plot_evaluation,
          as_json=as_json, plot=plot)
    c = result.counts
    _summary(
        ctx,
        {
            "originals": c.get("originals", 0),
            "evaluated sets": c.get("evaluated_sets", 0),
            "without contrast items": c.get("without_contrast_items", 0),
            "missing original predictions": c.get("missing_originals", 0),
            "missing item predictions": c.get("missing_items", 0),
        },
    )
    _warn_missing(ctx, result)


def _warn_missing(ctx: typer.Context, result: Any) -> None:
    if _quiet(ctx):
        return
    for kind in ("originals", "items"):
        info = result.missing[kind]
        if info["count"]:
            sample = ", ".join(info["sample"])
            more = " …" if info["count"] > len(info["sample"]) else ""
            verb = "left out" if result.missing_policy == "exclude" else "counted as wrong"
            click.echo(
                f"lit: warning: {info['count']} {kind} without a prediction ({verb}): "
                f"{sample}{more}",
                err=True,
            )


# -- lit predict ----------------------------------------------------------------


@app.command(
    "predict",
    epilog="Example: lit predict --model ./my-nli-model contrast.jsonl > predictions.jsonl",
)
def predict_cmd(
    ctx: typer.Context,
    transformed: Annotated[
        str, typer.Argument(help="`lit transform` output (JSONL); - reads stdin.")
    ] = "-",
    model: Annotated[
        str, typer.Option("--model", "-m", help="Hugging Face model id or local directory of a "
                          "sequence-classification (NLI) model.")
    ] = "",
    label_map: Annotated[
        Optional[str],  # noqa: UP007
        typer.Option("--label-map", help="Class index to label, e.g. "
                     "0=entailment,1=neutral,2=contradiction (default: the model config's "
                     "id2label, lower-cased)."),
    ] = None,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, help="Pairs per forward pass.")
    ] = 32,
    max_length: Annotated[
        int, typer.Option("--max-length", min=8, help="Truncate pairs to this many tokens.")
    ] = 256,
    device: Annotated[
        str, typer.Option("--device", help="torch device, e.g. cpu or cuda:0.")
    ] = "cpu",
) -> None:
    """Predict labels for the originals and contrast items of a transform output.

    Writes JSONL {"id", "label"} on stdout, ready for `lit evaluate`.
    """
    from lit import predict as pr_mod  # noqa: PLC0415
    from lit.formats.jsonl import JsonlWriter  # noqa: PLC0415

    if not model:
        raise typer.BadParameter("give the model with --model ID_OR_PATH")
    mapping = pr_mod.parse_label_map(label_map) if label_map else None
    examples = list(pr_mod.examples_from_records(
        _records(transformed), source="<stdin>" if transformed == "-" else transformed))
    writer = JsonlWriter(sys.stdout)
    with progress("predicting", total=len(examples)) as bar, pr_mod.Predictor(
        model, label_map=mapping, batch_size=batch_size, max_length=max_length, device=device
    ) as predictor:
        for pred in predictor.predict(examples, on_batch=bar.advance):
            writer.write(pred)
    _summary(ctx, {"predictions": writer.count})


def _records(source: str) -> Any:
    from lit.evaluate import read_transform  # noqa: PLC0415

    return read_transform(source)


# -- lit analyze ----------------------------------------------------------------


@app.command(
    "analyze",
    epilog="Example: lit analyze parsed.jsonl --plot phenomena.png   "
    "(or: lit analyze -g erg-1214 snli_dev.jsonl)",
)
def analyze_cmd(
    ctx: typer.Context,
    source: Annotated[
        str, typer.Argument(help="`lit parse` output (JSONL with readings), a dataset (JSONL "
                            "with sentence1/sentence2 or sentence), or text, one sentence a "
                            "line; - reads stdin.")
    ] = "-",
    grammar: Annotated[
        Optional[str],  # noqa: UP007
        typer.Option("--grammar", "-g", help="Grammar to parse raw input with (default: the "
                     "default grammar; not used for `lit parse` output)."),
    ] = None,
    fields: Annotated[
        str, typer.Option("--fields", help="Comma-separated fields holding sentences in a JSONL "
                          "dataset.")
    ] = "sentence1,sentence2",
    keep_duplicates: Annotated[
        bool, typer.Option("--keep-duplicates", help="Count repeated sentences every time "
                           "(default: each distinct sentence once).")
    ] = False,
    as_json: _JsonOpt = False,
    plot: _PlotOpt = None,
) -> None:
    """Distribution of phenomena in the sentences the grammar parses (LIT paper §5.2).

    Tense, aspect, modality, negation, passive, it-cleft and question are
    read off the MRS of each sentence's selected (or first) reading; the
    share of sentences without a parse is reported too.
    """
    from lit import analyze as an_mod  # noqa: PLC0415

    kind, items = an_mod.read_input(
        source, fields=tuple(f.strip() for f in fields.split(",") if f.strip())
    )
    if kind == "parsed":
        result = an_mod.analyze_parsed(items, dedupe=not keep_duplicates)
    else:
        result = _analyze_raw(an_mod, items, grammar, dedupe=not keep_duplicates)
    _show(ctx, result, an_mod.analysis_table, an_mod.plot_analysis,
          as_json=as_json, plot=plot)
    _summary(ctx, {"sentences": result.sentences, "parsed": result.parsed,
                   "not parsed": result.sentences - result.parsed})


def _analyze_raw(an_mod: Any, sentences: Any, grammar: str | None, *, dedupe: bool) -> Any:
    from lit.ace import AceParser  # noqa: PLC0415
    from lit.grammar import default_grammar, lit_home, resolve_grammar  # noqa: PLC0415

    if grammar is None:
        grammar = default_grammar(home=lit_home(os.environ))
    g = resolve_grammar(grammar, env=os.environ)
    kwargs: dict[str, Any] = {}
    if getattr(g, "ace", None) is not None:
        kwargs["executable"] = g.ace
    if getattr(g, "ace_version", None):
        kwargs["ace_version"] = g.ace_version
    sentences = list(sentences)
    with progress("parsing", total=len(sentences)) as bar, AceParser(g.image, **kwargs) as parser:
        return an_mod.analyze_sentences(sentences, parser, dedupe=dedupe, semantics=g.profile,
                                        on_sentence=bar.advance)
