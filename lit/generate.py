"""MRS → candidate sentences: every realization, normalised and deduplicated.

The generator returns every string the grammar licenses for an MRS, in its
own order, duplicates included. That order is not stable: the same MRS
realized by ACE processes with different histories comes back with the same
strings in another order. :func:`clean_realizations` turns the list into
clean, distinct candidates in a canonical order (sorted by text), so that
everything downstream depends on the MRS alone:

* **normalised**: runs of whitespace become one space and the ends are
  stripped (ERG 1214 writes one article variant with a doubled space,
  ``"in  a small cafe"``); a word-initial underscore is removed (ERG 2018
  writes one article variant ``_a``: ``"holding _a cup"`` → ``"holding a
  cup"``); a space before ``, . ; : ! ?`` is removed; a sentence-initial
  word in lower case gets its capital (ERG 2018 writes "a woman will be
  ..." beside "A woman will be ..."; a first word with a capital inside,
  "iPhone", is left alone).
* **deduplicated**: exact duplicates after normalisation are dropped, and so
  are *comma-only variants* — strings that differ only in their commas
  (``"It is two women which, will be embracing."``): of such a group the
  variant with the fewest commas is kept (the first in text order).
* **dropped as blemished**: strings with a stray sentence-internal period
  after a single letter (ERG 1214's ``"A. man was looking ..."``) and
  strings that still contain an underscore (an unrealised predicate name).
  They are reported in :attr:`Realizations.dropped` with the reason, never
  silently lost; when nothing clean remains, the item has no realization.
* **respelled**: a word the grammar's lexicon lacks is read as a name
  (``named``), and ACE writes a name capitalized: "a pink jacket" parses
  with ``named("Pink")`` and is realized "a Pink jacket". Such a name is
  written again as the original wrote it (:func:`respellings`,
  :func:`respell`): case is spelling here, not meaning. Only words the
  original writes in lower case inside the sentence are respelled, never
  its first word (a sentence-initial "A" read as a name stays "A", and the
  order guard of :mod:`lit.choose` drops "It is A man ...").

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
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from delphin.mrs import MRS

from lit.mrs import STAND_INS, unknown_words

__all__ = [
    "Candidate",
    "Realizations",
    "normalize_surface",
    "blemish",
    "clean_realizations",
    "tokens",
    "distance",
    "preload",
    "respellings",
    "respell",
    "generate_candidates",
    "Expectation",
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
        candidates: distinct normalised strings, in canonical (text) order
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
        >>> normalize_surface("a woman will be sleeping.")
        'A woman will be sleeping.'
    """
    s = _SPACES.sub(" ", s).strip()
    s = _UNDERSCORE_WORD.sub("", s)
    s = _SPACE_BEFORE_PUNCT.sub(r"\1", s)
    first = s.split(" ", 1)[0]
    if first.islower() and first[:1].isalpha():  # "a woman ..." (ERG 2018), not "iPhone"
        s = s[:1].upper() + s[1:]
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


_TOKEN = re.compile(r"\w+(?:'\w+)?|[^\w\s]")


def tokens(s: str) -> list[str]:
    """Word and punctuation tokens of *s*, case kept except a sentence-initial
    capital (which moves with the first word).

    Example:
        >>> tokens("The dog didn't chase the cat.")
        ['the', 'dog', "didn't", 'chase', 'the', 'cat', '.']
    """
    s = s.strip()
    if s[:1].isupper() and not s[1:2].isupper():  # "The" -> "the", but "TV" stays
        s = s[:1].lower() + s[1:]
    return _TOKEN.findall(s)


def preload() -> threading.Thread:
    """Import what :func:`distance` needs in a background thread.

    ``import nltk`` takes 1-2 s (it loads SciPy); started when a
    :class:`~lit.pipeline.Transformer` opens, it overlaps with ACE's first
    parses instead of delaying the first realized item. :func:`distance`
    imports the same module, so it simply waits if the thread is not done.
    """
    thread = threading.Thread(target=_import_edit_distance, name="lit-preload", daemon=True)
    thread.start()
    return thread


def _import_edit_distance() -> Any:
    from nltk.metrics.distance import edit_distance

    return edit_distance


def distance(candidate: str, original: str) -> int:
    """Word-level edit distance (:func:`nltk.edit_distance` over :func:`tokens`):
    how much *candidate* departs from *original*.

    Example:
        >>> distance("The dog will chase the cat.", "The dog chased the cat.")
        2
        >>> distance("2 dogs bark.", "Two dogs bark.")
        1
    """
    a, b = tokens(candidate), tokens(original)
    # a shared prefix and suffix never change the distance; candidates share most
    # of their words with the original, so what is left is a few words each
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end = 0
    while end < len(a) - start and end < len(b) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    a, b = a[start:len(a) - end], b[start:len(b) - end]
    if not a or not b:
        return len(a) + len(b)
    edit_distance = _import_edit_distance()
    return int(edit_distance(a, b))


def respellings(m: Any, original: str) -> dict[str, str]:
    """How to write the names of *m* that are lower-case words of *original*.

    A ``named`` EP whose constant (CARG) *original* never writes with that
    case, but writes in lower case after its first word, is a common word
    the grammar did not know (its lexicon lacks it) and read as a name. The
    original's first word is left alone: a name made of it ("A" in "A light
    colored dog ...") is a misreading the order guard must still see.

    Example:
        >>> from delphin.codecs import simplemrs
        >>> m = simplemrs.decode('[ TOP: h0 RELS: < [ named LBL: h1 ARG0: x2 CARG: "Pink" ]'
        ...                      ' [ named LBL: h3 ARG0: x4 CARG: "A" ] > ]')
        >>> respellings(m, "A girl in a pink jacket walks.")
        {'Pink': 'pink'}
    """
    words = tokens(original)
    later = {w.lower(): w for w in words[1:] if w.islower()}
    later.pop(words[0].lower() if words else "", None)  # "A man ...": the name "A"
    out: dict[str, str] = {}
    for ep in getattr(m, "rels", ()):
        carg = str(ep.carg or "") if ep.predicate == "named" else ""
        if carg and carg not in words[1:] and carg.lower() in later:
            out[carg] = later[carg.lower()]
    if isinstance(m, MRS):
        out.update(_unknown_word_spellings(m, original))
    return out


_NOUN_STAND_INS = frozenset(word for word, _ in STAND_INS["n"])


def _unknown_word_spellings(m: MRS, original: str) -> dict[str, str]:
    """Stand-in words (:func:`lit.mrs.unknown_words`) -> the unknown words of
    *original* they stand for, with the article *original* uses."""
    words = tokens(original)
    lowered = original.lower()
    out: dict[str, str] = {}
    for word, stand_in in unknown_words(m).values():
        written = next((w for w in words if w.lower() == word.lower()), word)
        if re.search(rf"(?<!\w)an {re.escape(written.lower())}(?!\w)", lowered):
            article = "an"
        elif re.search(rf"(?<!\w)a {re.escape(written.lower())}(?!\w)", lowered):
            article = "a"
        else:
            article = "an" if written[:1].lower() in "aeiou" else "a"
        forms = (stand_in, stand_in + "s") if stand_in in _NOUN_STAND_INS else (stand_in,)
        for form in forms:
            for key in (form, form.capitalize()):
                out[key] = written
            for key in (f"a {form}", f"A {form}"):
                out[key] = f"{article} {written}"
    return out


def respell(s: str, spellings: Mapping[str, str]) -> str:
    """*s* with the words in *spellings* written the original's way (the
    first word of *s* keeps its capital, as a sentence's first word).

    Example:
        >>> respell("A girl in a Pink jacket walks.", {"Pink": "pink"})
        'A girl in a pink jacket walks.'
        >>> respell("Pink jackets are worn by a girl.", {"Pink": "pink"})
        'Pink jackets are worn by a girl.'
        >>> respell("A cat was ridden by a girl.", {"A cat": "an inflatable"})
        'An inflatable was ridden by a girl.'
    """
    if not spellings:
        return s

    def written(mm: re.Match[str]) -> str:
        out = spellings[mm.group(1)]
        return out[:1].upper() + out[1:] if mm.start() == 0 else out

    pattern = re.compile(r"(?<!\w)(" + "|".join(
        re.escape(w) for w in sorted(spellings, key=len, reverse=True)) + r")(?!\w)")
    return pattern.sub(written, s)


def clean_realizations(surfaces: Iterable[str], original: str | None = None, *,
                       spellings: Mapping[str, str] | None = None) -> Realizations:
    """Normalise, filter and deduplicate realizations, in a canonical order.

    With *spellings* (:func:`respellings`), names the grammar made of
    lower-case words are written as in *original* (:func:`respell`).

    Candidates closest to *original* (the sentence that was transformed, by
    :func:`distance`) come first, ties in text order; without *original*,
    text order. Of comma-only variants, the closest to *original* is kept
    (then the one with fewest commas). The result depends on the *set* of
    *surfaces* only, not on their order.
    """
    originals = list(surfaces)
    dropped: list[tuple[str, str]] = []
    groups: dict[str, list[tuple[int, str]]] = {}  # comma key -> members (order, text)
    seen: set[str] = set()
    for i, raw in enumerate(originals):
        s = respell(normalize_surface(raw), spellings or {})
        why = blemish(s)
        if why is not None:
            dropped.append((raw, why))
            continue
        if s in seen:
            dropped.append((raw, "duplicate"))
            continue
        seen.add(s)
        groups.setdefault(_comma_key(s), []).append((i, s))
    keys: dict[str, tuple[int, int, str]] = {}

    def key(text: str) -> tuple[int, int, str]:
        if text not in keys:  # each text's distance is needed twice
            keys[text] = (distance(text, original) if original is not None else 0,
                          text.count(","), text)
        return keys[text]

    kept: list[str] = []
    for members in groups.values():
        best = min((text for _, text in members), key=key)
        kept.append(best)
        dropped.extend((text, "comma variant") for _, text in members if text != best)
    dropped.sort()
    kept.sort(key=lambda text: (key(text)[0], text))
    return Realizations(tuple(kept), tuple(dropped), len(originals))


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


# -- --verify ----------------------------------------------------------------

_CHECKED_PROPERTIES = ("SF", "TENSE", "MOOD", "PROG", "PERF")
_UNDERSPECIFIED = {"tense", "sort", "bool", "", None}


def _heads(m: Any) -> dict[str, str]:
    """variable -> predicate of the (first) non-quantifier EP it is ARG0 of."""
    from delphin.mrs import RESTRICTION_ROLE

    heads: dict[str, str] = {}
    for ep in m.rels:
        if RESTRICTION_ROLE in ep.args:
            continue
        heads.setdefault(ep.iv, ep.predicate)
    return heads


def _triples(m: Any) -> set[tuple[str, str, str]]:
    """``(predicate, role, predicate of the argument)`` for individual/event arguments."""
    from delphin import variable

    heads = _heads(m)
    out = set()
    for ep in m.rels:
        for role, value in ep.args.items():
            if role == "ARG0" or not isinstance(value, str):
                continue
            try:
                vtype = variable.type(value)
            except ValueError:
                continue
            if vtype in ("x", "e", "i") and value in heads:
                out.add((ep.predicate, role, heads[value]))
    return out


def _index_properties(m: Any) -> dict[str, str]:
    props = m.variables.get(m.index, {}) if m.index else {}
    return {k: str(v).lower() for k, v in props.items()
            if k in _CHECKED_PROPERTIES and str(v).lower() not in _UNDERSPECIFIED}


@dataclass(frozen=True, slots=True)
class Expectation:
    """What a re-parse of a realization must show for ``--verify``.

    Derived from the MRS before and after a chain (:meth:`derive`), so it
    works for any rule: the INDEX event's SF/TENSE/MOOD/PROG/PERF as in the
    output (``TENSE fut`` for ``f``, ``SF ques`` for ``q``, the cleft or
    modal event's values for ``i``/``m``), every predicate the chain added
    (``neg``, ``_may_v_modal``, ``parg_d``, ``_be_v_itcleft``), every new
    predicate–role–argument triple (e.g. the swapped ARG1/ARG2 of ``s``),
    and every new ICONS relation (``topic`` for the ERG 2018 passive).
    A re-parse passes if one of its readings has all of them.
    """

    index: tuple[tuple[str, str], ...] = ()
    predicates: tuple[str, ...] = ()
    triples: tuple[tuple[str, str, str], ...] = ()
    icons: tuple[str, ...] = ()
    voice: str | None = None

    @classmethod
    def of_voice(cls, m: Any) -> Expectation:
        """Only the voice (``active``/``passive``) of the target verb of *m*.

        Grammars that leave voice open in an MRS without ICONS (ERG 2018 and
        later) realize an active MRS as a passive too; this is what a
        re-parse must show for the voice to be kept.
        """
        return cls(voice=_voice(m))

    @classmethod
    def derive(cls, before: Any, after: Any) -> Expectation:
        from collections import Counter

        new_preds = Counter(ep.predicate for ep in after.rels) - Counter(
            ep.predicate for ep in before.rels)
        new_icons = Counter(ic.relation for ic in after.icons) - Counter(
            ic.relation for ic in before.icons)
        return cls(
            tuple(sorted(_index_properties(after).items())),
            tuple(sorted(new_preds)),
            tuple(sorted(_triples(after) - _triples(before))),
            tuple(sorted(new_icons)),
            _voice(after),
        )

    def check(self, m: Any) -> bool:
        """``True`` if the MRS *m* (a reading of the realization) shows the change."""
        props = _index_properties(m)
        if any(props.get(k) != v for k, v in self.index):
            return False
        preds = {ep.predicate for ep in m.rels}
        if any(p not in preds for p in self.predicates):
            return False
        if self.triples and not set(self.triples) <= _triples(m):
            return False
        relations = {ic.relation for ic in m.icons}
        if not all(r in relations for r in self.icons):
            return False
        return self.voice is None or _voice(m) in (None, self.voice)

    def describe(self) -> str:
        parts = [f"{k} {v}" for k, v in self.index]
        parts += self.predicates
        parts += [f"{p} {r} {a}" for p, r, a in self.triples]
        parts += [f"ICONS {r}" for r in self.icons]
        if self.voice is not None:
            parts.append(f"{self.voice} voice")
        return "expected " + ", ".join(parts) if parts else "no change expected"


def _voice(m: Any) -> str | None:
    """``"passive"`` or ``"active"``: the voice of the target verb of *m*."""
    from lit.transform import is_passive, target_ep

    verb = target_ep(m)
    if verb is None:
        return None
    return "passive" if is_passive(m, verb) else "active"
