#!/usr/bin/env python3
"""fake-ace: a stand-in for the ACE binary, for tests only.

This is a **test double**. The real ACE processor and ERG images cannot be
obtained on the machines the test suite must run on, so this script plays
ACE at the process boundary: lit starts it as a subprocess exactly as it
starts ACE, writes to its stdin and reads its stdout. It speaks the
stdin/stdout protocol that PyDelphin's ``delphin.ace`` (and therefore
``lit.ace``) uses with ACE 0.9.34 and ``--tsdb-stdout``; its *answers*
are replayed from the recorded real ERG output in ``../shared/erg``. It
knows nothing about grammar: a sentence it has no recording for gets no
parse, an MRS it has no recording for gets no realization.

Usage (as lit/PyDelphin call ACE)::

    fake_ace.py -V                                   # "ACE version 0.9.34"
    fake_ace.py -g IMAGE [-n N] --tsdb-notes --tsdb-stdout --report-labels
    fake_ace.py -g IMAGE -e --tsdb-notes [--tsdb-stdout --report-labels]

``--timeout``, ``--max-chart-megabytes``, ``--max-unpack-megabytes`` and
ACE's other common options are accepted (and ignored); an unknown option
is an error, as with ACE. Parsing speaks the ``--tsdb-stdout`` protocol;
generation speaks it too, or, without ``--tsdb-stdout``, ACE's plain
protocol (as lit uses it): one realization per line, then ACE's ``NOTE:
tsdb parse: ...`` line (with ``(:error . "...")`` on a timeout) and a blank
line, as ACE 0.9.30 prints them.

The "grammar image" is a small JSON file (write it with
``tests/fake_ace_support.py``)::

    {"fake_ace": {"grammar": "erg-1214", "shared": "/path/to/shared"}}

Anything else makes fake-ace exit at start with an error on stderr (exit
code 255), like ACE given a bad image. An optional ``"ace_version"`` that
differs from fake-ace's version gives ACE's version-mismatch error.

Answers:

* parsing (default mode): the input line is looked up (whitespace
  collapsed) in ``<shared>/erg/<grammar>/readings.jsonl``; its recorded
  readings are returned in recorded order, at most ``-n``. Derivations and
  trees are placeholders naming fake-ace (the recordings have none);
  unknown sentences get no parse (``(:readings . 0)``, no results);
* generation (``-e``): the input MRS is compared (``delphin.mrs.is_isomorphic``
  with properties, spans ignored) with every recorded ``output_mrs`` in
  ``transforms.jsonl`` and every recorded reading that round-trips in
  ``readings.jsonl``; the realizations are the first matching transform's
  ``generated`` strings, followed by the sentences of matching round-trip
  readings (as recorded, e.g. without final period). Candidates are
  indexed by their multiset of predicates, so only a few are decoded.

Fault injection (environment variables; *substring* is matched against the
input line, i.e. the sentence or the SimpleMRS):

``FAKE_ACE_HANG_ON=substring``
    sleep forever on that item (a hang: lit's watchdog must kill it)
``FAKE_ACE_DIE_ON=substring``
    write half an answer (and a line on stderr), then die by SIGKILL in the
    middle of that item
``FAKE_ACE_DIE_ONCE_FILE=path``
    with ``FAKE_ACE_DIE_ON``: die only if *path* does not exist yet, and
    create it first (the retried item then succeeds)
``FAKE_ACE_GARBAGE_ON=substring``
    answer that item with text that is not ACE's protocol
``FAKE_ACE_STDERR_FLOOD=bytes``
    write that many bytes to stderr for every item before answering
``FAKE_ACE_EXIT_AT_START=1``
    print an error on stderr and exit with status 1 at start
    (``=on-input``: only when the first input line arrives, like an image
    that takes long to fail)
``FAKE_ACE_DELAY=seconds``
    sleep that long before each answer (benchmarks, progress bars)
``FAKE_ACE_SLOW=seconds``
    slowness: each item (with ``FAKE_ACE_SLOW_ON=substring``, only those
    items; with ``FAKE_ACE_SLOW_MODE=generate`` or ``parse``, only in that
    mode) needs that many seconds of wall-clock time. If ``--timeout`` is
    shorter, fake-ace answers as ACE does when its time limit (wall clock,
    ``alarm()``) cuts an item: after ``--timeout`` seconds, with the error
    ``timeout, ran out of time while unpacking`` and no readings (parsing)
    or the first half of the realizations (generation); otherwise it
    answers normally after the delay. Each item is logged (``"slow"``).
``FAKE_ACE_VERSION=x.y.z``
    the version ``-V`` reports (default 0.9.34)
``FAKE_ACE_LOG=path``
    append one JSON line per event: ``{"event": "version"|"start"|"item"|"exit",
    "pid": ..., ...}``; tests use it to count processes and restarts

Like ACE, fake-ace writes a ``NOTE: ...`` line per item and a summary at
the end to stderr, answers a blank input line with ``SKIP:`` (PyDelphin
issue #155), and reads one MRS per line (ACE reads until the brackets
balance; lit always sends one line).

Start-up is fast: only the files of the requested grammar and task are
read, and only when the first item arrives.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from pathlib import Path

VERSION = "0.9.34"

_FLAGS = {
    "-e", "-1", "-p", "-X", "-L", "-y", "-T", "-R", "-E",
    "--tsdb-stdout", "--tsdb-notes", "--report-labels", "--itsdb-forest",
    "--disable-subsumption-test", "--disable-generalization",
    "--show-realization-trees", "--show-realization-mrses", "--show-probability",
    "--rooted-derivations", "--yy-rules", "--ubertagging", "--udx",
}
_VALUED = {
    "-g", "-n", "-r", "--timeout", "--max-chart-megabytes", "--max-unpack-megabytes",
    "--max-words", "--pcfg",
}
_PRED_RE = re.compile(r"\[ (\S+?)(?:<[^>]*>)? LBL:")


def _log(event: str, **data: object) -> None:
    path = os.environ.get("FAKE_ACE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"event": event, "pid": os.getpid(), **data}) + "\n")


def _die(message: str, code: int) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    sys.exit(code)


def _parse_args(argv: list[str]) -> dict[str, object]:
    opts: dict[str, object] = {"flags": set()}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "-V":
            opts["version"] = True
        elif arg in _FLAGS or arg.split("=", 1)[0] in _FLAGS:
            opts["flags"].add(arg.split("=", 1)[0])  # type: ignore[union-attr]
        elif arg.split("=", 1)[0] in _VALUED:
            if "=" in arg:
                key, value = arg.split("=", 1)
            else:
                if i + 1 >= len(argv):
                    _die(f"ace: option '{arg}' requires an argument", 1)
                key, value = arg, argv[i + 1]
                i += 1
            opts[key] = value
        elif arg == "-G":
            _die("fake-ace: compiling grammars (-G) is not supported by this stand-in", 1)
        else:
            _die(f"ace: unrecognized option '{arg}'", 1)
        i += 1
    return opts


def _load_image(path: str) -> dict[str, str]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        spec = data["fake_ace"]
        grammar, shared = spec["grammar"], spec["shared"]
    except FileNotFoundError:
        _die(f"ERROR: unable to open grammar image '{path}': No such file or directory", 255)
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        _die(
            f"ERROR: '{path}' is not a valid grammar image "
            "(fake-ace reads only the JSON images written by tests/fake_ace_support.py)",
            255,
        )
    wanted = spec.get("ace_version")
    if wanted and wanted != _version():
        _die(
            f"version mismatch: this is ACE version {_version()}, but this grammar image "
            f"was compiled by ACE version {wanted}",
            255,
        )
    return {"grammar": str(grammar), "shared": str(shared)}


def _version() -> str:
    return os.environ.get("FAKE_ACE_VERSION", VERSION)


def _q(text: str) -> str:
    """A Lisp string literal, as in ACE's --tsdb-stdout output."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _norm(text: str) -> str:
    return " ".join(text.split())


class _Replay:
    def __init__(self, grammar: str, shared: str) -> None:
        self.dir = Path(shared) / "erg" / grammar
        self._sentences: dict[str, list[str]] | None = None
        self._by_key: dict[tuple[str, ...], list[tuple[str, list[str], bool]]] | None = None
        self._decoded: dict[str, object] = {}

    def _rows(self, kind: str) -> list[dict]:
        path = self.dir / f"{kind}.jsonl"
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    def readings(self, sentence: str) -> list[str]:
        if self._sentences is None:
            self._sentences = {}
            for row in self._rows("readings"):
                self._sentences.setdefault(
                    _norm(row["sentence"]), [r["mrs"] for r in row["readings"]]
                )
        return self._sentences.get(_norm(sentence), [])

    @staticmethod
    def _key(mrs: str) -> tuple[str, ...]:
        return tuple(sorted(_PRED_RE.findall(mrs)))

    def _index(self) -> dict[tuple[str, ...], list[tuple[str, list[str], bool]]]:
        if self._by_key is None:
            index: dict[tuple[str, ...], list[tuple[str, list[str], bool]]] = {}
            for row in self._rows("transforms"):
                if row.get("output_mrs"):
                    entry = (row["output_mrs"], list(row.get("generated") or []), True)
                    index.setdefault(self._key(row["output_mrs"]), []).append(entry)
            for row in self._rows("readings"):
                for r in row["readings"]:
                    if r.get("roundtrip"):
                        entry = (r["mrs"], [row["sentence"]], False)
                        index.setdefault(self._key(r["mrs"]), []).append(entry)
            self._by_key = index
        return self._by_key

    def _decode(self, text: str) -> object:
        from delphin.codecs import simplemrs

        if text not in self._decoded:
            self._decoded[text] = simplemrs.decode(text)
        return self._decoded[text]

    def realizations(self, mrs: str) -> list[str]:
        from delphin.mrs import is_isomorphic

        candidates = self._index().get(self._key(mrs), [])
        if not candidates:
            return []
        m = self._decode(mrs)
        surfaces: list[str] = []
        have_transform = False
        for text, generated, from_transform in candidates:
            if from_transform and have_transform:
                continue
            if not is_isomorphic(m, self._decode(text), properties=True):  # type: ignore[arg-type]
                continue
            if from_transform:
                surfaces = generated + surfaces
                have_transform = True
            else:
                seen = {_norm(s).casefold().rstrip(".!?") for s in surfaces}
                for s in generated:
                    if _norm(s).casefold().rstrip(".!?") not in seen:
                        surfaces.append(s)
        return surfaces


def _parse_answer(sentence: str, mrss: list[str], labels: bool) -> str:
    results = []
    for i, mrs in enumerate(mrss):
        fields = [f"(:result-id . {i})"]
        derivation = f"(1 fake_ace_root 0.000000 0 1 ({_q(sentence)}))"
        fields.append(f"(:derivation . {_q(derivation)})")
        if labels:
            fields.append(f"(:tree . {_q('(S ' + _q(sentence) + ')')})")
        fields.append(f"(:mrs . {_q(mrs)})")
        fields.append("(:flags ((:ascore . 0.000000) (:probability . 1.000000)))")
        results.append("(" + " ".join(fields) + ")")
    tokens = [(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+", sentence)]
    yy = " ".join(  # YY token format, as ACE reports its input tokens
        f'({i + 1}, {i}, {i + 1}, <{start}:{end}>, 1, {_q(form)}, 0, "null")'
        for i, (start, end, form) in enumerate(tokens)
    )
    ntokens = len(tokens)
    parts = [f"(:ninputs . {ntokens})", f"(:p-input . {_q(yy)})", f"(:ntokens . {ntokens})"]
    if results:
        parts.append("(:results . (" + "".join(results) + "))")
    parts.append(f"(:readings . {len(mrss)}) (:pedges . 0) (:aedges . 0) (:total . 1) "
                 "(:treal . 1) (:tcpu . 1) (:others . 0)")
    return " ".join(parts) + "\n\n\n"


def _generate_answer(surfaces: list[str]) -> str:
    results = "".join(
        f"((:result-id . {i}) (:surface . {_q(s)}))" for i, s in enumerate(surfaces)
    )
    return (f"(:results . ({results})) (:readings . {len(surfaces)}) (:total . 1) "
            "(:treal . 1) (:tcpu . 1) (:others . 0)\n\n\n")


def _generate_plain(surfaces: list[str], error: str | None = None) -> str:
    note = "NOTE: tsdb parse:  (:total . 1) (:treal . 1) (:tcpu . 1) (:others . 0)"
    return "".join(s + "\n" for s in surfaces) + note + (f" {error}" if error else "") + "\n\n"


def _slowness(line: str, mode: str, timeout: float | None) -> bool:
    """Sleep as a slow item would; ``True`` if ACE's --timeout would cut it."""
    seconds = os.environ.get("FAKE_ACE_SLOW")
    if not seconds:
        return False
    only = os.environ.get("FAKE_ACE_SLOW_ON")
    wanted = os.environ.get("FAKE_ACE_SLOW_MODE")
    if (only and only not in line) or (wanted and wanted != mode):
        return False
    need = float(seconds)
    cut = timeout is not None and need > timeout
    _log("slow", input=line, seconds=need, timeout=timeout, cut=cut)
    time.sleep(timeout if cut and timeout is not None else need)
    return cut


_TIMEOUT_ERROR = '(:error . "timeout, ran out of time while unpacking")'


def _faults(line: str, out) -> None:  # noqa: ANN001
    flood = os.environ.get("FAKE_ACE_STDERR_FLOOD")
    if flood:
        remaining = int(flood)
        chunk = ("NOTE: fake-ace stderr flood " + "x" * 90 + "\n").encode()
        while remaining > 0:
            piece = chunk[:remaining] if remaining < len(chunk) else chunk
            sys.stderr.buffer.write(piece)
            remaining -= len(piece)
        sys.stderr.buffer.flush()
    delay = os.environ.get("FAKE_ACE_DELAY")
    if delay:
        time.sleep(float(delay))
    hang = os.environ.get("FAKE_ACE_HANG_ON")
    if hang and hang in line:
        _log("hang", input=line)
        while True:
            time.sleep(3600)
    die = os.environ.get("FAKE_ACE_DIE_ON")
    if die and die in line:
        once = os.environ.get("FAKE_ACE_DIE_ONCE_FILE")
        if not once or not os.path.exists(once):
            if once:
                Path(once).touch()
            _log("die", input=line)
            sys.stderr.write("fake-ace: dying on purpose (FAKE_ACE_DIE_ON)\n")
            sys.stderr.flush()
            out.write("(:ninputs . 3) (:p-input . ")
            out.flush()
            os.kill(os.getpid(), signal.SIGKILL)


def _terminated(signum: int, frame: object) -> None:
    _log("exit", signal="TERM")  # ended between items, as lit renews a process
    os._exit(128 + signum)


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, _terminated)
    opts = _parse_args(argv)
    if opts.get("version"):
        _log("version")
        sys.stdout.write(f"ACE version {_version()}\n")
        return 0
    if os.environ.get("FAKE_ACE_EXIT_AT_START") == "1":
        _die("ERROR: fake-ace told to fail at start (FAKE_ACE_EXIT_AT_START=1)", 1)
    if "-g" not in opts:
        _die("ace: no grammar image given; use -g IMAGE", 1)
    flags: set[str] = opts["flags"]  # type: ignore[assignment]
    generate = "-e" in flags
    plain = "--tsdb-stdout" not in flags
    if plain and not generate:
        _die("fake-ace: parsing speaks only the --tsdb-stdout protocol", 1)
    image = _load_image(str(opts["-g"]))
    n = int(str(opts["-n"])) if "-n" in opts else (1 if "-1" in flags else None)
    timeout = float(str(opts["--timeout"])) if "--timeout" in opts else None
    _log("start", argv=argv, mode="generate" if generate else "parse")
    replay = _Replay(image["grammar"], image["shared"])
    out = sys.stdout
    if "--tsdb-notes" in flags:
        grammar = image["grammar"].upper().replace("-", " (", 1) + ")"
        out.write(f'NOTE: tsdb run: (:application . "answer") (:platform . "fake-ace") '
                  f"(:grammar . {_q(grammar)}) (:avms . 0) (:lexicon . 0) (:lrules . 0) "
                  "(:rules . 0)\n")
        out.flush()
    count = 0
    stdin = sys.stdin.buffer
    while True:
        raw = stdin.readline()
        if not raw:
            break
        line = raw.decode("utf-8", errors="replace").rstrip("\n")
        if os.environ.get("FAKE_ACE_EXIT_AT_START") == "on-input":
            _die("ERROR: fake-ace told to fail before its first answer "
                 "(FAKE_ACE_EXIT_AT_START=on-input)", 1)
        if not line.strip():
            # what ACE does with a blank line (PyDelphin issue #155); lit never sends one
            sys.stderr.write("NOTE: ignore\n")
            sys.stderr.flush()
            if not generate:
                out.write("SKIP: \n\n\n")
                out.flush()
            continue
        count += 1
        _log("item", input=line)
        _faults(line, out)
        garbage = os.environ.get("FAKE_ACE_GARBAGE_ON")
        if garbage and garbage in line:
            out.write("this is not ACE output (:results . ((:oops\n\n\n")
        elif _slowness(line, "generate" if generate else "parse", timeout):
            if generate:
                surfaces = replay.realizations(line)
                half = surfaces[: len(surfaces) // 2]
                answer = (_generate_plain(half, _TIMEOUT_ERROR) if plain
                          else _generate_answer(half))
            else:
                answer = _parse_answer(line, [], "--report-labels" in flags)
            if not plain:
                answer = answer.rstrip("\n") + " " + _TIMEOUT_ERROR + "\n\n\n"
            out.write(answer)
            sys.stderr.write("NOTE: cancelling, taking too long\nNOTE: out of time while "
                             "unpacking\n")
        elif generate:
            surfaces = replay.realizations(line)
            surfaces = surfaces[:n] if n else surfaces  # ACE's selective unpacking
            out.write(_generate_plain(surfaces) if plain else _generate_answer(surfaces))
            sys.stderr.write("NOTE: 0 passive, 0 active edges in final generation chart; "
                             f"built 0 passives total. [{len(surfaces)} results]\n")
        else:
            mrss = replay.readings(line)
            mrss = mrss[:n] if n else mrss
            out.write(_parse_answer(line, mrss, "--report-labels" in flags))
            sys.stderr.write(f"NOTE: {len(mrss)} readings, added 0 / 0 edges to chart (0 fully "
                             "instantiated, 0 actives used, 0 passives used)\tRAM: 0k\n")
        out.flush()
        sys.stderr.flush()
    what = "generated" if generate else "parsed"
    sys.stderr.write(f"NOTE: {what} {count} / {count} sentences, avg 0k, time 0.00000s\n")
    _log("exit")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:
        sys.exit(1)
