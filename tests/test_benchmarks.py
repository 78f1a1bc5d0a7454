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
         "--input", str(snli_sample_path()), "-n", "3", "--specs", "f,p,p+-prog,m",
         "--workers", "2", "--imitation-n", "2", "--original-wall", "100",
         "--original-pairs", "5", "--keep", str(tmp_path / "bench")],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "not a real ACE" in out and "meaningless" in out
    for label in ("sentences/s", "lit / floor", "speed-up", "peak RSS", "realized",
                  "minimal:", "NOT the original code", "original / lit"):
        assert label in out
    assert "identical   yes" in out
    sentences = (tmp_path / "bench" / "sentences.txt").read_text(encoding="utf-8").splitlines()
    assert len(sentences) == 3 and len(set(sentences)) == 3


def test_throughput_counts_requests_and_the_minimal_set(tmp_path):
    ace, image = fake_ace(tmp_path / "fake")
    proc = subprocess.run(
        [sys.executable, str(BENCH / "throughput.py"), "--ace", str(ace), "--image", str(image),
         "--input", str(snli_sample_path()), "-n", "2", "--specs", "p,p+-prog", "--repeat", "0",
         "--json"],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["identical_outputs"] is True
    assert result["requests"]["parse"] == 2
    # p and p+-prog give the same MRS when the sentence is not progressive: it is
    # realized once, and the floor replays exactly the distinct MRSs
    assert result["realized_pairs"] == 2  # the one sentence fake-ace selects a reading of
    assert result["requests"]["generate"] == 1
    assert result["floor_requests"] == {"parse": 2, "generate": 1}


def test_throughput_help_documents_usage():
    proc = subprocess.run([sys.executable, str(BENCH / "throughput.py"), "--help"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    assert "floor" in proc.stdout and "imitation" in proc.stdout and "--ace" in proc.stdout


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
