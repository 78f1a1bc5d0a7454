"""`lit rerank`: clean and rank generated sentences with a language model.

Argument translation only: :mod:`lit.generate` cleans the realizations and
:mod:`lit.rerank` scores them.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from enum import Enum
from typing import Annotated, Any, Optional

import typer

from lit.cli._app import app
from lit.cli._common import (
    DEFAULT_BATCH_SIZE,
    BatchSizeOption,
    DeviceOption,
    GgufFileOption,
    LmOption,
    echo_summary,
    make_reranker,
    progress,
)
from lit.errors import InputError
from lit.formats.jsonl import JsonlWriter, Skipped, read_jsonl
from lit.rerank import DEFAULT_LM


class _OnError(str, Enum):
    fail = "fail"
    skip = "skip"


def _surfaces(record: Mapping[str, Any], lineno: int, name: str) -> list[str]:
    """The candidate sentences of a `lit generate` (or already ranked) record."""
    for field in ("surfaces", "candidates"):
        if field in record:
            value = record[field]
            break
    else:
        raise InputError("no 'surfaces' (or 'candidates') field; expected `lit generate` "
                         "output", filename=name, lineno=lineno)
    if not isinstance(value, list):
        raise InputError(f"'{field}' must be a list", filename=name, lineno=lineno)
    out = []
    for item in value:
        text = item.get("sentence") if isinstance(item, Mapping) else item
        if not isinstance(text, str):
            raise InputError(f"'{field}' holds a {type(text).__name__}, not a sentence",
                             filename=name, lineno=lineno)
        out.append(text)
    return out


@app.command(
    "rerank",
    epilog="Example: lit parse 'The dog chased the cat.' | lit rules apply -r p "
           "| lit generate | lit rerank --lm gpt2 -k 3",
)
def rerank_command(
    input_path: Annotated[
        Optional[str],  # noqa: UP007 - evaluated by typer at runtime, also on Python 3.10
        typer.Argument(metavar="[INPUT]",
                       help="`lit generate` JSONL (a 'surfaces' list per line); '-' or none: "
                            "stdin."),
    ] = None,
    lm: LmOption = DEFAULT_LM,
    gguf_file: GgufFileOption = None,
    device: DeviceOption = None,
    batch_size: BatchSizeOption = DEFAULT_BATCH_SIZE,
    top_k: Annotated[Optional[int], typer.Option(  # noqa: UP007
        "--candidates", "-k", min=1, help="Keep the best K candidates with scores "
                                          "(default: all).")] = None,
    chunk: Annotated[int, typer.Option(
        "--chunk", min=1, help="Input lines whose candidates are scored together.")] = 64,
    raw: Annotated[bool, typer.Option(
        "--raw", help="Rank the surfaces as they are: no normalisation or removal of "
                      "duplicates, comma-only variants and blemished strings.")] = False,
    on_error: Annotated[_OnError, typer.Option(
        "--on-error", help="Malformed input line: stop with an error naming the line (fail), "
                           "or write an error record for it and go on (skip).")] = _OnError.fail,
) -> None:
    """Rank generated sentences by language-model perplexity; one JSON line per input line.

    Each `lit generate` line gets "candidates" ([{"sentence", "score"}], best
    first; score = perplexity, lower is better; null with --lm none) and
    "sentence" (the best one, or null when there is nothing to rank). The
    realizations are cleaned first (doubled spaces, the ERG's "_a" spelling,
    duplicates and comma-only variants; "dropped" counts what went), unless
    --raw. Candidates of --chunk lines are scored in one LM batch.
    """
    from lit.generate import clean_realizations
    from lit.pipeline import chunked
    from lit.rerank import rank_candidates

    name = input_path if input_path not in (None, "-") else "<stdin>"
    counts: Counter[str] = Counter()
    writer = JsonlWriter(sys.stdout)
    reranker = make_reranker(lm, gguf_file, device, batch_size)

    def rows() -> Iterator[tuple[dict[str, Any], list[str] | None, int]]:
        for lineno, rec in read_jsonl(input_path, on_error=on_error.value):
            if isinstance(rec, Skipped):
                yield {"lineno": rec.lineno, "error": f"invalid-input: {rec.reason}"}, None, 0
                continue
            try:
                surfaces = _surfaces(rec, lineno, str(name))
            except InputError as exc:
                if on_error is _OnError.fail:
                    raise
                yield {**rec, "error": f"invalid-input: {exc.message}"}, None, 0
                continue
            if raw:
                yield rec, surfaces, 0
            else:
                cleaned = clean_realizations(surfaces)
                yield rec, list(cleaned.candidates), len(cleaned.dropped)

    with progress("reranking") as bar:
        if reranker is not None:
            reranker.load()
        try:
            for part in chunked(rows(), chunk):
                groups = [c for _, c, _ in part if c]
                ranked = iter(rank_candidates(groups, reranker, top_k=top_k))
                for rec, cands, dropped in part:
                    if cands is None:
                        counts["errors"] += 1
                        writer.write({**rec, "candidates": [], "sentence": None})
                        continue
                    best = next(ranked) if cands else []
                    counts["ranked" if best else "nothing-to-rank"] += 1
                    out = {**rec, "candidates": [c.to_dict() for c in best],
                           "sentence": best[0].sentence if best else None}
                    if not raw:
                        out["dropped"] = dropped
                    writer.write(out)
                bar.advance(len(part))
        finally:
            if reranker is not None:
                reranker.close()
    echo_summary(counts, ["ranked", "nothing-to-rank", "errors"])
