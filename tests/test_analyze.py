"""lit.analyze and `lit analyze`: phenomena of parsed sentences on recorded ERG output.

Counts are checked against an independent count made here with regular
expressions over the SimpleMRS strings (INDEX properties, EPs anchored on
the INDEX event), not with pydelphin.
"""

from __future__ import annotations

import io
import json
import os
import re
import struct
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import recorded, snli_sample_path
from delphin.codecs import simplemrs
from typer.testing import CliRunner

from lit.analyze import (
    Analysis,
    analyze_parsed,
    analyze_sentences,
    features,
    plot_analysis,
    read_input,
)
from lit.cli import app
from lit.errors import InputError
from lit.interface import ParseResult, Reading
from lit.mrs import index_ep

GRAMMARS = ["erg-1214", "erg-2018"]
TENSE = {"past": "past", "pres": "present", "fut": "future"}


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    from PIL import Image

    with Image.open(path) as im:
        assert im.size == (width, height) and width > 100 and height > 100


def chosen_mrs(row: dict) -> str:
    selected = row["selected"] if row["selected"] is not None else 0
    return row["readings"][selected]["mrs"]


def independent_counts(rows) -> Counter:
    c: Counter = Counter()
    for row in rows:
        c["sentences"] += 1
        if not row["readings"]:
            c["skipped" if (row["error"] or "").startswith("skipped") else "no-parse"] += 1
            continue
        c["parsed"] += 1
        c["selected" if row["selected"] is not None else "first"] += 1
        mrs = chosen_mrs(row)
        index, block = re.search(r"INDEX: (e\d+) \[ e ([^\]]*)\]", mrs).groups()
        props = dict(re.findall(r"(\w+): (\S+)", block))
        c["tense:" + TENSE.get(props.get("TENSE", ""), "untensed")] += 1
        c["progressive"] += props.get("PROG") == "+"
        c["perfect"] += props.get("PERF") == "+"
        c["question"] += props.get("SF") == "ques"
        parg = rf"parg_d<\d+:\d+> LBL: h\d+ ARG0: e\d+(?: \[[^\]]*\])? ARG1: {index}\b"
        topic = rf"ICONS: <[^>]*\b{index} topic "
        c["passive"] += bool(re.search(parg, mrs) or re.search(topic, mrs))
        c["negation"] += bool(re.search(r"\[ neg<", mrs)) and "unknown<" not in mrs
        c["modality"] += "_v_modal<" in mrs
        c["cleft"] += "_v_itcleft<" in mrs
    return c


@pytest.mark.parametrize("grammar", GRAMMARS)
def test_counts_on_recorded_readings(grammar):
    rows = recorded(grammar, "readings")
    expected = independent_counts(rows)
    a = analyze_parsed(rows)
    assert a.sentences == expected["sentences"] == 300
    assert a.parsed == expected["parsed"] == {"erg-1214": 253, "erg-2018": 245}[grammar]
    assert a.not_parsed == {"no-parse": expected["no-parse"], "skipped": 5}
    assert a.reading == {"selected": expected["selected"], "first": expected["first"]}
    assert a.reading["selected"] == {"erg-1214": 142, "erg-2018": 102}[grammar]
    assert a.tense == {t: expected["tense:" + t] for t in ("past", "present", "future",
                                                           "untensed")}
    assert sum(a.tense.values()) == a.parsed
    for flag in ("progressive", "perfect", "question", "passive", "negation", "modality",
                 "cleft"):
        assert a.flags[flag] == expected[flag], flag
    # the data has some of these, so the comparison above is not vacuous
    assert a.flags["progressive"] > 50 and a.flags["passive"] == 3 and a.tense["past"] > 0


# rule of ../shared/erg transforms -> what analysing its output MRS must show
EXPECT = {
    "past": lambda f: f.tense == "past",
    "present": lambda f: f.tense == "present",
    "future": lambda f: f.tense == "future",
    "progressive": lambda f: f.progressive,
    "perfect": lambda f: f.perfect,
    "may": lambda f: f.modality and f.tense == "present",
    "negation": lambda f: f.negation,
    "question": lambda f: f.question,
    "itcleft_arg1": lambda f: f.cleft,
    "itcleft_arg2": lambda f: f.cleft and f.passive,
    "passive": lambda f: f.passive,
    "swap": lambda f: True,
    "future+itcleft_arg1": lambda f: f.cleft and f.tense == "present",
    "past+passive": lambda f: f.passive and f.tense == "past",
    "may+passive": lambda f: f.passive and f.modality,
    "negation+itcleft_arg1": lambda f: f.negation and f.cleft,
}
FLAGS = ("progressive", "perfect", "modality", "negation", "passive", "cleft", "question")


@pytest.mark.parametrize("grammar", GRAMMARS)
def test_every_rule_edit_is_recognised(grammar):
    """Both passive conventions (parg_d, ICONS topic), modals, clefts, negation."""
    seen: Counter = Counter()
    for row in recorded(grammar, "transforms"):
        if not row["applicable"]:
            continue
        before = features(simplemrs.decode(row["input_mrs"]))
        after = features(simplemrs.decode(row["output_mrs"]))
        assert EXPECT[row["rule"]](after), (row["rule"], row["sentence"], after)
        changed = {flag for flag in FLAGS if getattr(after, flag) != getattr(before, flag)}
        if row["rule"] in ("past", "present", "future", "swap"):
            assert changed == set(), (row["rule"], row["sentence"])
        elif row["rule"] in ("negation", "question"):
            assert changed == {row["rule"]}
        seen[row["rule"]] += 1
    assert seen["negation"] > 90 and seen["passive"] > 50 and seen["may"] > 90
    if grammar == "erg-1214":
        assert seen["itcleft_arg2"] > 50


def test_features_of_a_modal_negated_progressive():
    # "The dog may not be sleeping." (hand-written, ERG 1214 style)
    m = simplemrs.decode(
        "[ TOP: h0 INDEX: e2 [ e SF: prop TENSE: pres PROG: - PERF: - ] RELS: < "
        "[ _the_q LBL: h4 ARG0: x3 [ x PERS: 3 NUM: sg ] RSTR: h5 BODY: h6 ] "
        "[ _dog_n_1 LBL: h7 ARG0: x3 ] "
        "[ _may_v_modal LBL: h1 ARG0: e2 ARG1: h8 ] "
        "[ neg LBL: h9 ARG0: e10 [ e TENSE: untensed ] ARG1: h11 ] "
        "[ _sleep_v_1 LBL: h12 ARG0: e13 [ e TENSE: untensed PROG: + PERF: - ] ARG1: x3 ] > "
        "HCONS: < h0 qeq h1 h5 qeq h7 h8 qeq h9 h11 qeq h12 > ]"
    )
    assert index_ep(m).predicate == "_may_v_modal"
    f = features(m)
    assert (f.tense, f.modality, f.negation, f.progressive, f.perfect, f.passive) == (
        "present", True, True, True, False, False)


def parse_row(sentence, mrs=None, selected=None, error=None):
    readings = [{"mrs": mrs}] if mrs else []
    return {"sentence": sentence, "readings": readings, "selected": selected, "error": error}


def test_reasons_duplicates_and_bad_readings(caplog):
    mrs = recorded("erg-1214", "readings")[0]["readings"][0]["mrs"]
    rows = [
        parse_row("a", mrs),
        parse_row("a", mrs),                          # duplicate
        parse_row("b", None, error=None),             # no parse
        parse_row("c", None, error="skipped: 30 tokens > 25"),
        parse_row("d", None, error="ACE timed out"),
        parse_row("e", "[ this is not an MRS"),       # counted, with a warning
    ]
    a = analyze_parsed(rows)
    assert (a.sentences, a.parsed, a.duplicates) == (5, 1, 1)
    assert a.not_parsed == {"no-parse": 1, "skipped": 1, "error": 1, "bad-mrs": 1}
    assert "record 6: cannot decode the MRS" in caplog.text
    assert analyze_parsed(rows, dedupe=False).sentences == 6
    d = a.to_dict()
    assert d["not_parsed"]["total"] == 4 and d["not_parsed_share"] == 4 / 5
    assert Analysis(**{k: v for k, v in vars_of(a).items()}) == a
    with pytest.raises(InputError, match="record 1: 'selected' is 3 but there are 1 readings"):
        analyze_parsed([parse_row("x", mrs, selected=3)])


def vars_of(a: Analysis) -> dict:
    return {k: getattr(a, k) for k in Analysis.__slots__}  # type: ignore[attr-defined]


class ReplayParser:
    """Test double for lit.ace.AceParser (ACE is not available here): replays
    the recorded ERG 1214 readings of ../shared/erg."""

    def __init__(self):
        self.rows = {r["sentence"]: r for r in recorded("erg-1214", "readings")}
        self.calls = 0

    def parse(self, sentence):
        self.calls += 1
        row = self.rows[sentence]
        return ParseResult(sentence, tuple(Reading(r["mrs"]) for r in row["readings"]),
                           row["error"] if not row["readings"] and row["error"] != "no parse"
                           else None)


def test_raw_dataset_is_parsed_with_the_parser():
    path = snli_sample_path()
    kind, sentences = read_input(path)
    assert kind == "sentences"
    parser = ReplayParser()
    known = [s for s in sentences if s in parser.rows]
    a = analyze_sentences(known, parser)
    # each distinct sentence parsed once; the first reading is analysed
    assert parser.calls == a.sentences == len(set(known)) == 300
    assert a.duplicates == len(known) - 300
    first = [dict(r, selected=None) for r in recorded("erg-1214", "readings")]
    expected = analyze_parsed(first)
    assert (a.parsed, a.tense, a.flags) == (expected.parsed, expected.tense, expected.flags)
    assert a.not_parsed == {"no-parse": 42, "skipped": 5}
    assert a.reading == {"first": 253}


def test_read_input_kinds(tmp_path):
    kind, items = read_input(io.StringIO("\nDogs bark.\n\n  Cats sleep. \n"))
    assert (kind, list(items)) == ("sentences", ["Dogs bark.", "Cats sleep."])
    snli = '{"sentence1": "A", "sentence2": "B", "gold_label": "neutral"}\n{"sentence": "C"}\n'
    kind, items = read_input(io.StringIO(snli))
    assert (kind, list(items)) == ("sentences", ["A", "B", "C"])
    kind, items = read_input(io.StringIO(snli), fields=("sentence2",))
    assert list(items) == ["B", "C"]
    parsed = '\n{"sentence": "A", "readings": [], "selected": null, "error": null}\n'
    kind, items = read_input(io.StringIO(parsed))
    assert kind == "parsed" and [n for n, _ in items] == [2]
    path = tmp_path / "bad.jsonl"
    path.write_text('{"sentence1": "A", "sentence2": "B"}\n{"premise": "C"}\n')
    kind, items = read_input(path)
    with pytest.raises(InputError, match=r"bad.jsonl:2: no sentence field"):
        list(items)
    path.write_text('{"sentence": "A"}\n{"sentence": \n')
    with pytest.raises(InputError, match=r"bad.jsonl:2: malformed JSON"):
        list(read_input(path)[1])


def test_plot(tmp_path):
    plot_analysis(analyze_parsed(recorded("erg-2018", "readings")), tmp_path / "a.png")
    assert_png(tmp_path / "a.png")


# -- CLI ---------------------------------------------------------------------------


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def readings_path(tmp_path, grammar):
    path = tmp_path / f"{grammar}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recorded(grammar, "readings")))
    return path


def test_cli_json_and_plot(tmp_path):
    path = readings_path(tmp_path, "erg-2018")
    result = invoke("analyze", str(path), "--json", "--plot", str(tmp_path / "p.png"))
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out == analyze_parsed(recorded("erg-2018", "readings")).to_dict()
    assert out["parsed"] == 245 and out["not_parsed"]["total"] == 55
    assert "Phenomena in parsed sentences" in result.stderr  # the table
    assert "300 sentences, 245 parsed, 55 not parsed" in result.stderr
    assert_png(tmp_path / "p.png")


def test_cli_table(tmp_path):
    path = readings_path(tmp_path, "erg-1214")
    result = invoke("-q", "analyze", str(path))
    assert result.exit_code == 0, result.stderr
    rows = {tuple(c.strip() for c in line.split("│")[1:-1])
            for line in result.stdout.splitlines() if line.startswith("│")}
    a = analyze_parsed(recorded("erg-1214", "readings"))
    assert ("tense", "past", str(a.tense["past"]), f"{100 * a.tense['past'] / 253:.1f}") in rows
    assert ("aspect", "progressive", "82", f"{100 * 82 / 253:.1f}") in rows
    assert ("parse", "not parsed", "47", f"{100 * 47 / 300:.1f}") in rows
    assert result.stderr == ""


def test_cli_raw_input_needs_an_installed_grammar(tmp_path, lit_home):
    path = tmp_path / "s.txt"
    path.write_text("Dogs bark.\n")
    for args in ([], ["--grammar", "erg-2018"]):
        result = invoke("analyze", str(path), *args)
        assert result.exit_code == 1
        assert result.stderr.startswith("lit: error: grammar erg-")
        assert "is not installed" in result.stderr and "lit grammar install" in result.stderr


def test_cli_raw_text_parsed_with_fake_ace(tmp_path, lit_home, monkeypatch):
    """`lit analyze -g erg-1214` on raw text starts ACE; here that is tests/fake_ace.py,
    a test double for ACE (not obtainable here) replaying the recorded ERG 1214 output."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from fake_ace_support import fake_ace_env

    for var in list(os.environ):
        if var.startswith("FAKE_ACE_"):
            monkeypatch.delenv(var)
    for key, value in fake_ace_env(tmp_path / "fake", "erg-1214").items():
        monkeypatch.setenv(key, value)
    rows = recorded("erg-1214", "readings")[:40]
    text = tmp_path / "sentences.txt"
    text.write_text("".join(r["sentence"] + "\n" for r in rows + rows[:3]))  # 3 repeats
    result = invoke("analyze", "-g", "erg-1214", str(text), "--json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    expected = analyze_parsed([dict(r, selected=None) for r in rows])  # first readings
    assert (out["sentences"], out["duplicates"]) == (40, 3)
    assert (out["parsed"], out["tense"]) == (expected.parsed, expected.tense)
    assert out["phenomena"] == expected.flags
    assert out["not_parsed"]["total"] == 40 - expected.parsed
    assert out["reading"] == {"first": expected.parsed}
