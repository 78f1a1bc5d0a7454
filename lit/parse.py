"""Reading selection: which of a sentence's readings the later stages use.

A parse yields several readings; the rest of lit works on one of them, the
*selected* reading. Images built from source have no parse-ranking model, so
ACE's order says nothing about plausibility. Three methods exist:

``ranked`` (the default)
    among the *candidate* readings, those the grammar regenerates the
    sentence from (the *round trip*), the one with the best structure. A
    reading is a candidate if it is a full clause: no ``unknown`` EP (a
    fragment analysis) and a verbal index EP (``_..._v_...``, including
    ``_be_v_*``; the index EP is the non-quantifier EP whose ARG0 is the
    INDEX) whose subject is not a number alone (ERG reads the caption "Two
    black dogs in the snow." as "[Two] [black] [dogs ...]" with the verb
    ``_black_v_1``; on the recorded real ERG 1214 and 2018 output this
    changes the selection of 3 sentences, all misreadings). Candidates are
    tried in structural order (:func:`structure`): fewest ``named`` EPs for
    words the sentence writes in lower case (a common word read as a name:
    "A" in "A cat sleeps."), then fewest signs of a misreading (an identity
    copula with a gerund argument, a misread progressive: "People are
    [riding bikes]"; an index verb that is the sentence's last word while
    another reading reads that word as a noun: "... on a ski [slope]"), then
    fewest ``named``, ``unknown`` and ``compound`` EPs, then ACE's order;
    the first that round-trips is selected, so only as many readings are
    generated from as it takes: at most one generation per distinct
    candidate MRS (readings that differ only in their derivation share one),
    and at most :data:`MAX_ROUNDTRIPS` (6) per sentence: a reading further
    down is not tried. On the recorded real ERG 1214 and 2018 output (300
    sentences each), the selected reading is always among the first 6
    distinct candidates in structural order, while a long ambiguous sentence
    none of whose readings regenerates it costs a second or more per
    generation. A reading with more than :data:`MAX_ROUNDTRIP_REALIZATIONS`
    (700) realizations does not round-trip: ACE stops unpacking there (its
    ``-n``), so the answer does not depend on which realizations it found
    first. On 330 SNLI sentences (ERG 1214), every selected reading had at
    most 640 realizations, while the 4 candidates of one 30-word sentence
    each took 6-11 s to unpack the 1001 realizations the generation cap asks
    for (none round-tripped; 700 cost about 5 s each). A candidate of
    :data:`LARGE_READING_EPS` (40) EPs or more is not regenerated: its
    generation takes seconds to tens of seconds (the orders of its many
    modifiers make hundreds of realizations, and ACE may run out of time or
    memory on them), and on 330 SNLI sentences (ERG 1214) no such reading
    round-tripped, while every reading that did had at most 31 EPs; the
    readings of 40 EPs or more were those of 3 sentences (the 30-word one
    above: 4 candidates, 22 s of generation, all over 700 realizations; one
    with a single candidate over 700 realizations; one whose round trip was
    cut by the time limit twice, 30 s, so the sentence failed as transient
    in every run); in the recorded real ERG 1214 and 2018 output (300
    sentences each) one candidate each has 40 EPs or more, and neither is the
    selected reading. The transformations of so large a reading would cost as
    much and overgenerate as well.
``roundtrip``
    the first candidate reading (in ACE's order) that round-trips;
``first``
    the first reading (the grammar's best, when its image has a ranking model).

The round trip compares surfaces case-sensitively except for the
sentence-initial letter, with runs of whitespace collapsed and final
punctuation ignored (:func:`surface_key`), so a reading that realizes "a
cat" as "A cat" (a name) or "TV" as "tv" does not round-trip. A name the
grammar made of a lower-case word it does not know ("pink" in "a pink
jacket" with a reduced lexicon, realized "a Pink jacket") is compared as the
sentence writes it (:func:`lit.generate.respellings`); the sentence's first
word is never respelled.
:func:`select` returns a :class:`Selection` that says which reading was
chosen and why, and what was found out about each reading.

Example:
    >>> same_surface("A dog chases  a cat.", "a dog chases a cat")
    True
    >>> same_surface("A dog saw TV.", "A dog saw tv.")
    False
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from delphin import predicate as _predicate
from delphin.mrs import MRS

from lit.generate import respell, respellings
from lit.interface import TransientFailure
from lit.mrs import (
    decode_mrs,
    index_ep,
    is_verbal,
    mrs_for_generation,
    strip_lnk,
    unknown_words,
)

if TYPE_CHECKING:  # pragma: no cover
    from lit.interface import Generator, ParseResult

__all__ = [
    "MAX_ROUNDTRIPS",
    "MAX_ROUNDTRIP_REALIZATIONS",
    "LARGE_READING_EPS",
    "SelectMethod",
    "SELECT_METHODS",
    "Selection",
    "select",
    "structure",
    "is_candidate",
    "why_not_candidate",
    "surface_key",
    "same_surface",
    "roundtrips",
    "select_reading",
]

logger = logging.getLogger(__name__)

SelectMethod = Literal["ranked", "roundtrip", "first"]
SELECT_METHODS: tuple[str, ...] = ("ranked", "roundtrip", "first")
#: the default selection method
DEFAULT_SELECT = "ranked"
#: at most this many distinct candidate MRSs are regenerated to select a reading
#: (in structural order): a bound on what selection costs per sentence
MAX_ROUNDTRIPS = 6
#: a reading with more realizations than this does not round-trip
MAX_ROUNDTRIP_REALIZATIONS = 700
#: ``ranked`` selection regenerates no candidate of this many EPs or more
LARGE_READING_EPS = 40


@dataclass(frozen=True, slots=True)
class Selection:
    """Which reading was selected, by which method, and why.

    Attributes:
        index: the selected reading (``None``: none)
        method: the selection method
        reason: why this reading, or why none
        notes: per reading, what was found out (``None``: not looked at)
    """

    index: int | None
    method: str
    reason: str
    notes: tuple[str | None, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "method": self.method, "reason": self.reason,
                "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Selection:
        return cls(data["index"], data["method"], data["reason"], tuple(data.get("notes") or ()))


def is_candidate(m: MRS) -> bool:
    """``True`` if *m* can be selected by round trip: no ``unknown`` EP and
    a verbal index EP.

    Example:
        >>> is_candidate(decode_mrs(
        ...     "[ TOP: h0 INDEX: e2 RELS: < [ _bark_v_1 LBL: h1 ARG0: e2 ARG1: x3 ]"
        ...     " [ udef_q LBL: h4 ARG0: x3 RSTR: h5 BODY: h6 ] [ _dog_n_1 LBL: h7 ARG0: x3 ] >"
        ...     " HCONS: < h0 qeq h1 h5 qeq h7 > ]"))
        True
    """
    return why_not_candidate(m) is None


# control characters are sent to ACE as spaces (lit.ace), so compare them as spaces
_CONTROL = str.maketrans({c: " " for c in [*range(0x20), *range(0x7F, 0xA0)]})


def surface_key(s: str) -> str:
    """*s* with control characters and whitespace runs collapsed to one
    space, final punctuation removed, and the first letter in lower case
    (the rest keeps its case).

    Example:
        >>> surface_key("  The dog  chased\x07 the TV. ")
        'the dog chased the TV'
    """
    text = " ".join(s.translate(_CONTROL).split())
    text = text[:1].lower() + text[1:]
    end = len(text)
    while end and (text[end - 1].isspace() or unicodedata.category(text[end - 1]).startswith("P")):
        end -= 1
    return text[:end]


def same_surface(a: str, b: str) -> bool:
    """``True`` if *a* and *b* are the same sentence up to :func:`surface_key`."""
    return surface_key(a) == surface_key(b)


def roundtrips(reading: MRS | str, sentence: str, generator: Generator, *,
               max_realizations: int | None = MAX_ROUNDTRIP_REALIZATIONS) -> bool:
    """``True`` if *generator* realizes *reading* (spans removed) as *sentence*
    and has at most *max_realizations* realizations (``None``: any number).

    Raises:
        TransientFailure: generation was cut by a time or memory limit or a
            crash, so the question cannot be decided now (it is not a "no")
    """
    return _round_trip(reading, sentence, generator, max_realizations) == "yes"


def _round_trip(reading: MRS | str, sentence: str, generator: Generator,
                max_realizations: int | None) -> str:
    """``"yes"``, or why not (a note of :class:`Selection`).

    More than *max_realizations* realizations is a "no" whichever ones ACE
    unpacked first (so the answer does not depend on them)."""
    m = decode_mrs(reading)
    result = generator.generate(strip_lnk(m))
    if result.failure == "overgeneration":
        return f"does not regenerate the sentence: {result.error}"
    if max_realizations is not None and len(result.surfaces) > max_realizations:
        return f"does not regenerate the sentence: more than {max_realizations} realizations"
    target = surface_key(sentence)
    spellings = respellings(m, sentence)  # "a Pink jacket": a word the lexicon lacks
    if any(surface_key(respell(s, spellings)) == target for s in result.surfaces):
        return "yes"  # found, even among the realizations of a cut-short run
    if getattr(result, "transient", False):
        raise TransientFailure(result.failure or "timeout",
                               f"round trip of a reading: {result.error}")
    if result.error:
        logger.info("round trip of a reading of %r failed: %s", sentence, result.error)
    return "does not regenerate the sentence"


def structure(m: MRS, sentence: str, nouns: Collection[tuple[int, int]] = ()
              ) -> tuple[int, int, int]:
    """The structural cost of reading *m* of *sentence* (lower is better).

    ``(common words read as names, signs of a misreading, named + unknown +
    compound EPs)``: a ``named`` EP whose constant the sentence writes only
    in lower case, or only sentence-initially (a common word read as a
    proper name), counts in the first place; in the second, an identity
    copula with a gerund argument (a misread progressive; precondition
    ``not_identity_gerund`` of :mod:`lit.transform`) counts 1, and so does
    an index verb that is the sentence's last word while *nouns* (the
    character spans some reading of the sentence reads with a ``_..._n_...``
    predicate) has its span: a noun misread as the verb ("... on a ski
    [slope]"; "A dog runs." has no other candidate, so it keeps its verb);
    every ``named``, ``unknown`` and ``compound`` EP counts in the third.

    Example:
        >>> m = decode_mrs('[ TOP: h0 INDEX: e2 RELS: < [ named LBL: h3 ARG0: x4 CARG: "A" ]'
        ...                ' [ _sleep_v_1 LBL: h1 ARG0: e2 ARG1: x4 ] > HCONS: < h0 qeq h1 > ]')
        >>> structure(m, "A cat sleeps.")
        (1, 0, 1)
    """
    from lit.transform import check
    words = sentence.split()
    later = {w.strip(".,;:!?\"'()") for w in words[1:]}
    names = 0
    total = 0
    for ep in m.rels:
        if ep.predicate in ("named", "unknown", "compound"):
            total += 1
        if ep.predicate == "named":
            carg = str(ep.carg or "")
            if carg and carg not in later:  # never written capitalized inside the sentence
                names += 1
    misread = int(check(m, ("not_identity_gerund",)) is not None)
    index = index_ep(m)
    last = len(sentence.rstrip().rstrip(".!?").rstrip())
    if index is not None and index.cto >= last and (index.cfrom, index.cto) in nouns:
        misread += 1
    return names, misread, total


def select(
    result: ParseResult | Sequence[str],
    method: SelectMethod | str = DEFAULT_SELECT,
    *,
    sentence: str | None = None,
    generator: Generator | None = None,
    limit: int | None = MAX_ROUNDTRIPS,
    max_realizations: int | None = MAX_ROUNDTRIP_REALIZATIONS,
) -> Selection:
    """Select a reading of *result* (see the module notes) and say why.

    Args:
        result: a :class:`~lit.interface.ParseResult`, or a sequence of
            SimpleMRS strings (then *sentence* is required)
        method: ``"ranked"``, ``"roundtrip"`` or ``"first"``
        sentence: the parsed sentence (default: ``result.sentence``)
        generator: realizes readings for the round trip; generation stops
            at the first reading that round-trips
        limit: ``ranked`` regenerates at most this many distinct candidate
            MRSs (``None``: all); ``roundtrip`` tries them all
        max_realizations: a reading with more realizations does not
            round-trip (``None``: no bound)
    Raises:
        ValueError: unknown *method*, or a round trip without a generator
        TransientFailure: a round trip that was needed could not be
            decided (a time or memory limit, a crash)
    Example:
        >>> select(["[ TOP: h0 INDEX: e2 RELS: < > HCONS: < > ]"], "first").reason
        'the first of 1 readings (selection: first)'
    """
    if hasattr(result, "readings"):
        mrss = [r.mrs for r in result.readings]
        sentence = sentence if sentence is not None else result.sentence  # type: ignore[union-attr]
    else:
        mrss = list(result)
    n = len(mrss)
    if method not in SELECT_METHODS:
        raise ValueError(f"unknown selection method {method!r}; use one of {SELECT_METHODS}")
    if not n:
        return Selection(None, method, "no readings")
    if method == "first":
        return Selection(0, method, f"the first of {n} readings (selection: first)")
    if generator is None:
        raise ValueError("selection by round trip needs a generator")
    if sentence is None:
        raise ValueError("selection by round trip needs the sentence")
    notes: list[str | None] = [None] * n
    decoded: list[tuple[int, MRS]] = []
    for i, text in enumerate(mrss):
        try:
            decoded.append((i, decode_mrs(text)))
        except ValueError as exc:
            logger.warning("reading %d of %r is not readable: %s", i, sentence, exc)
            notes[i] = f"not readable: {exc}"
    nouns = {(ep.cfrom, ep.cto) for _, m in decoded for ep in m.rels
             if _predicate.split(ep.predicate)[1] == "n"}
    order: list[tuple[tuple[int, int, int], int, MRS]] = []
    for i, m in decoded:
        why = why_not_candidate(m)
        if why is not None:
            notes[i] = f"not a candidate: {why}"
            continue
        cost = structure(m, sentence, nouns) if method == "ranked" else (0, 0, 0)
        order.append((cost, i, m))
    order.sort(key=lambda entry: (entry[0], entry[1]))
    tried: dict[str, int] = {}  # readings with the same MRS regenerate the same
    large = 0  # candidates too large to regenerate
    for cost, i, m in order:
        if method == "ranked" and len(m.rels) >= LARGE_READING_EPS:
            notes[i] = (f"not tried: {len(m.rels)} EPs (at least {LARGE_READING_EPS}): too "
                        "large to regenerate at a bounded cost")
            large += 1
            continue
        line = mrs_for_generation(strip_lnk(m))
        if line in tried:
            notes[i] = f"the same MRS as reading {tried[line]}: does not regenerate the sentence"
            continue
        if method == "ranked" and limit is not None and len(tried) >= limit:
            notes[i] = f"not tried: {limit} distinct candidate MRSs were tried before"
            continue
        tried[line] = i
        answer = _round_trip(m, sentence, generator, max_realizations)
        if answer != "yes":
            notes[i] = answer
            continue
        notes[i] = "round-trips"
        if method == "roundtrip":
            why = "the first candidate reading that regenerates the sentence"
        else:
            misread = f", {cost[1]} signs of a misreading" if cost[1] else ""
            why = (f"the best-structured candidate that regenerates the sentence "
                   f"({cost[0]} common words read as names{misread}, {cost[2]} "
                   "named/unknown/compound EPs)")
        return Selection(i, method, f"reading {i} of {n}: {why} (selection: {method})",
                         tuple(notes))
    reason = (f"none of the {n} readings is a full-clause reading that regenerates the "
              f"sentence ({len(order)} candidates, {len(tried)} distinct MRSs tried"
              + (f", at most {limit}" if method == "ranked" and limit is not None
                 and len(tried) >= limit else "")
              + (f"; {large} of {LARGE_READING_EPS} EPs or more not tried"
                 if large else "")
              + ")")
    return Selection(None, method, reason, tuple(notes))


def why_not_candidate(m: MRS) -> str | None:
    """Why *m* is not a round-trip candidate (see the module notes), or ``None``."""
    if any(ep.predicate == "unknown" for ep in m.rels):
        return "a fragment analysis (unknown EP)"
    standing_in = unknown_words(m)  # nouns and adjectives: a known word stands in
    unknown = next((ep.predicate for ep in m.rels if "_u_unknown" in ep.predicate
                    and ep.predicate not in standing_in), None)
    if unknown is not None:  # ACE: "input EP not in index", never regenerated
        return f"a word the grammar does not know ({unknown}): nothing can be generated"
    ep = index_ep(m)
    if ep is None:
        return "no index EP"
    if not is_verbal(ep):
        return f"the index EP {ep.predicate} is not a verb"
    if _is_bare_number(m, ep.args.get("ARG1")):
        return (f"the subject of the index verb {ep.predicate} is a bare number (a caption "
                "without a verb misread: '[Two] [black] [dogs in the snow]')")
    return None


def _is_bare_number(m: MRS, var: str | None) -> bool:
    """``True`` if *var* is a noun phrase made of a number alone ("two" as a
    pronoun: ``generic_entity`` with a ``card``)."""
    if not var or not var.startswith("x"):
        return False
    heads = {ep.predicate for ep in m.rels if ep.iv == var and not ep.is_quantifier()}
    return heads == {"generic_entity"} and any(
        ep.predicate == "card" and ep.args.get("ARG1") == var for ep in m.rels)


def select_reading(
    result: ParseResult | Sequence[str],
    method: SelectMethod | str = "first",
    *,
    sentence: str | None = None,
    generator: Generator | None = None,
) -> int | None:
    """The index of the reading :func:`select` selects, or ``None``.

    Example:
        >>> select_reading(["[ TOP: h0 INDEX: e2 RELS: < > HCONS: < > ]"], "first")
        0
    """
    return select(result, method, sentence=sentence, generator=generator).index
