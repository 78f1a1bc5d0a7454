"""Same input, same output: transient failures never become data (issue 13).

ACE is the fake-ace test double (``tests/fake_ace.py``) in its *slow* mode:
an item needs ``FAKE_ACE_SLOW`` seconds of wall-clock time, and when ACE's
``--timeout`` is shorter it answers as real ACE does when its time limit cuts
an item (an error, and for generation the realizations found so far). The
``ace``-marked tests at the end run the real thing under CPU burners.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
from pathlib import Path

import pytest
from conftest import real_ace, recorded
from fake_ace_support import fake_ace, fake_ace_env, read_log  # noqa: E402
from typer.testing import CliRunner

from lit.ace import AceGenerator, AceParser
from lit.cache import ParseCache, is_cacheable
from lit.cli import app
from lit.pipeline import Transformer

DOG = "The dog chased the cat."


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """(executable, image, log) of fake-ace for erg-1214; FAKE_ACE_* cleared."""
    for var in list(os.environ):
        if var.startswith("FAKE_ACE_"):
            monkeypatch.delenv(var)
    ace, image = fake_ace(tmp_path / "fake", "erg-1214")
    log = tmp_path / "fake-ace.log"
    monkeypatch.setenv("FAKE_ACE_LOG", str(log))
    return ace, image, log


def _roundtrip_reading() -> tuple[str, str]:
    """A recorded sentence and the MRS of its selected (round-trip) reading."""
    for row in recorded("erg-1214", "readings"):
        if row["selected"] is not None:
            return row["sentence"], row["readings"][row["selected"]]["mrs"]
    raise AssertionError("no recorded round-trip reading")


# -- the ACE layer: failures are classified; a cut item is retried ------------


def test_generation_cut_by_the_time_limit_is_retried_with_a_larger_one(fake, monkeypatch):
    ace, image, log = fake
    sentence, mrs = _roundtrip_reading()
    monkeypatch.setenv("FAKE_ACE_SLOW", "1.5")  # > --timeout 1, < 2 (the retry's limit)
    with AceGenerator(image, executable=ace, timeout=1, watchdog=30) as gen:
        result = gen.generate(mrs)
        assert gen.renewals == 2  # up with the larger limit, back to the usual one
    assert result.ok and not result.transient and result.surfaces
    cuts = [e["cut"] for e in read_log(log) if e["event"] == "slow"]
    assert cuts == [True, False]


def test_generation_cut_twice_is_transient_with_the_partial_realizations(fake, monkeypatch):
    ace, image, _ = fake
    sentence, mrs = _roundtrip_reading()
    monkeypatch.setenv("FAKE_ACE_SLOW", "5")
    with AceGenerator(image, executable=ace, timeout=1, watchdog=30) as gen:
        result = gen.generate(mrs)
    assert result.failure == "timeout" and result.transient
    assert result.error and "ran out of time" in result.error


def test_parse_cut_by_the_watchdog_is_transient(fake, monkeypatch):
    ace, image, _ = fake
    monkeypatch.setenv("FAKE_ACE_SLOW", "3")
    with AceParser(image, executable=ace, timeout=None, watchdog=0.5,
                   timeout_retries=0) as parser:
        result = parser.parse(DOG)
    assert result.failure == "timeout" and result.transient and not result.readings


def test_no_parse_and_empty_input_are_answers():
    from lit.interface import ParseResult

    assert not ParseResult("Xq zzv.").transient
    assert not ParseResult("", (), "empty sentence", "invalid").transient
    assert ParseResult("x", (), "ACE: timeout", "timeout").transient


# -- the cache keeps answers only ------------------------------------------------


def test_cache_policy_follows_the_failure():
    assert is_cacheable({"readings": [], "error": None, "failure": None})
    assert is_cacheable({"readings": [], "error": "ACE: post-reduction lexical gap",
                         "failure": "lexical-gap"})
    for failure in ("timeout", "resource", "crash", "error"):
        assert not is_cacheable({"readings": [], "error": "x", "failure": failure})
    # memory limits are not answers either (they depend on the machine's state)
    assert not is_cacheable({"readings": [], "error": "ACE: hit RAM limit while unpacking"})


def test_cache_of_an_earlier_schema_is_purged(tmp_path, caplog):
    path = tmp_path / "old.sqlite"
    cache = ParseCache(path)
    cache._connect()  # create the file in the current schema
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema'")
        conn.execute("INSERT INTO parses VALUES ('sha', '0.9.30', '{}', 'Dogs bark.', "
                     "'{\"readings\": [], \"error\": \"ACE: hit RAM limit\"}', 0)")
    conn.close()
    with caplog.at_level("WARNING", logger="lit"):
        reopened = ParseCache(path)
        reopened._connect()
    assert "earlier lit (schema 1)" in caplog.text and "1 entries" in caplog.text
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM parses").fetchone()[0] == 0
    assert conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0] == "2"
    conn.close()


# -- the pipeline: a cut round trip is an error, never a no-parse ---------------


def _transform(runner, path: Path, *args: str) -> list[dict]:
    result = runner.invoke(app, ["transform", "--select", "roundtrip", "-r", "n,f", "--lm",
                                 "none", "-j", "1",
                                 "--timeout", "1", *args, str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_round_trip_cut_short_is_an_error_record_and_is_not_cached(
        fake, tmp_path, monkeypatch, lit_home):
    ace, image, log = fake
    for key, value in fake_ace_env(tmp_path / "fake2", "erg-1214").items():
        monkeypatch.setenv(key, value)
    sentence, _ = _roundtrip_reading()
    path = tmp_path / "in.txt"
    path.write_text(sentence + "\n")
    cache = tmp_path / "cache.sqlite"
    runner = CliRunner()
    # every generation (the round trips of the readings) needs 5 s > 2 x --timeout 1
    monkeypatch.setenv("FAKE_ACE_SLOW", "5")
    monkeypatch.setenv("FAKE_ACE_SLOW_MODE", "generate")
    loaded = _transform(runner, path, "--cache", str(cache))
    assert [r["status"] for r in loaded] == ["error", "error"]
    assert all(r["reason"].startswith("timeout: parse: round trip") for r in loaded), loaded
    # the parse itself is an answer and was cached; nothing about the selection is
    conn = sqlite3.connect(cache)
    rows = conn.execute("SELECT result FROM parses").fetchall()
    conn.close()
    assert len(rows) == 1 and json.loads(rows[0][0])["readings"]
    # on an idle machine, with the same cache: the records an idle run gives
    monkeypatch.delenv("FAKE_ACE_SLOW")
    again = _transform(runner, path, "--cache", str(cache))
    fresh = _transform(runner, path, "--no-cache")
    assert again == fresh and [r["status"] for r in again] == ["ok", "ok"]


def test_a_cut_short_selection_is_met_once_per_sentence_not_once_per_chain(
        fake, tmp_path, monkeypatch, lit_home):
    """Without workers too, a sentence is parsed (and its readings round-tripped)
    once per chunk: a transient failure is not cached, and trying again for each
    of the 63 chains of ``lit-paper`` multiplied a time limit's cost by 63."""
    for key, value in fake_ace_env(tmp_path / "fake2", "erg-1214").items():
        monkeypatch.setenv(key, value)
    sentence, _ = _roundtrip_reading()
    path = tmp_path / "in.txt"
    path.write_text(sentence + "\n")
    runner = CliRunner()
    monkeypatch.setenv("FAKE_ACE_SLOW", "5")
    monkeypatch.setenv("FAKE_ACE_SLOW_MODE", "generate")
    requests = []
    for specs in ("n", "n,f,m,p"):
        report = tmp_path / f"report-{len(specs)}.json"
        result = runner.invoke(app, ["transform", "--select", "roundtrip", "-r", specs, "--lm",
                                     "none", "-j", "1", "--timeout", "1", "--no-cache",
                                     "--report", str(report), str(path)],
                               catch_exceptions=False)
        assert result.exit_code == 0, result.stderr
        records = [json.loads(line) for line in result.stdout.splitlines()]
        assert all(r["reason"].startswith("timeout: parse: round trip") for r in records)
        requests.append(json.loads(report.read_text())["ace_requests"])
    assert requests[0]["roundtrip"] >= 1
    assert requests[1] == requests[0]


def test_transformer_does_not_remember_transient_outcomes(fake, tmp_path, monkeypatch):
    ace, image, _ = fake
    env = {**os.environ, **fake_ace_env(tmp_path / "fake2", "erg-1214")}
    sentence, _ = _roundtrip_reading()
    with Transformer("erg-1214", reranker=None, env=env, select="roundtrip",
                     ace_options={"timeout": 1, "watchdog": 30}) as t:
        monkeypatch.setenv("FAKE_ACE_SLOW", "5")  # read by fake-ace processes started now
        for name in ("generator", "roundtrip_generator"):
            getattr(t, name).close()
            setattr(t, name, AceGenerator(t.grammar.image, executable=str(t.grammar.ace),
                                          timeout=1, watchdog=30, env=dict(os.environ)))
            t._started.append(getattr(t, name))
        first = t.transform_sentence(sentence, "n")
        assert first.status == "error" and first.reason.startswith("timeout:")
        monkeypatch.delenv("FAKE_ACE_SLOW")
        for name in ("generator", "roundtrip_generator"):
            getattr(t, name).close()
            setattr(t, name, AceGenerator(t.grammar.image, executable=str(t.grammar.ace),
                                          timeout=1, watchdog=30, env=dict(os.environ)))
            t._started.append(getattr(t, name))
        second = t.transform_sentence(sentence, "n")
    assert second.status == "ok"


# -- the realization cap: a deterministic bound, not a transient failure -------


def _many_realizations() -> tuple[str, list[str]]:
    """A recorded transformed MRS with at least three realizations."""
    for row in recorded("erg-1214", "transforms"):
        if row["output_mrs"] and len(row["generated"]) >= 3:
            return row["output_mrs"], row["generated"]
    raise AssertionError("no recorded transform with three realizations")


def test_an_mrs_with_more_realizations_than_the_cap_is_refused(fake):
    ace, image, log = fake
    mrs, generated = _many_realizations()
    k = len(generated)
    with AceGenerator(image, executable=ace, max_realizations=k - 1) as gen:
        over = gen.generate(mrs)
    with AceGenerator(image, executable=ace, max_realizations=k) as gen:
        within = gen.generate(mrs)
    assert over.failure == "overgeneration" and not over.transient and over.surfaces == ()
    assert f"more than {k - 1} realizations" in over.error
    assert within.ok and list(within.surfaces[:k]) == generated
    argvs = [e["argv"] for e in read_log(log) if e["event"] == "start"]
    assert [a[a.index("-n") + 1] for a in argvs] == [str(k), str(k + 1)]  # ACE: cap + 1


def test_round_trips_go_to_an_ace_that_stops_unpacking_at_the_selection_bound(fake, tmp_path):
    from lit.parse import MAX_ROUNDTRIP_REALIZATIONS

    ace, image, log = fake
    env = {**os.environ, **fake_ace_env(tmp_path / "fake2", "erg-1214")}
    sentence, _ = _roundtrip_reading()
    for cap, roundtrip_n in ((None, MAX_ROUNDTRIP_REALIZATIONS + 1), (1000, 701), (50, 51)):
        log.unlink(missing_ok=True)
        with Transformer("erg-1214", reranker=None, env=env, max_realizations=cap) as t:
            assert t.transform_sentence(sentence, "n").status == "ok"
            assert t.requests["roundtrip"] >= 1 and t.requests["generate"] == 1
        starts = [e for e in read_log(log) if e["event"] == "start" and e["mode"] == "generate"]
        ns = sorted((a[a.index("-n") + 1] if "-n" in a else "none")
                    for a in (e["argv"] for e in starts))
        assert ns == sorted([str(roundtrip_n), "none" if cap is None else str(cap + 1)]), ns


def test_overgeneration_is_a_no_realization_answer_and_remembered(fake, tmp_path):
    ace, image, _ = fake
    env = {**os.environ, **fake_ace_env(tmp_path / "fake2", "erg-1214")}
    sentence, _ = _roundtrip_reading()
    with Transformer("erg-1214", reranker=None, env=env, select="roundtrip") as t:
        capped = Transformer("erg-1214", reranker=None, env=env, select="roundtrip",
                             max_realizations=1, parser=t.parser)
        with capped:
            assert capped.generator.max_realizations == 1  # type: ignore[union-attr]
            results = [capped.transform_sentence(sentence, chain) for chain in ("n", "n")]
            generations = capped.requests["generate"]
        free = t.transform_sentence(sentence, "n")
    for res in results:
        assert res.status == "skipped", res
        assert res.reason.startswith("no-realization: more than 1 realizations")
    assert generations == 1  # the answer was remembered, not asked again
    assert free.status == "ok"


# -- real ACE under load (ace-marked) ---------------------------------------------


def _burn(stop) -> None:  # pragma: no cover - runs in a child process
    while not stop.is_set():
        pass


def _snli_sentences(n: int) -> list[str]:
    from conftest import snli_sample_path

    out: list[str] = []
    with open(snli_sample_path(), encoding="utf-8") as f:
        for line in f:
            s = json.loads(line)["sentence1"]
            if s not in out:
                out.append(s)
            if len(out) == n:
                break
    return out


@pytest.mark.ace
def test_real_ace_same_output_idle_under_load_and_across_workers(tmp_path):
    ace, image = real_ace("erg-1214")
    env = {**os.environ, "LIT_ACE": str(ace), "LIT_GRAMMAR_ERG_1214": str(image),
           "LIT_HOME": str(tmp_path / "home")}
    path = tmp_path / "in.txt"
    path.write_text("\n".join(_snli_sentences(8)) + "\n")
    runner = CliRunner(env=env)

    def run(*args: str) -> list[dict]:
        result = runner.invoke(app, ["transform", "-r", "p,f+i,m", "--lm", "none", "--no-cache",
                                     *args, str(path)], catch_exceptions=False)
        assert result.exit_code == 0, result.stderr
        return [json.loads(line) for line in result.stdout.splitlines()]

    idle1 = run("-j", "1")
    idle2 = run("-j", "2")
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=_burn, args=(stop,)) for _ in range(2)]
    for b in burners:
        b.start()
    try:
        loaded = run("-j", "2")
    finally:
        stop.set()
        for b in burners:
            b.join(10)
    transient = ("timeout", "resource", "crash")

    def same(a: list[dict], b: list[dict]) -> None:
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            if any(r["status"] == "error" and r["reason"].split(":")[0] in transient
                   for r in (x, y)):
                continue  # a transient failure (this machine may be loaded): never an answer
            assert x == y

    same(idle1, idle2)
    same(idle1, loaded)
    assert sum(r["status"] == "ok" for r in idle1) > 0


@pytest.mark.ace
def test_real_ace_realization_cap_is_exact(tmp_path):
    """With the real ACE, ``-n cap+1`` gives the complete set when it fits and
    a refusal when it does not, whatever the cap."""
    ace, image = real_ace("erg-1214")
    with AceParser(image, executable=ace, n=10) as parser:
        readings = parser.parse(DOG).readings
    assert readings
    with AceGenerator(image, executable=ace, max_realizations=None) as gen:
        full = [gen.generate(r.mrs) for r in readings]
    mrs, every = max(((r.mrs, g.surfaces) for r, g in zip(readings, full, strict=True)),
                     key=lambda x: len(x[1]))
    k = len(every)
    assert k >= 2, every
    with AceGenerator(image, executable=ace, max_realizations=k) as gen:
        within = gen.generate(mrs)
        again = gen.generate(mrs)
    with AceGenerator(image, executable=ace, max_realizations=k - 1) as gen:
        over = gen.generate(mrs)
    assert sorted(within.surfaces) == sorted(every) == sorted(again.surfaces)
    assert over.failure == "overgeneration" and over.surfaces == ()
