"""MRS → candidate sentences: every realization, normalised and deduplicated.

The generator returns every string the grammar licenses for an MRS, in its
own order, duplicates included. :func:`clean_realizations` turns that list
into clean, distinct candidates, keeping the grammar's order:

* **normalised**: runs of whitespace become one space and the ends are
  stripped (ERG 1214 writes one article variant with a doubled space,
  ``"in  a small cafe"``); a word-initial underscore is removed (ERG 2018
  writes one article variant ``_a``: ``"holding _a cup"`` → ``"holding a
  cup"``); a space before ``, . ; : ! ?`` is removed.
* **deduplicated**: exact duplicates after normalisation are dropped, and so
  are *comma-only variants* — strings that differ only in their commas
  (``"It is two women which, will be embracing."``): of such a group the
  variant with the fewest commas is kept (the first of those in grammar
  order), at the position of the group's first member.
* **dropped as blemished**: strings with a stray sentence-internal period
  after a single letter (ERG 1214's ``"A. man was looking ..."``) and
  strings that still contain an underscore (an unrealised predicate name).
  They are reported in :attr:`Realizations.dropped` with the reason, never
  silently lost; when nothing clean remains, the item has no realization.

Example:
    >>> clean_realizations([
    ...     "It is two women which, will be embracing.",
    ...     "It is two women which will be embracing.",
    ...     "It is  two women who will be embracing.",
    ...     "A. man sleeps.",
    ... ]).candidates
    ('It is two women which will be embracing.', 'It is two women who will be embracing.')
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Candidate",
    "Realizations",
    "normalize_surface",
    "blemish",
    "clean_realizations",
    "generate_candidates",
]

logger = logging.getLogger(__name__)

_SPACES = re.compile(r"\s+")
_UNDERSCORE_WORD = re.compile(r"(?<![^\s(\"'])_(?=[A-Za-z])")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.;:!?])")
_STRAY_PERIOD = re.compile(r"(?:^|\s)[A-Za-z]\.\s+[a-z]")


@dataclass(frozen=True, slots=True)
class Candidate:
    """A realization of an MRS with its LM score (perplexity; ``None`` = unscored)."""

    sentence: str
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"sentence": self.sentence, "score": self.score}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Candidate:
        return cls(d["sentence"], d.get("score"))


@dataclass(frozen=True, slots=True)
class Realizations:
    """The clean candidates from one generation, and what was dropped.

    Attributes:
        candidates: distinct normalised strings, in grammar order
        dropped: ``(original string, reason)`` for each string not kept:
            ``"duplicate"``, ``"comma variant"`` or a blemish description
        total: how many strings the generator returned
    """

    candidates: tuple[str, ...]
    dropped: tuple[tuple[str, str], ...] = ()
    total: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"candidates": list(self.candidates),
                "dropped": [{"sentence": s, "reason": r} for s, r in self.dropped],
                "total": self.total}


def normalize_surface(s: str) -> str:
    """Normalise the spelling of one realization (see the module docs).

    Example:
        >>> normalize_surface("A man holds  _a cup .")
        'A man holds a cup.'
    """
    s = _SPACES.sub(" ", s).strip()
    s = _UNDERSCORE_WORD.sub("", s)
    s = _SPACE_BEFORE_PUNCT.sub(r"\1", s)
    return s


def blemish(s: str) -> str | None:
    """Why the normalised *s* is not a clean sentence, or ``None`` if it is.

    Example:
        >>> blemish("A. man was looking to order a sandwich.")
        'stray period after a single letter'
        >>> blemish("A man was looking.") is None
        True
    """
    if not s:
        return "empty"
    if _STRAY_PERIOD.search(s):
        return "stray period after a single letter"
    if "_" in s:
        return "underscore in a word"
    return None


def _comma_key(s: str) -> str:
    return _SPACES.sub(" ", s.replace(",", " ")).strip()


def clean_realizations(surfaces: Iterable[str]) -> Realizations:
    """Normalise, filter and deduplicate realizations, keeping grammar order."""
    originals = list(surfaces)
    dropped: list[tuple[str, str]] = []
    groups: dict[str, list[tuple[int, str]]] = {}  # comma key -> members (order, text)
    seen: set[str] = set()
    for i, raw in enumerate(originals):
        s = normalize_surface(raw)
        why = blemish(s)
        if why is not None:
            dropped.append((raw, why))
            continue
        if s in seen:
            dropped.append((raw, "duplicate"))
            continue
        seen.add(s)
        groups.setdefault(_comma_key(s), []).append((i, s))
    kept: list[tuple[int, str]] = []
    for members in groups.values():
        best = min(members, key=lambda m: (m[1].count(","), m[0]))
        kept.append((members[0][0], best[1]))
        dropped.extend((text, "comma variant") for _, text in members if text != best[1])
    kept.sort()
    return Realizations(tuple(s for _, s in kept), tuple(dropped), len(originals))


def generate_candidates(generator: Any, m: Any) -> tuple[Realizations, str | None]:
    """Generate from *m* with *generator* and clean the result.

    Args:
        generator: a :class:`lit.ace.Generator` (``.generate(mrs)`` returning
            a ``GenerationResult`` with ``surfaces`` and ``error``)
        m: the MRS (object or SimpleMRS string)
    Returns:
        ``(realizations, error)``; *error* is the generator's error message
    """
    result = generator.generate(m)
    error = getattr(result, "error", None)
    surfaces = tuple(getattr(result, "surfaces", ()) or ())
    cleaned = clean_realizations(surfaces)
    logger.debug("generated %d strings, %d candidates", cleaned.total, len(cleaned.candidates))
    return cleaned, error
