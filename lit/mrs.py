"""MRS helpers shared by every stage: reading, copying and querying an MRS.

Nothing here starts a process or edits an MRS in place: functions take a
:class:`delphin.mrs.MRS` and return values or new objects. The rule
operations (:mod:`lit.transform`), reading selection (:mod:`lit.parse`),
generation (:mod:`lit.ace`) and analysis (:mod:`lit.analyze`) all use the
one definition of each concept here, e.g. the *index EP*.

Example:
    >>> m = decode_mrs("[ TOP: h0 INDEX: e2 RELS: < [ _rain_v_1<3:9> LBL: h1 ARG0: e2 ] >"
    ...                " HCONS: < h0 qeq h1 > ]")
    >>> index_ep(m).predicate
    '_rain_v_1'
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Iterator
from typing import Any

from delphin import predicate as _predicate
from delphin.codecs import simplemrs
from delphin.exceptions import PyDelphinSyntaxError
from delphin.mrs import EP, MRS, HCons
from delphin.mrs import INTRINSIC_ROLE as ARG0

__all__ = [
    "decode_mrs",
    "strip_lnk",
    "mrs_for_generation",
    "STAND_INS",
    "unknown_words",
    "stand_in_unknown_words",
    "to_dmrs_json",
    "copy_mrs",
    "index_ep",
    "head_ep",
    "scope_target",
    "is_verbal",
    "outscoping_eps",
    "max_variable_id",
    "fresh_variables",
    "repoint_label",
    "set_property",
]

logger = logging.getLogger(__name__)

_VARID = re.compile(r"(\d+)$")


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
    """*m* as the one-line SimpleMRS (no spans, all properties) sent to ACE,
    with known words standing in for the nouns and adjectives the grammar
    does not know (:func:`stand_in_unknown_words`).

    Raises:
        ValueError: if *m* is not readable SimpleMRS
    """
    return simplemrs.encode(stand_in_unknown_words(decode_mrs(m))[0], properties=True,
                            lnk=False)


# ERG: a word missing from the lexicon is parsed with a generic entry and gets the
# predicate _<word>/<PTB tag>_u_unknown, from which ACE generates nothing ("input EP
# not in index"); common nouns and adjectives have stand-ins of the same kind
_UNKNOWN = re.compile(r"_(.+)/(nns?|jj)_u_unknown$", re.IGNORECASE)
#: words that stand in for unknown nouns (NN, NNS) and adjectives (JJ) in generation:
#: plain, regular, in every ERG lexicon; one not in the MRS is taken
STAND_INS: dict[str, tuple[tuple[str, str], ...]] = {
    "n": (("cat", "_cat_n_1"), ("hat", "_hat_n_1"), ("cup", "_cup_n_1"),
          ("pen", "_pen_n_1"), ("bed", "_bed_n_1")),
    "a": (("tall", "_tall_a_1"), ("soft", "_soft_a_1"), ("calm", "_calm_a_1"),
          ("bold", "_bold_a_1")),
}


def unknown_words(m: MRS) -> dict[str, tuple[str, str]]:
    """The unknown nouns and adjectives of *m* (predicate ``_<word>/NN_u_unknown``,
    ``/NNS``, ``/JJ``) and the known word standing in for each in generation:
    ``{unknown predicate: (word, stand-in word)}``; stand-ins are not words of
    *m*'s other predicates, and differ from each other.

    Example:
        >>> m = decode_mrs("[ TOP: h0 RELS: < [ _turtle/NN_u_unknown LBL: h1 ARG0: x2 ]"
        ...                " [ _cat_n_1 LBL: h3 ARG0: x4 ] > ]")
        >>> unknown_words(m)
        {'_turtle/nn_u_unknown': ('turtle', 'hat')}
    """
    taken = {_predicate.split(ep.predicate)[0] for ep in m.rels}
    out: dict[str, tuple[str, str]] = {}
    for ep in m.rels:
        match = _UNKNOWN.match(ep.predicate)
        if not match or ep.predicate in out:
            continue
        pos = "a" if match.group(2).lower() == "jj" else "n"
        used = {word for _, word in out.values()}
        word = next((w for w, _ in STAND_INS[pos] if w not in taken and w not in used), None)
        if word is not None:
            out[ep.predicate] = (match.group(1), word)
    return out


def stand_in_unknown_words(m: MRS) -> tuple[MRS, dict[str, str]]:
    """*m* with the predicates of :func:`unknown_words` replaced by their
    stand-ins' (``_turtle/NN_u_unknown`` -> ``_cat_n_1``), and
    ``{stand-in word: unknown word}``; *m* itself if it has none.

    Example:
        >>> m = decode_mrs("[ TOP: h0 RELS: < [ _turtle/NN_u_unknown LBL: h1 ARG0: x2 ] > ]")
        >>> out, words = stand_in_unknown_words(m)
        >>> out.rels[0].predicate, words
        ('_cat_n_1', {'cat': 'turtle'})
    """
    unknown = unknown_words(m)
    if not unknown:
        return m, {}
    predicates = {word: pred for pairs in STAND_INS.values() for word, pred in pairs}
    rels = [EP(predicates[unknown[ep.predicate][1]], ep.label, args=dict(ep.args),
               lnk=ep.lnk, surface=ep.surface, base=ep.base)
            if ep.predicate in unknown else ep for ep in m.rels]
    return copy_mrs(m, rels=rels), {stand_in: word for word, stand_in in unknown.values()}


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


def copy_mrs(m: MRS, **changes: Any) -> MRS:
    """A deep-enough copy of *m*: new EPs, argument and property maps.

    Keyword arguments replace attributes (``top``, ``index``, ``rels``,
    ``hcons``, ``icons``, ``variables``); the surface alignment is kept.
    """
    rels = changes.pop("rels", None)
    if rels is None:
        rels = [_copy_ep(ep) for ep in m.rels]
    return MRS(
        top=changes.pop("top", m.top),
        index=changes.pop("index", m.index),
        rels=rels,
        hcons=changes.pop("hcons", m.hcons),
        icons=changes.pop("icons", m.icons),
        variables=changes.pop("variables", m.variables),  # MRS() copies each map
        lnk=m.lnk,
        surface=m.surface,
        identifier=m.identifier,
    )


def _copy_ep(ep: EP, **args: str) -> EP:
    new_args = dict(ep.args)
    new_args.update(args)
    return EP(ep.predicate, ep.label, new_args, lnk=ep.lnk, surface=ep.surface, base=ep.base)


def index_ep(m: MRS) -> EP | None:
    """The *index EP* of *m*: the non-quantifier EP whose ARG0 is the INDEX.

    When several EPs qualify, the first verbal one is preferred; ``None``
    if none does.

    Example:
        >>> m = decode_mrs(
        ...     '[ TOP: h0 INDEX: e2 RELS: < [ _bark_v_1 LBL: h1 ARG0: e2 ARG1: x3 ] '
        ...     '[ udef_q LBL: h4 ARG0: x3 RSTR: h5 BODY: h6 ] [ _dog_n_1 LBL: h7 ARG0: x3 ] > '
        ...     'HCONS: < h0 qeq h1 h5 qeq h7 > ]')
        >>> index_ep(m).predicate
        '_bark_v_1'
    """
    if not m.index:
        return None
    found = [ep for ep in m.rels if ep.args.get(ARG0) == m.index and not ep.is_quantifier()]
    return next((ep for ep in found if is_verbal(ep)), found[0] if found else None)


def head_ep(m: MRS, label: str) -> EP | None:
    """The head of the EPs labelled *label*: not a quantifier, and not a
    modifier of another EP there (none of its arguments is the event of
    another EP in the same conjunction, as with adverbs or ``parg_d``).
    Verbs win over other heads."""
    group = [ep for ep in m.rels if ep.label == label and not ep.is_quantifier()]
    ivs = {ep.iv for ep in group if ep.iv and ep.iv[:1] == "e"}
    heads = [
        ep for ep in group
        if not any(v in ivs and v != ep.iv for r, v in ep.args.items() if r != ARG0)
    ]
    if not heads:
        heads = group
    for ep in heads:
        if is_verbal(ep):
            return ep
    return heads[0] if heads else None


def scope_target(m: MRS, handle: str) -> str:
    """The label that *handle* reaches: the ``lo`` of its qeq, or itself."""
    for hc in m.hcons:
        if hc.hi == handle:
            return hc.lo
    return handle


def is_verbal(ep: EP) -> bool:
    """``True`` if *ep*'s predicate is a surface verb (``_..._v_...``,
    including ``_be_v_*`` and modals).

    Example:
        >>> is_verbal(EP("_chase_v_1", "h1")), is_verbal(EP("compound", "h1"))
        (True, False)
    """
    pred = ep.predicate
    if not _predicate.is_surface(pred):
        return False
    try:
        return _predicate.split(pred)[1] == "v"
    except (ValueError, IndexError, TypeError):
        return False


def outscoping_eps(m: MRS, label: str) -> Iterator[EP]:
    """Yield the EPs that scope over *label*, nearest first.

    Follows, upwards, the argument (a hole qeq *label*, or *label* itself)
    of the EP that embeds it, then that EP's label, and so on.
    """
    qeq_hi = {hc.lo: hc.hi for hc in m.hcons}
    owner: dict[str, EP] = {}
    for ep in m.rels:
        for role, value in ep.args.items():
            if role != ARG0 and value[:1] == "h":
                owner.setdefault(value, ep)
    seen = {label}
    while True:
        ep = owner.get(label) or owner.get(qeq_hi.get(label, ""))
        if ep is None or ep.label in seen:
            return
        yield ep
        label = ep.label
        seen.add(label)


def max_variable_id(m: MRS) -> int:
    """The largest numeric variable id in *m* (``h0`` ... ``x41`` -> 41)."""
    top = -1
    for var in _all_variables(m):
        match = _VARID.search(var)
        if match:
            top = max(top, int(match.group(1)))
    return top


def _all_variables(m: MRS) -> Iterator[str]:
    yield from m.variables
    if m.top:
        yield m.top
    if m.index:
        yield m.index
    for ep in m.rels:
        yield ep.label
        for role, value in ep.args.items():
            if role != "CARG":
                yield value
    for hc in m.hcons:
        yield hc.hi
        yield hc.lo
    for ic in m.icons:
        yield ic.left
        yield ic.right


def fresh_variables(m: MRS, types: str) -> list[str]:
    """New variable names, one per character of *types*, numbered above
    every id in *m*: ``fresh_variables(m, "hhe")`` -> ``['h42', 'h43', 'e44']``."""
    start = max_variable_id(m) + 1
    return [f"{t}{start + i}" for i, t in enumerate(types)]


def repoint_label(m: MRS, old: str, new: str) -> MRS:
    """Make what pointed at the scope *old* (TOP, a qeq, or a handle
    argument that names it directly) point at *new* instead."""
    top, rels, hcons = _repoint(m, old, new)
    return copy_mrs(m, top=top, rels=rels, hcons=hcons)


def _repoint(m: MRS, old: str, new: str) -> tuple[str | None, list[EP], list[HCons]]:
    """TOP, copied EPs and HCONS of *m* with pointers at *old* moved to *new*."""
    top = new if m.top == old else m.top
    hcons = [HCons(hc.hi, hc.relation, new) if hc.lo == old else hc for hc in m.hcons]
    rels = []
    for ep in m.rels:
        args = {r: new for r, v in ep.args.items() if v == old and r != ARG0}
        rels.append(_copy_ep(ep, **args))
    return top, rels, hcons


def _copy_variables(m: MRS) -> dict[str, dict[str, str]]:
    return {v: dict(p) for v, p in m.variables.items()}


def set_property(m: MRS, var: str, prop: str, value: str) -> MRS:
    """Return a copy of *m* with property *prop* of *var* set to *value*."""
    variables = _copy_variables(m)
    variables.setdefault(var, {})[prop] = value
    return copy_mrs(m, variables=variables)
