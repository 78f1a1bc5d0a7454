"""`lit transform` through CliRunner.

ACE itself cannot be obtained here, so these tests run lit against
``tests/fake_ace.py`` (a stand-in ACE executable replaying the recorded ERG
output through real subprocesses; see its docstring). The test marked
``ace`` runs the same command against a real ACE and ERG 1214 image.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest
from conftest import REPO, real_ace
from fake_ace_support import fake_ace_env
from typer.testing import CliRunner

from lit.cli import app

SAMPLE = REPO / "examples" / "snli_sample.jsonl"
MAIN_SPECS = "f;p+i,m;o,pa;pa,i;i,p;f"


@pytest.fixture(autouse=True)
def _restore_lit_logger():
    """The root command sets the 'lit' logger's level (-q: ERROR); undo it for later tests."""
    logger = logging.getLogger("lit")
    level = logger.level
    yield
    logger.setLevel(level)


@pytest.fixture
def env(tmp_path, lit_home) -> dict[str, str]:
    return {**fake_ace_env(tmp_path / "fake"), "LIT_HOME": str(lit_home)}


def run(args: list[str], env: dict[str, str], input: str | None = None):
    if "transform" in args and "--select" not in args:
        # fake-ace replays recordings made on the reading selected by round trip
        args = [*args[: args.index("transform") + 1], "--select", "roundtrip",
                *args[args.index("transform") + 1:]]
    return CliRunner().invoke(app, args, env=env, input=input, catch_exceptions=False)


def lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def head(n: int) -> list[str]:
    return SAMPLE.read_text(encoding="utf-8").splitlines()[:n]


def check_report(report: dict, items: int, specs: list[str]) -> None:
    assert report["items"] == items
    assert report["records"] == items * len(specs)
    assert list(report["specs"]) == specs
    for counts in report["specs"].values():
        assert counts["total"] == items
        assert counts["ok"] + sum(counts["skipped"].values()) + counts["error"] == items


def test_sample_main_job_with_fake_ace(env, tmp_path):
    report = tmp_path / "report.json"
    result = run(["transform", "--grammar", "erg-1214", "--lm", "none", "--rules", MAIN_SPECS,
                  "--report", str(report), str(SAMPLE)], env)
    assert result.exit_code == 0, result.output
    records = lines(result.stdout)
    n = len(head(1000))
    assert len(records) == n * 5
    summary = json.loads(report.read_text())
    check_report(summary, n, MAIN_SPECS.split(","))
    assert summary["grammar"] == "erg-1214" and summary["lm"] is None
    assert f"{n} items x 5 specs: " in result.stderr
    ok = [r for r in records if r["status"] == "ok"]
    assert ok and {r["spec"] for r in ok} >= {"m;o", "i;i", "p;f"}
    rec = next(r for r in ok if r["spec"] == "i;i")
    assert rec["sentence1"].startswith("It is ") and rec["label_rule"]["row"] == "i;i"
    assert rec["gold_label"] == rec["original"]["gold_label"]
    dash = [r for r in records if r["original"]["gold_label"] == "-"]
    assert len(dash) == 5 and all(r["reason"].startswith("invalid-input") for r in dash)


def test_stdin_candidates_keep_mrs(env):
    result = run(["transform", "--lm", "none", "-r", "m;o", "-k", "2", "--keep-mrs", "-"], env,
                 input="\n".join(head(3)) + "\n")
    assert result.exit_code == 0, result.output
    records = lines(result.stdout)
    assert len(records) == 3
    rec = records[0]
    assert rec["status"] == "ok"
    assert 1 <= len(rec["premise"]["candidates"]) <= 2
    assert rec["premise"]["mrs"].startswith("[")
    assert "candidates" not in rec["hypothesis"]  # untouched side


def test_tsv_with_column_options(env, tmp_path):
    rows = [json.loads(line) for line in head(4)]
    path = tmp_path / "pairs.tsv"
    path.write_text("premise\thypo\tlab\tkey\n" + "".join(
        f"{r['sentence1']}\t{r['sentence2']}\t{r['gold_label']}\t{r['pairID']}\n" for r in rows))
    result = run(["transform", "--lm", "none", "-r", "m;o", "--premise-field", "premise",
                  "--hypothesis-field", "hypo", "--label-field", "lab", "--id-field", "key",
                  str(path)], env)
    assert result.exit_code == 0, result.output
    records = lines(result.stdout)
    assert [r["id"] for r in records] == [r["pairID"] for r in rows]
    assert records[0]["status"] == "ok" and records[0]["original"]["hypo"] == rows[0]["sentence2"]


def test_csv_and_bad_row(env, tmp_path):
    rows = [json.loads(line) for line in head(2)]
    path = tmp_path / "pairs.csv"
    path.write_text("sentence1,sentence2,gold_label\n" + "".join(
        f"\"{r['sentence1']}\",\"{r['sentence2']}\",{r['gold_label']}\n" for r in rows))
    result = run(["transform", "--lm", "none", "-r", "m;o,i;i", str(path)], env)
    assert result.exit_code == 0, result.output
    assert len(lines(result.stdout)) == 4
    path.write_text("sentence1,sentence2,gold_label\na,b\n")
    result = run(["transform", "--lm", "none", "-r", "m;o", str(path)], env)
    assert result.exit_code == 1
    assert f"{path}:2: 2 columns, header has 3" in result.stderr


def test_plain_text(env, tmp_path):
    path = tmp_path / "sents.txt"
    path.write_text("Two women are embracing while holding to go packages.\n\nXyzzy plugh.\n")
    result = run(["transform", "--lm", "none", "-r", "p,n+i", str(path)], env)
    assert result.exit_code == 0, result.output
    records = lines(result.stdout)
    assert [(r["id"], r["spec"], r["status"]) for r in records] == [
        (1, "p", "ok"), (1, "n+i", "ok"), (2, "p", "skipped"), (2, "n+i", "skipped"),
        (3, "p", "skipped"), (3, "n+i", "skipped")]
    assert records[0]["sentence"].endswith("were embracing while holding to go packages.")
    assert records[2]["reason"].startswith("invalid-input")
    assert records[4]["reason"].startswith("no-parse")
    result = run(["transform", "--lm", "none", "-r", "f;p", str(path)], env)
    assert result.exit_code == 1 and "is a pair spec" in result.stderr


def test_contrast_sets_format(env, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(head(3)) + "\n")
    result = run(["transform", "--lm", "none", "-r", "m;o,i;i", "--format", "contrast-sets",
                  str(path)], env)
    assert result.exit_code == 0, result.output
    sets = lines(result.stdout)
    assert len(sets) == 3
    assert all(s["size"] == 1 + len(s["items"]) for s in sets)
    assert sum(len(s["items"]) + len(s["skipped"]) for s in sets) == 6


@pytest.mark.parametrize(
    "spec, message",
    [("f;p+x", "unknown rule 'x'"), ("f;p;i", "only one ';'"), ("f;p,,m;o", "empty spec")],
)
def test_bad_spec_points_at_token(env, spec, message):
    result = run(["transform", "--lm", "none", "-r", spec, str(SAMPLE)], env)
    assert result.exit_code == 1
    assert message in result.stderr and "^" in result.stderr
    assert result.stdout == ""


def test_mixed_specs_is_usage_error(env):
    result = run(["transform", "--lm", "none", "-r", "f;p,p", str(SAMPLE)], env)
    assert result.exit_code == 2


def test_bad_label_table(env, tmp_path):
    table = tmp_path / "labels.toml"
    table.write_text('[[row]]\nspec = "f;p"\nsource = "paper"\nrationale = "x"\nmap = 3\n')
    result = run(["transform", "--lm", "none", "-r", "f;p", "--labels", str(table),
                  str(SAMPLE)], env)
    assert result.exit_code == 1
    assert f"{table}:1: row 1 ('f;p'): 'map' must be" in result.stderr


def test_user_label_table(env, tmp_path):
    table = tmp_path / "labels.toml"
    table.write_text('[[row]]\nspec = "m;o"\nsource = "extension"\nrationale = "x"\n'
                     'map = { neutral = "entailment" }\n')
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(head(3)) + "\n")
    result = run(["transform", "--lm", "none", "-r", "m;o", "--labels", str(table), str(path)],
                 env)
    assert result.exit_code == 0, result.output
    records = lines(result.stdout)
    neutral = [r for r in records if r["original"]["gold_label"] == "neutral"]
    assert neutral and all(r["gold_label"] == "entailment" for r in neutral)
    assert all(r["label_rule"]["table"] == str(table) for r in neutral)
    other = [r for r in records if r["original"]["gold_label"] != "neutral"]
    assert all(r["reason"].startswith("unlabeled") for r in other)


def test_malformed_json(env, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(head(1)[0] + "\n{oops\n")
    result = run(["transform", "--lm", "none", "-r", "m;o", str(path)], env)
    assert result.exit_code == 1 and f"{path}:2: malformed JSON" in result.stderr
    result = run(["transform", "--lm", "none", "-r", "m;o", "--on-error", "skip", str(path)], env)
    assert result.exit_code == 0
    records = lines(result.stdout)
    assert records[1]["reason"].startswith("invalid-input: line 2: malformed JSON")


def test_missing_lm_path(env, tmp_path):
    result = run(["transform", "--lm", str(tmp_path / "no" / "model"), "-r", "m;o",
                  str(SAMPLE)], env)
    assert result.exit_code == 1 and "language model not found" in result.stderr


def test_tiny_lm_scores(env, tmp_path):
    from test_rerank import build_tiny_gpt2

    model = build_tiny_gpt2(tmp_path / "lm")
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(head(3)) + "\n")
    result = run(["transform", "--lm", str(model), "--device", "cpu", "-k", "3", "-r", "i;i",
                  str(path)], env)
    assert result.exit_code == 0, result.output
    rec = next(r for r in lines(result.stdout) if r["status"] == "ok")
    scores = [c["score"] for c in rec["premise"]["candidates"]]
    assert scores == sorted(scores) and all(s > 0 for s in scores)


def test_hf_dataset_from_disk(env, tmp_path):
    datasets = pytest.importorskip("datasets", reason="the optional 'datasets' extra")
    names = ["entailment", "neutral", "contradiction"]
    rows = [json.loads(line) for line in head(4)]
    ds = datasets.Dataset.from_list(
        [{"premise": r["sentence1"], "hypothesis": r["sentence2"],
          "label": names.index(r["gold_label"])} for r in rows],
        features=datasets.Features({"premise": datasets.Value("string"),
                                    "hypothesis": datasets.Value("string"),
                                    "label": datasets.ClassLabel(names=names)}))
    datasets.DatasetDict({"validation": ds}).save_to_disk(str(tmp_path / "snli"))
    result = run(["transform", "--lm", "none", "-r", "m;o", "--hf",
                  f"{tmp_path / 'snli'}:validation"], env)
    assert result.exit_code == 0, result.output
    records = lines(result.stdout)
    assert len(records) == 4 and records[0]["status"] == "ok"
    assert records[0]["original"]["label"] == names.index(rows[0]["gold_label"])
    assert records[0]["label_rule"]["from"] == rows[0]["gold_label"]
    result = run(["transform", "--lm", "none", "-r", "m;o", "--hf",
                  f"{tmp_path / 'snli'}:test"], env)
    assert result.exit_code == 1 and "no split 'test'" in result.stderr


def test_hf_without_datasets(env, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    result = run(["transform", "--lm", "none", "-r", "m;o", "--hf", "snli:validation"], env)
    assert result.exit_code == 1 and "pip install 'lit-mrs[hf]'" in result.stderr


def test_hf_bad_spec(env):
    result = run(["transform", "--lm", "none", "-r", "m;o", "--hf", "snli"], env)
    assert result.exit_code == 2 and "NAME[:CONFIG]:SPLIT" in result.stderr


@pytest.mark.ace
def test_main_job_with_real_ace(tmp_path, lit_home):
    """Done means: the README command on the sample, with real ACE and ERG 1214."""
    ace, image = real_ace("erg-1214")
    env = {"LIT_ACE": str(ace), "LIT_GRAMMAR_ERG_1214": str(image), "LIT_HOME": str(lit_home)}
    report = tmp_path / "report.json"
    result = run(["transform", "--grammar", "erg-1214", "--lm", "none", "--rules", MAIN_SPECS,
                  "--report", str(report), str(SAMPLE)], env)
    assert result.exit_code == 0, result.output
    n = len(head(1000))
    assert len(lines(result.stdout)) == n * 5
    summary = json.loads(report.read_text())
    check_report(summary, n, MAIN_SPECS.split(","))
    assert sum(c["ok"] for c in summary["specs"].values()) > 0


@pytest.mark.ace
def test_augment_nli_with_real_ace(lit_home):
    from lit.pipeline import Transformer, augment_nli
    from lit.records import Report

    ace, image = real_ace("erg-1214")
    env = {"LIT_ACE": str(ace), "LIT_GRAMMAR_ERG_1214": str(image)}
    items = lines(SAMPLE.read_text())
    report = Report()
    with Transformer("erg-1214", home=Path(lit_home), env=env) as t:
        new = list(augment_nli(items, MAIN_SPECS, transformer=t, report=report))
    assert report.records == len(items) * 5 and report.items == len(items)
    assert new and all(r["status"] == "ok" for r in new)


def test_quiet_suppresses_summary(env, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(head(1)[0] + "\n")
    result = run(["-q", "transform", "--lm", "none", "-r", "m;o", str(path)], env)
    assert result.exit_code == 0 and len(lines(result.stdout)) == 1
    assert "items x" not in result.stderr
