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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from delphin import predicate
from delphin.codecs import simplemrs
from delphin.exceptions import PyDelphinSyntaxError
from delphin.mrs import EP, MRS, RESTRICTION_ROLE

from lit.errors import InputError
from lit.jsonl import Skipped, _json_object, _source_name, read_lines

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
    "SentenceItem",
    "MrsItem",
    "read_sentences",
    "parse_record",
    "read_mrs_inputs",
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


# control characters are sent to ACE as spaces (lit.ace), so compare them as spaces
_CONTROL = str.maketrans({c: " " for c in [*range(0x20), *range(0x7F, 0xA0)]})


def normalize_surface(s: str) -> str:
    """*s* case-folded, control characters and whitespace runs collapsed to
    one space, final punctuation removed.

    Example:
        >>> normalize_surface("  The dog  chased\x07 the cat. ")
        'the dog chased the cat'
    """
    text = " ".join(s.translate(_CONTROL).split()).casefold()
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


# --------------------------------------------------------------------------
# records in and out (the JSONL of `lit parse` / `lit generate`)


@dataclass(frozen=True, slots=True)
class SentenceItem:
    """One input item for parsing: *sentence* is ``None`` when *error* says why."""

    id: Any
    sentence: str | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class MrsItem:
    """One input item for generation: *mrs* is ``None`` when *error* says why.

    *extra* holds fields carried over to the output (``sentence``, ``chain``,
    ``reading``).
    """

    id: Any
    mrs: str | None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _input_lines(
    source: Any, name: str, on_error: str
) -> Iterator[tuple[int, str | dict[str, Any] | None, str | None]]:
    """Yield ``(lineno, value, error)`` for each non-blank line of *source*.

    *value* is the stripped text of a plain line, or the JSON object on a
    line that starts with ``{``. A line that cannot be read raises
    :class:`~lit.errors.InputError`, or with ``on_error="skip"`` comes with
    *value* ``None`` and the reason in *error*.
    """
    skip = on_error == "skip"
    for lineno, line in read_lines(source, on_error="skip" if skip else "fail"):
        if isinstance(line, Skipped):
            yield lineno, None, f"invalid input: {line.reason}"
        elif not line.strip():
            continue
        elif not line.lstrip().startswith("{"):
            yield lineno, line.strip(), None
        else:
            obj = _json_object(line, name, lineno, skip=skip)
            if isinstance(obj, str):
                yield lineno, None, f"invalid input: {obj}"
            else:
                yield lineno, obj, None


def read_sentences(source: Any, *, on_error: str = "fail") -> Iterator[SentenceItem]:
    """Yield a :class:`SentenceItem` per sentence in *source*.

    *source* is a path, an open text stream, or ``None``/``"-"`` for stdin.
    Lines of plain text are sentences with their line number as id; a line
    that starts with ``{`` is a JSON object whose ``sentence`` (or ``text``)
    is parsed and whose ``id`` is kept (default: the line number). Blank
    lines are not items. A line that cannot be read raises
    :class:`~lit.errors.InputError` naming file and line, or with
    ``on_error="skip"`` becomes an item with the reason in ``error``.
    """
    name = _source_name(source)
    for lineno, obj, error in _input_lines(source, name, on_error):
        if obj is None:
            yield SentenceItem(lineno, None, error)
            continue
        if isinstance(obj, str):
            yield SentenceItem(lineno, obj)
            continue
        item_id = obj.get("id", lineno)
        text = obj.get("sentence", obj.get("text"))
        if not isinstance(text, str):
            reason = "no 'sentence' or 'text' string in the JSON object"
            if on_error != "skip":
                raise InputError(reason, filename=name, lineno=lineno)
            yield SentenceItem(item_id, None, f"invalid input: {reason}")
            continue
        yield SentenceItem(item_id, text)


def parse_record(
    item_id: Any,
    result: ParseResult,
    selected: int | None,
    *,
    dmrs: bool = False,
    tree: bool = False,
) -> dict[str, Any]:
    """The ``lit parse`` JSON object for *result*.

    A sentence without readings and without a failure gets the error
    ``"no parse"`` (as in the recorded reference data).
    """
    readings = []
    for reading in result.readings:
        out: dict[str, Any] = {"mrs": reading.mrs}
        if dmrs:
            try:
                out["dmrs"] = to_dmrs_json(reading.mrs)
            except ValueError as exc:
                logger.warning("item %s: no DMRS for a reading: %s", item_id, exc)
                out["dmrs"] = None
        if tree:
            out["tree"] = reading.tree
            out["derivation"] = reading.derivation
        readings.append(out)
    error = result.error
    if error is None and not readings:
        error = "no parse"
    return {
        "id": item_id,
        "sentence": result.sentence,
        "readings": readings,
        "selected": selected,
        "error": error,
    }


def read_mrs_inputs(
    source: Any, *, all_readings: bool = False, on_error: str = "fail"
) -> Iterator[MrsItem]:
    """Yield a :class:`MrsItem` per MRS to generate from in *source*.

    A line is SimpleMRS (its id is the line number), ``lit parse`` JSONL
    (the ``selected`` reading, or every reading with *all_readings*), or a
    JSON object with an ``mrs`` field (``lit rules apply`` output; a
    ``null`` mrs carries its ``reason``). Items that have nothing to
    generate from carry the reason in ``error``; nothing is dropped.
    """
    name = _source_name(source)
    for lineno, obj, error in _input_lines(source, name, on_error):
        if obj is None:
            yield MrsItem(lineno, None, error)
            continue
        if isinstance(obj, str):
            yield MrsItem(lineno, obj)
            continue
        item_id = obj.get("id", lineno)
        extra: dict[str, Any] = {k: obj[k] for k in ("sentence", "chain") if k in obj}
        if "readings" in obj and isinstance(obj["readings"], list):
            yield from _parse_output_items(item_id, obj, extra, all_readings)
        elif "mrs" in obj:
            mrs = obj["mrs"]
            if isinstance(mrs, str):
                yield MrsItem(item_id, mrs, None, extra)
            else:
                reason = obj.get("reason") or obj.get("error") or "no MRS in the input"
                yield MrsItem(item_id, None, str(reason), extra)
        else:
            reason = "a JSON line needs 'mrs' (lit rules apply) or 'readings' (lit parse)"
            if on_error != "skip":
                raise InputError(reason, filename=name, lineno=lineno)
            yield MrsItem(item_id, None, f"invalid input: {reason}", extra)


def _parse_output_items(
    item_id: Any, obj: Mapping[str, Any], extra: dict[str, Any], all_readings: bool
) -> Iterator[MrsItem]:
    readings = obj["readings"]

    def mrs_of(i: int) -> str | None:
        reading = readings[i]
        text = reading.get("mrs") if isinstance(reading, Mapping) else reading
        return text if isinstance(text, str) else None

    if not readings:
        yield MrsItem(item_id, None, str(obj.get("error") or "no parse"), extra)
        return
    if all_readings:
        for i in range(len(readings)):
            text = mrs_of(i)
            yield MrsItem(item_id, text, None if text else f"reading {i} has no 'mrs'",
                          {**extra, "reading": i})
        return
    selected = obj.get("selected")
    if selected is None:
        yield MrsItem(item_id, None, "no selected reading (use --all for every reading)", extra)
        return
    if not isinstance(selected, int) or not 0 <= selected < len(readings):
        yield MrsItem(item_id, None,
                      f"invalid input: 'selected' is {selected!r} but there are "
                      f"{len(readings)} readings", extra)
        return
    text = mrs_of(selected)
    yield MrsItem(item_id, text, None if text else f"reading {selected} has no 'mrs'",
                  {**extra, "reading": selected})
