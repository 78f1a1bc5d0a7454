#!/usr/bin/env python3
"""Reproducibility check with a real ACE: same input, same output (issue 13).

Runs ``lit transform`` (the real CLI, as subprocesses) on the first N pairs
of an NLI JSONL file and compares the outputs record for record:

1. **idle**: ``-j 2`` with a fresh parse cache (written by this run);
2. **loaded**: ``-j 2`` while two CPU-burning processes compete, with its own
   fresh cache;
3. **ray**: ``--engine ray -j 2`` (needs the ``ray`` extra), no cache;
4. **cache reuse**: ``-j 2`` reading the cache the loaded run wrote.

Records must be identical, except records whose ``status`` is ``error`` with
a transient reason (``timeout``, ``resource``, ``crash``), which may appear
under load; the script counts them and checks that none was cached. Then
``--repeat`` runs each of ``-j 1``, ``-j 2`` and ``--engine ray`` on the first
``--sentences`` pairs with the same specs (or, with ``--chains``, on the first
``--sentences`` distinct premises with those single-sentence chains) and
checks that all outputs are byte-identical.

It prints one line per check and exits 1 if any fails.

Example::

    python benchmarks/reproducibility.py --grammar erg-1214 \\
        --input ../shared/data/snli/snli_1.0_dev_sample.jsonl -n 60 \\
        --specs "f;p+i,m;o,i;i" --sentences 30 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TRANSIENT = ("timeout", "resource", "crash")
LIT = [sys.executable, "-c", "from lit.cli import main; main()"]


def _burn(stop: Any) -> None:
    while not stop.is_set():
        pass


def run_lit(args: list[str], *, burners: int = 0) -> tuple[bytes, float]:
    """stdout of ``lit transform ARGS`` and its wall time, optionally under load."""
    stop = multiprocessing.Event()
    procs = [multiprocessing.Process(target=_burn, args=(stop,), daemon=True)
             for _ in range(burners)]
    for p in procs:
        p.start()
    start = time.monotonic()
    try:
        proc = subprocess.run([*LIT, "-q", "transform", *args], capture_output=True,
                              check=False)
    finally:
        stop.set()
        for p in procs:
            p.join(10)
    if proc.returncode != 0:
        sys.exit(f"lit transform {' '.join(args)} failed:\n{proc.stderr.decode()[-2000:]}")
    return proc.stdout, time.monotonic() - start


def records(out: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.decode().splitlines()]


def is_transient(record: dict[str, Any]) -> bool:
    return record["status"] == "error" and str(record["reason"]).split(":")[0] in TRANSIENT


def compare(name: str, reference: list[dict[str, Any]], other: list[dict[str, Any]]) -> bool:
    """Print whether *other* equals *reference* up to transient errors."""
    if len(reference) != len(other):
        print(f"FAIL {name}: {len(other)} records, expected {len(reference)}")
        return False
    transient = differ = 0
    for a, b in zip(reference, other, strict=True):
        if is_transient(a) or is_transient(b):
            transient += 1
        elif a != b:
            differ += 1
    ok = differ == 0
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {len(other)} records, {differ} differ, "
          f"{transient} with a transient error (excused)")
    return ok


def cached_transients(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT result FROM parses").fetchall()
    finally:
        conn.close()
    return sum(json.loads(r[0]).get("failure") in TRANSIENT for r in rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grammar", default="erg-1214")
    ap.add_argument("--input", required=True, type=Path)
    ap.add_argument("-n", type=int, default=60, help="pairs for the idle/load/ray/cache check")
    ap.add_argument("--specs", default="f;p+i,m;o,i;i")
    ap.add_argument("--sentences", type=int, default=30,
                    help="items for the repeat check: the first N pairs (with --specs), "
                         "or with --chains the first N distinct premises")
    ap.add_argument("--chains", default=None,
                    help="repeat with these single-sentence chains on sentences instead")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-ray", action="store_true", help="skip the Ray runs")
    ap.add_argument("--repeat-only", action="store_true",
                    help="only the repeat check (skip idle/loaded/ray/cache)")
    opts = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="lit-repro-"))
    lines = [ln for ln in opts.input.read_text(encoding="utf-8").splitlines() if ln.strip()]
    pairs = tmp / "pairs.jsonl"
    pairs.write_text("\n".join(lines[: opts.n]) + "\n", encoding="utf-8")
    sentences: list[str] = []
    for ln in lines:
        s = json.loads(ln)["sentence1"]
        if s not in sentences:
            sentences.append(s)
    text = tmp / "sentences.txt"
    text.write_text("\n".join(sentences[: opts.sentences]) + "\n", encoding="utf-8")
    base = ["-g", opts.grammar, "-r", opts.specs, "--lm", "none"]
    ok = True

    print(f"outputs in {tmp}")
    if not opts.repeat_only:
        ok &= first_phase(opts, base, pairs, tmp)
    ok &= repeat_phase(opts, base, lines, text, tmp)
    print("all checks passed" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


def first_phase(opts: argparse.Namespace, base: list[str], pairs: Path, tmp: Path) -> bool:
    """Idle, loaded, Ray and cache reuse: identical but for transient records."""
    ok = True
    idle, t_idle = run_lit([*base, "-j", "2", "--cache", str(tmp / "idle.sqlite"), str(pairs)])
    loaded, t_load = run_lit([*base, "-j", "2", "--cache", str(tmp / "load.sqlite"), str(pairs)],
                             burners=2)
    reused, t_reuse = run_lit([*base, "-j", "2", "--cache", str(tmp / "load.sqlite"),
                               str(pairs)])
    for name, out in (("idle", idle), ("loaded", loaded), ("reused", reused)):
        (tmp / f"{name}.jsonl").write_bytes(out)
    ref = records(idle)
    n_ok = sum(r["status"] == "ok" for r in ref)
    print(f"idle: {len(ref)} records, {n_ok} ok, {t_idle:.0f} s; loaded {t_load:.0f} s; "
          f"reusing the loaded run's cache {t_reuse:.0f} s")
    ok &= compare("loaded vs idle", ref, records(loaded))
    ok &= compare("cache of the loaded run vs idle", ref, records(reused))
    if not opts.no_ray:
        ray, t_ray = run_lit([*base, "--engine", "ray", "-j", "2", "--no-cache", str(pairs)])
        (tmp / "ray.jsonl").write_bytes(ray)
        ok &= compare(f"ray vs idle ({t_ray:.0f} s)", ref, records(ray))
    for name in ("idle", "load"):
        bad = cached_transients(tmp / f"{name}.sqlite")
        print(f"{'ok  ' if not bad else 'FAIL'} {name} cache: {bad} transient entries")
        ok &= not bad
    return ok


def repeat_phase(opts: argparse.Namespace, base: list[str], lines: list[str], text: Path,
                 tmp: Path) -> bool:
    """``--repeat`` runs per engine: byte-identical outputs (saved in *tmp*)."""
    ok = True

    if opts.chains:
        single = ["-g", opts.grammar, "-r", opts.chains, "--lm", "none", "--no-cache",
                  "-f", "text", str(text)]
    else:
        few = tmp / "pairs-repeat.jsonl"
        few.write_text("\n".join(lines[: opts.sentences]) + "\n", encoding="utf-8")
        single = [*base, "--no-cache", str(few)]
    engines = [["-j", "1"], ["-j", "2"]]
    engines += [] if opts.no_ray else [["--engine", "ray", "-j", "2"]]
    outputs: dict[str, list[bytes]] = {}
    for engine in engines:
        key = " ".join(engine)
        outputs[key] = [run_lit([*single, *engine])[0] for _ in range(opts.repeat)]
        for i, out in enumerate(outputs[key]):
            (tmp / f"repeat{'-'.join(engine).replace('--', '')}-{i + 1}.jsonl").write_bytes(out)
    first = next(iter(outputs.values()))[0]
    reference = records(first)
    for key, outs in outputs.items():
        same = sum(o == first for o in outs)
        print(f"{'ok  ' if same == len(outs) else 'FAIL'} {key}: {same}/{len(outs)} runs "
              "byte-identical to the first -j 1 run")
        for out in outs:
            if out != first:
                compare(f"  {key}, a run that differs", reference, records(out))
        ok &= same == len(outs)
    n_single = sum(r["status"] == "ok" for r in records(first))
    print(f"repeat check: {len(records(first))} records, {n_single} ok")
    return ok


if __name__ == "__main__":
    sys.exit(main())
