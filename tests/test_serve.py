"""`lit serve`: the explorer's records, its JSON API, limits, the ACE pool, start and stop.

ACE itself cannot be obtained here, so these tests run against
``tests/fake_ace.py`` (a stand-in ACE executable replaying the recorded ERG
output through real subprocesses; see its docstring). The API is served by
a real uvicorn on a loopback port and spoken to with ``urllib``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import recorded
from fake_ace_support import fake_ace, fake_ace_env, peak_processes, read_log

pytest.importorskip("starlette", reason="lit serve needs the 'serve' extra (starlette)")
pytest.importorskip("uvicorn", reason="lit serve needs the 'serve' extra (uvicorn)")

from lit.errors import ACEError  # noqa: E402
from lit.grammar import Grammar, load_profile  # noqa: E402
from lit.nli import LabelTable  # noqa: E402
from lit.rules import RuleSet  # noqa: E402
from lit.serve.explore import Explorer, Limits  # noqa: E402
from lit.serve.pool import AcePool, Backend, BusyError, PoolClosedError, ace_pool  # noqa: E402

LIT = [sys.executable, "-c", "from lit.cli import main; main()"]
BOY = "A boy does a card trick."  # 7 readings; reading 2 is the first that round-trips
DOG = "a dog chases a cat"        # 1 reading
MANY_SPECS = ["p", "f", "pr", "n", "q", "i", "pa", "s", "m", "prog", "perf", "p+n", "f+n", "p+q",
              "f+q", "n+q", "p+i", "f+i", "n+i", "m+n", "pa+n"]


# -- fixtures --------------------------------------------------------------------


@pytest.fixture(scope="module")
def rules():
    return RuleSet.load()


@pytest.fixture(scope="module")
def labels(rules):
    return LabelTable.load(rules=rules)


def make_grammar(directory: Path) -> Grammar:
    ace, image = fake_ace(directory)
    return Grammar(load_profile("erg-1214"), image, ace, "env", None, "0.9.34")


@pytest.fixture
def grammar(tmp_path):
    return make_grammar(tmp_path / "fake")


def ace_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, FAKE_ACE_LOG=str(tmp_path / "ace.log"))
    env.update(extra)
    return env


@contextmanager
def explorer_for(grammar, rules, labels, tmp_path, *, workers=1, limits=None, **env):
    pool = ace_pool(grammar, workers, n=10, env=ace_env(tmp_path, **env))
    try:
        # fake-ace replays recordings made on the reading selected by round trip
        yield Explorer(pool, grammar.profile, rules=rules, labels=labels, limits=limits,
                       select="roundtrip",
                       about={"lm": None})
    finally:
        pool.close()


@contextmanager
def served(explorer, *, local_only=True):
    """The explorer's app on a real uvicorn at a free loopback port; yields the base URL."""
    import uvicorn

    from lit.serve.app import bind, create_app

    app = create_app(explorer, local_only=local_only, on_shutdown=explorer.pool.close)
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, log_level="warning",
                                           lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


@pytest.fixture
def api(grammar, rules, labels, tmp_path):
    with explorer_for(grammar, rules, labels, tmp_path, workers=2) as explorer, \
            served(explorer) as url:
        yield Client(url, explorer)


class Client:
    """A tiny JSON client on urllib (no third-party HTTP library needed)."""

    def __init__(self, url: str, explorer: Explorer | None = None) -> None:
        self.url = url
        self.explorer = explorer

    def request(self, method: str, path: str, body=None, *, raw: bytes | None = None,
                headers=None) -> tuple[int, dict, dict]:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        hdrs = {"Content-Type": "application/json"} if data is not None else {}
        hdrs.update(headers or {})
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                status, payload, headers = resp.status, resp.read(), dict(resp.headers)
        except urllib.error.HTTPError as exc:
            status, payload, headers = exc.code, exc.read(), dict(exc.headers)
        if headers.get("content-type", "").startswith("application/json"):
            return status, json.loads(payload), headers
        return status, {"text": payload.decode("utf-8", "replace")}, headers

    def post(self, path: str, body=None, **kw) -> tuple[int, dict]:
        status, data, _ = self.request("POST", path, body, **kw)
        return status, data

    def get(self, path: str) -> tuple[int, dict]:
        status, data, _ = self.request("GET", path)
        return status, data


def without_explain(record: dict) -> dict:
    return {k: v for k, v in record.items() if k != "explain"}


# -- the records -----------------------------------------------------------------


def test_parse_is_the_lit_parse_record_explained(api, grammar):
    from lit.ace import AceGenerator, AceParser
    from lit.parse import select_reading
    from lit.records import parse_record

    status, rec = api.post("/api/parse", {"sentence": BOY, "id": "b1"})
    assert status == 200
    with AceParser(grammar.image, executable=grammar.ace, n=10) as parser, \
            AceGenerator(grammar.image, executable=grammar.ace) as generator:
        result = parser.parse(BOY)
        selected = select_reading(result, "roundtrip", generator=generator)
    expected = parse_record("b1", result, selected, dmrs=True)
    assert selected == 2 and rec["selected"] == 2
    assert {k: v for k, v in rec.items() if k not in ("readings", "select")} == \
        {k: v for k, v in expected.items() if k != "readings"}
    for got, want in zip(rec["readings"], expected["readings"], strict=True):
        assert got["mrs"] == want["mrs"] and got["dmrs"] == want["dmrs"]
    assert "first candidate reading that regenerates" in rec["select"]["reason"]
    assert rec["select"]["method"] == "roundtrip"
    flags = [(r["candidate"], r["roundtrip"]) for r in rec["readings"]]
    assert flags[2] == (True, True)
    assert flags[3] == (True, False)
    assert flags[0] == (False, None)
    assert rec["readings"][0]["note"] == "not a candidate: a fragment analysis (unknown EP)"
    assert rec["readings"][2]["index_ep"] == "_do_v_1"
    assert rec["readings"][2]["dmrs"]["index"] is not None


def test_no_parse_and_no_selection_say_why(api):
    status, rec = api.post("/api/parse", {"sentence": "Colorless green ideas sleep furiously."})
    assert status == 200
    assert rec["readings"] == [] and rec["error"] == "no parse" and rec["selected"] is None
    assert rec["select"]["reason"].startswith("no reading")
    status, out = api.post("/api/transform", {"sentence": "Colorless green ideas sleep "
                                              "furiously.", "rules": "p"})
    assert status == 200
    assert out["records"][0]["status"] == "skipped"
    assert out["records"][0]["reason"] == "no-parse: no reading"


@pytest.mark.parametrize("verify", [False, True])
def test_transform_records_are_the_pipelines(api, grammar, rules, verify):
    from lit.pipeline import Transformer

    specs = "p,pa,i,n,f+i,q,s,o"
    sentences = [BOY, DOG, "Children were looking at a bike."]
    with Transformer(grammar, rules=rules, candidates=3, keep_mrs=True, verify=verify,
                     select="roundtrip") as t:
        expected = list(t.transform_sentences(list(enumerate(sentences, 1)), specs))
    got = []
    for i, sentence in enumerate(sentences, 1):
        status, out = api.post("/api/transform", {"sentence": sentence, "rules": specs,
                                                  "candidates": 3, "verify": verify, "id": i})
        assert status == 200, out
        assert out["reading"] == out["selected"]
        got.extend(out["records"])
    assert [without_explain(r) for r in got] == expected
    assert any(r["status"] == "ok" for r in got)


def test_pair_records_are_the_pipelines(api, grammar, rules):
    from lit.pipeline import Transformer

    specs = "f;p+i,m;o,o;n,q;q,pa;pa,o;o"
    pair = {"sentence1": BOY, "sentence2": DOG, "gold_label": "entailment", "id": "x"}
    with Transformer(grammar, rules=rules, candidates=2, keep_mrs=True,
                     select="roundtrip") as t:
        expected = t.transform_pair(pair, specs)
    status, out = api.post("/api/transform", {**pair, "rules": specs, "candidates": 2})
    assert status == 200, out
    assert [without_explain(r) for r in out["records"]] == expected
    by_spec = {r["spec"]: r for r in out["records"]}
    assert by_spec["m;o"]["status"] == "ok"
    assert by_spec["m;o"]["explain"]["label_row"]["spec"] == "m;o"
    assert by_spec["m;o"]["explain"]["label_row"]["source"] == "paper"
    assert by_spec["q;q"]["reason"].startswith("unlabeled: ")
    assert by_spec["q;q"]["explain"]["label_reason"] in by_spec["q;q"]["reason"]
    assert by_spec["f;p+i"]["explain"]["label_row"]["spec"] == "f;p"
    assert [r["name"] for r in by_spec["f;p+i"]["explain"]["premise"]["rules"]] == \
        ["future", "itcleft_arg1"]
    assert out["readings"] == [2, 0] and out["selected"] == [2, 0]


def test_another_reading_reruns_the_chains_on_it(api):
    status, first = api.post("/api/transform", {"sentence": BOY, "rules": "p,pa"})
    assert status == 200 and first["reading"] == 2
    assert [r["status"] for r in first["records"]] == ["ok", "ok"]
    status, other = api.post("/api/transform", {"sentence": BOY, "rules": "p,pa",
                                                "reading": 3})
    assert status == 200
    assert other["reading"] == 3 and other["selected"] == 2
    for rec in other["records"]:
        assert rec["explain"]["reading"] == 3
        assert rec["status"] == "skipped" and rec["reason"]  # the stand-in knows only reading 2
    assert other["records"][0]["mrs"] != first["records"][0]["mrs"]
    # a reading that is not a candidate is still transformed: its refusal says why
    status, frag = api.post("/api/transform", {"sentence": BOY, "rules": "p", "reading": 0})
    assert frag["records"][0]["reason"] == \
        "inapplicable: MRS contains an unknown EP (fragment analysis)"


def test_refusals_carry_their_reasons(api):
    past = "Children were looking at a bike."
    status, out = api.post("/api/transform", {"sentence": past, "rules": "p,i+i2,n+n:no,o"})
    assert status == 200
    reasons = [r["reason"] for r in out["records"]]
    assert reasons[:3] == ["inapplicable: TENSE is already past",
                           "inapplicable: step itcleft_arg2: already an it-cleft",
                           "inapplicable: step negation_no: already negated"]
    assert out["records"][3]["status"] == "ok" and out["records"][3]["sentence"] == past


def test_verify_shows_what_it_found(api):
    status, out = api.post("/api/transform", {"sentence": DOG, "rules": "p", "verify": True})
    assert status == 200
    rec = out["records"][0]
    found = rec["explain"]["verify"]
    assert found["expectation"].startswith("expected ") and "TENSE past" in found["expectation"]
    assert [v["sentence"] for v in found["results"]] == ["A dog chased a cat."]
    # the stand-in ACE cannot re-parse sentences it has no recording of
    assert found["results"][0]["ok"] is False
    assert rec["reason"].startswith("no-realization: --verify rejected all 1 candidates")


def test_registry_labels_and_info(api):
    status, reg = api.get("/api/rules")
    assert status == 200 and reg["grammar"] == "erg-1214"
    by_name = {r["name"]: r for r in reg["rules"]}
    assert by_name["past"]["aliases"] == ["p"] and by_name["past"]["phenomenon"] == "tense"
    assert by_name["itcleft_arg1"]["unsupported"] is None
    status, table = api.get("/api/labels")
    assert status == 200 and "f;p" in {row["spec"] for row in table["rows"]}
    assert table["labels"] == ["entailment", "neutral", "contradiction"]
    status, info = api.get("/api/info")
    assert status == 200
    assert info["grammar"] == "erg-1214" and info["select"] == "roundtrip"
    assert info["pool"]["size"] == 2 and info["limits"]["max_body"] == 64 * 1024


def test_unsupported_rules_say_so(grammar, rules, labels, tmp_path):
    from dataclasses import replace

    erg2018 = replace(grammar, profile=load_profile("erg-2018"))
    with explorer_for(erg2018, rules, labels, tmp_path) as explorer:
        by_name = {r["name"]: r for r in explorer.rule_list()}
        assert by_name["itcleft_arg1"]["unsupported"] == \
            "unsupported: erg-2018 does not generate it-clefts"


# -- bad input, limits ---------------------------------------------------------------


@pytest.mark.parametrize("path, body, status, message", [
    ("/api/parse", {}, 400, "sentence: expected a string, got missing"),
    ("/api/parse", {"sentence": 3}, 400, "sentence: expected a string, got a int"),
    ("/api/parse", {"sentence": "  "}, 400, "sentence: give a non-empty sentence"),
    ("/api/parse", {"sentence": "w " * 51}, 400, "too long: 51 words > 50"),
    ("/api/parse", {"sentence": "x" * 1001}, 400, "too long: 1001 characters > 1000"),
    ("/api/parse", {"sentence": DOG, "path": "/etc/passwd"}, 400, "unknown field(s) 'path'"),
    ("/api/parse", [DOG], 400, "the body must be a JSON object, not list"),
    ("/api/transform", {"sentence": DOG}, 400, "rules: expected a string"),
    ("/api/transform", {"sentence": DOG, "rules": "p,x+i"}, 400,
     "unknown rule 'x' in chain; see `lit rules list`\n  p,x+i\n    ^"),
    ("/api/transform", {"sentence": DOG, "rules": "f;p"}, 400,
     "'f;p' is a pair spec, but the input has single sentences"),
    ("/api/transform", {"sentence": DOG, "rules": "p", "reading": 5}, 400,
     "reading: 5 is not a reading of the sentence (it has 1: 0 to 0)"),
    ("/api/transform", {"sentence": DOG, "rules": "p", "reading": -1}, 400,
     "reading: expected a reading number"),
    ("/api/transform", {"sentence": DOG, "rules": "p", "candidates": 0}, 400,
     "candidates: 0 is not a number from 1 to 50"),
    ("/api/transform", {"sentence": DOG, "rules": "p", "verify": "yes"}, 400,
     "verify: expected true or false"),
    ("/api/transform", {"sentence": DOG, "rules": ",".join(MANY_SPECS)}, 400,
     "rules: 21 specs > 20 per request"),
    ("/api/transform", {"sentence": DOG, "rules": "p,p"}, 400, "duplicate spec 'p'"),
    ("/api/transform", {"sentence1": DOG, "sentence2": DOG, "gold_label": "maybe",
                        "rules": "f;p"}, 400, "gold_label 'maybe' is not one of entailment"),
    ("/api/transform", {"sentence1": DOG, "sentence2": DOG, "gold_label": "neutral",
                        "rules": "p"}, 400, "'p' is a single-sentence spec, but the input has "
                                            "sentence pairs"),
    ("/api/transform", {"sentence1": DOG, "gold_label": "neutral", "rules": "f;p"}, 400,
     "sentence2: expected a string, got missing"),
])
def test_bad_requests_are_400_with_the_reason(api, path, body, status, message):
    got, data = api.post(path, body)
    assert got == status
    assert message in data["error"]


def test_transport_errors(api):
    big = json.dumps({"sentence": "x" * (70 * 1024)}).encode()
    status, data = api.post("/api/parse", raw=big)
    assert status == 413 and "request body too large" in data["error"]
    status, data = api.post("/api/parse", raw=b"{not json")
    assert status == 400 and data["error"].startswith("malformed JSON")
    status, data = api.post("/api/parse", raw=b'{"sentence": "\xff"}')
    assert status == 400 and "not UTF-8" in data["error"]
    status, data = api.post("/api/parse", raw=b'{"sentence": "a"}',
                            headers={"Content-Type": "text/plain"})
    assert status == 415 and "Content-Type: application/json" in data["error"]
    status, data = api.get("/api/parse")
    assert status == 405 and "not allowed" in data["error"]
    status, data = api.get("/api/nothing")
    assert status == 404 and data["error"] == "not found: /api/nothing"


def test_chunked_body_over_the_limit_is_refused(api):
    # no Content-Length: the body is counted as it arrives
    host, port = api.url.removeprefix("http://").split(":")
    chunk = b"x" * 8192
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(b"POST /api/parse HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            for _ in range(12):
                s.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            s.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server may answer and close before the rest arrives
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
        answer = answer.decode("latin-1")
    assert answer.startswith("HTTP/1.1 413")
    assert "request body too large: more than 65536 bytes" in answer


def test_only_local_host_names_are_answered(api):
    status, data, _ = api.request("GET", "/api/info", headers={"Host": "attacker.example"})
    assert status == 400 and "Host 'attacker.example' refused" in data["error"]
    for host in ("localhost:1234", "127.0.0.1", "[::1]:80"):
        assert api.request("GET", "/api/info", headers={"Host": host})[0] == 200


def test_page_and_assets_come_from_lit_only(api):
    from lit.serve.app import ASSETS, load_assets

    with urllib.request.urlopen(api.url + "/", timeout=30) as resp:
        html = resp.read().decode()
        csp = resp.headers["Content-Security-Policy"]
        assert resp.headers["Content-Type"].startswith("text/html")
    assert "default-src 'none'" in csp and "script-src 'self'" in csp
    assert '<script src="/static/app.js"' in html and '<script src="/static/dmrs.js"' in html
    for name, data in load_assets().items():
        text = data.decode()
        # nothing from elsewhere: no URLs with a scheme or a host, so the page works offline
        text = text.replace('"http://www.w3.org/2000/svg"', "")  # a name, not a fetch
        assert "http://" not in text and "https://" not in text and 'src="//' not in text, name
        if name != "index.html":
            with urllib.request.urlopen(f"{api.url}/static/{name}", timeout=30) as resp:
                assert resp.read() == data
                assert resp.headers["Content-Type"] == ASSETS[name]
    for path in ("/static/../pyproject.toml", "/static/%2e%2e%2fpyproject.toml",
                 "/static/index.py", "/static/"):
        status, _, _ = api.request("GET", path)
        assert status == 404, path


def test_requests_never_touch_files(api, monkeypatch):
    import builtins
    import io

    # a first request imports what lit imports lazily (nltk, ...): Python opens
    # their files then, whichever test runs first
    assert api.post("/api/transform", {"sentence": DOG, "rules": "p,n"})[0] == 200
    opened = []
    real_open, real_io_open = builtins.open, io.open

    def spy(file, *args, **kwargs):
        if not isinstance(file, int):  # file descriptors are the ACE processes' pipes
            opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(io, "open", spy)
    try:
        assert api.get("/")[0] == 200  # the page itself is served from memory
        assert api.get("/api/rules")[0] == 200
        assert api.get("/api/labels")[0] == 200
        assert api.post("/api/parse", {"sentence": DOG})[0] == 200
        assert api.post("/api/transform", {"sentence": DOG, "rules": "p,n"})[0] == 200
    finally:
        monkeypatch.setattr(builtins, "open", real_open)
        monkeypatch.setattr(io, "open", real_io_open)
    assert opened == []


# -- the ACE pool and concurrency -------------------------------------------------------


def test_twenty_concurrent_requests_never_exceed_the_pool(grammar, rules, labels, tmp_path):
    sentences = [r["sentence"] for r in recorded("erg-1214", "readings")
                 if r["selected"] is not None][:20]
    with explorer_for(grammar, rules, labels, tmp_path, workers=2,
                      FAKE_ACE_DELAY="0.02") as explorer, served(explorer) as url:
        client = Client(url)
        peak = {"in_use": 0, "waiting": 0}
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                s = explorer.pool.stats()
                peak["in_use"] = max(peak["in_use"], s["in_use"])
                peak["waiting"] = max(peak["waiting"], s["waiting"])
                time.sleep(0.005)

        watcher = threading.Thread(target=watch)
        watcher.start()
        with ThreadPoolExecutor(20) as ex:
            results = list(ex.map(lambda s: client.post("/api/transform",
                                                        {"sentence": s, "rules": "p,n"}),
                                  sentences))
        stop.set()
        watcher.join()
        stats = explorer.pool.stats()
    assert len(results) == 20
    assert all(status == 200 for status, _ in results), [d for s, d in results if s != 200]
    assert all(len(d["records"]) == 2 for _, d in results)
    # parsers are a fresh ACE process per sentence: count those alive at once
    assert peak_processes(tmp_path / "ace.log") == {"generate": 2, "parse": 2}
    assert stats["started"] == 2 and peak["in_use"] <= 2
    assert peak["waiting"] > 0  # requests did queue for a backend


def test_a_busy_pool_answers_503(grammar, rules, labels, tmp_path):
    limits = Limits(queue_timeout=0.2)
    with explorer_for(grammar, rules, labels, tmp_path, workers=1, limits=limits,
                      FAKE_ACE_DELAY="1.0") as explorer, served(explorer) as url:
        client = Client(url)
        with ThreadPoolExecutor(2) as ex:
            results = list(ex.map(lambda s: client.post("/api/parse", {"sentence": s}),
                                  [DOG, BOY]))
    statuses = sorted(status for status, _ in results)
    assert statuses == [200, 503]
    busy = next(d for s, d in results if s == 503)
    assert "all 1 ACE worker(s) stayed busy" in busy["error"] and "--workers" in busy["error"]


def test_a_slow_request_answers_504(grammar, rules, labels, tmp_path):
    limits = Limits(request_timeout=0.5)
    with explorer_for(grammar, rules, labels, tmp_path, limits=limits,
                      FAKE_ACE_DELAY="0.3") as explorer, served(explorer) as url:
        status, data = Client(url).post("/api/parse", {"sentence": BOY})
    assert status == 504
    assert "the request took longer than 0.5 s" in data["error"]
    assert "--request-timeout" in data["error"]


class _Proc:
    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_pool_starts_lazily_and_bounds_backends():
    made = []

    def factory() -> Backend:
        b = Backend(_Proc("p"), _Proc("g"))
        made.append(b)
        return b

    pool = AcePool(factory, size=2)
    assert pool.stats() == {"size": 2, "started": 0, "in_use": 0, "waiting": 0}
    with pool.lease() as a:
        with pool.lease() as b:
            assert a is not b and pool.stats()["in_use"] == 2
            with pytest.raises(BusyError, match="all 2 ACE worker"):
                with pool.lease(timeout=0.05):
                    pass
    with pool.lease() as c:
        assert c in (a, b)
    assert len(made) == 2 and pool.started == 2
    pool.close()
    assert all(b.parser.closed and b.generator.closed for b in made)
    with pytest.raises(PoolClosedError):
        with pool.lease(timeout=0):
            pass
    pool.close()  # idempotent


def test_pool_factory_failure_frees_the_slot():
    calls = []

    def factory() -> Backend:
        calls.append(1)
        if len(calls) == 1:
            raise ACEError("grammar image not found: x.dat")
        return Backend(_Proc("p"), _Proc("g"))

    pool = AcePool(factory, size=1)
    with pytest.raises(ACEError):
        with pool.lease(timeout=1):
            pass
    with pool.lease(timeout=1) as backend:
        assert isinstance(backend.parser, _Proc)
    assert pool.started == 1


def test_closing_stops_backends_in_use():
    pool = AcePool(lambda: Backend(_Proc("p"), _Proc("g")), size=1)
    with pool.lease() as backend:
        pool.close()
        assert backend.parser.closed
    with pytest.raises(PoolClosedError):
        with pool.lease(timeout=0):
            pass


def test_import_lit_serve_is_light():
    code = ("import sys, lit, lit.serve, lit.serve.explore, lit.serve.pool; "
            "print(sorted(m for m in ('starlette', 'uvicorn', 'torch', 'lit.serve.app') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.strip() == "[]"


# -- the command ----------------------------------------------------------------------


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1].startswith("Z")
    except OSError:
        return True


def start_lit_serve(tmp_path: Path, *args: str, env: dict[str, str] | None = None
                    ) -> tuple[subprocess.Popen, str, str]:
    """``lit serve --port 0 ARGS`` with fake ACE; returns (process, URL, the line saying so).

    Its stderr keeps being read (into ``proc.lines``), so a chatty server never blocks.
    """
    import queue

    full = dict(os.environ, **fake_ace_env(tmp_path / "fake"), LIT_HOME=str(tmp_path / "home"))
    full.update(env or {})
    if "--select" not in args:  # fake-ace: recordings of the reading selected by round trip
        args = ("--select", "roundtrip", *args)
    proc = subprocess.Popen([*LIT, "serve", "--port", "0", *args], env=full,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str | None] = queue.Queue()
    proc.lines = []  # type: ignore[attr-defined]

    def drain() -> None:
        assert proc.stderr is not None
        for text in proc.stderr:
            proc.lines.append(text)  # type: ignore[attr-defined]
            lines.put(text)
        lines.put(None)

    proc.drainer = threading.Thread(target=drain, daemon=True)  # type: ignore[attr-defined]
    proc.drainer.start()  # type: ignore[attr-defined]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            break
        if line is None:
            break
        if "listening on" in line:
            return proc, line.split("listening on ", 1)[1].split()[0], line
    proc.kill()
    proc.wait()
    raise AssertionError("lit serve did not start:\n" + "".join(proc.lines))  # type: ignore


def stop(proc: subprocess.Popen) -> str:
    """Ctrl-C *proc* (from :func:`start_lit_serve`); returns everything it wrote to stderr."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise
    proc.drainer.join(10)  # type: ignore[attr-defined]
    return "".join(proc.lines)  # type: ignore[attr-defined]


def test_cli_serves_locally_and_ctrl_c_stops_ace(tmp_path):
    log = tmp_path / "ace.log"
    proc, url, line = start_lit_serve(tmp_path, "--lm", "none", "-j", "2",
                                      env={"FAKE_ACE_LOG": str(log)})
    try:
        assert line.startswith("lit serve: listening on http://127.0.0.1:")
        assert "(local only)" in line
        client = Client(url)
        status, rec = client.post("/api/transform", {"sentence": DOG, "rules": "p"})
        assert status == 200 and rec["records"][0]["sentence"] == "A dog chased a cat."
        status, info = client.get("/api/info")
        assert info["ace_version"] == "0.9.34" and info["lm"] is None
        pids = {e["pid"] for e in read_log(log) if e["event"] == "start"}
        assert pids
    finally:
        err = stop(proc)
    assert proc.returncode == 130, err
    assert "lit: interrupted" in err and "Traceback" not in err
    exits = {e["pid"] for e in read_log(log) if e["event"] == "exit"}
    assert pids <= exits  # each ACE saw the end of its input and exited
    assert all(_gone(pid) for pid in pids)


def test_cli_port_in_use_is_a_clear_error(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = dict(os.environ, **fake_ace_env(tmp_path / "fake"),
                   LIT_HOME=str(tmp_path / "home"))
        out = subprocess.run([*LIT, "serve", "--port", str(port), "--lm", "none"], env=env,
                             capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert f"lit: error: cannot listen on http://127.0.0.1:{port}" in out.stderr
    assert "--port" in out.stderr


def test_cli_missing_grammar_is_a_clear_error(tmp_path, lit_home):
    out = subprocess.run([*LIT, "serve", "--port", "0", "--lm", "none"],
                         env=dict(os.environ, LIT_HOME=str(lit_home)), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 1
    assert out.stderr.startswith("lit: error:") and "erg-1214" in out.stderr


def test_cli_help_lists_serve():
    from typer.testing import CliRunner

    from lit.cli import app

    result = CliRunner().invoke(app, ["serve", "--help"])
    assert result.exit_code == 0
    for option in ("--grammar", "--lm", "--host", "--port", "--workers", "--request-timeout"):
        assert option in result.output


def test_readme_curl_examples_work(api):
    import re

    from conftest import REPO

    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("### The JSON API"):text.index("## Python API")]
    block = section[section.index("```sh"):]
    block = block[:block.index("```", 5)].replace("\\\n", " ")
    posts = re.findall(r"curl -s --json '([^']*)'\s+http://127\.0\.0\.1:8765(/api/\w+)", block)
    gets = re.findall(r"curl -s http://127\.0\.0\.1:8765(/api/\w+)", block)
    assert len(posts) == 4 and len(gets) == 3
    # the stand-in ACE knows other sentences than the README's
    known = {"The dog chased the cat.": BOY, "A cat ran.": DOG}
    for body, path in posts:
        data = json.loads(body)
        for key in ("sentence", "sentence1", "sentence2"):
            if key in data:
                data[key] = known[data[key]]
        status, out = api.post(path, data)
        assert status == 200, (body, out)
    for path in gets:
        assert api.get(path)[0] == 200


@pytest.mark.ace
def test_real_ace_the_dog_chased_the_cat(rules, labels, tmp_path):
    """Done means: with a real ACE and ERG 1214, readings and the chains p,pa,i,n."""
    from conftest import real_ace

    ace, image = real_ace("erg-1214")
    grammar = Grammar(load_profile("erg-1214"), image, ace, "env", None, None)
    pool = ace_pool(grammar, 2, n=10)
    explorer = Explorer(pool, grammar.profile, rules=rules, labels=labels, select="roundtrip")
    try:
        parsed = explorer.parse("The dog chased the cat.")
        assert parsed["readings"] and parsed["selected"] is not None
        chosen = parsed["readings"][parsed["selected"]]
        assert chosen["roundtrip"] and chosen["index_ep"] == "_chase_v_1"
        assert chosen["dmrs"]["nodes"] and chosen["dmrs"]["links"]
        out = explorer.transform("The dog chased the cat.", "p,pa,i,n", candidates=5)
    finally:
        pool.close()
    by_spec = {r["spec"]: r for r in out["records"]}
    assert by_spec["p"]["reason"] == "inapplicable: TENSE is already past"
    expected = {"pa": "The cat was chased by the dog.", "i": "It is the dog that chased the cat.",
                "n": "The dog didn't chase the cat."}
    for spec, sentence in expected.items():
        rec = by_spec[spec]
        assert rec["status"] == "ok", rec["reason"]
        assert sentence in [c["sentence"] for c in rec["candidates"]] or \
            sentence.replace("didn't", "did not") in [c["sentence"] for c in rec["candidates"]]
