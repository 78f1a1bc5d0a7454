#!/usr/bin/env python3
"""Throughput benchmark: lit on the original LIT workload, against the floor.

On the first N distinct sentences of a file (JSONL: ``sentence`` or
``sentence1``; or plain text) and a spec list (default ``lit-paper``, the
63 chains of the original LIT code), one run measures:

1. **lit**, the real CLI as a subprocess (``lit transform -f text --no-cache
   --keep-mrs``), once with ``-j 1`` and once with ``-j W`` (default 2), then
   ``--repeat`` more times with ``-j W``: wall time, sentences/s, the ACE
   requests it made (parses, round-trip generations for reading selection,
   generations of transformed MRSs, from ``--report``), realized (sentence,
   transformation) pairs (records with status ``ok``), the CPU time of its
   ACE processes, of its main process and of its workers, and peak memory
   (the largest sum of resident sizes of lit, its workers and the ACE
   processes, sampled every 50 ms). The outputs of all runs must be
   byte-identical; the script says whether they are.
2. **the floor**: the *minimal* request set — one parse per sentence and
   one generation per distinct transformed MRS that lit generated (from the
   ``-j 1`` output) — replayed through one persistent ACE parser and one
   persistent ACE generator; its ACE CPU time is what any implementation
   needs on one core. ``lit / floor`` is lit's ``-j 1`` wall time over it
   (the round trips that select readings, process start-ups and Python all
   count against lit).
3. **the speed-up** of ``-j W`` over ``-j 1``.
4. *Secondary, clearly an imitation:* the same pipeline with a fresh ACE
   process for every parse and generation request, as the original code
   ran ACE (``--imitation-n`` sentences, default 0 = skip). It is not the
   original code, which cannot be vendored; compare with the original by
   running it outside the repository on the sentence file this script
   writes (``--keep DIR``; ``sentences.txt``) and passing its wall time and
   realized pairs as ``--original-wall`` and ``--original-pairs``.

ACE and the image come from the registered grammar (``lit grammar add``), or
``--ace`` and ``--image``. It also runs against the test stand-in (``--ace
tests/fake_ace.py`` with an image written by ``tests/fake_ace_support.py``)
as a smoke test; the numbers are then meaningless, and the output says so.
It needs ``psutil``. Run it on an otherwise idle machine.

Example::

    python benchmarks/throughput.py --grammar erg-1214 \\
        --input ../shared/data/snli/snli_1.0_dev_sample.jsonl -n 30 --keep /tmp/bench
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from lit.ace import AceGenerator, AceParser  # noqa: E402
from lit.interface import GenerationResult, ParseResult  # noqa: E402

_SAMPLE_EVERY = 0.05


# --- the imitation's backends: one ACE process per request ------------------------


class FreshProcessParser:
    """Starts a new ACE process for every sentence, as the original LIT code did."""

    def __init__(self, image: str, executable: str, ace_version: str, n: int | None,
                 env: dict[str, str] | None) -> None:
        self.image, self.executable, self.ace_version = image, executable, ace_version
        self.n, self.env = n, env

    def parse(self, sentence: str) -> ParseResult:
        with AceParser(self.image, executable=self.executable, n=self.n, env=self.env,
                       ace_version=self.ace_version, startup_wait=0) as p:
            return p.parse(sentence)


class FreshProcessGenerator:
    """Starts a new ACE process for every MRS, as the original LIT code did."""

    def __init__(self, image: str, executable: str, ace_version: str,
                 env: dict[str, str] | None) -> None:
        self.image, self.executable, self.ace_version = image, executable, ace_version
        self.env = env

    def generate(self, mrs: Any) -> GenerationResult:
        with AceGenerator(self.image, executable=self.executable, env=self.env,
                          ace_version=self.ace_version, startup_wait=0) as g:
            return g.generate(mrs)


# --- measuring a process tree -------------------------------------------------------


class TreeSampler:
    """Samples a process tree: CPU time of the ACE processes, peak total RSS."""

    def __init__(self, root_pid: int, ace_paths: set[str]) -> None:
        import psutil

        self.psutil = psutil
        self.root = psutil.Process(root_pid)
        self.ace_paths = ace_paths
        self.ace_cpu: dict[tuple[int, float], float] = {}
        self.other_cpu: dict[tuple[int, float], float] = {}  # lit's workers and helpers
        self.kind: dict[tuple[int, float], bool] = {}  # process -> is ACE, decided once
        self.main_cpu = 0.0  # the lit process: reading, applying chains, LM, output
        self.peak_rss = 0
        self.peak_single = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def is_ace(self, proc: Any) -> bool:
        try:
            cmd = proc.cmdline()
        except (self.psutil.Error, OSError):
            return False
        return any(os.path.realpath(c) in self.ace_paths for c in cmd[:2] if c)

    def sample(self) -> None:
        psutil = self.psutil
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return
        total = 0
        for p in procs:
            try:
                with p.oneshot():
                    rss = p.memory_info().rss
                    t = p.cpu_times()
                    key = (p.pid, p.create_time())
                    if p.pid == self.root.pid:
                        self.main_cpu = t.user + t.system
                    else:
                        # decided while the process runs: an exited one has no command line
                        if key not in self.kind:
                            self.kind[key] = self.is_ace(p)
                        cpu = self.ace_cpu if self.kind[key] else self.other_cpu
                        cpu[key] = t.user + t.system
            except psutil.Error:
                continue
            total += rss
            self.peak_single = max(self.peak_single, rss)
        self.peak_rss = max(self.peak_rss, total)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(_SAMPLE_EVERY)


# --- the measurements ---------------------------------------------------------------


def _lit_command() -> list[str]:
    exe = shutil.which("lit")
    if exe is not None:
        return [exe]
    return [sys.executable, "-c", "from lit.cli import main; main()"]


def run_lit(args: argparse.Namespace, workers: int, sentences: Path, work: Path, name: str,
            env: dict[str, str], ace_paths: set[str]) -> dict[str, Any]:
    """One ``lit transform`` run: its measurements, records and output bytes."""
    out_path, report = work / f"{name}.jsonl", work / f"{name}.report.json"
    cmd = [*_lit_command(), "-q", "transform", "--grammar", args.grammar, "--rules", args.specs,
           "--lm", args.lm, "--workers", str(workers), "--no-cache", "--keep-mrs",
           "--input-format", "text", "--readings", str(args.readings), "--report", str(report),
           str(sentences)]
    if args.gguf_file:
        cmd += ["--gguf-file", args.gguf_file]
    t0 = time.perf_counter()
    with open(out_path, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, env=env, text=True)
        with TreeSampler(proc.pid, ace_paths) as sampler:
            _, stderr = proc.communicate()
            sampler.sample()
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"lit transform failed (exit {proc.returncode}):\n{stderr}")
    data = out_path.read_bytes()
    records = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    summary = json.loads(report.read_text(encoding="utf-8"))
    return {
        "wall_s": wall,
        "ace_cpu_s": sum(sampler.ace_cpu.values()),
        "ace_processes": len(sampler.ace_cpu),
        "main_cpu_s": sampler.main_cpu,
        "workers_cpu_s": sum(sampler.other_cpu.values()),
        "peak_rss_total_mb": sampler.peak_rss / 2**20,
        "peak_rss_single_mb": sampler.peak_single / 2**20,
        "requests": summary.get("ace_requests", {}),
        "records": records,
        "output": data,
        "command": cmd,
    }


def minimal_requests(records: list[dict[str, Any]]) -> list[str]:
    """The distinct transformed MRSs lit sent to the generator, in first-use order."""
    seen: dict[str, None] = {}
    for r in records:
        mrs = r.get("mrs")
        reason = str(r.get("reason") or "")
        if mrs and (r.get("status") == "ok" or reason.startswith(("no-realization", "error"))):
            seen.setdefault(mrs, None)
    return list(seen)


def replay_floor(args: argparse.Namespace, sentences: list[str], mrss: list[str],
                 env: dict[str, str], ace_version: str) -> dict[str, Any]:
    """ACE CPU time of the minimal request set through one persistent parser and generator."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with AceParser(args.image, executable=args.ace, n=args.readings, env=env,
                   ace_version=ace_version, fresh=False) as parser:
        for s in sentences:
            parser.parse(s)
    with AceGenerator(args.image, executable=args.ace, env=env,
                      ace_version=ace_version) as generator:
        for m in mrss:
            generator.generate(m)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"ace_cpu_s": cpu, "wall_s": wall, "parses": len(sentences),
            "generations": len(mrss)}


def run_imitation(args: argparse.Namespace, sentences: list[str], env: dict[str, str],
                  ace_version: str, workers: int) -> dict[str, Any]:
    """The pipeline with a fresh ACE process per request (an imitation of the original)."""
    import functools

    from lit import engine
    from lit.pipeline import Transformer
    from lit.workers import open_worker, run_unit

    parser = FreshProcessParser(args.image, args.ace, ace_version, args.readings, env)
    generator = FreshProcessGenerator(args.image, args.ace, ace_version, env)
    options = {"grammar": args.grammar, "home": env["LIT_HOME"], "env": env,
               "n": args.readings, "parser": parser, "generator": generator}
    prepare_map = None
    if workers > 1:
        prepare_map = functools.partial(engine.ordered_map, run_unit, workers=workers,
                                        init=open_worker, initargs=(options,))
    t0 = time.perf_counter()
    with Transformer(**options, reranker=None, prepare_map=prepare_map) as t:
        records = list(t.transform_sentences(sentences, args.specs))
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "sentences": len(sentences),
            "realized": sum(r["status"] == "ok" for r in records)}


# --- helpers ---------------------------------------------------------------------------


def ace_version_of(ace: str, env: dict[str, str]) -> str:
    out = subprocess.run([ace, "-V"], capture_output=True, text=True, env=env, timeout=60)
    text = out.stdout + out.stderr
    for word in text.split():
        if word[:1].isdigit():
            return word
    raise SystemExit(f"{ace} -V printed no version: {text.strip()[:200]}")


def is_fake_ace(ace: str, image: str) -> bool:
    """The test stand-in (tests/fake_ace.py) rather than a real ACE and grammar."""
    try:
        with open(image, "rb") as f:
            if f.read(64).lstrip().startswith(b'{"fake_ace"'):
                return True
        with open(ace, "rb") as f:
            head = f.read(65536)
        return b"fake_ace" in head or b"fake-ace" in head
    except OSError:
        return False


def ace_paths_of(ace: str) -> set[str]:
    """Paths whose appearance in a command line marks an ACE process."""
    paths = {os.path.realpath(ace)}
    try:
        with open(ace, "rb") as f:
            head = f.read(4096).decode("utf-8", "replace")
    except OSError:
        return paths
    if head.startswith("#!") and "exec" in head:  # a launcher script (fake-ace's)
        for token in head.replace('"', " ").split():
            if token.endswith(".py"):
                paths.add(os.path.realpath(token))
    return paths


def read_sentences(path: Path, n: int) -> list[str]:
    """The first *n* distinct sentences of a JSONL (``sentence``/``sentence1``) or text file."""
    out: dict[str, None] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            if line.startswith("{"):
                row = json.loads(line)
                line = str(row.get("sentence", row.get("sentence1", ""))).strip()
            if line:
                out.setdefault(line, None)
            if len(out) >= n:
                break
    return list(out)


def resolve(args: argparse.Namespace) -> None:
    """Fill in ``args.ace`` and ``args.image`` from the registered grammar if not given."""
    if args.ace and args.image:
        args.ace, args.image = os.path.realpath(args.ace), os.path.realpath(args.image)
        return
    from lit.grammar import resolve_grammar

    g = resolve_grammar(args.grammar, env=os.environ)
    ace = str(g.ace) if g.ace else shutil.which("ace") or "ace"
    args.ace = os.path.realpath(args.ace or ace)
    args.image = os.path.realpath(args.image or str(g.image))


_TRANSIENT = ("timeout:", "resource:", "crash:")


def _differences(reference: list[dict[str, Any]], others: list[list[dict[str, Any]]]
                 ) -> tuple[int, int]:
    """Records that differ from *reference* in any run, and how many of them
    are a transient failure (a time limit under load) in one of the runs."""
    differing = transient = 0
    for i, ref in enumerate(reference):
        versions = [ref] + [o[i] if i < len(o) else {} for o in others]
        if any(v != ref for v in versions[1:]):
            differing += 1
            transient += any(str(v.get("reason") or "").startswith(_TRANSIENT)
                             for v in versions)
    return differing, transient


def _realized(records: list[dict[str, Any]]) -> int:
    return sum(r.get("status") == "ok" for r in records)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--grammar", default="erg-1214", help="grammar (default: erg-1214)")
    parser.add_argument("--ace", help="the ACE binary (default: the registered grammar's)")
    parser.add_argument("--image", help="the grammar image (default: the registered grammar's)")
    parser.add_argument("--input", type=Path, required=True,
                        help="sentences: JSONL (sentence or sentence1) or plain text")
    parser.add_argument("-n", "--sentences", type=int, default=30,
                        help="distinct sentences to use (default: 30)")
    parser.add_argument("--specs", default="lit-paper",
                        help="single-sentence specs or a preset (default: lit-paper)")
    parser.add_argument("--workers", type=int, default=2,
                        help="workers of the parallel runs (default: 2)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="more -j WORKERS runs whose output must be identical (default: 1)")
    parser.add_argument("--readings", type=int, default=10,
                        help="readings per parse, as lit transform --readings (default: 10)")
    parser.add_argument("--lm", default="none", help="reranking LM, or 'none' (default)")
    parser.add_argument("--gguf-file", help="GGUF file inside --lm")
    parser.add_argument("--imitation-n", type=int, default=0,
                        help="sentences for the process-per-request imitation (default: 0, skip)")
    parser.add_argument("--original-wall", type=float,
                        help="wall time (s) of the original code on the same sentences")
    parser.add_argument("--original-pairs", type=int,
                        help="realized (sentence, transformation) pairs of the original code")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep the sentences and outputs in this directory")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    try:
        import psutil  # noqa: F401
    except ImportError:
        parser.error("needs psutil: pip install psutil (it is in lit-mrs[dev])")
    resolve(args)
    fake = is_fake_ace(args.ace, args.image)
    sentences = read_sentences(args.input, args.sentences)
    if not sentences:
        parser.error(f"no sentences in {args.input}")

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="lit-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    text = work / "sentences.txt"
    text.write_text("".join(s + "\n" for s in sentences), encoding="utf-8")
    env = dict(os.environ)
    env["LIT_HOME"] = str(work / "home")
    env["LIT_ACE"] = args.ace
    env["LIT_GRAMMAR_" + args.grammar.upper().replace("-", "_")] = args.image
    ace_version = ace_version_of(args.ace, env)
    ace_paths = ace_paths_of(args.ace)

    one = run_lit(args, 1, text, work, "lit-j1", env, ace_paths)
    par = run_lit(args, args.workers, text, work, f"lit-j{args.workers}", env, ace_paths)
    repeats = [run_lit(args, args.workers, text, work, f"lit-j{args.workers}-r{i + 1}", env,
                       ace_paths) for i in range(args.repeat)]
    identical = all(r["output"] == one["output"] for r in (par, *repeats))
    differing, transient = _differences(one["records"], [r["records"] for r in (par, *repeats)])
    mrss = minimal_requests(one["records"])
    floor = replay_floor(args, sentences, mrss, env, ace_version)
    n = len(sentences)
    result: dict[str, Any] = {
        "real_ace": not fake,
        "ace_version": ace_version,
        "sentences": n,
        "specs": args.specs,
        "records": len(one["records"]),
        "statuses": dict(Counter(r.get("status") for r in one["records"])),
        "realized_pairs": _realized(one["records"]),
        "requests": one["requests"],
        "j1_wall_s": round(one["wall_s"], 2),
        "j1_sentences_per_s": round(n / one["wall_s"], 3),
        f"j{args.workers}_wall_s": round(par["wall_s"], 2),
        f"j{args.workers}_sentences_per_s": round(n / par["wall_s"], 3),
        "repeat_wall_s": [round(r["wall_s"], 2) for r in repeats],
        "speedup": round(one["wall_s"] / par["wall_s"], 3),
        "identical_outputs": identical,
        "differing_records": differing,
        "differing_transient": transient,
        "floor_ace_cpu_s": round(floor["ace_cpu_s"], 2),
        "floor_requests": {"parse": floor["parses"], "generate": floor["generations"]},
        "lit_over_floor": round(one["wall_s"] / floor["ace_cpu_s"], 3)
        if floor["ace_cpu_s"] > 0 else None,
        "j1_ace_cpu_s": round(one["ace_cpu_s"], 2),
        "j1_main_cpu_s": round(one["main_cpu_s"], 2),
        f"j{args.workers}_ace_cpu_s": round(par["ace_cpu_s"], 2),
        f"j{args.workers}_main_cpu_s": round(par["main_cpu_s"], 2),
        f"j{args.workers}_workers_cpu_s": round(par["workers_cpu_s"], 2),
        "peak_rss_total_mb": round(max(one["peak_rss_total_mb"], par["peak_rss_total_mb"]), 1),
        "peak_rss_single_mb": round(max(one["peak_rss_single_mb"], par["peak_rss_single_mb"]),
                                    1),
        "work_dir": str(work) if args.keep else None,
    }
    if args.imitation_n:
        im = run_imitation(args, sentences[:args.imitation_n], env, ace_version, args.workers)
        result["imitation"] = {k: round(v, 2) if isinstance(v, float) else v
                               for k, v in im.items()}
    if args.original_wall:
        result["original_wall_s"] = args.original_wall
        result["original_over_lit"] = round(args.original_wall / par["wall_s"], 2)
    if args.original_pairs is not None:
        result["original_pairs"] = args.original_pairs
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)

    if args.json:
        print(json.dumps(result))
        return 0 if differing == transient else 1
    w = args.workers
    if fake:
        print("NOTE: the ACE binary or image is the test stand-in (fake-ace), not a real "
              "ACE and grammar: these numbers are meaningless.")
    print(f"input       {n} sentences x {args.specs} ({len(one['records']) // n} specs); "
          f"ACE {ace_version}; LM {args.lm}")
    print(f"statuses    {result['statuses']}")
    print(f"realized    {result['realized_pairs']} (sentence, transformation) pairs")
    print("requests    " + ", ".join(f"{k} {v}" for k, v in sorted(one["requests"].items()))
          + f"  (minimal: {n} parse, {len(mrss)} generate)")
    print(f"lit -j 1    {one['wall_s']:.2f} s wall, {n / one['wall_s']:.2f} sentences/s; "
          f"ACE CPU {one['ace_cpu_s']:.2f} s, main process CPU {one['main_cpu_s']:.2f} s")
    print(f"lit -j {w}    {par['wall_s']:.2f} s wall, {n / par['wall_s']:.2f} sentences/s; "
          f"ACE CPU {par['ace_cpu_s']:.2f} s, main {par['main_cpu_s']:.2f} s, "
          f"workers {par['workers_cpu_s']:.2f} s")
    print(f"speed-up    -j {w} over -j 1: {result['speedup']:.2f}")
    print(f"floor       {floor['ace_cpu_s']:.2f} s ACE CPU for the minimal requests through "
          f"one persistent ACE ({floor['wall_s']:.2f} s wall)")
    if result["lit_over_floor"] is not None:
        print(f"lit / floor {result['lit_over_floor']:.2f}   (lit -j 1 wall / floor)")
    print(f"identical   {'yes' if identical else 'NO'}: -j 1, -j {w} and {args.repeat} "
          "repeated runs, byte for byte"
          + ("" if identical else f"; {differing} records differ, {transient} of them a "
             "transient failure (a time limit under load) in some run"))
    print(f"peak RSS    {result['peak_rss_total_mb']:.0f} MB total (lit + workers + ACE, "
          f"sampled), {result['peak_rss_single_mb']:.0f} MB largest process")
    if "imitation" in result:
        im = result["imitation"]
        print(f"imitation   (process per request; NOT the original code) {im['sentences']} "
              f"sentences in {im['wall_s']:.2f} s, {im['realized']} realized")
    if "original_over_lit" in result:
        print(f"original    {args.original_wall:.2f} s wall: original / lit -j {w} = "
              f"{result['original_over_lit']:.2f}")
    if args.original_pairs is not None:
        print(f"original    {args.original_pairs} realized pairs; lit "
              f"{result['realized_pairs']}")
    if args.keep:
        print(f"kept        {work} (sentences.txt: the input for the original code)")
    return 0 if differing == transient else 1


if __name__ == "__main__":
    sys.exit(main())
