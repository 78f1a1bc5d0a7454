#!/usr/bin/env python3
"""Throughput benchmark: lit vs ACE's own CPU time vs a process-per-request baseline.

On the first N pairs (or sentences) of a JSONL file and a spec list, one run
measures:

(a) **lit**: ``lit transform --workers W --no-cache`` as a subprocess (the
    real CLI, cold: no parse cache): wall time and sentences/s;
(b) **the floor**: the CPU time of the ACE processes during that same run
    (the same parse and generation requests), divided by W. No
    implementation that sends these requests to ACE on W cores can be
    faster, so ``lit / floor`` is lit's overhead (target: at most 1.3);
(c) **the baseline**: the same pipeline, but like the original LIT code it
    starts a fresh ACE process for every parse and every generation request
    and scores candidates one by one (LM batch size 1), also with W worker
    processes (the original split its input over processes by hand).
    ``baseline / lit`` is the speed-up (target: at least 10). The baseline
    is slow, so it runs on the first *--baseline-n* items and its rate is
    compared with lit's.

It prints sentences/s, both ratios, the CPU time of lit's main process
(input, LM scoring, labels, output: with the LM on the same CPUs as ACE,
this competes with the workers and counts against ``lit / floor``) and of
its workers, and peak memory: the largest sum of the
resident sizes of lit, its workers and the ACE processes (sampled every
50 ms), and the largest single process. The ACE CPU time is sampled too
(psutil), so up to 50 ms of CPU per ACE process can be missed at its exit.

It needs a real ACE binary and grammar image (``--ace``, ``--image``) and
``psutil``. It also runs against the test stand-in (``--ace tests/fake_ace.py
--image <fake image>``, see ``tests/fake_ace_support.py``) as a smoke test;
the numbers are then meaningless, and the output says so.

Example::

    python benchmarks/throughput.py --ace ~/.local/share/lit/ace/ace \\
        --image ~/.local/share/lit/grammars/erg-1214.dat --grammar erg-1214 \\
        --input ../shared/data/snli/snli_1.0_dev_sample.jsonl -n 200 \\
        --specs "f;p+i,m;o,pa;pa,i;i,p;f" --lm gpt2
"""

from __future__ import annotations

import argparse
import functools
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


# --- the baseline's backends: one ACE process per request -----------------------


class FreshProcessParser:
    """Starts a new ACE process for every sentence, as the original LIT code did."""

    def __init__(self, image: str, executable: str, ace_version: str, n: int | None,
                 env: dict[str, str] | None) -> None:
        self.image, self.executable, self.ace_version = image, executable, ace_version
        self.n, self.env = n, env
        self.processes = 0

    def parse(self, sentence: str) -> ParseResult:
        self.processes += 1
        with AceParser(self.image, executable=self.executable, n=self.n, env=self.env,
                       ace_version=self.ace_version, startup_wait=0) as p:
            return p.parse(sentence)


class FreshProcessGenerator:
    """Starts a new ACE process for every MRS, as the original LIT code did."""

    def __init__(self, image: str, executable: str, ace_version: str,
                 env: dict[str, str] | None) -> None:
        self.image, self.executable, self.ace_version = image, executable, ace_version
        self.env = env
        self.processes = 0

    def generate(self, mrs: Any) -> GenerationResult:
        self.processes += 1
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
        self.main_cpu = 0.0  # the lit process: reading, LM scoring, labels, writing
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
        candidates = cmd[:2]
        return any(os.path.realpath(c) in self.ace_paths for c in candidates if c)

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
                    if p.pid == self.root.pid:
                        self.main_cpu = t.user + t.system
                    elif self.is_ace(p):
                        self.ace_cpu[(p.pid, p.create_time())] = t.user + t.system
                    else:
                        self.other_cpu[(p.pid, p.create_time())] = t.user + t.system
            except psutil.Error:
                continue
            total += rss
            self.peak_single = max(self.peak_single, rss)
        self.peak_rss = max(self.peak_rss, total)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(_SAMPLE_EVERY)

    @property
    def ace_cpu_seconds(self) -> float:
        return sum(self.ace_cpu.values())

    @property
    def ace_processes(self) -> int:
        return len(self.ace_cpu)


# --- the three measurements ---------------------------------------------------------


def _lit_command() -> list[str]:
    exe = shutil.which("lit")
    if exe is not None:
        return [exe]
    return [sys.executable, "-c", "from lit.cli import main; main()"]


def run_lit(args: argparse.Namespace, input_path: Path, out_path: Path, env: dict[str, str],
            ace_paths: set[str]) -> dict[str, Any]:
    cmd = [*_lit_command(), "-q", "transform", "--grammar", args.grammar, "--rules", args.specs,
           "--lm", args.lm, "--workers", str(args.workers), "--no-cache",
           "--engine", args.engine, str(input_path)]
    if args.gguf_file:
        cmd += ["--gguf-file", args.gguf_file]
    if args.readings:
        cmd += ["--readings", str(args.readings)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(out_path, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, env=env, text=True)
        with TreeSampler(proc.pid, ace_paths) as sampler:
            _, stderr = proc.communicate()
            sampler.sample()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"lit transform failed (exit {proc.returncode}):\n{stderr}")
    return {
        "wall_s": wall,
        "ace_cpu_s": sampler.ace_cpu_seconds,
        "ace_processes": sampler.ace_processes,
        "main_cpu_s": sampler.main_cpu,
        "workers_cpu_s": sum(sampler.other_cpu.values()),
        "all_cpu_s": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        "peak_rss_total_mb": sampler.peak_rss / 2**20,
        "peak_rss_single_mb": max(sampler.peak_single / 2**20, after.ru_maxrss / 1024),
        "command": cmd,
    }


def run_baseline(args: argparse.Namespace, items: list[dict[str, Any]],
                 env: dict[str, str], ace_version: str) -> tuple[dict[str, Any], list[dict]]:
    from lit import engine
    from lit.pipeline import Transformer
    from lit.rerank import Reranker
    from lit.workers import open_worker, prepare_jobs

    home = env["LIT_HOME"]
    n = args.readings or 10
    parser = FreshProcessParser(args.image, args.ace, ace_version, n, env)
    generator = FreshProcessGenerator(args.image, args.ace, ace_version, env)
    options = {"grammar": args.grammar, "home": home, "env": env, "n": n,
               "parser": parser, "generator": generator}
    reranker = None
    if args.lm.lower() != "none":
        reranker = Reranker(args.lm, gguf_file=args.gguf_file, batch_size=1)
    prepare_map = None
    if args.workers > 1:
        prepare_map = functools.partial(engine.ordered_map, prepare_jobs, workers=args.workers,
                                        init=open_worker, initargs=(options,))
    t0 = time.perf_counter()
    with Transformer(**options, reranker=reranker, prepare_map=prepare_map) as t:
        if ";" in args.specs:
            records = list(t.transform_pairs(items, args.specs))
        else:
            records = list(t.transform_sentences(_sentences(items), args.specs))
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "items": len(items)}, records


def _sentences(items: list[dict[str, Any]]) -> list[tuple[Any, str]]:
    out = []
    for pos, item in enumerate(items, start=1):
        out.append((item.get("id", pos), item.get("sentence", item.get("sentence1"))))
    return out


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


def read_items(path: Path, n: int) -> list[dict[str, Any]]:
    items = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                items.append(json.loads(line))
                if len(items) >= n:
                    break
    return items


def _compare(lit_records: list[dict], baseline_records: list[dict]) -> tuple[int, int]:
    """How many of the baseline's records agree with lit's (status and sentences)."""
    def key(r: dict) -> tuple:
        return (r.get("id"), r.get("spec"), r.get("status"), r.get("sentence1"),
                r.get("sentence2"), r.get("gold_label"), r.get("sentence"))

    lit_keys = Counter(key(r) for r in lit_records)
    same = sum(1 for r in baseline_records if lit_keys[key(r)] > 0)
    return same, len(baseline_records)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--ace", required=True, help="the ACE binary")
    parser.add_argument("--image", required=True, help="the compiled grammar image")
    parser.add_argument("--grammar", default="erg-1214",
                        help="grammar profile of the image (default: erg-1214)")
    parser.add_argument("--input", type=Path,
                        default=REPO / "examples" / "snli_sample.jsonl",
                        help="JSONL input: NLI pairs, or {'sentence'} rows for chains "
                             "(default: examples/snli_sample.jsonl)")
    parser.add_argument("-n", "--items", type=int, default=100,
                        help="number of input items (pairs or sentences; default: 100)")
    parser.add_argument("--specs", default="f;p+i,m;o,pa;pa,i;i,p;f",
                        help="spec list as for lit transform --rules")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="worker processes for lit and the baseline (default: CPUs)")
    parser.add_argument("--engine", default="local", choices=["local", "ray"],
                        help="lit's engine (default: local)")
    parser.add_argument("--lm", default="gpt2",
                        help="reranking LM for lit and the baseline, or 'none' (default: gpt2)")
    parser.add_argument("--gguf-file", help="GGUF file inside --lm")
    parser.add_argument("--readings", type=int, default=None,
                        help="readings per parse (lit transform --readings)")
    parser.add_argument("--baseline-n", type=int, default=None,
                        help="items for the baseline (default: min(items, 20))")
    parser.add_argument("--no-baseline", action="store_true", help="skip the baseline")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep the outputs in this directory")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    args.ace = os.path.realpath(args.ace)
    args.image = os.path.realpath(args.image)

    try:
        import psutil  # noqa: F401
    except ImportError:
        parser.error("needs psutil: pip install psutil (it is in lit-mrs[dev])")
    fake = is_fake_ace(args.ace, args.image)
    items = read_items(args.input, args.items)
    if not items:
        parser.error(f"no items in {args.input}")
    pairs = ";" in args.specs
    sentences = len(items) * (2 if pairs else 1)
    n_specs = len(args.specs.split(","))

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="lit-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    input_path = work / "input.jsonl"
    input_path.write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    env = dict(os.environ)
    env["LIT_HOME"] = str(work / "home")
    env["LIT_ACE"] = args.ace
    env["LIT_GRAMMAR_" + args.grammar.upper().replace("-", "_")] = args.image
    ace_version = ace_version_of(args.ace, env)

    lit = run_lit(args, input_path, work / "lit.formats.jsonl", env, ace_paths_of(args.ace))
    with open(work / "lit.formats.jsonl", encoding="utf-8") as f:
        lit_records = [json.loads(line) for line in f if line.strip()]
    if len(lit_records) != len(items) * n_specs:
        raise SystemExit(f"lit wrote {len(lit_records)} records, expected "
                         f"{len(items)} x {n_specs}")
    lit_rate = sentences / lit["wall_s"]
    floor_s = lit["ace_cpu_s"] / args.workers
    result: dict[str, Any] = {
        "real_ace": not fake,
        "items": len(items),
        "sentences": sentences,
        "specs": args.specs,
        "workers": args.workers,
        "lm": args.lm,
        "ace_version": ace_version,
        "statuses": dict(Counter(r.get("status") for r in lit_records)),
        "lit_wall_s": round(lit["wall_s"], 3),
        "lit_sentences_per_s": round(lit_rate, 3),
        "ace_cpu_s": round(lit["ace_cpu_s"], 3),
        "ace_processes": lit["ace_processes"],
        "lit_main_cpu_s": round(lit["main_cpu_s"], 3),
        "lit_workers_cpu_s": round(lit["workers_cpu_s"], 3),
        "floor_s": round(floor_s, 3),
        "lit_over_floor": round(lit["wall_s"] / floor_s, 3) if floor_s > 0 else None,
        "peak_rss_total_mb": round(lit["peak_rss_total_mb"], 1),
        "peak_rss_single_mb": round(lit["peak_rss_single_mb"], 1),
    }
    if not args.no_baseline:
        bn = min(args.baseline_n or min(len(items), 20), len(items))
        base, base_records = run_baseline(args, items[:bn], env, ace_version)
        base_sentences = bn * (2 if pairs else 1)
        base_rate = base_sentences / base["wall_s"]
        same, total = _compare(lit_records, base_records)
        result.update({
            "baseline_items": bn,
            "baseline_wall_s": round(base["wall_s"], 3),
            "baseline_sentences_per_s": round(base_rate, 3),
            "baseline_over_lit": round(lit_rate / base_rate, 3),
            "baseline_records_matching_lit": f"{same}/{total}",
        })
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)

    if args.json:
        print(json.dumps(result))
        return 0
    if fake:
        print("NOTE: the ACE binary or image is the test stand-in (fake-ace), not a real "
              "ACE and grammar: these numbers are meaningless.")
    print(f"input     {len(items)} {'pairs' if pairs else 'sentences'} ({sentences} sentences) "
          f"x {n_specs} specs ({args.specs}); {args.workers} workers; LM {args.lm}; "
          f"ACE {ace_version}")
    print(f"statuses  {result['statuses']}")
    print(f"lit       {lit['wall_s']:.2f} s wall, {lit_rate:.2f} sentences/s")
    print(f"floor     ACE CPU {lit['ace_cpu_s']:.2f} s in {lit['ace_processes']} processes "
          f"/ {args.workers} workers = {floor_s:.2f} s")
    print(f"lit CPU   main process {lit['main_cpu_s']:.2f} s (input, LM, labels, output), "
          f"workers {lit['workers_cpu_s']:.2f} s (Python side of parse/transform/generate)")
    if result["lit_over_floor"] is not None:
        print(f"lit / floor      {result['lit_over_floor']:.2f}   (target <= 1.3)")
    if "baseline_over_lit" in result:
        print(f"baseline  {result['baseline_items']} items in {result['baseline_wall_s']:.2f} s, "
              f"{result['baseline_sentences_per_s']:.2f} sentences/s "
              f"(fresh ACE per request, LM one by one); "
              f"records matching lit: {result['baseline_records_matching_lit']}")
        print(f"baseline / lit   {result['baseline_over_lit']:.2f}   (target >= 10)")
    print(f"peak RSS  {result['peak_rss_total_mb']:.0f} MB total (lit + workers + ACE, "
          f"sampled), {result['peak_rss_single_mb']:.0f} MB largest process")
    return 0


if __name__ == "__main__":
    sys.exit(main())
