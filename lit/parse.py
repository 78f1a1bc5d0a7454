"""Reading selection and reading formats.

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

Also here: removing character spans (:func:`strip_lnk`) and converting a
reading to DMRS JSON (:func:`to_dmrs_json`).

Example:
    >>> same_surface("A dog chases  a cat.", "a dog chases a cat")
    True
"""

from __future__ import annotations

import logging
import unicodedata
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from delphin import predicate
from delphin.codecs import simplemrs
from delphin.exceptions import PyDelphinSyntaxError
from delphin.mrs import EP, MRS, RESTRICTION_ROLE

if TYPE_CHECKING:  # pragma: no cover
    from lit.ace import Generator, ParseResult

__all__ = [
    "SelectMethod",
    "SELECT_METHODS",
    "decode_mrs",
    "strip_lnk",
    "mrs_for_generation",
    "to_dmrs_json",
    "index_ep",
    "is_candidate",
    "normalize_surface",
    "same_surface",
    "roundtrips",
    "select_reading",
]

logger = logging.getLogger(__name__)

SelectMethod = Literal["first", "roundtrip"]
SELECT_METHODS: tuple[str, ...] = ("first", "roundtrip")


def decode_mrs(m: MRS | str) -> MRS:
    """*m* as an :class:`~delphin.mrs.MRS` (decoding SimpleMRS strings).

    Raises:
        ValueError: if *m* is not readable SimpleMRS
    """
    if isinstance(m, MRS):
        return m
    if not isinstance(m, str):
        raise ValueError(f"expected an MRS or a SimpleMRS string, not {type(m).__name__}")
    try:
        return simplemrs.decode(m)
    except PyDelphinSyntaxError as exc:
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else "syntax error"
        offset = getattr(exc, "offset", None)
        if offset is not None:
            reason += f" at character {offset}"
    except StopIteration:  # PyDelphin's lexer runs out of tokens
        reason = "unexpected end of input"
    text = m if len(m) <= 80 else m[:77] + "..."
    raise ValueError(f"{reason}: {text!r}")


def strip_lnk(m: MRS) -> MRS:
    """A copy of *m* without character spans (on the MRS and every EP).

    Example:
        >>> m = decode_mrs("[ TOP: h0 INDEX: e2 RELS: < [ _rain_v_1<3:9> LBL: h1 ARG0: e2 ] >"
        ...                " HCONS: < h0 qeq h1 > ]")
        >>> simplemrs.encode(strip_lnk(m))
        '[ TOP: h0 INDEX: e2 RELS: < [ _rain_v_1 LBL: h1 ARG0: e2 ] > HCONS: < h0 qeq h1 > ]'
    """
    rels = [EP(ep.predicate, ep.label, args=dict(ep.args)) for ep in m.rels]
    return MRS(
        top=m.top,
        index=m.index,
        rels=rels,
        hcons=list(m.hcons),
        icons=list(m.icons),
        variables={v: dict(props) for v, props in m.variables.items()},
    )


def mrs_for_generation(m: MRS | str) -> str:
    """*m* as the one-line SimpleMRS (no spans, all properties) sent to ACE.

    Raises:
        ValueError: if *m* is not readable SimpleMRS
    """
    return simplemrs.encode(decode_mrs(m), properties=True, lnk=False)


def to_dmrs_json(m: MRS | str) -> dict[str, Any]:
    """*m* converted to DMRS, as the JSON object of :mod:`delphin.codecs.dmrsjson`.

    PyDelphin's warnings about parts that have no DMRS counterpart (e.g. a
    broken handle constraint) are logged, not printed.

    Raises:
        ValueError: if *m* is not readable SimpleMRS
    """
    from delphin import dmrs
    from delphin.codecs import dmrsjson

    decoded = decode_mrs(m)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        d = dmrs.from_mrs(decoded)
    for w in caught:
        logger.info("DMRS conversion: %s", w.message)
    return dmrsjson.to_dict(d)


def index_ep(m: MRS) -> EP | None:
    """The first non-quantifier EP whose ARG0 is the INDEX of *m*, if any."""
    for ep in m.rels:
        if ep.iv == m.index and RESTRICTION_ROLE not in ep.args:
            return ep
    return None


def _is_verbal(pred: str) -> bool:
    if not predicate.is_surface(pred):
        return False
    try:
        _, pos, _ = predicate.split(pred)
    except ValueError:
        return False
    return pos == "v"


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
    return ep is not None and _is_verbal(ep.predicate)


def normalize_surface(s: str) -> str:
    """*s* case-folded, whitespace runs collapsed, final punctuation removed.

    Example:
        >>> normalize_surface("  The dog  chased the cat. ")
        'the dog chased the cat'
    """
    text = " ".join(s.split()).casefold()
    end = len(text)
    while end and (text[end - 1].isspace() or unicodedata.category(text[end - 1]).startswith("P")):
        end -= 1
    return text[:end]


def same_surface(a: str, b: str) -> bool:
    """``True`` if *a* and *b* are the same sentence up to :func:`normalize_surface`."""
    return normalize_surface(a) == normalize_surface(b)


def roundtrips(reading: MRS | str, sentence: str, generator: Generator) -> bool:
    """``True`` if *generator* realizes *reading* (spans removed) as *sentence*.

    A generation failure (timeout, crash) counts as no round trip; it is logged.
    """
    result = generator.generate(strip_lnk(decode_mrs(reading)))
    if result.error:
        logger.info("round trip of a reading of %r failed: %s", sentence, result.error)
        return False
    target = normalize_surface(sentence)
    return any(normalize_surface(s) == target for s in result.surfaces)


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
    Example:
        >>> select_reading(["[ TOP: h0 INDEX: e2 RELS: < > HCONS: < > ]"], "first")
        0
    """
    if hasattr(result, "readings"):
        mrss = [r.mrs for r in result.readings]  # type: ignore[union-attr]
        sentence = sentence if sentence is not None else result.sentence  # type: ignore[union-attr]
    else:
        mrss = list(result)  # type: ignore[arg-type]
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
