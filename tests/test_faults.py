"""The fault matrix of issue #8: bad input, ACE faults, reranker faults, process faults.

Each row of the matrix is a test (parametrized where rows are variations of
one fault; the ids name the row). Every row that produces output also
checks the accounting identity: per spec, ``ok + skipped (by reason) +
error == number of input items``, the report's record count is items x
specs, and the JSONL output has exactly one record per (item, spec), in
input order, agreeing with the report (:func:`assert_accounted`). Rows that
must stop the run (a configuration error, ``--on-error fail``, a full disk)
check instead that lit exits 1 with a message naming the cause and writes
no report claiming a complete run.

ACE and the ERG images cannot be obtained here. The ACE rows and the
process rows run lit against ``tests/fake_ace.py``, a stand-in ACE
*executable* (a test double, started by lit as a real subprocess, speaking
ACE's stdin/stdout protocol and replaying the recorded ERG 1214 output in
``../shared/erg``); its ``FAKE_ACE_*`` variables inject the faults (die
mid-item, hang, exit at start) and its ``FAKE_ACE_LOG`` shows what reached
"ACE". The tests marked ``ace`` repeat the ACE rows against a real ACE and
ERG 1214 image (``LIT_ACE``, ``LIT_GRAMMAR_ERG_1214``) and are skipped
otherwise. Reranker rows use a tiny GPT-2 built locally by the test; the
CLI rows use ``--lm none``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import real_ace
from typer.testing import CliRunner

from lit.cli import app
from lit.errors import ACEError, ChecksumError, RerankError
from lit.pipeline import Transformer, augment_nli
from lit.records import CATEGORIES, Report

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_ace_support import fake_ace, fake_ace_env, read_log  # noqa: E402

SPECS = ["f;p", "p;f"]

# SNLI dev pairs whose premises and hypotheses are in the ERG 1214 recording
# and transform with both specs (checked by test_good_items_transform).
# (not "Two surgeons are having lunch.": the recording transformed a reading with the
# number alone as subject, which lit no longer selects; see tests/test_pipeline.py)
NOTE = "The woman is writing a note."
GOOD = [
    {"pairID": "g1", "sentence1": "Two doctors perform surgery on patient.",
     "sentence2": NOTE, "gold_label": "contradiction"},
    {"pairID": "g2", "sentence1": "Two doctors perform surgery on patient.",
     "sentence2": "Doctors are performing surgery.", "gold_label": "entailment"},
    # (not "A senior is waiting at the window of a restaurant that serves sandwiches.":
    # the recorded reading reads "sandwiches" as a name, and every realization of its
    # transformations says "Sandwiches", which the order guard rightly drops)
    {"pairID": "g3", "sentence1": "A person waits to be served his food.",
     "sentence2": "A man is waiting in line for the bus.", "gold_label": "contradiction"},
]
LIT = [sys.executable, "-c", "import sys; sys.argv[0] = 'lit'; from lit.cli import main; main()"]


# -- helpers ----------------------------------------------------------------


def line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False)


def write_lines(path: Path, lines: list[str], newline: str = "\n") -> Path:
    path.write_bytes("".join(x + newline for x in lines).encode("utf-8", "surrogateescape"))
    return path


def parse_jsonl(text: str) -> list[dict[str, Any]]:
    """Every line of *text* must be a complete JSON object (no half lines)."""
    assert text == "" or text.endswith("\n"), f"output ends with a partial line: {text[-80:]!r}"
    out = [json.loads(x) for x in text.splitlines()]
    assert all(isinstance(r, dict) for r in out)
    return out


def assert_accounted(report: dict[str, Any], records: list[dict[str, Any]], n_items: int,
                     specs: list[str] = SPECS) -> None:
    """The accounting identity of issue #8, checked against report and output."""
    assert report["items"] == n_items
    assert report["records"] == len(records) == n_items * len(specs)
    assert sorted(report["specs"]) == sorted(specs)
    # one record per (item, spec), in input order
    assert [r["spec"] for r in records] == specs * n_items
    for spec in specs:
        counts = report["specs"][spec]
        assert counts["total"] == n_items
        assert counts["ok"] + sum(counts["skipped"].values()) + counts["error"] == n_items
        mine = [r for r in records if r["spec"] == spec]
        assert sum(r["status"] == "ok" for r in mine) == counts["ok"]
        assert sum(r["status"] == "error" for r in mine) == counts["error"]
        skipped = Counter(r["reason"].split(":")[0] for r in mine if r["status"] == "skipped")
        assert dict(skipped) == counts["skipped"]
    for r in records:
        assert r["status"] in ("ok", "skipped", "error")
        if r["status"] == "ok":
            assert r["reason"] is None
            assert (r["sentence1"] and r["sentence2"]) if "sentence1" in r else r["sentence"]
        else:
            assert r["reason"].split(":")[0] in CATEGORIES, r["reason"]
    assert sum(report["reasons"].values()) == report["records"] - sum(
        c["ok"] for c in report["specs"].values())


def events(log: Path, kind: str) -> list[dict[str, Any]]:
    return [e for e in read_log(log) if e["event"] == kind]


def parse_inputs(log: Path) -> list[str]:
    """The sentences the fake ACE parser received."""
    parsers = {e["pid"] for e in events(log, "start") if e["mode"] == "parse"}
    return [e["input"] for e in events(log, "item") if e["pid"] in parsers]


class Run:
    """One `lit transform` run: exit code, stderr, records, report (or None)."""

    def __init__(self, exit_code: int, stdout: str, stderr: str, report: Path) -> None:
        self.exit_code, self.stdout, self.stderr = exit_code, stdout, stderr
        self.records = parse_jsonl(stdout)
        self.report = json.loads(report.read_text()) if report.exists() else None

    def by_id(self) -> dict[Any, list[dict[str, Any]]]:
        out: dict[Any, list[dict[str, Any]]] = {}
        for r in self.records:
            out.setdefault(r["id"], []).append(r)
        return out


@pytest.fixture
def fake_env(lit_home, tmp_path, monkeypatch) -> dict[str, str]:
    """os.environ pointing lit at fake-ace (a test double for ACE), logging to a file."""
    for var in list(os.environ):
        if var.startswith("FAKE_ACE_"):
            monkeypatch.delenv(var)
    env = fake_ace_env(tmp_path / "fake", "erg-1214")
    env["FAKE_ACE_LOG"] = str(tmp_path / "fake-ace.log")
    env["LIT_HOME"] = str(lit_home)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


@pytest.fixture
def transform(tmp_path, fake_env):
    """Run `lit transform` in-process (ACE is the fake-ace subprocess)."""
    runner = CliRunner()
    counter = iter(range(1000))

    def run(path: Path | None, *args: str, input: str | bytes | None = None,
            specs: list[str] = SPECS, lm: str = "none") -> Run:
        report = tmp_path / f"report-{next(counter)}.json"
        # fake-ace replays recordings made on the reading selected by round trip
        argv = ["transform", "--select", "roundtrip", "-r", ",".join(specs), "--lm", lm,
                "--report", str(report),
                *args, str(path) if path is not None else "-"]
        result = runner.invoke(app, argv, input=input, catch_exceptions=False)
        return Run(result.exit_code, result.stdout, result.stderr, report)

    return run


def subprocess_env(fake_env: dict[str, str], **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(fake_env)
    env.update(extra)
    return env


# -- the good items work (the baseline every row is compared with) ----------


def test_good_items_transform(transform, tmp_path):
    run = transform(write_lines(tmp_path / "good.jsonl", [line(r) for r in GOOD]))
    assert run.exit_code == 0, run.stderr
    assert {r["status"] for r in run.records} == {"ok"}
    assert_accounted(run.report, run.records, len(GOOD))


# -- input ------------------------------------------------------------------


def test_input_malformed_jsonl_fails_naming_file_and_line(transform, tmp_path):
    path = write_lines(tmp_path / "bad.jsonl",
                       [line(GOOD[0]), '{"sentence1": "A dog', line(GOOD[1])])
    run = transform(path)  # --on-error fail is the default
    assert run.exit_code == 1
    assert f"lit: error: {path}:2: malformed JSON" in run.stderr
    assert "--on-error skip" in run.stderr
    assert "Traceback" not in run.stderr
    assert run.report is None  # no report claims a complete run


def test_input_malformed_jsonl_skip_counts_and_continues(transform, tmp_path):
    path = write_lines(tmp_path / "bad.jsonl", [
        line(GOOD[0]), '{"sentence1": "A dog', "[1, 2]", '"a string"', "{}}", line(GOOD[1])])
    run = transform(path, "--on-error", "skip")
    assert run.exit_code == 0, run.stderr
    assert_accounted(run.report, run.records, 6)
    by_id = run.by_id()
    assert [r["status"] for r in by_id["g1"] + by_id["g2"]] == ["ok"] * 4
    for lineno, why in ((2, "malformed JSON"), (3, "expected a JSON object, got list"),
                        (4, "expected a JSON object, got str"), (5, "malformed JSON")):
        recs = by_id[f"line {lineno}"]
        assert len(recs) == len(SPECS)
        for r in recs:
            assert r["status"] == "skipped"
            assert r["reason"].startswith(f"invalid-input: line {lineno}: {why}")
            assert r["original"]["line"] == lineno
    assert run.report["specs"]["f;p"]["skipped"] == {"invalid-input": 4}


@pytest.mark.parametrize(("change", "why"), [
    pytest.param({"sentence1": None}, "field 'sentence1' is missing", id="missing-sentence1"),
    pytest.param({"sentence2": None}, "field 'sentence2' is missing", id="missing-sentence2"),
    pytest.param({"gold_label": None}, "gold_label None is not one of", id="missing-gold_label"),
    pytest.param({"gold_label": "maybe"}, "gold_label 'maybe' is not one of",
                 id="unknown-label"),
    pytest.param({"gold_label": "-"}, "'-' (no annotator majority)", id="no-majority-label"),
    pytest.param({"gold_label": 1}, "label 1 has no name", id="integer-label-without-names"),
    pytest.param({"sentence1": ""}, "field 'sentence1' is missing or not a non-empty string",
                 id="empty-sentence"),
    pytest.param({"sentence2": " \t\u00a0\u3000 "}, "field 'sentence2' is missing or not a",
                 id="whitespace-only-sentence"),
    pytest.param({"sentence1": 42}, "field 'sentence1' is missing or not a non-empty string",
                 id="non-string-sentence"),
])
def test_input_bad_records_are_skipped_with_reason(transform, tmp_path, change, why):
    bad = {k: v for k, v in {**GOOD[1], "pairID": "bad", **change}.items() if v is not None}
    path = write_lines(tmp_path / "in.jsonl", [line(GOOD[0]), line(bad), line(GOOD[2])])
    run = transform(path)
    assert run.exit_code == 0, run.stderr
    assert_accounted(run.report, run.records, 3)
    by_id = run.by_id()
    for r in by_id["bad"]:
        assert r["status"] == "skipped" and r["reason"].startswith("invalid-input: ")
        assert why in r["reason"], r["reason"]
        assert r["original"] == bad  # the original record is kept
    assert [r["status"] for r in by_id["g1"] + by_id["g3"]] == ["ok"] * 4


def test_input_very_long_sentence_skipped_before_ace(transform, tmp_path, fake_env):
    long = ("A man in a red shirt and a woman in a blue dress are walking their three dogs "
            "along the beach at sunset while children play with a ball nearby.")
    assert len(long.split()) == 30
    items = [GOOD[1],
             {"pairID": "long-premise", "sentence1": long, "sentence2": NOTE,
              "gold_label": "neutral"},
             {"pairID": "long-hypothesis", "sentence1": GOOD[1]["sentence1"],
              "sentence2": long, "gold_label": "neutral"}]
    run = transform(write_lines(tmp_path / "in.jsonl", [line(r) for r in items]),
                    "--max-words", "25")
    assert run.exit_code == 0, run.stderr
    assert_accounted(run.report, run.records, 3)
    by_id = run.by_id()
    assert [r["status"] for r in by_id["g2"]] == ["ok", "ok"]
    for item_id, side in (("long-premise", "premise"), ("long-hypothesis", "hypothesis")):
        for r in by_id[item_id]:
            assert r["status"] == "skipped"
            assert r["reason"] == (f"no-parse: {side}: too long: 30 words > max_words 25 "
                                   "(not sent to ACE)")
    # the fake ACE's log shows what reached ACE: never the long sentence
    received = parse_inputs(Path(fake_env["FAKE_ACE_LOG"]))
    assert GOOD[1]["sentence1"] in received and NOTE in received
    assert not any("sunset" in s for s in received)


def test_input_control_characters(transform, tmp_path, fake_env):
    noisy = "Two doctors\u0007 perform\u0000 surgery\u2028on\u0085 patient.\u001b"
    items = [{"pairID": "ctrl", "sentence1": noisy, "sentence2": NOTE,
              "gold_label": "contradiction"}, GOOD[1]]
    raw = line(GOOD[2])[:-2] + '\x07"}'  # a raw control character inside a JSON string
    assert json.loads(line(GOOD[2])[:-2] + '"}')  # (the line is otherwise fine)
    path = write_lines(tmp_path / "in.jsonl", [line(items[0]), raw, line(items[1])])
    run = transform(path, "--on-error", "skip")
    assert run.exit_code == 0, run.stderr
    assert_accounted(run.report, run.records, 3)
    by_id = run.by_id()
    # parsed as the clean sentence, and selected by round trip despite the noise
    assert [r["status"] for r in by_id["ctrl"]] == ["ok", "ok"]
    assert by_id["ctrl"][0]["original"]["sentence1"] == noisy
    assert by_id["ctrl"][0]["sentence1"] == by_id["g2"][0]["sentence1"]
    for r in by_id["line 2"]:
        assert r["reason"].startswith("invalid-input: line 2: malformed JSON: Invalid control")
    # ACE got one clean line per item: control characters and line separators
    # became spaces, so the line protocol stayed in sync
    received = parse_inputs(Path(fake_env["FAKE_ACE_LOG"]))
    assert "Two doctors perform surgery on patient." in received
    for s in received:
        assert not any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in s), repr(s)


@pytest.mark.parametrize("on_error", ["fail", "skip"])
def test_input_invalid_utf8(transform, tmp_path, on_error):
    latin1 = '{"pairID": "latin1", "sentence1": "A man in a caf\udce9.", "sentence2": "x"}'
    column = latin1.index("\udce9") + 1
    path = write_lines(tmp_path / "in.jsonl", [line(GOOD[0]), latin1, line(GOOD[1])])
    assert b"caf\xe9." in path.read_bytes()  # a Latin-1 byte: not UTF-8
    run = transform(path, "--on-error", on_error)
    if on_error == "fail":
        assert run.exit_code == 1
        assert f"lit: error: {path}:2: invalid UTF-8 at column {column}" in run.stderr
        assert run.report is None
        return
    assert run.exit_code == 0, run.stderr
    assert_accounted(run.report, run.records, 3)
    for r in run.by_id()["line 2"]:
        assert r["reason"] == f"invalid-input: line 2: invalid UTF-8 at column {column}"
    assert [r["status"] for r in run.records if r["id"] != "line 2"] == ["ok"] * 4


def test_input_plain_text_lines(transform, tmp_path):
    """Plain text: one sentence per line; every line is an item, blank ones too."""
    path = tmp_path / "in.txt"
    path.write_bytes(b"Two doctors perform surgery on patient.\n\n  \t\ncaf\xe9 au lait\n"
                     b"Doctors are\x07 performing surgery.\r\n")
    run = transform(path, "--on-error", "skip", specs=["p", "f"])
    assert run.exit_code == 0, run.stderr
    assert_accounted(run.report, run.records, 5, specs=["p", "f"])
    assert [r["status"] for r in run.records[::2]] == ["ok", "skipped", "skipped", "skipped",
                                                       "ok"]
    assert run.records[6]["reason"] == "invalid-input: line 4: invalid UTF-8 at column 4"
    assert run.records[2]["reason"] == "invalid-input: empty line or not a sentence"


@pytest.mark.parametrize(("fmt", "on_error"), [("tsv", "skip"), ("csv", "skip"),
                                               ("tsv", "fail")])
def test_input_table_rows(transform, tmp_path, fmt, on_error):
    """TSV/CSV: a row with the wrong number of columns or invalid UTF-8."""
    sep = "\t" if fmt == "tsv" else ","
    rows = [sep.join(("sentence1", "sentence2", "gold_label"))]
    rows += [sep.join((r["sentence1"], r["sentence2"], r["gold_label"])) for r in GOOD[1:]]
    rows[2:2] = [sep.join(("A dog", "runs")), sep.join(("A caf\udce9.", "A dog.", "neutral"))]
    path = write_lines(tmp_path / f"in.{fmt}", rows)
    run = transform(path, "--on-error", on_error)
    if on_error == "fail":
        assert run.exit_code == 1
        assert f"lit: error: {path}:3: 2 columns, header has 3" in run.stderr
        assert run.report is None
        return
    assert run.exit_code == 0, run.stderr
    assert_accounted(run.report, run.records, 4)
    assert [r["reason"] for r in run.records[::2]] == [
        None, "invalid-input: line 3: 2 columns, header has 3",
        "invalid-input: line 4: invalid UTF-8 at column 6", None]


def test_input_non_english_text(transform, tmp_path, fake_env):
    foreign = {"de": "Zwei Ärzte operieren einen Patienten.", "zh": "两位医生正在给病人做手术。",
               "ar": "طبيبان يجريان عملية جراحية.", "ru": "Два врача оперируют пациента.",
               "emoji": "Two doctors 👩‍⚕️👨‍⚕️ perform surgery."}
    items = [{"pairID": k, "sentence1": v, "sentence2": NOTE, "gold_label": "neutral"}
             for k, v in foreign.items()] + [GOOD[1]]
    run = transform(write_lines(tmp_path / "in.jsonl", [line(r) for r in items]))
    assert run.exit_code == 0, run.stderr
    assert_accounted(run.report, run.records, len(items))
    by_id = run.by_id()
    for key in foreign:
        for r in by_id[key]:
            assert r["status"] == "skipped"
            assert r["reason"] == "no-parse: premise: no reading"
    assert [r["status"] for r in by_id["g2"]] == ["ok", "ok"]
    # the text reached ACE intact (UTF-8 both ways, no mojibake)
    received = parse_inputs(Path(fake_env["FAKE_ACE_LOG"]))
    assert set(foreign.values()) <= set(received)


def test_input_duplicate_ids(transform, tmp_path):
    dup = [dict(GOOD[0], pairID="dup"), dict(GOOD[1], pairID="dup"),
           dict(GOOD[1], pairID="dup")]
    run = transform(write_lines(tmp_path / "in.jsonl", [line(r) for r in dup]))
    assert run.exit_code == 0, run.stderr
    assert_accounted(run.report, run.records, 3)
    assert [r["id"] for r in run.records] == ["dup"] * 6
    assert [r["original"] for r in run.records[::2]] == dup  # each kept, in input order
    assert run.records[2:4] == run.records[4:6]  # an exact duplicate gives the same records


def test_input_crlf_line_endings(transform, tmp_path):
    lines = [line(r) for r in GOOD]
    lf = transform(write_lines(tmp_path / "lf.jsonl", lines))
    crlf_path = tmp_path / "crlf.jsonl"
    crlf_path.write_bytes(("\r\n".join(lines) + "\r\n\r\n").encode())  # + a blank CRLF line
    crlf = transform(crlf_path)
    assert lf.exit_code == crlf.exit_code == 0, crlf.stderr
    assert crlf.stdout == lf.stdout
    assert "\\r" not in crlf.stdout
    assert_accounted(crlf.report, crlf.records, len(GOOD))


@pytest.mark.parametrize("content", [
    pytest.param(b"", id="0-byte-file"),
    pytest.param(b"\n  \n\t\r\n", id="blank-lines-only"),
])
def test_input_empty_file(transform, tmp_path, content):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    run = transform(path)
    assert run.exit_code == 0, run.stderr
    assert run.stdout == ""
    assert_accounted(run.report, run.records, 0)
    assert "0 items x 2 specs: 0 ok" in run.stderr


@pytest.mark.parametrize("on_error", ["fail", "skip"])
def test_input_stdin_closed_early(tmp_path, fake_env, on_error):
    """A real `lit transform -` whose stdin pipe closes after a partial line."""
    report = tmp_path / "report.json"
    read_end, write_end = os.pipe()
    proc = subprocess.Popen(
        [*LIT, "transform", "--select", "roundtrip",
         "-r", ",".join(SPECS), "--lm", "none", "--report", str(report),
         "--on-error", on_error, "-"],
        stdin=read_end, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=subprocess_env(fake_env), cwd=tmp_path)
    os.close(read_end)
    with os.fdopen(write_end, "wb") as pipe:
        pipe.write((line(GOOD[1]) + "\n").encode())
        pipe.write(line(GOOD[2])[:40].encode())  # cut off mid-record, then closed
    stdout, stderr = proc.communicate(timeout=120)
    records = parse_jsonl(stdout.decode())
    if on_error == "fail":
        assert proc.returncode == 1
        assert "lit: error: <stdin>:2: malformed JSON" in stderr.decode()
        assert not report.exists()
        return
    assert proc.returncode == 0, stderr.decode()
    summary = json.loads(report.read_text())
    assert_accounted(summary, records, 2)
    assert [r["status"] for r in records[:2]] == ["ok", "ok"]
    for r in records[2:]:
        assert r["reason"].startswith("invalid-input: line 2: malformed JSON")


# -- ACE --------------------------------------------------------------------


@pytest.mark.parametrize("once", [
    pytest.param(False, id="killed-twice-recorded-failed"),
    pytest.param(True, id="killed-once-retry-succeeds"),
])
def test_ace_killed_mid_item(transform, tmp_path, fake_env, monkeypatch, once):
    """fake-ace dies by SIGKILL in the middle of its answer for one sentence."""
    monkeypatch.setenv("FAKE_ACE_DIE_ON", NOTE)
    if once:
        monkeypatch.setenv("FAKE_ACE_DIE_ONCE_FILE", str(tmp_path / "died-once"))
    run = transform(write_lines(tmp_path / "in.jsonl", [line(r) for r in GOOD]))
    assert run.exit_code == 0, run.stderr
    assert_accounted(run.report, run.records, len(GOOD))
    log = Path(fake_env["FAKE_ACE_LOG"])
    parsers = [e for e in events(log, "start") if e["mode"] == "parse"]
    by_id = run.by_id()
    dies = events(log, "die")
    # each death is followed by a restart (lit may run several ACE parsers: workers)
    assert {e["pid"] for e in dies} < {e["pid"] for e in parsers}
    if once:
        # then the retry on the fresh process succeeded (two workers may both have
        # died on it before the first one left the "died once" file)
        assert 1 <= len(dies) <= len(parsers) - len(dies)
        assert [r["status"] for r in run.records] == ["ok"] * 6
    else:
        # per parser process that got the sentence: the item and its one retry
        assert len(dies) % 2 == 0 and len(dies) >= 2
        for r in by_id["g1"]:
            assert r["status"] == "error"
            assert r["reason"].startswith(
                "crash: hypothesis: parse: ACE process died 2 times (exit code -9)")
        assert [r["status"] for r in by_id["g2"] + by_id["g3"]] == ["ok"] * 4
    assert run.report["specs"]["f;p"]["error"] == (0 if once else 1)


@pytest.mark.parametrize("via", ["cli", "api"])
def test_ace_hang_watchdog_kills_and_restarts(transform, tmp_path, fake_env, monkeypatch, via):
    """fake-ace hangs on one sentence; the watchdog kills it; the run goes on."""
    monkeypatch.setenv("FAKE_ACE_HANG_ON", NOTE)
    if via == "cli":
        run = transform(write_lines(tmp_path / "in.jsonl", [line(r) for r in GOOD]),
                        "--watchdog", "2", "--timeout", "1")
        assert run.exit_code == 0, run.stderr
        records, report = run.records, run.report
    else:
        rep = Report()
        with Transformer("erg-1214", home=fake_env["LIT_HOME"], env=dict(os.environ),
                         select="roundtrip",
                         ace_options={"watchdog": 2.0, "timeout": 1}) as t:
            records = list(augment_nli(GOOD, ",".join(SPECS), transformer=t,
                                       include_skipped=True, report=rep))
        report = rep.to_dict()
    assert_accounted(report, records, len(GOOD))
    for r in records[:2]:
        assert r["status"] == "error"
        # killed at 2 s, retried once with the limits doubled, killed at 4 s
        assert r["reason"] == ("timeout: hypothesis: parse: ACE timed out after 4 s "
                               "(watchdog); process restarted")
    assert [r["status"] for r in records[2:]] == ["ok"] * 4
    log = Path(fake_env["FAKE_ACE_LOG"])
    hangs = events(log, "hang")
    assert hangs
    parsers = {e["pid"] for e in events(log, "start") if e["mode"] == "parse"}
    assert {e["pid"] for e in hangs} < parsers  # each hung process was replaced


@pytest.mark.parametrize("fault", [
    pytest.param("bad-image", id="bad-image"),
    pytest.param("1", id="exit-status-at-start"),
    pytest.param("on-input", id="exit-on-first-input"),
])
def test_ace_exits_at_start_names_the_image(transform, tmp_path, fake_env, monkeypatch, fault):
    image = Path(fake_env["LIT_GRAMMAR_ERG_1214"])
    if fault == "bad-image":
        image = tmp_path / "not-an-image.dat"
        image.write_bytes(b"\x00garbage\n")
        monkeypatch.setenv("LIT_GRAMMAR_ERG_1214", str(image))
    else:
        monkeypatch.setenv("FAKE_ACE_EXIT_AT_START", fault)
    run = transform(write_lines(tmp_path / "in.jsonl", [line(r) for r in GOOD]))
    assert run.exit_code == 1
    assert run.stderr.startswith("lit: error: ACE exited at start")
    assert f"with grammar image {image}" in run.stderr
    assert "Traceback" not in run.stderr
    assert run.records == [] and run.report is None


@pytest.mark.parametrize("case", ["LIT_ACE-names-no-file", "no-ace-on-PATH",
                                  "registered-ace-deleted"])
def test_ace_missing_points_to_lit_grammar(transform, tmp_path, fake_env, monkeypatch, case):
    if case == "LIT_ACE-names-no-file":
        monkeypatch.setenv("LIT_ACE", str(tmp_path / "nowhere" / "ace"))
        expected = f"LIT_ACE={tmp_path / 'nowhere' / 'ace'}: no such ACE binary"
    elif case == "no-ace-on-PATH":
        monkeypatch.delenv("LIT_ACE")
        empty = tmp_path / "empty-bin"
        empty.mkdir()
        monkeypatch.setenv("PATH", str(empty))
        expected = "ACE binary 'ace' not found on PATH"
    else:
        ace, image = fake_ace(tmp_path / "registered")
        monkeypatch.delenv("LIT_ACE")
        monkeypatch.delenv("LIT_GRAMMAR_ERG_1214")
        added = CliRunner().invoke(app, ["grammar", "add", "erg-1214", "--image", str(image),
                                         "--ace", str(ace)])
        assert added.exit_code == 0, added.stderr
        ace.unlink()
        expected = f"the ACE binary of grammar erg-1214 registered at {ace} is missing"
    run = transform(write_lines(tmp_path / "in.jsonl", [line(r) for r in GOOD]))
    assert run.exit_code == 1
    assert expected in run.stderr
    assert "`lit grammar install " in run.stderr and "`lit grammar add " in run.stderr
    assert run.records == [] and run.report is None


def test_ace_grammar_checksum_mismatch(transform, tmp_path, fake_env, monkeypatch):
    ace, image = fake_ace(tmp_path / "registered")
    monkeypatch.delenv("LIT_ACE")
    monkeypatch.delenv("LIT_GRAMMAR_ERG_1214")
    added = CliRunner().invoke(app, ["grammar", "add", "erg-1214", "--image", str(image),
                                     "--ace", str(ace)])
    assert added.exit_code == 0, added.stderr
    path = write_lines(tmp_path / "in.jsonl", [line(r) for r in GOOD])
    before = transform(path)  # the registered grammar works
    assert before.exit_code == 0, before.stderr
    assert_accounted(before.report, before.records, len(GOOD))
    starts = len(events(Path(fake_env["FAKE_ACE_LOG"]), "start"))

    with open(image, "a", encoding="utf-8") as f:
        f.write(" \n")  # still a valid fake image: only the checksum tells
    run = transform(path)
    assert run.exit_code == 1
    assert ("lit: error: the image of grammar erg-1214 changed since it was registered "
            "(added ") in run.stderr
    assert f"{image} has sha256 " in run.stderr
    assert "`lit grammar install erg-1214 --force`" in run.stderr
    assert "`lit grammar add erg-1214 --image PATH --ace PATH`" in run.stderr
    assert run.records == [] and run.report is None
    # refused before any work: no ACE process was started
    assert len(events(Path(fake_env["FAKE_ACE_LOG"]), "start")) == starts


# -- reranker ---------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory) -> Path:
    from test_rerank import build_tiny_gpt2

    return build_tiny_gpt2(tmp_path_factory.mktemp("lm") / "tiny-gpt2")


@pytest.mark.parametrize(("name", "expected"), [
    pytest.param("no-such-model", "language model not found: {path} is not a directory or "
                 "file; pass a local model directory, a .gguf file, a Hugging Face model id, "
                 "or --lm none", id="model-directory-missing"),
    pytest.param("model.gguf", "GGUF model file not found: {path}", id="gguf-file-missing"),
])
def test_reranker_model_path_missing(transform, tmp_path, fake_env, name, expected):
    path = tmp_path / name
    run = transform(write_lines(tmp_path / "in.jsonl", [line(r) for r in GOOD]),
                    lm=str(path))
    assert run.exit_code == 1
    assert run.stderr.startswith("lit: error: " + expected.format(path=path))
    assert run.records == [] and run.report is None
    # the ACE processes started for the run were stopped
    log = Path(fake_env["FAKE_ACE_LOG"])
    assert len(events(log, "start")) == len(events(log, "exit"))


class _NoRealization:
    """Wraps a generator: transformed MRSs (index not in the present tense) with
    predicate *pred* realize as nothing, as the grammar may answer."""

    def __init__(self, generator: Any, pred: str) -> None:
        self.generator, self.pred = generator, pred

    def generate(self, m: Any) -> Any:
        from delphin.codecs import simplemrs

        from lit.interface import GenerationResult

        if isinstance(m, str):
            m = simplemrs.decode(m)
        tense = m.variables.get(m.index, {}).get("TENSE")
        if tense != "pres" and any(ep.predicate == self.pred for ep in m.rels):
            return GenerationResult(simplemrs.encode(m, lnk=False), (), None)
        return self.generator.generate(m)


def _count_forward(monkeypatch, lm, limit: int | None = None) -> list[int]:
    """Count the model's forward passes (batch sizes); OOM above *limit*."""
    import torch

    sizes: list[int] = []
    forward = lm._model.forward

    def patched(*args: Any, **kwargs: Any) -> Any:
        batch = kwargs["input_ids"].shape[0]
        if limit is not None and batch > limit:
            raise torch.OutOfMemoryError(f"CUDA out of memory (injected: batch {batch})")
        sizes.append(batch)
        return forward(*args, **kwargs)

    monkeypatch.setattr(lm._model, "forward", patched)
    return sizes


def _replay_transformer(lm: Any, generator: Any = None) -> Transformer:
    from replay import ReplayGenerator, ReplayParser

    return Transformer("erg-1214", parser=ReplayParser(),
                       generator=generator or ReplayGenerator(), reranker=lm, candidates=3,
                       select="roundtrip")


def test_reranker_empty_candidate_list(tiny_lm, monkeypatch):
    from replay import ReplayGenerator

    from lit.rerank import Reranker

    with Reranker(tiny_lm, device="cpu", batch_size=4) as lm:
        sizes = _count_forward(monkeypatch, lm)
        assert lm.score([]) == [] and lm.rerank([]) == []
        assert lm.rerank_groups([[], []]) == [[], []]
        assert sizes == []  # no model call for nothing
        groups = lm.rerank_groups([[], ["Two doctors perform surgery."], []])
        assert [len(g) for g in groups] == [0, 1, 0] and len(sizes) == 1
        # in the pipeline: a side whose MRS the grammar realizes as nothing is a
        # counted no-realization skip, and the LM scores only the others
        report = Report()
        generator = _NoRealization(ReplayGenerator(), "_note_n_1")
        with _replay_transformer(lm, generator) as t:
            records = list(augment_nli(GOOD, ",".join(SPECS), transformer=t,
                                       include_skipped=True, report=report))
    assert_accounted(report.to_dict(), records, len(GOOD))
    for r in records[:2]:
        assert r["reason"] == "no-realization: hypothesis: the grammar realizes nothing"
    assert [r["status"] for r in records[2:]] == ["ok"] * 4


def test_reranker_out_of_memory_falls_back_to_smaller_batches(tiny_lm, monkeypatch):
    from lit.rerank import Reranker

    sentences = ["Two doctors perform surgery.", "A man is waiting.", "The dog chased the cat.",
                 "Two women are embracing.", "A woman is playing the piano.", "A dog."]
    with Reranker(tiny_lm, device="cpu", batch_size=8) as lm:
        expected = lm.score(sentences)
        with _replay_transformer(lm) as t:
            unpatched = list(t.transform_pairs(GOOD, ",".join(SPECS)))
    with Reranker(tiny_lm, device="cpu", batch_size=8) as lm:
        sizes = _count_forward(monkeypatch, lm, limit=2)  # OOM for batches above 2
        assert lm.score(sentences) == pytest.approx(expected, rel=1e-5)
        assert lm.batch_size == 2 and set(sizes) == {2}
        report = Report()
        with _replay_transformer(lm) as t:
            records = list(augment_nli(GOOD, ",".join(SPECS), transformer=t,
                                       include_skipped=True, report=report))
    assert_accounted(report.to_dict(), records, len(GOOD))
    assert [r["status"] for r in records] == ["ok"] * 6
    # the same choices as without the OOM, and the same scores up to float noise
    assert _without_scores(records) == _without_scores(unpatched)
    assert _scores(records) == pytest.approx(_scores(unpatched), rel=1e-5)


def _without_scores(records: list[dict[str, Any]]) -> str:
    text = json.dumps(records)
    for score in _scores(records):
        text = text.replace(repr(score), "SCORE")
    return text


def _scores(records: list[dict[str, Any]]) -> list[float]:
    return [c["score"] for r in records for side in ("premise", "hypothesis")
            for c in r[side]["candidates"]]


def test_reranker_out_of_memory_with_one_sentence_is_a_clear_error(tiny_lm, monkeypatch):
    from lit.rerank import Reranker

    with Reranker(tiny_lm, device="cpu", batch_size=4) as lm:
        _count_forward(monkeypatch, lm, limit=0)
        with pytest.raises(RerankError, match=r"out of memory scoring a single \d+-token "
                                              r"sentence on cpu; .* or --lm none"):
            lm.score(["Two doctors perform surgery.", "A dog."])


# -- process ----------------------------------------------------------------


@pytest.mark.parametrize("target", ["stdout", "output-file", "report"])
def test_process_disk_full_is_an_error(tmp_path, fake_env, target):
    """Writing to /dev/full (ENOSPC on every write) fails loudly, not silently."""
    path = write_lines(tmp_path / "in.jsonl", [line(r) for r in GOOD])
    report = "/dev/full" if target == "report" else str(tmp_path / "report.json")
    out = tmp_path / "out.jsonl"
    args = ["-o", "/dev/full"] if target == "output-file" else []
    with open("/dev/full" if target == "stdout" else out, "w") as stdout:
        proc = subprocess.run(
            [*LIT, "transform", "--select", "roundtrip",
         "-r", ",".join(SPECS), "--lm", "none", "--report", report,
             *args, str(path)], stdout=stdout, stderr=subprocess.PIPE,
            env=subprocess_env(fake_env), timeout=120, check=False)
    stderr = proc.stderr.decode()
    assert proc.returncode == 1, stderr
    assert "Traceback" not in stderr
    if target != "report":
        name = "<stdout>" if target == "stdout" else "/dev/full"
        assert stderr.startswith(f"lit: error: cannot write output to {name}: No space left "
                                 "on device; 0 complete records were written"), stderr
        assert not Path(report).exists()
    else:
        assert stderr.startswith("lit: error: cannot write report /dev/full: No space left")
        assert_accounted_file(out, len(GOOD))


def _interrupt_items() -> list[dict[str, Any]]:
    """70 pairs: the first chunk (64) transforms, the hang is in the second chunk.

    Ids repeat, so that resuming must tell the items apart: "dup" once in
    each chunk, "dup2" twice in the first.
    """
    items = [dict(GOOD[i % 3], pairID=f"i{i}") for i in range(70)]
    items[10]["pairID"] = items[67]["pairID"] = "dup"
    items[3]["pairID"] = items[20]["pairID"] = "dup2"
    items[66] = {"pairID": "hangs", "sentence1": GOOD[1]["sentence1"],
                 "sentence2": "Two surgeons are having lunch today.", "gold_label": "neutral"}
    return items


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_process_interrupted_run_resumes_exactly_once(transform, tmp_path, fake_env, sig):
    """Interrupt a real `lit transform -o FILE` mid-run, then finish it with --resume.

    The run is stopped at a known point without timing: fake-ace hangs on a
    sentence of the second chunk of 64 items (lit's watchdog would wait 30
    s), so the output holds exactly the first chunk's records when the
    signal arrives. SIGINT goes to the whole process group, as Ctrl-C in a
    terminal; SIGKILL to lit alone, as `kill -9 PID`.
    """
    items = _interrupt_items()
    path = write_lines(tmp_path / "in.jsonl", [line(r) for r in items])
    out = tmp_path / "out.jsonl"
    first_chunk = 64 * len(SPECS)
    with open(tmp_path / "stderr.txt", "wb") as err:
        proc = subprocess.Popen(
            [*LIT, "transform", "--select", "roundtrip",
         "-r", ",".join(SPECS), "--lm", "none", "-o", str(out),
             str(path)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
            env=subprocess_env(fake_env, FAKE_ACE_HANG_ON="lunch today"), cwd=tmp_path,
            start_new_session=True)
        try:
            _wait_for_lines(out, first_chunk, proc)
            if sig == signal.SIGINT:
                os.killpg(proc.pid, signal.SIGINT)
            else:
                proc.send_signal(signal.SIGKILL)
            code = proc.wait(timeout=60)
        finally:
            _kill_group(proc)
    stderr = (tmp_path / "stderr.txt").read_text(errors="replace")
    if sig == signal.SIGINT:
        assert code == 130, stderr
        assert "lit: interrupted" in stderr and "Traceback" not in stderr
    else:
        assert code == -signal.SIGKILL
    # valid JSONL so far: whole lines only, the records of the first chunk
    before = parse_jsonl(out.read_text(encoding="utf-8"))
    assert len(before) == first_chunk
    assert [r["original"] for r in before[::2]] == items[:64]
    if sig == signal.SIGKILL:
        with open(out, "a", encoding="utf-8") as f:  # as a kill in the middle of a write
            f.write(line(before[0])[:50])

    run = transform(path, "-o", str(out), "--resume")
    assert run.exit_code == 0, run.stderr
    assert f"resuming: {first_chunk} records already in {out}" in run.stderr
    assert run.stdout == ""
    records = parse_jsonl(out.read_text(encoding="utf-8"))
    # every input exactly once (duplicate ids included), in input order
    assert [r["spec"] for r in records] == SPECS * len(items)
    assert [r["original"] for r in records[::2]] == items
    assert [r["original"] for r in records[1::2]] == items
    assert records[:first_chunk] == before
    # the resumed run's report accounts for the rest
    new = records[first_chunk:]
    assert_accounted(run.report, new, len(items) - 64)
    hangs = [r for r in new if r["id"] == "hangs"]
    assert [r["reason"] for r in hangs] == ["no-parse: hypothesis: no reading"] * 2


def _wait_for_lines(path: Path, n: int, proc: subprocess.Popen[bytes]) -> None:
    """Wait until *path* has *n* lines (fails if *proc* ends first, or after 120 s)."""
    import time

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= n:
            return
        if proc.poll() is not None:
            pytest.fail(f"lit ended (exit code {proc.returncode}) before writing {n} lines")
        time.sleep(0.05)
    pytest.fail(f"lit wrote fewer than {n} lines to {path} in 120 s")


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop what is left of the process group the test started (workers, ACE)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=60)


def assert_accounted_file(path: Path, n_items: int) -> list[dict[str, Any]]:
    """The output file holds exactly one complete record per (item, spec)."""
    records = parse_jsonl(path.read_text(encoding="utf-8"))
    assert [r["spec"] for r in records] == SPECS * n_items
    return records


# -- real ACE (skipped without LIT_ACE and LIT_GRAMMAR_ERG_1214) ------------

DOG = "Doctors are performing surgery."  # parsed by ERG 1214 (and in the recording)


@pytest.mark.ace
def test_real_ace_transform_accounting(tmp_path, lit_home):
    """`lit transform` with real ACE and ERG 1214 on the good items and bad input."""
    ace, image = real_ace("erg-1214")
    items = [line(r) for r in GOOD] + ['{"sentence1": "A dog', line(dict(GOOD[0], sentence2=""))]
    path = write_lines(tmp_path / "in.jsonl", items)
    report = tmp_path / "report.json"
    result = CliRunner().invoke(
        app, ["transform", "--select", "roundtrip",
              "-r", ",".join(SPECS), "--lm", "none", "--report", str(report),
              "--on-error", "skip", "--max-words", "12", str(path)],
        env={"LIT_ACE": str(ace), "LIT_GRAMMAR_ERG_1214": str(image)}, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    records = parse_jsonl(result.stdout)
    assert_accounted(json.loads(report.read_text()), records, len(items))


@pytest.mark.ace
def test_real_ace_killed_between_items_restarts():
    from lit.ace import AceParser

    ace, image = real_ace("erg-1214")
    # a persistent process (fresh=False): in fresh mode the next item gets a new one anyway
    with AceParser(image, executable=ace, watchdog=60, fresh=False) as parser:
        assert parser.parse(DOG).readings
        os.kill(parser._proc._p.pid, signal.SIGKILL)
        parser._proc._p.wait()
        after = parser.parse(DOG)
    assert after.error is None and after.readings
    assert parser.restarts == 1


@pytest.mark.ace
def test_real_ace_hang_watchdog():
    """A stopped ACE (SIGSTOP) never answers: the watchdog kills it and restarts."""
    from lit.ace import AceParser

    ace, image = real_ace("erg-1214")
    with AceParser(image, executable=ace, watchdog=2.0, fresh=False,
                   timeout_retries=0) as parser:
        assert parser.parse(DOG).readings
        os.kill(parser._proc._p.pid, signal.SIGSTOP)
        hung = parser.parse(DOG)
        after = parser.parse(DOG)
    assert hung.error is not None and "watchdog" in hung.error and hung.transient
    assert after.error is None and after.readings
    assert parser.restarts == 1


@pytest.mark.ace
def test_real_ace_bad_image(tmp_path):
    from lit.ace import AceParser

    ace, _ = real_ace("erg-1214")
    image = tmp_path / "not-an-image.dat"
    image.write_bytes(b"\x00garbage\n" * 100)
    with pytest.raises(ACEError, match="ACE exited at start .*with grammar image "
                                       + re.escape(str(image))):
        with AceParser(image, executable=ace) as parser:
            parser.parse(DOG)


@pytest.mark.ace
def test_real_ace_checksum_mismatch(tmp_path):
    from lit.grammar import resolve_grammar
    from lit.install import add_grammar

    ace, image = real_ace("erg-1214")
    copy = tmp_path / "erg-1214.dat"
    shutil.copyfile(image, copy)
    home = tmp_path / "home"
    home.mkdir()
    add_grammar("erg-1214", copy, ace, home=home)
    assert resolve_grammar("erg-1214", home=home).image == copy
    with open(copy, "ab") as f:
        f.write(b"\x00")
    with pytest.raises(ChecksumError, match="changed since it was registered"):
        resolve_grammar("erg-1214", home=home)
