"""`lit rerank`: the standalone reranking stage (`lit generate | lit rerank`)."""

from __future__ import annotations

import json

import pytest
from test_rerank import build_tiny_gpt2
from typer.testing import CliRunner

from lit.cli import app
from lit.rerank import Reranker

runner = CliRunner()

# what `lit generate` writes; the surfaces are real ERG 1214 realizations from
# ../shared/erg (doubled space before "a", comma-only variants)
GENERATED = [
    {"id": 1, "mrs": "[ ... ]", "error": None, "surfaces": [
        "It is  a dog that chased the cat.",
        "It is a dog that chased the cat.",
        "It is a dog which, chased the cat.",
        "It is a dog which chased the cat.",
    ]},
    {"id": 2, "mrs": None, "surfaces": [], "error": "ARG2 of _sit_v_1 is not an x variable"},
    {"id": 3, "mrs": "[ ... ]", "error": None, "surfaces": ["Two women were embracing."]},
]


def _input(tmp_path, records) -> str:
    path = tmp_path / "generated.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def _out(result) -> list[dict]:
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_grammar_order_without_lm(tmp_path):
    result = runner.invoke(app, ["rerank", "--lm", "none", _input(tmp_path, GENERATED)])
    out = _out(result)
    assert [r["id"] for r in out] == [1, 2, 3]
    assert [c["sentence"] for c in out[0]["candidates"]] == [
        "It is a dog that chased the cat.", "It is a dog which chased the cat."]
    assert out[0]["sentence"] == "It is a dog that chased the cat."
    assert out[0]["dropped"] == 2 and all(c["score"] is None for c in out[0]["candidates"])
    # nothing to rank: kept, with the generator's reason, never dropped
    assert out[1]["sentence"] is None and out[1]["candidates"] == []
    assert out[1]["error"] == GENERATED[1]["error"]
    assert out[2]["sentence"] == "Two women were embracing."
    assert result.stderr.strip().endswith("2 ranked, 1 nothing-to-rank, 0 errors")


def test_raw_keeps_every_surface(tmp_path):
    out = _out(runner.invoke(app, ["rerank", "--lm", "none", "--raw",
                                   _input(tmp_path, GENERATED[:1])]))
    assert [c["sentence"] for c in out[0]["candidates"]] == GENERATED[0]["surfaces"]
    assert "dropped" not in out[0]


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    return build_tiny_gpt2(tmp_path_factory.mktemp("lm") / "tiny-gpt2")


def test_scores_with_a_local_lm(tmp_path, tiny_lm):
    out = _out(runner.invoke(app, ["rerank", "--lm", str(tiny_lm), "-k", "1", "--chunk", "2",
                                   _input(tmp_path, GENERATED)]))
    with Reranker(tiny_lm, device="cpu") as lm:
        expected = lm.rerank(["It is a dog that chased the cat.",
                              "It is a dog which chased the cat."])
    assert len(out[0]["candidates"]) == 1
    assert out[0]["candidates"][0]["sentence"] == expected[0].sentence
    assert out[0]["candidates"][0]["score"] == pytest.approx(expected[0].score, rel=1e-5)
    assert out[2]["candidates"][0]["score"] > 0


def test_malformed_line_names_it(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(GENERATED[0]) + "\n{oops\n", encoding="utf-8")
    result = runner.invoke(app, ["rerank", "--lm", "none", str(path)])
    assert result.exit_code == 1
    assert f"{path}:2: malformed JSON" in result.stderr
    out = _out(runner.invoke(app, ["rerank", "--lm", "none", "--on-error", "skip", str(path)]))
    assert len(out) == 2 and out[1]["lineno"] == 2
    assert out[1]["error"].startswith("invalid-input: malformed JSON")


def test_record_without_surfaces_names_the_line(tmp_path):
    path = _input(tmp_path, [{"id": 7, "sentence": "Dogs bark."}])
    result = runner.invoke(app, ["rerank", "--lm", "none", path])
    assert result.exit_code == 1
    assert f"{path}:1: no 'surfaces'" in result.stderr
