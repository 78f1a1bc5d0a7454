"""Smoke tests of the benchmark scripts (their numbers are not checked: no timings here).

``benchmarks/throughput.py`` needs ACE; here it runs against the fake-ace test
double (see tests/fake_ace.py), and must say that its numbers are meaningless.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO, snli_sample_path
from fake_ace_support import fake_ace

BENCH = REPO / "benchmarks"


def test_throughput_runs_against_fake_ace(tmp_path):
    ace, image = fake_ace(tmp_path / "fake")
    proc = subprocess.run(
        [sys.executable, str(BENCH / "throughput.py"), "--ace", str(ace), "--image", str(image),
         "--input", str(snli_sample_path()), "-n", "3", "--specs", "f;p,m;o", "--workers", "2",
         "--lm", "none", "--baseline-n", "3"],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "not a real ACE" in out and "meaningless" in out
    for label in ("sentences/s", "lit / floor", "baseline / lit", "peak RSS"):
        assert label in out
    assert "records matching lit: 6/6" in out  # the baseline computes the same records


def test_throughput_help_documents_usage():
    proc = subprocess.run([sys.executable, str(BENCH / "throughput.py"), "--help"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    assert "floor" in proc.stdout and "baseline" in proc.stdout and "--ace" in proc.stdout


def test_rerank_benchmark_on_a_tiny_local_model(tmp_path):
    from test_rerank import build_tiny_gpt2

    model = build_tiny_gpt2(tmp_path / "tiny-gpt2")
    transforms = Path(snli_sample_path()).parent.parent.parent / "erg" / "erg-1214"
    source = transforms / "transforms.jsonl"
    proc = subprocess.run(
        [sys.executable, str(BENCH / "rerank.py"), "--model", str(model), "--input", str(source),
         "--groups", "4", "--max-candidates", "5", "--batch-size", "4", "--json"],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["lists"] == 4 and result["candidates"] > 4
    assert result["same_best_candidate"] == "4/4"  # batched ranks like one-by-one
