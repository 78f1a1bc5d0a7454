"""Tests for lit.cache: real SQLite files, real concurrent processes."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

import pytest

from lit.cache import (
    CachedParser,
    CacheError,
    CacheKey,
    ParseCache,
    canonical_options,
    default_cache_path,
    is_cacheable,
    parser_cache_key,
)
from lit.errors import LitError

KEY = CacheKey.create("sha-1214", "0.9.30", n=5, timeout=5)


@dataclass(frozen=True)
class _Result:
    """A stand-in for lit.ace.ParseResult (same to_dict/from_dict shape)."""

    sentence: str
    readings: tuple[str, ...]
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"sentence": self.sentence, "readings": list(self.readings), "error": self.error}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> _Result:
        return cls(d["sentence"], tuple(d["readings"]), d["error"])


@dataclass
class _CountingParser:
    """Records every sentence it is asked to parse; errors on request."""

    errors: dict[str, str] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)

    def parse(self, sentence: str) -> _Result:
        self.calls.append(sentence)
        if sentence in self.errors:
            return _Result(sentence, (), self.errors[sentence])
        if sentence.startswith("Colorless"):
            return _Result(sentence, ())  # no parse, no error
        return _Result(sentence, (f"[ MRS of {sentence} ]",))


def _cached(cache: ParseCache, parser: _CountingParser, key: CacheKey = KEY) -> CachedParser:
    return CachedParser(parser, cache, key, decode=_Result.from_dict)


def test_hit_and_miss(tmp_path):
    parser = _CountingParser()
    with ParseCache(tmp_path / "c.sqlite") as cache:
        cp = _cached(cache, parser)
        first = cp.parse("Dogs bark.")
        second = cp.parse("Dogs bark.")
        cp.parse("Cats sleep.")
    assert first == second == _Result("Dogs bark.", ("[ MRS of Dogs bark. ]",))
    assert parser.calls == ["Dogs bark.", "Cats sleep."]
    assert cp.stats() == {"hits": 1, "misses": 2, "stored": 2}


def test_key_separation(tmp_path):
    parser = _CountingParser()
    with ParseCache(tmp_path / "c.sqlite") as cache:
        _cached(cache, parser).parse("Dogs bark.")
        for key in (
            CacheKey.create("sha-2018", "0.9.30", n=5, timeout=5),  # other grammar image
            CacheKey.create("sha-1214", "0.9.31", n=5, timeout=5),  # other ACE
            CacheKey.create("sha-1214", "0.9.30", n=10, timeout=5),  # other options
            CacheKey.create("sha-1214", "0.9.30", n=5, timeout=5, select="roundtrip"),
        ):
            cp = _cached(cache, parser, key)
            cp.parse("Dogs bark.")
            assert (cp.hits, cp.misses) == (0, 1), key
        # the original key still hits, and option order does not matter
        same = CacheKey.create("sha-1214", "0.9.30", timeout=5, n=5)
        cp = _cached(cache, parser, same)
        cp.parse("Dogs bark.")
        assert (cp.hits, cp.misses) == (1, 0)
        assert len(cache) == 5


def test_persistence_across_instances(tmp_path):
    path = tmp_path / "sub" / "dir" / "parses.sqlite"
    parser = _CountingParser()
    with ParseCache(path) as cache:
        _cached(cache, parser).parse("Dogs bark.")
    assert path.exists()
    with ParseCache(path) as cache:
        cp = _cached(cache, parser)
        result = cp.parse("Dogs bark.")
    assert result.readings == ("[ MRS of Dogs bark. ]",)
    assert parser.calls == ["Dogs bark."]
    assert cp.hits == 1


def test_caching_policy(tmp_path):
    parser = _CountingParser(errors={
        "Watchdog victim.": "watchdog: ACE killed after 30 s",
        "Crashing input.": "ACE crashed (exit code -11); restarted",
        "Overlong input.": "too many tokens (26 > 25)",
    })
    with ParseCache(tmp_path / "c.sqlite") as cache:
        cp = _cached(cache, parser)
        for _ in range(2):
            for s in ("Colorless ideas.", "Watchdog victim.", "Crashing input.",
                      "Overlong input."):
                cp.parse(s)
    # no-parse and deterministic errors are cached; transient failures are retried
    assert parser.calls.count("Colorless ideas.") == 1
    assert parser.calls.count("Overlong input.") == 1
    assert parser.calls.count("Watchdog victim.") == 2
    assert parser.calls.count("Crashing input.") == 2
    assert cp.stored == 2


def test_is_cacheable():
    assert is_cacheable({"readings": ["x"], "error": None})
    assert is_cacheable({"readings": [], "error": None})
    assert is_cacheable({"readings": [], "error": "no parse"})
    assert not is_cacheable({"readings": [], "error": "timeout after 5 s"})
    assert not is_cacheable({"readings": [], "error": "ACE process died"})


def test_canonical_options_and_default_path(tmp_path):
    assert canonical_options({"b": 1, "a": [1, 2]}) == canonical_options({"a": [1, 2], "b": 1})
    assert canonical_options({"a": None}) == "{}"
    assert default_cache_path(tmp_path) == tmp_path / "cache" / "parses.sqlite"


def test_wal_mode(tmp_path):
    path = tmp_path / "c.sqlite"
    ParseCache(path).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_corrupt_file_is_a_clear_error(tmp_path):
    path = tmp_path / "parses.sqlite"
    path.write_bytes(b"this is not a SQLite database at all\n" * 200)
    with pytest.raises(CacheError) as info:
        ParseCache(path)
    message = str(info.value)
    assert isinstance(info.value, LitError)
    assert str(path) in message
    assert "delete" in message and "--no-cache" in message


def test_truncated_file_is_a_clear_error(tmp_path):
    path = tmp_path / "parses.sqlite"
    with ParseCache(path) as cache:
        for i in range(300):
            cache.put(KEY, f"Sentence {i}.", {"readings": ["x" * 200], "error": None})
    for suffix in ("-wal", "-shm"):
        (tmp_path / ("parses.sqlite" + suffix)).unlink(missing_ok=True)
    data = path.read_bytes()
    path.write_bytes(data[:100] + b"\x00garbage" * 50 + data[600:4096])
    with pytest.raises(CacheError, match="--no-cache"):
        cache = ParseCache(path)
        for i in range(300):
            cache.get(KEY, f"Sentence {i}.")


def test_pickle_reconnects(tmp_path):
    import pickle

    cache = ParseCache(tmp_path / "c.sqlite")
    cache.put(KEY, "Dogs bark.", {"readings": [], "error": None})
    clone = pickle.loads(pickle.dumps(cache))
    assert clone.get(KEY, "Dogs bark.") == {"readings": [], "error": None}
    clone.close()
    cache.close()


# --- concurrency: several real processes on one file -------------------------

_WORKERS = 4
_PER_WORKER = 150


def _writer(path: str, worker: int, start, failures) -> None:
    start.wait()
    try:
        cache = ParseCache(path)  # one connection per process
        parser = _CountingParser()
        cp = CachedParser(parser, cache, KEY, decode=_Result.from_dict)
        for i in range(_PER_WORKER):
            # half the sentences are shared by all workers, half are this worker's own
            s = f"Shared sentence {i}." if i % 2 else f"Worker {worker} sentence {i}."
            result = cp.parse(s)
            assert result.sentence == s
        cache.close()
    except BaseException as exc:  # report anything to the parent test
        failures.put(f"worker {worker}: {type(exc).__name__}: {exc}")
        raise


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_concurrent_writers_in_several_processes(tmp_path, method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"start method {method} not available")
    ctx = multiprocessing.get_context(method)
    path = str(tmp_path / "parses.sqlite")
    ParseCache(path).close()  # the parent creates the file as the CLI does
    start = ctx.Event()
    failures = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(path, w, start, failures))
             for w in range(_WORKERS)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(120)
    errors = []
    while not failures.empty():
        errors.append(failures.get())
    assert errors == []
    assert [p.exitcode for p in procs] == [0] * _WORKERS
    shared = _PER_WORKER // 2
    own = _PER_WORKER - shared
    expected = {f"Shared sentence {i}." for i in range(1, _PER_WORKER, 2)}
    expected |= {f"Worker {w} sentence {i}." for w in range(_WORKERS)
                 for i in range(0, _PER_WORKER, 2)}
    assert len(expected) == shared + own * _WORKERS
    with ParseCache(path) as cache:
        assert len(cache) == len(expected)
        for s in expected:
            assert cache.get(KEY, s) == {
                "sentence": s, "readings": [f"[ MRS of {s} ]"], "error": None}


def test_fork_inherited_cache_does_not_share_connection(tmp_path):
    ctx = multiprocessing.get_context("fork")
    cache = ParseCache(tmp_path / "c.sqlite")
    cache.put(KEY, "Parent.", {"readings": [], "error": None})
    p = ctx.Process(target=_child_put, args=(cache,))
    p.start()
    p.join(60)
    assert p.exitcode == 0
    assert cache.get(KEY, "Child.") == {"readings": [], "error": None}
    cache.close()


def _child_put(cache: ParseCache) -> None:
    assert cache.get(KEY, "Parent.") is not None
    cache.put(KEY, "Child.", {"readings": [], "error": None})
    cache.close()


def test_policy_on_ace_layer_errors():
    # the error texts lit.ace produces
    assert is_cacheable({"error": "empty sentence: nothing to parse"})
    # a memory cap cut the item: transient (issue 13), not an answer
    assert not is_cacheable({"error": "ACE: hit RAM limit while unpacking"})
    assert not is_cacheable({"error": "ACE timed out after 30 s (watchdog); process restarted"})
    assert not is_cacheable({"error": "ACE process died 2 times (exit code -11); restarted"})
    assert not is_cacheable({"error": "unreadable output from ACE (ValueError: x); "
                                      "process restarted"})
    assert not is_cacheable({"error": "ACE: timed out"})
    assert not is_cacheable({"error": "something nobody anticipated"})


def test_parser_cache_key():
    class _P:
        ace_version = (0, 9, 30)
        cmdargs = ("-n", "5", "--timeout", "10")

    key = parser_cache_key(_P(), "ab12", select="roundtrip")
    assert key.ace_version == "0.9.30"
    assert key.options == '{"cmdargs":["-n","5","--timeout","10"],"select":"roundtrip"}'


def test_with_real_parse_result(tmp_path):
    from lit.interface import ParseResult, Reading

    class _P:
        def parse(self, sentence):
            return ParseResult(sentence, (Reading("[ TOP: h0 ]", "(deriv)"),))

    with ParseCache(tmp_path / "c.sqlite") as cache:
        cp = CachedParser(_P(), cache, KEY)  # default decoder: lit.ace.ParseResult
        first = cp.parse("Dogs bark.")
        assert cp.parse("Dogs bark.") == first
        assert isinstance(first, ParseResult) and cp.hits == 1


# --- through `lit transform` (real processes; fake-ace stands in for ACE) ---------

_LIT = [sys.executable, "-c", "from lit.cli import main; main()"]


def _fake_env(tmp_path, log=None):
    from fake_ace_support import fake_ace_env

    env = dict(os.environ)
    env.update(fake_ace_env(tmp_path / "fake"))
    env["LIT_HOME"] = str(tmp_path / "home")
    if log is not None:
        env["FAKE_ACE_LOG"] = str(log)
    return env


def _parse_items(log) -> int:
    from fake_ace_support import read_log

    events = read_log(log)
    parsers = {e["pid"] for e in events if e["event"] == "start" and e["mode"] == "parse"}
    return sum(1 for e in events if e["event"] == "item" and e["pid"] in parsers)


def test_cli_rerun_with_other_specs_does_not_reparse(tmp_path):
    from conftest import snli_sample_path

    source = tmp_path / "in.jsonl"
    with open(snli_sample_path(), encoding="utf-8") as f:
        source.write_text("".join(next(f) for _ in range(12)), encoding="utf-8")
    runs = []
    for i, specs in enumerate(["f;p", "f;p", "m;o,n;n"]):
        log = tmp_path / f"ace-{i}.log"
        proc = subprocess.run([*_LIT, "-q", "transform",
                               "--select", "roundtrip", "-r", specs, "--lm", "none", "-j", "2",
                               str(source)], env=_fake_env(tmp_path, log), capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        runs.append((proc.stdout, _parse_items(log)))
    assert runs[0][1] > 0  # the first run parses (and fills the cache)
    assert runs[1][0] == runs[0][0]  # same output from the cache ...
    assert runs[1][1] == 0  # ... without parsing anything
    assert runs[2][1] == 0  # other specs: the same sentences, still no parsing
    assert (tmp_path / "home" / "cache" / "parses.sqlite").exists()
    # --no-cache parses again
    log = tmp_path / "ace-nocache.log"
    proc = subprocess.run([*_LIT, "-q", "transform",
                               "--select", "roundtrip", "-r", "f;p", "--lm", "none", "-j", "1",
                           "--no-cache", str(source)], env=_fake_env(tmp_path, log),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == runs[0][0] and _parse_items(log) == runs[0][1]


def test_cli_corrupt_cache_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"not a database\n" * 100)
    proc = subprocess.run([*_LIT, "transform",
                           "--select", "roundtrip", "-r", "f;p", "--lm", "none",
                           "--cache", str(bad),
                           "-"], env=_fake_env(tmp_path), input="", capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 1
    assert str(bad) in proc.stderr and "--no-cache" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_default_cache_location(tmp_path, monkeypatch):
    # LIT_CACHE names the cache; an unwritable default location (a read-only
    # LIT_HOME, as in the container image) turns the cache off with a warning
    import logging

    from lit.cache import open_cache

    def _parse_cache(path, no_cache, env):
        return None if no_cache else open_cache(path, env=env)

    cache = _parse_cache(None, False, {"LIT_HOME": str(tmp_path / "home"),
                                       "LIT_CACHE": str(tmp_path / "elsewhere" / "c.sqlite")})
    assert cache is not None and cache.path == tmp_path / "elsewhere" / "c.sqlite"
    assert _parse_cache(None, True, {"LIT_HOME": str(tmp_path)}) is None
    # root (CI) can write anywhere, so stand in for the permission check
    import lit.cache as cache_module

    monkeypatch.setattr(cache_module, "_writable", lambda path: False)
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logging.getLogger("lit").addHandler(handler)
    try:
        assert _parse_cache(None, False, {"LIT_HOME": str(tmp_path / "ro-home")}) is None
        # a location the user named is used, writable or not (errors surface later)
        named = _parse_cache(tmp_path / "named.sqlite", False, {"LIT_HOME": str(tmp_path)})
        assert named is not None
    finally:
        logging.getLogger("lit").removeHandler(handler)
    assert any("parse cache off" in r.getMessage() for r in records)


def test_a_cached_sentence_costs_no_round_trip(tmp_path):
    """The selection is cached next to the parse: the second run neither
    parses nor regenerates the sentence to select its reading, and selects
    the same reading for the same reason."""
    from fake_ace_support import fake_ace_env

    from lit.pipeline import Transformer

    env = dict(os.environ, **fake_ace_env(tmp_path / "fake"))
    sentence = "Two women are embracing while holding to go packages."
    runs = []
    for _ in range(2):
        with ParseCache(tmp_path / "cache.sqlite") as cache, Transformer(
                "erg-1214", env=env, home=tmp_path / "home", cache=cache,
                select="roundtrip", reranker=None) as t:
            runs.append((t.transform_sentence(sentence, "f"), dict(t.requests)))
    (first, asked), (second, again) = runs
    assert first.status == "ok" and asked["roundtrip"] >= 1 and asked["parse"] == 1
    assert again.get("roundtrip", 0) == 0 and again.get("parse", 0) == 0
    assert again["parse-cached"] == 1
    assert second.to_dict() == first.to_dict()


def test_a_cached_selection_is_for_one_realization_cap_only(tmp_path):
    """A round trip depends on the generator's realization cap (a reading with
    more realizations does not round-trip): a selection cached under another
    cap is not taken, the parse is."""
    from fake_ace_support import fake_ace_env

    from lit.pipeline import Transformer

    env = dict(os.environ, **fake_ace_env(tmp_path / "fake"))
    sentence = "Two women are embracing while holding to go packages."
    asked = []
    for cap in (1000, 1, 1000):
        with ParseCache(tmp_path / "cache.sqlite") as cache, Transformer(
                "erg-1214", env=env, home=tmp_path / "home", cache=cache,
                select="roundtrip", reranker=None, max_realizations=cap) as t:
            t.transform_sentence(sentence, "f")
            asked.append(dict(t.requests))
    assert asked[0]["roundtrip"] >= 1
    assert asked[1]["roundtrip"] >= 1 and asked[1]["parse-cached"] == 1  # new cap: new round trip
    assert asked[2].get("roundtrip", 0) == 0  # the first cap's selection is still there
