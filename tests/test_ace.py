"""lit.ace: the ACE process layer.

ACE itself cannot be obtained here, so most tests run the stand-in
``tests/fake_ace.py`` (a test double that speaks ACE's stdin/stdout protocol
and replays recorded ERG output) as a real subprocess; the fault tests
(hang, crash, stderr flood, bad image) use its fault-injection variables.
Tests marked ``ace`` do the same against a real ACE and ERG 1214 image and
are skipped unless ``LIT_ACE`` and ``LIT_GRAMMAR_ERG_1214`` are set.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path

import pytest
from conftest import real_ace, recorded

from lit.ace import AceGenerator, AceParser, generate_from_iterable, parse_from_iterable
from lit.errors import ACEError, LitError
from lit.interface import GenerationResult, Generator, Parser, ParseResult, Reading
from lit.parse import select, select_reading, surface_key

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_ace_support import fake_ace, read_log  # noqa: E402

SENTENCE = "A woman is walking her dog."  # recorded, selected reading 0
MANY = "A white dog with long hair jumps to catch a red and green toy."  # 10 readings


def _row(sentence: str) -> dict:
    return next(r for r in recorded("erg-1214", "readings") if r["sentence"] == sentence)


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """(executable, image, log path) of fake-ace for erg-1214."""
    ace, image = fake_ace(tmp_path / "fake", "erg-1214")
    log = tmp_path / "fake-ace.log"
    monkeypatch.setenv("FAKE_ACE_LOG", str(log))
    for var in list(os.environ):
        if var.startswith("FAKE_ACE_") and var != "FAKE_ACE_LOG":
            monkeypatch.delenv(var)
    return ace, image, log


def _starts(log: Path) -> list[dict]:
    return [e for e in read_log(log) if e["event"] == "start"]


# -- records ------------------------------------------------------------------


def test_records_round_trip_through_dicts():
    reading = Reading("[ TOP: h0 ]", "(1 x 0 0 1 (\"x\"))", "(S x)")
    result = ParseResult("Dogs bark.", (reading,), None)
    assert ParseResult.from_dict(result.to_dict()) == result
    gen = GenerationResult("[ TOP: h0 ]", ("Dogs bark.", "Dogs bark."), None)
    assert GenerationResult.from_dict(gen.to_dict()) == gen
    assert gen.to_dict()["surfaces"] == ["Dogs bark.", "Dogs bark."]
    with pytest.raises(AttributeError):
        result.error = "x"  # type: ignore[misc]


def test_protocols_accept_any_backend():
    class Echo:
        def parse(self, sentence):
            return ParseResult(sentence)

        def generate(self, mrs):
            return GenerationResult(str(mrs))

    assert isinstance(Echo(), Parser)
    assert isinstance(Echo(), Generator)


# -- parsing --------------------------------------------------------------------


def test_parse_returns_recorded_readings(fake):
    ace, image, log = fake
    row = _row(SENTENCE)
    with AceParser(image, executable=ace, n=10) as parser:
        result = parser.parse(SENTENCE)
    assert result.error is None
    assert [r.mrs for r in result.readings] == [r["mrs"] for r in row["readings"]]
    assert result.readings[0].derivation and result.readings[0].tree


def test_n_best_limits_readings(fake):
    ace, image, log = fake
    row = _row(MANY)
    assert len(row["readings"]) == 10
    with AceParser(image, executable=ace, n=3) as parser:
        result = parser.parse(MANY)
    assert [r.mrs for r in result.readings] == [r["mrs"] for r in row["readings"][:3]]
    argv = _starts(log)[0]["argv"]
    assert argv[argv.index("-n") + 1] == "3"
    assert "--timeout" in argv and "--max-chart-megabytes" in argv
    assert "--max-unpack-megabytes" in argv


def test_no_parse_is_not_an_error(fake):
    ace, image, _ = fake
    with AceParser(image, executable=ace) as parser:
        result = parser.parse("Colourless green ideas sleep furiously.")
    assert result.readings == () and result.error is None and result.ok


def test_one_process_for_many_sentences_and_one_version_check(fake):
    ace, image, log = fake
    sentences = [r["sentence"] for r in recorded("erg-1214", "readings")[:20]]
    with AceParser(image, executable=ace, fresh=False) as parser:
        results = list(parser.parse_from_iterable(sentences))
    assert [r.sentence for r in results] == sentences
    events = read_log(log)
    assert len(_starts(log)) == 1
    assert sum(e["event"] == "version" for e in events) == 1
    assert sum(e["event"] == "item" for e in events) == 20


def test_fresh_parser_starts_a_process_per_sentence(fake):
    # regression (issue 13): without a ranking model, the readings real ACE
    # returns under -n depend on what the process parsed before, so by
    # default every sentence gets a process of its own
    ace, image, log = fake
    sentences = [r["sentence"] for r in recorded("erg-1214", "readings")[:5]]
    with AceParser(image, executable=ace) as parser:
        assert parser.fresh
        results = list(parser.parse_from_iterable(sentences))
        # each answer starts the next process at once (it loads meanwhile)
        assert parser.renewals == 5 and parser.restarts == 0
    assert [r.sentence for r in results] == sentences
    events = read_log(log)
    starts = [e["pid"] for e in events if e["event"] == "start"]
    items = [e["pid"] for e in events if e["event"] == "item"]
    assert len(set(starts)) == 6 and items == starts[:5]  # one item per process
    assert sum(e["event"] == "version" for e in events) == 1


def test_module_level_iterables_close_their_process(fake):
    ace, image, log = fake
    results = list(parse_from_iterable(image, [SENTENCE, MANY], executable=ace, n=1))
    assert [len(r.readings) for r in results] == [1, 1]
    row = _row(SENTENCE)
    generated = list(generate_from_iterable(
        image, [row["readings"][row["selected"]]["mrs"]], executable=ace))
    assert SENTENCE in generated[0].surfaces
    events = read_log(log)
    # every process started (a fresh parser per sentence and one started after
    # the last, one generator) ended: the unused parser and the generator at
    # end of input, the renewed parsers by SIGTERM
    started = [e["pid"] for e in events if e["event"] == "start"]
    assert len(started) == 4
    assert sorted(started) == sorted(e["pid"] for e in events if e["event"] == "exit")
    assert sum(e.get("signal") == "TERM" for e in events) == 2


def test_known_version_skips_ace_dash_v(fake):
    ace, image, log = fake
    with AceParser(image, executable=ace, ace_version="0.9.34") as parser:
        parser.parse(SENTENCE)
    assert not any(e["event"] == "version" for e in read_log(log))


def test_sentence_with_newlines_is_one_item(fake):
    ace, image, log = fake
    with AceParser(image, executable=ace) as parser:
        result = parser.parse("A woman is walking\nher dog.\r")
    assert result.readings
    items = [e["input"] for e in read_log(log) if e["event"] == "item"]
    assert items == [SENTENCE]


def test_empty_sentence_is_reported_without_asking_ace(fake):
    ace, image, log = fake
    with AceParser(image, executable=ace) as parser:
        result = parser.parse("  \n ")
    assert result.error and "empty" in result.error
    assert not any(e["event"] == "item" for e in read_log(log))


def test_caller_arguments_are_copied(fake):
    ace, image, log = fake
    extra = ["--disable-generalization"]
    with AceParser(image, executable=ace, extra_args=extra) as parser:
        parser.parse(SENTENCE)
    assert extra == ["--disable-generalization"]
    assert "--disable-generalization" in _starts(log)[0]["argv"]


def test_invalid_ace_option_is_an_ace_error(fake):
    ace, image, _ = fake
    with pytest.raises(ACEError, match="invalid ACE options"):
        AceParser(image, executable=ace, extra_args=["--no-such-option"])


def test_closed_parser_refuses_work(fake):
    ace, image, _ = fake
    parser = AceParser(image, executable=ace)
    parser.close()
    assert parser.pid is None
    with pytest.raises(ACEError, match="closed"):
        parser.parse(SENTENCE)


# -- generation -----------------------------------------------------------------


def test_generate_returns_all_recorded_realizations_in_order(fake):
    ace, image, _ = fake
    rows = [r for r in recorded("erg-1214", "transforms") if r["output_mrs"] and r["generated"]]
    picked = [rows[0], rows[len(rows) // 2], rows[-1]]
    with AceGenerator(image, executable=ace) as generator:
        for row in picked:
            result = generator.generate(row["output_mrs"])
            assert result.error is None
            assert list(result.surfaces[: len(row["generated"])]) == row["generated"]


def test_generate_strips_lnk_and_reproduces_the_sentence(fake):
    ace, image, log = fake
    row = _row(SENTENCE)
    with AceGenerator(image, executable=ace) as generator:
        result = generator.generate(row["readings"][row["selected"]]["mrs"])
    assert re.search(r"<\d+:\d+>", row["readings"][row["selected"]]["mrs"])
    assert not re.search(r"<\d+:\d+>", result.mrs)  # no spans sent
    assert surface_key(SENTENCE) in {surface_key(s) for s in result.surfaces}
    assert "-e" in _starts(log)[0]["argv"]


def test_generator_grown_past_renew_megabytes_is_replaced_after_the_item(fake):
    # the fake ACE is a Python process of some megabytes: a bound of 1 MB is
    # exceeded after every item, so every item gets a fresh process
    ace, image, log = fake
    rows = [r for r in recorded("erg-1214", "transforms")
            if r["output_mrs"] and r["generated"]][:3]
    with AceGenerator(image, executable=ace, renew_megabytes=1) as generator:
        grown = [generator.generate(row["output_mrs"]) for row in rows]
        assert generator.renewals == 3 and generator.restarts == 0
    with AceGenerator(image, executable=ace) as generator:  # 400 MB: never reached
        kept = [generator.generate(row["output_mrs"]) for row in rows]
        assert generator.renewals == 0
    assert grown == kept
    events = read_log(log)
    items = [e["pid"] for e in events if e["event"] == "item"]
    assert len(set(items[:3])) == 3 and len(set(items[3:])) == 1
    with pytest.raises(ValueError, match="renew_megabytes"):
        AceGenerator(image, executable=ace, renew_megabytes=0)


def test_generate_unknown_mrs_gives_no_realization(fake):
    ace, image, _ = fake
    mrs = "[ TOP: h0 INDEX: e2 RELS: < [ _zzz_v_1 LBL: h1 ARG0: e2 ] > HCONS: < h0 qeq h1 > ]"
    with AceGenerator(image, executable=ace) as generator:
        result = generator.generate(mrs)
    assert result.surfaces == () and result.error is None


def test_generate_invalid_mrs_is_an_item_error(fake):
    ace, image, log = fake
    with AceGenerator(image, executable=ace) as generator:
        result = generator.generate("[ TOP: h0 RELS: <")
    assert result.error and result.error.startswith("invalid MRS")
    assert not any(e["event"] == "item" for e in read_log(log))


def test_roundtrip_selection_with_the_fake_generator(fake):
    ace, image, _ = fake
    row = _row(SENTENCE)
    with AceParser(image, executable=ace, n=10) as parser, \
            AceGenerator(image, executable=ace) as generator:
        result = parser.parse(SENTENCE)
        assert select_reading(result, "roundtrip", generator=generator) == row["selected"]


# -- faults ---------------------------------------------------------------------


def test_watchdog_kills_a_hang_and_the_next_item_works(fake, monkeypatch):
    ace, image, log = fake
    monkeypatch.setenv("FAKE_ACE_HANG_ON", "hang")
    with AceParser(image, executable=ace, watchdog=1.0) as parser:
        first = parser.parse("The dog will hang here.")
        parser.watchdog = 60.0  # a fresh fake-ace on a loaded machine may be slow
        second = parser.parse(SENTENCE)
        # killed at 1 s, retried once with the limits doubled, killed at 2 s
        assert parser.restarts == 2
    assert first.readings == () and first.failure == "timeout" and first.transient
    assert first.error == "ACE timed out after 2 s (watchdog); process restarted"
    assert second.error is None and second.readings
    hangs = [e for e in read_log(log) if e["event"] == "hang"]
    assert len(hangs) == 2


def test_watchdog_restarts_a_hung_generator(fake, monkeypatch):
    ace, image, _ = fake
    row = _row(SENTENCE)
    mrs = row["readings"][row["selected"]]["mrs"]
    monkeypatch.setenv("FAKE_ACE_HANG_ON", "_zzz_v_1")
    hang = "[ TOP: h0 INDEX: e2 RELS: < [ _zzz_v_1 LBL: h1 ARG0: e2 ] > HCONS: < h0 qeq h1 > ]"
    with AceGenerator(image, executable=ace, watchdog=1.0) as generator:
        first = generator.generate(hang)
        generator.watchdog = 60.0
        second = generator.generate(mrs)
    assert "watchdog" in first.error
    assert second.error is None and SENTENCE in second.surfaces


def test_killed_process_is_restarted(fake):
    ace, image, log = fake
    with AceParser(image, executable=ace, fresh=False) as parser:
        assert parser.parse(SENTENCE).readings
        pid = parser.pid
        os.kill(pid, signal.SIGKILL)
        result = parser.parse(SENTENCE)
        assert parser.pid != pid
    assert result.error is None and result.readings
    assert len(_starts(log)) == 2


def test_crash_mid_item_is_retried_once_then_recorded(fake, monkeypatch):
    ace, image, log = fake
    monkeypatch.setenv("FAKE_ACE_DIE_ON", "crash")
    with AceParser(image, executable=ace) as parser:
        failed = parser.parse("This will crash ACE.")
        after = parser.parse(SENTENCE)
        assert parser.restarts == 2
    assert failed.error.startswith("ACE process died 2 times (exit code -9); restarted")
    # the last line ACE wrote to stderr explains the crash
    assert failed.error.endswith("last stderr line: fake-ace: dying on purpose (FAKE_ACE_DIE_ON)")
    assert after.error is None and after.readings
    assert sum(e["event"] == "die" for e in read_log(log)) == 2


def test_crash_once_succeeds_on_retry(fake, monkeypatch, tmp_path):
    ace, image, log = fake
    monkeypatch.setenv("FAKE_ACE_DIE_ON", "walking")
    monkeypatch.setenv("FAKE_ACE_DIE_ONCE_FILE", str(tmp_path / "died"))
    with AceParser(image, executable=ace, fresh=False) as parser:
        result = parser.parse(SENTENCE)
    assert result.error is None and result.readings
    assert len(_starts(log)) == 2


def test_no_retry_when_retries_is_zero(fake, monkeypatch, tmp_path):
    ace, image, _ = fake
    monkeypatch.setenv("FAKE_ACE_DIE_ON", "walking")
    monkeypatch.setenv("FAKE_ACE_DIE_ONCE_FILE", str(tmp_path / "died"))
    with AceParser(image, executable=ace, retries=0) as parser:
        failed = parser.parse(SENTENCE)
        again = parser.parse(SENTENCE)
    assert failed.error.startswith("ACE process died (exit code -9); restarted")
    assert again.error is None and again.readings


def test_garbage_output_fails_the_item_only(fake, monkeypatch):
    ace, image, _ = fake
    monkeypatch.setenv("FAKE_ACE_GARBAGE_ON", "garbage")
    with AceParser(image, executable=ace) as parser:
        bad = parser.parse("Print garbage now.")
        good = parser.parse(SENTENCE)
    assert bad.error.startswith("unreadable output from ACE")
    assert good.error is None and good.readings


def test_stderr_flood_does_not_deadlock(fake, monkeypatch, capfd):
    ace, image, _ = fake
    # far more than a pipe buffer (64 KiB) per item; a watchdog turns a
    # deadlock into a failed item instead of a hanging test
    monkeypatch.setenv("FAKE_ACE_STDERR_FLOOD", str(2 * 1024 * 1024))
    with AceParser(image, executable=ace, watchdog=120) as parser:
        results = [parser.parse(SENTENCE) for _ in range(3)]
        assert parser.restarts == 0
    assert all(r.error is None and r.readings for r in results)
    # ACE's stderr is drained, not passed through to ours
    assert "stderr flood" not in capfd.readouterr().err


# -- start-up errors --------------------------------------------------------------


def test_bad_image_is_a_clear_error(fake, tmp_path):
    ace, _, _ = fake
    bad = tmp_path / "broken.dat"
    bad.write_bytes(b"\x00\x01 not a grammar image")
    with pytest.raises(ACEError) as info:
        with AceParser(bad, executable=ace) as parser:
            parser.parse(SENTENCE)
    message = str(info.value)
    assert str(bad) in message and "not a valid grammar image" in message
    assert "exit code 255" in message


def test_ace_that_fails_before_its_first_answer_is_a_clear_error(fake, monkeypatch):
    ace, image, _ = fake
    monkeypatch.setenv("FAKE_ACE_EXIT_AT_START", "on-input")
    with AceParser(image, executable=ace) as parser:
        with pytest.raises(ACEError, match="FAKE_ACE_EXIT_AT_START") as info:
            parser.parse(SENTENCE)
    assert str(image) in str(info.value)


def test_ace_exiting_at_start_is_a_clear_error(fake, monkeypatch):
    ace, image, _ = fake
    monkeypatch.setenv("FAKE_ACE_EXIT_AT_START", "1")
    with pytest.raises(ACEError, match="exit code 1") as info:
        with AceGenerator(image, executable=ace) as generator:
            generator.generate("[ TOP: h0 INDEX: e2 RELS: < > HCONS: < > ]")
    assert str(image) in str(info.value)


def test_version_mismatch_names_both_versions(tmp_path):
    ace, image = fake_ace(tmp_path, "erg-1214", ace_version="0.9.27")
    with pytest.raises(ACEError, match="compiled by ACE version 0.9.27"):
        with AceParser(image, executable=ace) as parser:
            parser.parse(SENTENCE)


def test_missing_binary_points_to_grammar_install(fake, tmp_path):
    _, image, _ = fake
    with pytest.raises(ACEError, match="lit grammar install") as info:
        AceParser(image, executable=tmp_path / "no" / "ace")
    assert "lit grammar add" in str(info.value)
    with pytest.raises(ACEError, match="not found on PATH"):
        AceParser(image, executable="lit-no-such-ace-binary")
    assert issubclass(ACEError, LitError)


def test_missing_image_is_a_clear_error(fake, tmp_path):
    ace, _, _ = fake
    with pytest.raises(ACEError, match="grammar image not found"):
        AceParser(tmp_path / "nope.dat", executable=ace)


def test_not_an_ace_binary(tmp_path, fake):
    _, image, _ = fake
    impostor = tmp_path / "impostor"
    impostor.write_text("#!/bin/sh\necho hello\n")
    impostor.chmod(0o755)
    with pytest.raises(ACEError, match="no 'ACE version' line"):
        AceParser(image, executable=impostor)


# -- real ACE -----------------------------------------------------------------------

DOG = "The dog chased the cat."


@pytest.mark.ace
def test_real_ace_parse_and_n_best():
    ace, image = real_ace("erg-1214")
    with AceParser(image, executable=ace, n=2) as parser:
        result = parser.parse(DOG)
    assert result.error is None
    assert 1 <= len(result.readings) <= 2
    assert "_chase_v_1" in result.readings[0].mrs


@pytest.mark.ace
def test_real_ace_no_parse_then_parse():
    ace, image = real_ace("erg-1214")
    with AceParser(image, executable=ace, watchdog=60) as parser:
        nothing = parser.parse("Xq zzv plorb wug.")
        result = parser.parse(DOG)
    assert nothing.error is None or "ACE:" in nothing.error
    assert result.error is None and result.readings


def _selected_reading(ace: Path, image: Path, sentence: str) -> str:
    """The MRS of *sentence*'s reading that round-trips (real ACE)."""
    with AceParser(image, executable=ace) as parser, AceGenerator(image, executable=ace) as gen:
        result = parser.parse(sentence)
        # images built from source have no ranking model: the first reading
        # may be a fragment analysis, so generate from the selected one
        selected = select_reading(result, "roundtrip", generator=gen)
    assert selected is not None
    return result.readings[selected].mrs


@pytest.mark.ace
def test_real_ace_round_trip():
    ace, image = real_ace("erg-1214")
    with AceGenerator(image, executable=ace) as gen:
        generated = gen.generate(_selected_reading(ace, image, DOG))
    assert generated.error is None
    assert surface_key(DOG) in {surface_key(s) for s in generated.surfaces}


@pytest.mark.ace
def test_real_ace_watchdog_and_restart():
    ace, image = real_ace("erg-1214")
    long = " ".join(["The dog that chased the cat that saw the bird"] * 8) + " barked."
    with AceParser(image, executable=ace, n=1000, timeout=None, watchdog=0.05) as parser:
        hung = parser.parse(long)
        parser.watchdog = 60.0
        after = parser.parse(DOG)
    assert hung.error is None or "watchdog" in hung.error
    assert after.error is None and after.readings
    with AceParser(image, executable=ace) as parser:
        pid = parser.pid
        os.kill(pid, signal.SIGKILL)
        result = parser.parse(DOG)
        assert parser.pid != pid
    assert result.error is None and result.readings


def test_backends_satisfy_the_protocols(fake):
    ace, image, _ = fake
    with AceParser(image, executable=ace) as parser, AceGenerator(image, executable=ace) as gen:
        assert isinstance(parser, Parser) and isinstance(gen, Generator)


def test_erg_2018_round_trip_through_fake_ace(tmp_path, monkeypatch):
    for var in list(os.environ):
        if var.startswith("FAKE_ACE_"):
            monkeypatch.delenv(var)
    ace, image = fake_ace(tmp_path, "erg-2018")
    row = next(r for r in recorded("erg-2018", "readings") if r["selected"] is not None)
    with AceParser(image, executable=ace, n=10) as parser, \
            AceGenerator(image, executable=ace) as generator:
        result = parser.parse(row["sentence"])
        assert [r.mrs for r in result.readings] == [r["mrs"] for r in row["readings"]]
        assert select_reading(result, "roundtrip", generator=generator) == row["selected"]


@pytest.mark.ace
def test_real_ace_generator_renewal_keeps_results():
    # a real ACE generator is well above 1 MB after any item: renewed after
    # every item, it must give exactly what one persistent process gives
    ace, image = real_ace("erg-1214")
    mrs = _selected_reading(ace, image, DOG)
    with AceGenerator(image, executable=ace) as kept:
        once = [kept.generate(mrs) for _ in range(3)]
        assert kept.renewals == 0
    with AceGenerator(image, executable=ace, renew_megabytes=1) as renewed:
        pids = []
        again = []
        for _ in range(3):
            again.append(renewed.generate(mrs))
            pids.append(renewed.pid)
        assert renewed.renewals == 3
    assert again == once and len(set(pids)) == 3


@pytest.mark.ace
def test_real_ace_selection_does_not_regenerate_large_readings():
    # 30 words, 52-55 EPs per candidate, each with more than 700 realizations
    # (4-8 s each): not regenerated
    ace, image = real_ace("erg-1214")
    sentence = ("Two young children in blue jerseys, one with the number 9 and one with the "
                "number 2 are standing on wooden steps in a bathroom and washing their hands "
                "in a sink.")
    with AceParser(image, executable=ace, n=10) as parser, \
            AceGenerator(image, executable=ace, max_realizations=700) as gen:
        result = parser.parse(sentence)
        chosen = select(result, "ranked", generator=gen)
        assert gen.items == 0
        # a sentence of ordinary size is unaffected
        assert select(parser.parse(DOG), "ranked", generator=gen).index is not None
    assert chosen.index is None
    assert "of 40 EPs or more not tried" in chosen.reason
