"""Shared fixtures.

* The recorded ERG data lives in ``../shared/erg`` beside the repository
  (override with ``LIT_SHARED``).
* Tests marked ``ace`` need a real ACE binary and grammar image; they run
  when ``LIT_ACE`` and ``LIT_GRAMMAR_<NAME>`` are set or the grammar is
  registered in the default ``LIT_HOME``, and are skipped with the reason
  otherwise.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Local Ray instances started by the tests bind to the loopback address, not to
# the machine's network interface (Ray reads this before it is imported; it is
# what Ray does by itself on macOS and Windows).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
# the environment as it was when the test run started (fixtures may clear LIT_*)
_ORIG_ENV = dict(os.environ)


def shared_dir() -> Path:
    override = os.environ.get("LIT_SHARED")
    return Path(override) if override else REPO.parent / "shared"


@lru_cache(maxsize=None)
def _load_jsonl(path: Path) -> tuple[dict, ...]:
    with open(path, encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f if line.strip())


def recorded(grammar: str, kind: str) -> tuple[dict, ...]:
    """Rows of ``shared/erg/<grammar>/<kind>.jsonl`` (kind: readings|transforms)."""
    path = shared_dir() / "erg" / grammar / f"{kind}.jsonl"
    if not path.exists():
        pytest.skip(f"recorded ERG data not found at {path} (set LIT_SHARED)")
    return _load_jsonl(path)


def snli_sample_path() -> Path:
    path = shared_dir() / "data" / "snli" / "snli_1.0_dev_sample.jsonl"
    if not path.exists():
        pytest.skip(f"SNLI sample not found at {path} (set LIT_SHARED)")
    return path


def env_var_for(grammar: str) -> str:
    return "LIT_GRAMMAR_" + grammar.upper().replace("-", "_")


@lru_cache(maxsize=None)
def _registered(grammar: str) -> tuple[Path, Path] | str:
    """(ace, image) of *grammar* as registered in the default LIT_HOME
    (``lit grammar add``/``install``), or the reason there is none."""
    from lit.errors import LitError
    from lit.grammar import lit_home, resolve_grammar

    env = {k: v for k, v in _ORIG_ENV.items() if k == "LIT_HOME"}
    home = lit_home(env)
    try:
        g = resolve_grammar(grammar, home=home, env=env)
    except LitError as exc:
        return f"{grammar} is not registered in {home} ({exc})"
    if g.ace is None:
        return f"{grammar} is registered in {home} without an ACE binary"
    return Path(g.ace), Path(g.image)


def real_ace(grammar: str = "erg-1214") -> tuple[Path, Path]:
    """(ace binary, grammar image) of a real ACE, or skip with the reason.

    From ``LIT_ACE`` and ``LIT_GRAMMAR_<NAME>`` if both are set, else from
    the grammar registered in the default ``LIT_HOME`` (``lit grammar add
    NAME --image ... --ace ...``).
    """
    ace = _ORIG_ENV.get("LIT_ACE")
    var = env_var_for(grammar)
    image = _ORIG_ENV.get(var)
    if ace and image:
        return Path(ace), Path(image)
    found = _registered(grammar)
    if isinstance(found, str):
        pytest.skip(f"needs real ACE: set LIT_ACE and {var}, or register {grammar} with "
                    f"`lit grammar add` ({found})")
    return found


@pytest.fixture
def lit_home(tmp_path, monkeypatch) -> Path:
    """A fresh, empty LIT_HOME for the test (also set in the environment)."""
    home = tmp_path / "lit-home"
    home.mkdir()
    monkeypatch.setenv("LIT_HOME", str(home))
    for key in list(os.environ):
        if key == "LIT_ACE" or key.startswith("LIT_GRAMMAR_"):
            monkeypatch.delenv(key, raising=False)
    return home
