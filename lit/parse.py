"""Reading selection: which of a sentence's readings the later stages use.

A parse yields several readings; the rest of lit works on one of them, the
*selected* reading. Two selection methods exist:

``first``
    the first reading (the grammar's best, when its image has a
    parse-ranking model);
``roundtrip``
    the first *candidate* reading whose generation reproduces the input
    sentence, for images without a ranking model. A reading is a candidate
    if it has no ``unknown`` EP (fragment analyses) and its index EP (the
    non-quantifier EP whose ARG0 is the MRS INDEX) is verbal
    (``_..._v_...``, including ``_be_v_*``). Surfaces are compared
    case-insensitively, with runs of whitespace collapsed and final
    punctuation ignored (:func:`same_surface`).

Example:
    >>> same_surface("A dog chases  a cat.", "a dog chases a cat")
    True
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from delphin.mrs import MRS

from lit.interface import TransientFailure
from lit.mrs import decode_mrs, index_ep, is_verbal, strip_lnk

if TYPE_CHECKING:  # pragma: no cover
    from lit.interface import Generator, ParseResult

__all__ = [
    "SelectMethod",
    "SELECT_METHODS",
    "is_candidate",
    "surface_key",
    "same_surface",
    "roundtrips",
    "select_reading",
]

logger = logging.getLogger(__name__)

SelectMethod = Literal["first", "roundtrip"]
SELECT_METHODS: tuple[str, ...] = ("first", "roundtrip")


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
    if any(ep.predicate == "unknown" for ep in m.rels):
        return False
    ep = index_ep(m)
    return ep is not None and is_verbal(ep)


# control characters are sent to ACE as spaces (lit.ace), so compare them as spaces
_CONTROL = str.maketrans({c: " " for c in [*range(0x20), *range(0x7F, 0xA0)]})


def surface_key(s: str) -> str:
    """*s* case-folded, control characters and whitespace runs collapsed to
    one space, final punctuation removed.

    Example:
        >>> surface_key("  The dog  chased\x07 the cat. ")
        'the dog chased the cat'
    """
    text = " ".join(s.translate(_CONTROL).split()).casefold()
    end = len(text)
    while end and (text[end - 1].isspace() or unicodedata.category(text[end - 1]).startswith("P")):
        end -= 1
    return text[:end]


def same_surface(a: str, b: str) -> bool:
    """``True`` if *a* and *b* are the same sentence up to :func:`surface_key`."""
    return surface_key(a) == surface_key(b)


def roundtrips(reading: MRS | str, sentence: str, generator: Generator) -> bool:
    """``True`` if *generator* realizes *reading* (spans removed) as *sentence*.

    Raises:
        TransientFailure: generation was cut by a time or memory limit or a
            crash, so the question cannot be decided now (it is not a "no")
    """
    result = generator.generate(strip_lnk(decode_mrs(reading)))
    target = surface_key(sentence)
    if any(surface_key(s) == target for s in result.surfaces):
        return True  # found, even among the realizations of a cut-short run
    if getattr(result, "transient", False):
        raise TransientFailure(result.failure or "timeout",
                               f"round trip of a reading: {result.error}")
    if result.error:
        logger.info("round trip of a reading of %r failed: %s", sentence, result.error)
    return False


def select_reading(
    result: ParseResult | Sequence[str],
    method: SelectMethod | str = "first",
    *,
    sentence: str | None = None,
    generator: Generator | None = None,
) -> int | None:
    """The index of the selected reading of *result*, or ``None``.

    Args:
        result: a :class:`~lit.ace.ParseResult`, or a sequence of SimpleMRS
            strings (then *sentence* is required for ``roundtrip``)
        method: ``"first"`` or ``"roundtrip"``
        sentence: the parsed sentence (default: ``result.sentence``)
        generator: realizes readings for ``roundtrip``; generation stops at
            the first reading that round-trips
    Raises:
        ValueError: unknown *method*, or ``roundtrip`` without a generator
        TransientFailure: a round trip that was needed could not be
            decided (a time or memory limit, a crash)
    Example:
        >>> select_reading(["[ TOP: h0 INDEX: e2 RELS: < > HCONS: < > ]"], "first")
        0
    """
    if hasattr(result, "readings"):
        mrss = [r.mrs for r in result.readings]
        sentence = sentence if sentence is not None else result.sentence  # type: ignore[union-attr]
    else:
        mrss = list(result)
    if method == "first":
        return 0 if mrss else None
    if method != "roundtrip":
        raise ValueError(f"unknown selection method {method!r}; use one of {SELECT_METHODS}")
    if generator is None:
        raise ValueError("selection by round trip needs a generator")
    if sentence is None:
        raise ValueError("selection by round trip needs the sentence")
    for i, text in enumerate(mrss):
        try:
            m = decode_mrs(text)
        except ValueError as exc:
            logger.warning("reading %d of %r is not readable: %s", i, sentence, exc)
            continue
        if is_candidate(m) and roundtrips(m, sentence, generator):
            return i
    return None


