"""Helpers for tests that run the stand-in ACE (``tests/fake_ace.py``).

fake-ace is a test double for the ACE binary, which cannot be obtained on
the machines the suite runs on; see its docstring for what it replays and
for the fault-injection variables (``FAKE_ACE_HANG_ON`` etc.).

Example (in a test)::

    from fake_ace_support import fake_ace

    def test_something(tmp_path):
        ace, image = fake_ace(tmp_path, "erg-1214")
        with AceParser(image, executable=ace) as parser:
            ...

For CLI tests, :func:`fake_ace_env` gives the ``LIT_ACE`` /
``LIT_GRAMMAR_<NAME>`` variables that make ``lit`` use fake-ace.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

FAKE_ACE = Path(__file__).resolve().parent / "fake_ace.py"


def _shared_dir() -> Path:
    override = os.environ.get("LIT_SHARED")
    return Path(override) if override else FAKE_ACE.parent.parent.parent / "shared"


def fake_ace(
    directory: str | os.PathLike[str],
    grammar: str = "erg-1214",
    *,
    shared: str | os.PathLike[str] | None = None,
    ace_version: str | None = None,
) -> tuple[Path, Path]:
    """Write a fake-ace image for *grammar* and a launcher into *directory*.

    Returns ``(executable, image)``. The launcher runs ``tests/fake_ace.py``
    with the interpreter running the tests (so PyDelphin is importable).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    spec: dict[str, str] = {
        "grammar": grammar,
        "shared": str(Path(shared) if shared is not None else _shared_dir()),
    }
    if ace_version is not None:
        spec["ace_version"] = ace_version
    image = directory / f"{grammar}.fake.dat"
    image.write_text(json.dumps({"fake_ace": spec}), encoding="utf-8")
    launcher = directory / "ace"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_ACE}" "$@"\n')
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return launcher, image


def fake_ace_env(directory: str | os.PathLike[str], grammar: str = "erg-1214") -> dict[str, str]:
    """``{"LIT_ACE": ..., "LIT_GRAMMAR_<NAME>": ...}`` pointing lit at fake-ace."""
    ace, image = fake_ace(directory, grammar)
    var = "LIT_GRAMMAR_" + grammar.upper().replace("-", "_")
    return {"LIT_ACE": str(ace), var: str(image)}


def read_log(path: str | os.PathLike[str]) -> list[dict]:
    """The events fake-ace wrote to ``FAKE_ACE_LOG`` (empty if none)."""
    path = Path(path)
    if not path.exists():
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def peak_processes(path: str | os.PathLike[str]) -> dict[str, int]:
    """The most fake-ace processes of each mode (``parse``, ``generate``) that
    were alive at once, from the ``start``/``exit`` events of ``FAKE_ACE_LOG``.

    A process that was killed logs no ``exit``; it counts as alive until the
    end, so the peak is an upper bound.
    """
    alive: dict[int, str] = {}
    peak: dict[str, int] = {}
    for event in read_log(path):
        if event["event"] == "start":
            alive[event["pid"]] = event["mode"]
        elif event["event"] == "exit":
            alive.pop(event["pid"], None)
        for mode in set(alive.values()):
            peak[mode] = max(peak.get(mode, 0), sum(m == mode for m in alive.values()))
    return peak
