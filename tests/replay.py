"""Replay backend: a Parser/Generator pair that answers from recorded ERG output.

This is a **test double**, used only by tests. ACE and the ERG images cannot
be obtained where the suite runs, so :class:`ReplayParser` and
:class:`ReplayGenerator` implement the :class:`lit.ace.Parser` /
:class:`lit.ace.Generator` protocols in-process by replaying the real ACE
output recorded in ``../shared/erg/<grammar>`` (see its README):

* parsing: a sentence's readings come from ``readings.jsonl`` (whitespace
  collapsed for the lookup); a recorded ``"no parse"`` is zero readings, a
  sentence the recording skipped (too long) is an ``error``. A sentence that ACE *generated* in
  ``transforms.jsonl`` parses to the MRSs it was generated from (what
  ``--verify`` re-parses). Anything else gets no parse.
* generation: the MRS is matched (``delphin.mrs.is_isomorphic``, properties
  compared, spans ignored) against every recorded ``output_mrs``; the answer
  is that transform's ``generated`` list, as recorded. A recorded reading
  with ``roundtrip: true`` realizes as its own sentence (so reading
  selection by round trip works). An MRS with no recording is answered
  with an ``error`` naming the replay, so a mismatch between lit's rules
  and the recording shows up in tests instead of passing silently.

It knows nothing about grammar. ``tests/fake_ace.py`` replays the same data
through a real subprocess for CLI-level tests.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

from delphin.codecs import simplemrs
from delphin.mrs import MRS, is_isomorphic

from lit.interface import GenerationResult, ParseResult, Reading

_PRED = re.compile(r"\[\s*([^\s<\[\]]+?)(?:<[^>]*>)?\s+LBL:")


def _norm(s: str) -> str:
    return " ".join(s.split())


def _key(text: str) -> tuple[str, ...]:
    return tuple(sorted(p.lower().strip('"') for p in _PRED.findall(text)))


@lru_cache(maxsize=None)
def _load(path: Path) -> tuple[dict, ...]:
    with open(path, encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f if line.strip())


class _Recording:
    def __init__(self, folder: Path) -> None:
        self.readings = _load(folder / "readings.jsonl")
        self.transforms = _load(folder / "transforms.jsonl")
        self.by_sentence = {_norm(r["sentence"]): r for r in self.readings}
        self.generated_from: dict[str, list[str]] = {}
        # predicate key -> [(mrs, surfaces, from a transform?)]
        self.index: dict[tuple[str, ...], list[tuple[str, tuple[str, ...], bool]]] = {}
        for row in self.transforms:
            if not row.get("output_mrs"):
                continue
            surfaces = tuple(row.get("generated") or ())
            self.index.setdefault(_key(row["output_mrs"]), []).append(
                (row["output_mrs"], surfaces, True))
            for s in surfaces:
                mrss = self.generated_from.setdefault(_norm(s), [])
                if row["output_mrs"] not in mrss:
                    mrss.append(row["output_mrs"])
        for row in self.readings:
            for r in row["readings"]:
                if r.get("roundtrip"):
                    self.index.setdefault(_key(r["mrs"]), []).append(
                        (r["mrs"], (row["sentence"],), False))
        self._decoded: dict[str, MRS] = {}

    def decode(self, text: str) -> MRS:
        m = self._decoded.get(text)
        if m is None:
            m = self._decoded[text] = simplemrs.decode(text)
        return m


@lru_cache(maxsize=None)
def _recording(folder: str) -> _Recording:
    return _Recording(Path(folder))


def _folder(grammar: str, shared: str | Path | None) -> str:
    if shared is None:
        from conftest import shared_dir

        shared = shared_dir()
    return str(Path(shared) / "erg" / grammar)


class ReplayParser:
    """Parses by looking sentences up in the recording (test double)."""

    def __init__(self, grammar: str = "erg-1214", *, shared: str | Path | None = None,
                 n: int | None = None) -> None:
        self.rec = _recording(_folder(grammar, shared))
        self.n = n
        self.calls: Counter[str] = Counter()

    def __enter__(self) -> ReplayParser:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def parse(self, sentence: str) -> ParseResult:
        self.calls[sentence] += 1
        row = self.rec.by_sentence.get(_norm(sentence))
        if row is not None:
            if row.get("error") == "no parse":  # the recording's word for zero readings
                return ParseResult(sentence, (), None)
            if row.get("error"):  # e.g. "skipped: 32 tokens > 25": never parsed
                return ParseResult(sentence, (), f"replay: not parsed in the recording "
                                                 f"({row['error']})")
            mrss = [r["mrs"] for r in row["readings"]]
        else:
            mrss = list(self.rec.generated_from.get(_norm(sentence), ()))
        if self.n:
            mrss = mrss[: self.n]
        return ParseResult(sentence, tuple(Reading(m) for m in mrss), None)


class ReplayGenerator:
    """Generates by matching MRSs against the recording (test double)."""

    def __init__(self, grammar: str = "erg-1214", *, shared: str | Path | None = None) -> None:
        self.rec = _recording(_folder(grammar, shared))
        self.calls = 0

    def __enter__(self) -> ReplayGenerator:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def generate(self, mrs: MRS | str) -> GenerationResult:
        self.calls += 1
        text = mrs if isinstance(mrs, str) else simplemrs.encode(mrs, lnk=False)
        m = simplemrs.decode(text) if isinstance(mrs, str) else mrs
        surfaces: list[str] = []
        found = transform_found = False
        for recorded, generated, is_transform in self.rec.index.get(_key(text), ()):
            if is_transform and transform_found:
                continue  # the first matching transform's realizations, as fake-ace
            if is_isomorphic(m, self.rec.decode(recorded), properties=True):
                found = True
                transform_found = transform_found or is_transform
                surfaces.extend(generated)
        if not found:
            return GenerationResult(text, (), "replay: no recorded generation for this MRS")
        return GenerationResult(text, tuple(surfaces), None)
