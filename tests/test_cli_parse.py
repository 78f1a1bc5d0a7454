"""`lit parse` and `lit generate` through typer's CliRunner.

ACE cannot be obtained here: ``LIT_ACE`` points at the stand-in
``tests/fake_ace.py`` (a test double replaying recorded ERG 1214 output,
run as a real subprocess) and ``LIT_GRAMMAR_ERG_1214`` at its image. The
test marked ``ace`` runs the same pipe against a real ACE and ERG 1214.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import real_ace, recorded
from typer.testing import CliRunner

from lit.cli import app

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_ace_support import fake_ace_env, read_log  # noqa: E402

WALKING = "A woman is walking her dog."
CHASES = "a dog chases a cat"  # recorded in lower case without a period
MANY = "A white dog with long hair jumps to catch a red and green toy."


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def fake_env(lit_home, tmp_path, monkeypatch):
    """LIT_ACE / LIT_GRAMMAR_ERG_1214 pointing at fake-ace (in os.environ)."""
    for var in list(os.environ):
        if var.startswith("FAKE_ACE_"):
            monkeypatch.delenv(var)
    env = fake_ace_env(tmp_path / "fake", "erg-1214")
    env["FAKE_ACE_LOG"] = str(tmp_path / "fake-ace.log")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def invoke(runner, *args, input=None):
    return runner.invoke(app, list(args), input=input, catch_exceptions=False)


def records(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_parse_arguments(runner, fake_env):
    result = invoke(runner, "parse", WALKING, "Colourless green ideas sleep.", "-n", "2")
    assert result.exit_code == 0, result.stderr
    out = records(result)
    assert [r["id"] for r in out] == [1, 2]
    assert out[0]["sentence"] == WALKING and out[0]["selected"] == 0
    assert out[0]["error"] is None and 1 <= len(out[0]["readings"]) <= 2
    assert set(out[0]["readings"][0]) == {"mrs"}
    assert out[1] == {"id": 2, "sentence": "Colourless green ideas sleep.", "readings": [],
                      "selected": None, "error": "no parse"}
    assert result.stderr.strip().splitlines()[-1] == "1 parsed, 1 no-parse, 0 errors"


def test_parse_stdin_with_dmrs_and_tree(runner, fake_env):
    result = invoke(runner, "parse", "--dmrs", "--tree", input=f"{WALKING}\n\n{CHASES}\n")
    assert result.exit_code == 0, result.stderr
    out = records(result)
    assert [r["id"] for r in out] == [1, 3]  # line numbers; the blank line is no item
    reading = out[0]["readings"][0]
    assert reading["dmrs"]["nodes"] and reading["tree"] and reading["derivation"]


def test_parse_jsonl_file_keeps_ids(runner, fake_env, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"id": "x1", "sentence": WALKING}) + "\n"
                    + json.dumps({"id": "x2", "text": CHASES}) + "\n")
    result = invoke(runner, "parse", "--input", str(path))
    assert result.exit_code == 0, result.stderr
    assert [(r["id"], r["sentence"]) for r in records(result)] == [("x1", WALKING),
                                                                   ("x2", CHASES)]


def test_parse_malformed_input_fails_with_file_and_line(runner, fake_env, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"id": 1, "sentence": WALKING}) + "\n{oops\n")
    result = invoke(runner, "parse", "--input", str(path))
    assert result.exit_code == 1
    assert f"{path}:2: malformed JSON" in result.stderr
    skipped = invoke(runner, "parse", "--input", str(path), "--on-error", "skip")
    assert skipped.exit_code == 0
    out = records(skipped)
    assert out[1]["id"] == 2 and out[1]["error"].startswith("invalid-input: malformed JSON")
    assert skipped.stderr.strip().splitlines()[-1] == "1 parsed, 0 no-parse, 1 errors"


def test_parse_roundtrip_selection_matches_recorded(runner, fake_env):
    rows = {r["sentence"]: r for r in recorded("erg-1214", "readings")}
    sentences = [WALKING, CHASES, MANY]
    result = invoke(runner, "parse", "--select", "roundtrip", "-n", "10", *sentences)
    assert result.exit_code == 0, result.stderr
    assert [r["selected"] for r in records(result)] == [rows[s]["selected"] for s in sentences]


def test_parse_max_words_skips_with_reason(runner, fake_env):
    result = invoke(runner, "parse", "--max-words", "5", WALKING, CHASES)
    out = records(result)
    assert out[0]["error"] == "skipped: 6 tokens > 5" and out[0]["readings"] == []
    assert out[1]["error"] is None
    assert result.stderr.strip().splitlines()[-1] == \
        "1 parsed, 0 no-parse, 1 skipped, 0 errors"


def test_failed_items_get_error_lines_and_exit_zero(runner, fake_env, monkeypatch):
    monkeypatch.setenv("FAKE_ACE_HANG_ON", "hang")
    monkeypatch.setenv("FAKE_ACE_DIE_ON", "crash")
    # the watchdog also times the other items (on fresh fake-ace processes): not too short
    result = invoke(runner, "parse", "--watchdog", "4", WALKING, "Dogs hang here.",
                    "Dogs crash here.", CHASES)
    assert result.exit_code == 0, result.stderr
    out = records(result)
    assert [r["id"] for r in out] == [1, 2, 3, 4]
    # cut at 4 s, retried once with the limits doubled, cut at 8 s
    assert out[1]["error"] == "ACE timed out after 8 s (watchdog); process restarted"
    assert out[2]["error"].startswith("ACE process died 2 times (exit code -9)")
    assert out[0]["readings"] and out[3]["readings"]
    assert result.stderr.strip().splitlines()[-1] == "2 parsed, 0 no-parse, 2 errors"


def test_a_round_trip_cut_short_is_an_error_line_not_a_crash(runner, fake_env, monkeypatch):
    # every generation (the round trips of the readings) needs 5 s > 2 x --timeout 1
    monkeypatch.setenv("FAKE_ACE_SLOW", "5")
    monkeypatch.setenv("FAKE_ACE_SLOW_MODE", "generate")
    result = invoke(runner, "parse", "--select", "roundtrip", "--timeout", "1", WALKING)
    assert result.exit_code == 0, result.stderr
    [out] = records(result)
    assert out["readings"] and out["selected"] is None
    assert out["error"].startswith("timeout: selection: round trip of a reading"), out["error"]
    assert result.stderr.strip().splitlines()[-1] == "0 parsed, 0 no-parse, 1 errors"


def test_parse_then_generate_round_trip(runner, fake_env, tmp_path):
    parsed = invoke(runner, "parse", "--select", "roundtrip", WALKING, CHASES,
                    "Colourless green ideas sleep.")
    assert parsed.exit_code == 0, parsed.stderr
    generated = invoke(runner, "generate", input=parsed.stdout)
    assert generated.exit_code == 0, generated.stderr
    out = records(generated)
    assert [r["id"] for r in out] == [1, 2, 3]
    assert WALKING in out[0]["surfaces"] and out[0]["error"] is None
    assert out[0]["sentence"] == WALKING and out[0]["reading"] == 0
    assert CHASES in out[1]["surfaces"]
    assert out[2]["mrs"] is None and out[2]["error"] == "no parse"
    assert generated.stderr.strip().splitlines()[-1] == \
        "2 generated, 0 no-realization, 1 skipped, 0 errors"
    # one generator process for the whole input
    starts = [e for e in read_log(fake_env["FAKE_ACE_LOG"]) if e["event"] == "start"]
    assert sum("-e" in e["argv"] for e in starts) == 2  # roundtrip selection + generate


def test_generate_simplemrs_and_rules_output(runner, fake_env, tmp_path):
    row = next(r for r in recorded("erg-1214", "transforms")
               if r["output_mrs"] and r["generated"])
    lines = [
        row["output_mrs"],
        json.dumps({"id": "r1", "chain": "p", "mrs": row["output_mrs"], "reason": None}),
        json.dumps({"id": "r2", "chain": "pa", "mrs": None, "reason": "inapplicable: x"}),
        "[ TOP: h0 INDEX: e2 RELS: < [ _zzz_v_1 LBL: h1 ARG0: e2 ] > HCONS: < h0 qeq h1 > ]",
    ]
    path = tmp_path / "mrs.txt"
    path.write_text("\n".join(lines) + "\n")
    result = invoke(runner, "generate", str(path))
    assert result.exit_code == 0, result.stderr
    out = records(result)
    assert out[0]["id"] == 1 and out[0]["surfaces"][: len(row["generated"])] == row["generated"]
    assert out[1]["chain"] == "p" and out[1]["surfaces"] == out[0]["surfaces"]
    assert out[2] == {"id": "r2", "chain": "pa", "mrs": None, "surfaces": [],
                      "error": "inapplicable: x"}
    assert out[3]["surfaces"] == [] and out[3]["error"] is None
    assert result.stderr.strip().splitlines()[-1] == \
        "2 generated, 1 no-realization, 1 skipped, 0 errors"


def test_generate_all_readings(runner, fake_env):
    parsed = invoke(runner, "parse", "-n", "3", MANY)
    result = invoke(runner, "generate", "--all", input=parsed.stdout)
    assert [r["reading"] for r in records(result)] == [0, 1, 2]


def test_missing_grammar_is_a_clear_error(runner, lit_home):
    result = invoke(runner, "parse", WALKING)
    assert result.exit_code == 1
    assert "lit grammar install erg-1214" in result.stderr
    assert result.stdout == ""


def test_bad_image_is_a_clear_error(runner, fake_env, tmp_path, monkeypatch):
    bad = tmp_path / "broken.dat"
    bad.write_text("not an image")
    monkeypatch.setenv("LIT_GRAMMAR_ERG_1214", str(bad))
    result = invoke(runner, "parse", WALKING)
    assert result.exit_code == 1
    assert str(bad) in result.stderr and "not a valid grammar image" in result.stderr


def test_sentences_and_input_together_is_a_usage_error(runner, fake_env, tmp_path):
    result = runner.invoke(app, ["parse", WALKING, "--input", str(tmp_path / "x")])
    assert result.exit_code == 2


@pytest.mark.ace
def test_real_ace_parse_generate_pipe(runner, lit_home, monkeypatch):
    ace, image = real_ace("erg-1214")
    monkeypatch.setenv("LIT_ACE", str(ace))
    monkeypatch.setenv("LIT_GRAMMAR_ERG_1214", str(image))
    parsed = invoke(runner, "parse", "--grammar", "erg-1214", "--select", "roundtrip",
                    input="The dog chased the cat.\n")
    assert parsed.exit_code == 0, parsed.stderr
    assert records(parsed)[0]["readings"]
    generated = invoke(runner, "generate", "--grammar", "erg-1214", input=parsed.stdout)
    assert "The dog chased the cat." in records(generated)[0]["surfaces"]


def test_ace_missing_points_to_grammar_install(runner, fake_env, monkeypatch, tmp_path):
    monkeypatch.delenv("LIT_ACE")
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    result = invoke(runner, "parse", WALKING)
    assert result.exit_code == 1
    assert "ACE binary 'ace' not found on PATH" in result.stderr
    assert "lit grammar install" in result.stderr and "lit grammar add" in result.stderr


def test_ace_version_is_asked_once_per_run(runner, fake_env):
    result = invoke(runner, "parse", "--select", "roundtrip", WALKING, CHASES)
    assert result.exit_code == 0, result.stderr
    events = read_log(fake_env["FAKE_ACE_LOG"])
    assert sum(e["event"] == "version" for e in events) == 1
    starts = [e["mode"] for e in events if e["event"] == "start"]
    assert starts.count("generate") == 1  # one generator; a fresh parser per sentence,
    assert starts.count("parse") == 3  # started as soon as the one before answered
