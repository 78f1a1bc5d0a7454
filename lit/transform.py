"""Pure MRS editing: the core helpers and the operation vocabulary of rules.

Every function here takes a :class:`delphin.mrs.MRS` and returns a new one;
inputs are never modified (pydelphin's objects are mutable, so operations
copy the EPs and property maps they touch). Rules (:mod:`lit.rules`) are
declared in ``rules/*.toml`` as a list of the operations below with their
parameters; grammar-specific facts (the predicate of negation, how a passive
is marked, which modals exist, ...) come from a :class:`Semantics`, built
from the ``[semantics]`` table of a grammar profile.

Terms used throughout:

* the *index EP* is the non-quantifier EP whose ARG0 is the MRS INDEX;
* the *target verb* is the verb a rule acts on: the index EP, or, when the
  index EP is a wrapper that an earlier rule or the sentence introduced
  (a modal, an it-cleft, a negation), the EP that wrapper embeds, found by
  following its scopal argument (through ``qeq`` when it is a hole);
* the *clause head* is the index EP itself: scopal wrappers (modal,
  negation, it-cleft) are put on top of it, so they stack in the order the
  rules are applied.

An operation that does not apply raises :class:`Inapplicable` with a reason;
:func:`lit.rules.apply_chain` turns that into an :class:`~lit.rules.Applied`
record, so callers of the rule API never see an exception for an
inapplicable rule. An operation that sets a *target* (a TENSE, PROG/PERF or
SF value, the passive voice, an it-cleft of a given argument) raises
:class:`AlreadyHolds`, a kind of :class:`Inapplicable`, when its target
already holds: in a chain that step is a no-op, not a refusal (see
:func:`lit.rules.apply_chain`). Operations that *add* something whose
meaning depends on the input (negation, a modal, a ``_no_q`` subject) keep
refusing: "already negated" is not a target that holds.

Example:
    >>> from delphin.codecs import simplemrs
    >>> m = simplemrs.decode(DOGS_BARK)
    >>> out = negate(m, Semantics())
    >>> sorted(ep.predicate for ep in out.rels)
    ['_bark_v_1', '_dog_n_1', 'neg', 'udef_q']
    >>> len(m.rels)  # the input is unchanged
    3

Why this module is long: it is the operation vocabulary of the rules (one function
per MRS edit, with its preconditions) and the grammar conventions they read; generic
MRS helpers live in :mod:`lit.mrs`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from delphin import predicate as _predicate
from delphin.mrs import EP, MRS, HCons, ICons
from delphin.mrs import INTRINSIC_ROLE as ARG0
from delphin.mrs import RESTRICTION_ROLE as RSTR

from lit.mrs import (  # private: shared with lit.mrs only
    _copy_ep,
    _copy_variables,
    _repoint,
    copy_mrs,
    fresh_variables,
    head_ep,
    index_ep,
    is_verbal,
    outscoping_eps,
    scope_target,
    set_property,
)

logger = logging.getLogger(__name__)

__all__ = [
    "DOGS_BARK",
    "DOG_CHASED_CAT",
    "UNTENSED_EVENT",
    "Inapplicable",
    "AlreadyHolds",
    "Semantics",
    "OPERATIONS",
    "Operation",
    "operation",
    "target_ep",
    "wrappers",
    "is_modal",
    "is_cleft",
    "is_passive",
    "is_negated",
    "check",
    "PRECONDITIONS",
    # operations
    "identity",
    "set_tense",
    "set_aspect",
    "set_sf",
    "negate",
    "add_modal",
    "cleft",
    "passivize",
    "swap_roles",
    "requantify",
]

#: "The dog chased the cat." as parsed by ERG 1214 (a tiny, real fixture).
DOG_CHASED_CAT = (
    "[ TOP: h0 INDEX: e2 [ e SF: prop TENSE: past MOOD: indicative PROG: - PERF: - ]"
    " RELS: < [ _the_q LBL: h4 ARG0: x3 [ x PERS: 3 NUM: sg IND: + ] RSTR: h5 BODY: h6 ]"
    " [ _dog_n_1 LBL: h7 ARG0: x3 ]"
    " [ _chase_v_1 LBL: h1 ARG0: e2 ARG1: x3 ARG2: x8 [ x PERS: 3 NUM: sg IND: + ] ]"
    " [ _the_q LBL: h9 ARG0: x8 RSTR: h10 BODY: h11 ] [ _cat_n_1 LBL: h12 ARG0: x8 ] >"
    " HCONS: < h0 qeq h1 h5 qeq h7 h10 qeq h12 > ]"
)

#: "Dogs bark." as parsed by ERG 1214.
DOGS_BARK = (
    "[ TOP: h0 INDEX: e2 [ e SF: prop TENSE: pres MOOD: indicative PROG: - PERF: - ]"
    " RELS: < [ udef_q LBL: h4 ARG0: x3 [ x PERS: 3 NUM: pl IND: + ] RSTR: h5 BODY: h6 ]"
    " [ _dog_n_1 LBL: h7 ARG0: x3 ] [ _bark_v_1 LBL: h1 ARG0: e2 ARG1: x3 ] >"
    " HCONS: < h0 qeq h1 h5 qeq h7 > ]"
)

#: Properties of the events lit introduces (``neg``, ``parg_d``), as the ERG
#: gives them.
UNTENSED_EVENT: Mapping[str, str] = {
    "SF": "prop",
    "TENSE": "untensed",
    "MOOD": "indicative",
    "PROG": "-",
    "PERF": "-",
}

_CLAUSE_EVENT: Mapping[str, str] = {**UNTENSED_EVENT, "TENSE": "pres"}


class Inapplicable(Exception):
    """Control flow: an operation does not apply; *reason* says why.

    Raised by the operations of this module and caught by
    :func:`lit.rules.apply_chain`; it is not a :class:`~lit.errors.LitError`
    because it reports data, not a failure.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class AlreadyHolds(Inapplicable):
    """Control flow: the target an operation sets already holds (``TENSE is
    already past``); *reason* says which.

    Raised by the target-setting operations (:func:`set_tense`,
    :func:`set_aspect`, :func:`set_sf`, :func:`passivize`, :func:`cleft` of
    the argument already in focus). :func:`lit.rules.apply_chain` treats
    such a step as a no-op; a chain whose result equals its input is
    inapplicable, with this reason. Code that calls an operation directly
    and catches :class:`Inapplicable` sees it as before.
    """


@dataclass(frozen=True, slots=True)
class Semantics:
    """The grammar-specific facts rules read (a profile's ``[semantics]``).

    Attributes:
        grammar: the profile's name, used in messages
        negation: predicate of sentential negation
        passive: ``"parg_d"`` (an EP, ERG 1214) or ``"icons:topic"``
            (an ICONS on the verb's event, ERG 2018 and later)
        itcleft: predicate of the it-cleft copula, ``""`` if the grammar
            cannot generate clefts
        itcleft_unsupported: the reason when *itcleft* is ``""``
        modal_aspect: PROG/PERF of a new modal's event: ``"minus"`` or
            ``"inherit"`` (copied from the verb's event)
        modals: modal name -> predicate (``""`` = not generatable)
        modals_unsupported: modal name -> reason
    """

    grammar: str = "erg-1214"
    negation: str = "neg"
    passive: str = "parg_d"
    itcleft: str = "_be_v_itcleft"
    itcleft_unsupported: str = ""
    modal_aspect: str = "minus"
    existential: str = "_be_v_there"
    identity: str = "_be_v_id"
    modals: Mapping[str, str] = field(default_factory=lambda: {"may": "_may_v_modal"})
    modals_unsupported: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_profile(cls, profile: Any) -> Semantics:
        """Build from a :class:`~lit.grammar.GrammarProfile` (or a mapping).

        *profile* may be a profile (its ``name`` and ``semantics`` are
        read), a :class:`Semantics` (returned as is) or a plain
        ``[semantics]`` mapping. Missing keys take ERG 1214's values, except
        *itcleft* and *modals*, which default to "not supported".
        """
        if isinstance(profile, Semantics):
            return profile
        if isinstance(profile, Mapping):
            name, sem = str(profile.get("name", "grammar")), profile
        else:
            name, sem = str(getattr(profile, "name", "grammar")), profile.semantics or {}
        itcleft = str(sem.get("itcleft", ""))
        return cls(
            grammar=name,
            negation=str(sem.get("negation", "neg")),
            passive=str(sem.get("passive", "parg_d")),
            itcleft=itcleft,
            itcleft_unsupported=str(sem.get("itcleft_unsupported", "")),
            modal_aspect=str(sem.get("modal_aspect", "minus")),
            existential=str(sem.get("existential", "_be_v_there")),
            identity=str(sem.get("identity", "_be_v_id")),
            modals=dict(sem.get("modals", {})),
            modals_unsupported=dict(sem.get("modals_unsupported", {})),
        )

    def unsupported(self, requirement: str) -> str | None:
        """The reason *requirement* is not met by this grammar, or ``None``.

        A requirement names a ``[semantics]`` key whose value must not be
        empty: ``"itcleft"``, ``"negation"``, ``"modals.might"`` ...
        """
        key, _, sub = requirement.partition(".")
        if key == "modals":
            if self.modals.get(sub):
                return None
            return self.modals_unsupported.get(sub) or (
                f"{self.grammar} has no predicate for the modal {sub!r}"
            )
        value = getattr(self, key, None)
        if value is None:
            raise KeyError(requirement)
        if value:
            return None
        explained = getattr(self, f"{key}_unsupported", "")
        return explained or f"{self.grammar} does not support {key}"

    @property
    def modal_predicates(self) -> frozenset[str]:
        return frozenset(p for p in self.modals.values() if p)


# --------------------------------------------------------------------------
# wrappers and the target verb


def is_modal(ep: EP, sem: Semantics | None = None) -> bool:
    """``True`` if *ep* is a modal: a predicate the grammar lists as one, or
    any ``_..._v_modal``."""
    sem = sem or Semantics()
    return ep.predicate in sem.modal_predicates or ep.predicate.endswith("_v_modal")


def is_cleft(ep: EP, sem: Semantics | None = None) -> bool:
    """``True`` if *ep* is the copula of an it-cleft (``_be_v_itcleft``)."""
    sem = sem or Semantics()
    return ep.predicate == "_be_v_itcleft" or bool(sem.itcleft and ep.predicate == sem.itcleft)


def _scopal_role(ep: EP, sem: Semantics) -> str | None:
    """Which argument of *ep* embeds the clause, if *ep* is a wrapper."""
    if ep.predicate == sem.negation or is_modal(ep, sem):
        return "ARG1"
    if is_cleft(ep, sem):
        return "ARG2"
    return None


def wrappers(m: MRS, sem: Semantics | None = None) -> tuple[list[EP], EP | None]:
    """``(path, target)``: the wrappers from the index EP down, and the EP
    they embed (the target verb candidate; ``None`` without an index EP)."""
    sem = sem or Semantics()
    path: list[EP] = []
    ep = index_ep(m)
    seen: set[int] = set()
    while ep is not None and id(ep) not in seen:
        seen.add(id(ep))
        role = _scopal_role(ep, sem)
        if role is None or role not in ep.args:
            return path, ep
        path.append(ep)
        ep = head_ep(m, scope_target(m, ep.args[role]))
    return path, ep


def target_ep(m: MRS, sem: Semantics | None = None) -> EP | None:
    """The target verb of *m* (see the module notes), or ``None``."""
    _, ep = wrappers(m, sem)
    return ep if ep is not None and is_verbal(ep) else None


def is_passive(m: MRS, ep: EP, sem: Semantics | None = None) -> bool:
    """``True`` if the verb *ep* is already passive (``parg_d`` on its event
    or an ICONS ``topic`` from it)."""
    iv = ep.iv
    if any(e.predicate == "parg_d" and e.args.get("ARG1") == iv for e in m.rels):
        return True
    return any(ic.left == iv and str(ic.relation) == "topic" for ic in m.icons)


def is_negated(m: MRS, sem: Semantics | None = None) -> bool:
    """``True`` if sentential negation scopes over the clause of *m*."""
    sem = sem or Semantics()
    path, verb = wrappers(m, sem)
    if any(ep.predicate == sem.negation for ep in path):
        return True
    head = index_ep(m)
    if head is None:
        return False
    labels = {head.label} | ({verb.label} if verb is not None else set())
    return any(
        ep.predicate == sem.negation for lbl in labels for ep in outscoping_eps(m, lbl)
    )


# --------------------------------------------------------------------------
# preconditions


def _check_no_unknown(m: MRS, sem: Semantics) -> None:
    if any(ep.predicate == "unknown" for ep in m.rels):
        raise Inapplicable("MRS contains an unknown EP (fragment analysis)")


def _check_verb(m: MRS, sem: Semantics) -> None:
    if target_ep(m, sem) is None:
        raise Inapplicable("no verbal index EP")


def _check_x(role: str) -> Callable[[MRS, Semantics], None]:
    def check_x(m: MRS, sem: Semantics) -> None:
        verb = _verb(m, sem)
        if verb.args.get(role, "")[:1] != "x":
            raise Inapplicable(f"{role} of {verb.predicate} is not an x variable")

    return check_x


def _check_not_existential(m: MRS, sem: Semantics) -> None:
    verb = _verb(m, sem)
    if verb.predicate == sem.existential:
        raise Inapplicable(f"an existential ({verb.predicate}: 'there is/are ...'): its "
                           "subject is an expletive 'there'")


def _check_not_identity_gerund(roles: tuple[str, ...]) -> Callable[[MRS, Semantics], None]:
    def check(m: MRS, sem: Semantics) -> None:
        verb = _verb(m, sem)
        if verb.predicate != sem.identity:
            return
        gerunds = {ep.iv for ep in m.rels if ep.predicate == "nominalization"}
        for role in roles:
            if verb.args.get(role) in gerunds:
                what = ("most likely a misreading of a progressive" if role == "ARG2" else
                        "most likely a misreading of a caption without a verb")
                raise Inapplicable(f"an identity copula ({verb.predicate}) with a gerund "
                                   f"{role} ({what})")

    return check


def _check_index_not_in_np(m: MRS, sem: Semantics) -> None:
    verb = _verb(m, sem)
    restrictions = {scope_target(m, ep.args[RSTR]) for ep in m.rels if ep.is_quantifier()
                    and RSTR in ep.args}
    if verb.label in restrictions:
        raise Inapplicable(f"the index verb {verb.predicate} is inside a noun phrase (a "
                           "relative clause or participle), not the main clause")


def _check_no_bound_pronoun(role: str) -> Callable[[MRS, Semantics], None]:
    def check(m: MRS, sem: Semantics) -> None:
        verb = _verb(m, sem)
        var = verb.args.get(role)
        pronouns = {ep.iv for ep in m.rels if ep.predicate == "pron"}
        if var in pronouns:
            raise Inapplicable(f"{role} is a pronoun; moving it before the subject may "
                               "change what it refers to")
        if any(ep.predicate == "poss" and ep.args.get("ARG1") == var
               and ep.args.get("ARG2") in pronouns for ep in m.rels):
            raise Inapplicable(f"{role} has a possessive pronoun ('his ...'), which the "
                               "subject may bind; moving it before the subject changes that")

    return check


def _check_not_bare_singular(role: str) -> Callable[[MRS, Semantics], None]:
    def check(m: MRS, sem: Semantics) -> None:
        var = _verb(m, sem).args.get(role)
        if not var or m.variables.get(var, {}).get("NUM") != "sg":
            return
        quantifiers = [ep.predicate for ep in m.rels if ep.is_quantifier() and ep.iv == var]
        if quantifiers != ["udef_q"]:
            return  # a determiner, a name, a possessive: "the man", "his car"
        heads = [ep for ep in m.rels if ep.iv == var and not ep.is_quantifier()]
        if not any(_predicate.split(ep.predicate)[1] == "n" for ep in heads):
            return  # a gerund ("skiing"), a pronoun
        if any(ep.predicate == "card" and ep.args.get("ARG1") == var for ep in m.rels):
            return  # "one man"
        raise Inapplicable(f"{role} is a bare singular noun phrase (no determiner: a "
                           "headline-style caption, 'Young man skis ...'); a cleft of it "
                           "is not grammatical")

    return check


def _check_not_question(m: MRS, sem: Semantics) -> None:
    if m.variables.get(m.index or "", {}).get("SF") == "ques":
        raise Inapplicable("sentence is a question")


#: Named preconditions usable in rule declarations (``preconditions = [...]``).
PRECONDITIONS: dict[str, Callable[[MRS, Semantics], None]] = {
    "no_unknown": _check_no_unknown,
    "verb": _check_verb,
    "x:ARG1": _check_x("ARG1"),
    "x:ARG2": _check_x("ARG2"),
    "x:ARG3": _check_x("ARG3"),
    "not_question": _check_not_question,
    "not_existential": _check_not_existential,
    "not_identity_gerund": _check_not_identity_gerund(("ARG1", "ARG2")),
    "not_identity_gerund:ARG1": _check_not_identity_gerund(("ARG1",)),
    "index_not_in_np": _check_index_not_in_np,
    "no_bound_pronoun:ARG2": _check_no_bound_pronoun("ARG2"),
    "not_bare_singular:ARG1": _check_not_bare_singular("ARG1"),
}


def check(m: MRS, names: Iterable[str], sem: Semantics | None = None) -> str | None:
    """The reason the first failing precondition in *names* gives, or ``None``."""
    sem = sem or Semantics()
    for name in names:
        try:
            PRECONDITIONS[name](m, sem)
        except Inapplicable as exc:
            return exc.reason
    return None


def _verb(m: MRS, sem: Semantics) -> EP:
    verb = target_ep(m, sem)
    if verb is None:
        raise Inapplicable("no verbal index EP")
    return verb


# --------------------------------------------------------------------------
# operations

#: A function ``op(m, sem, **params) -> MRS`` that raises :class:`Inapplicable`.
Operation = Callable[..., MRS]

#: The operation vocabulary: name -> function (rule files refer to these).
OPERATIONS: dict[str, Operation] = {}


def operation(name: str) -> Callable[[Operation], Operation]:
    """Register a function in :data:`OPERATIONS` under *name* (a decorator).

    Plugins may add operations this way; the rule files can then use them.
    """

    def register(func: Operation) -> Operation:
        OPERATIONS[name] = func
        return func

    return register


@operation("identity")
def identity(m: MRS, sem: Semantics | None = None) -> MRS:
    """A copy of *m* (the original sentence)."""
    return copy_mrs(m)


def _tense_event(m: MRS, sem: Semantics) -> str:
    """The event that carries tense: the nearest modal above the verb,
    else the verb (a cleft or a negation does not take the tense)."""
    path, verb = wrappers(m, sem)
    for ep in reversed(path):
        if _scopal_role(ep, sem) == "ARG1" and ep.predicate != sem.negation:
            return ep.iv or ""
    return _verb(m, sem).iv or ""


@operation("set_tense")
def set_tense(m: MRS, sem: Semantics | None = None, *, value: str) -> MRS:
    """Set TENSE of the clause to *value* (``past``, ``pres``, ``fut`` ...).

    Under a modal the tense is the modal's (English modals carry the
    clause's tense; the verb under them is untensed).

    Example:
        >>> from delphin.codecs import simplemrs
        >>> out = set_tense(simplemrs.decode(DOGS_BARK), value="past")
        >>> out.variables[out.index]["TENSE"]
        'past'
    """
    sem = sem or Semantics()
    event = _tense_event(m, sem)
    if m.variables.get(event, {}).get("TENSE") == value:
        raise AlreadyHolds(f"TENSE is already {value}")
    return set_property(m, event, "TENSE", value)


@operation("set_aspect")
def set_aspect(m: MRS, sem: Semantics | None = None, *, prop: str, value: str) -> MRS:
    """Set the aspect property *prop* (``PROG``/``PERF``) of the verb.

    With ``modal_aspect = "inherit"`` the events of the modals above the
    verb take the value too, as in the grammar's own analyses.
    """
    sem = sem or Semantics()
    prop = prop.upper()
    path, _ = wrappers(m, sem)
    verb = _verb(m, sem)
    if m.variables.get(verb.iv or "", {}).get(prop) == value:
        raise AlreadyHolds(f"{prop} is already {value}")
    out = set_property(m, verb.iv or "", prop, value)
    if sem.modal_aspect == "inherit":
        for ep in path:
            if is_modal(ep, sem):
                out.variables.setdefault(ep.iv or "", {})[prop] = value
    return out


@operation("set_sf")
def set_sf(m: MRS, sem: Semantics | None = None, *, value: str) -> MRS:
    """Set the sentential force (SF) of the INDEX event (``ques``: a polar
    question)."""
    current = m.variables.get(m.index or "", {}).get("SF")
    if current == value:
        if value == "ques":
            raise AlreadyHolds("sentence is already a question")
        raise AlreadyHolds(f"SF is already {value}")
    return set_property(m, m.index or "", "SF", value)


def _wrap(
    m: MRS,
    predicate: str,
    *,
    event: Mapping[str, str],
    role: str = "ARG1",
    move_index: bool,
    untense: bool = False,
) -> MRS:
    """Put a new scopal EP *predicate* over the clause head.

    The new EP gets a fresh label, a fresh hole as its *role* argument
    (qeq the clause head's label) and a fresh event; whatever pointed at
    the clause head's label now points at the new label. With
    *move_index* the INDEX moves to the new event, which takes over the
    old index event's SF (and the old event is untensed with *untense*).
    """
    head = index_ep(m)
    if head is None:
        raise Inapplicable("no verbal index EP")
    label, hole, ev = fresh_variables(m, "hhe")
    top, rels, hcons = _repoint(m, head.label, label)
    rels.append(EP(predicate, label, {ARG0: ev, role: hole}))
    hcons.append(HCons.qeq(hole, head.label))
    variables = _copy_variables(m)
    props = dict(event)
    index = m.index
    if move_index:
        old = variables.setdefault(m.index or "", {})
        if "SF" in old:
            props["SF"] = old["SF"]
            old["SF"] = "prop"
        if untense:
            old["TENSE"] = "untensed"
        index = ev
    variables[ev] = props
    return copy_mrs(m, top=top, index=index, rels=rels, hcons=hcons, variables=variables)


@operation("negate")
def negate(
    m: MRS,
    sem: Semantics | None = None,
    *,
    negative_quantifiers: Iterable[str] = ("_no_q",),
) -> MRS:
    """Scope sentential negation over the clause.

    No double negation: a clause already under negation, or one where an
    argument of the verb is bound by one of *negative_quantifiers*
    ("Nobody is sitting"), is "already negated".

    Example:
        >>> from delphin.codecs import simplemrs
        >>> out = negate(simplemrs.decode(DOG_CHASED_CAT))
        >>> hc = out.hcons[-1]
        >>> hc.hi, hc.lo  # neg's ARG1 is a fresh hole qeq the verb's label
        ('h14', 'h1')
    """
    sem = sem or Semantics()
    verb = _verb(m, sem)
    if is_negated(m, sem):
        raise Inapplicable("already negated")
    negative = set(negative_quantifiers)
    if negative:
        quants = {ep.iv: ep.predicate for ep in m.rels if ep.is_quantifier()}
        for role, value in verb.args.items():
            if role != ARG0 and quants.get(value) in negative:
                raise Inapplicable(f"already negated ({quants[value]} on {role})")
    return _wrap(m, sem.negation, event=UNTENSED_EVENT, move_index=False)


@operation("add_modal")
def add_modal(
    m: MRS, sem: Semantics | None = None, *, modal: str = "may", tense: str = "pres"
) -> MRS:
    """Put the modal *modal* (a key of the grammar's ``[semantics.modals]``)
    over the clause; the INDEX moves to the modal's event (TENSE *tense*)
    and the verb becomes untensed. The modal's PROG/PERF are ``-`` or the
    verb's, per the grammar's ``modal_aspect``."""
    sem = sem or Semantics()
    predicate = sem.modals.get(modal, "")
    if not predicate:
        raise Inapplicable("unsupported: " + (sem.unsupported(f"modals.{modal}") or modal))
    path, _ = wrappers(m, sem)
    verb = _verb(m, sem)
    if any(_scopal_role(ep, sem) == "ARG1" and ep.predicate != sem.negation for ep in path):
        raise Inapplicable("already has a modal")
    event = dict(_CLAUSE_EVENT, TENSE=tense)
    old = m.variables.get(m.index or "", {})
    if "MOOD" in old:
        event["MOOD"] = old["MOOD"]
    if sem.modal_aspect == "inherit":
        vprops = m.variables.get(verb.iv or "", {})
        for prop in ("PROG", "PERF"):
            if prop in vprops:
                event[prop] = vprops[prop]
    return _wrap(m, predicate, event=event, move_index=True, untense=True)


@operation("cleft")
def cleft(m: MRS, sem: Semantics | None = None, *, role: str = "ARG1") -> MRS:
    """It-cleft of the verb's *role* argument: "It is the dog that ...".

    A new it-cleft EP (the grammar's ``itcleft`` predicate) takes a fresh
    event (TENSE ``pres``), ARG1 = the verb's *role* argument and ARG2 =
    the clause head's label (directly, no hole); what pointed at the clause
    head's label points at the cleft, and the INDEX moves to its event.
    """
    sem = sem or Semantics()
    if not sem.itcleft:
        raise Inapplicable("unsupported: " + (sem.unsupported("itcleft") or "it-cleft"))
    path, _ = wrappers(m, sem)
    verb = _verb(m, sem)
    focus = verb.args.get(role, "")
    clefts = [ep for ep in path if _scopal_role(ep, sem) == "ARG2"]
    if clefts:
        if focus and any(ep.args.get("ARG1") == focus for ep in clefts):
            raise AlreadyHolds(f"already an it-cleft of {role}")
        raise Inapplicable("already an it-cleft")
    if focus[:1] != "x":
        raise Inapplicable(f"{role} of {verb.predicate} is not an x variable")
    head = index_ep(m)
    assert head is not None  # _verb found one
    label, ev = fresh_variables(m, "he")
    top, rels, hcons = _repoint(m, head.label, label)
    rels.append(EP(sem.itcleft, label, {ARG0: ev, "ARG1": focus, "ARG2": head.label}))
    variables = _copy_variables(m)
    props = dict(_CLAUSE_EVENT)
    old = variables.setdefault(m.index or "", {})
    if "SF" in old:
        props["SF"] = old["SF"]
        old["SF"] = "prop"
    variables[ev] = props
    return copy_mrs(m, top=top, index=ev, rels=rels, hcons=hcons, variables=variables)


@operation("passivize")
def passivize(m: MRS, sem: Semantics | None = None, *, if_passive: str = "fail") -> MRS:
    """Make the verb passive, the way the grammar marks it.

    ``parg_d``: a new ``parg_d`` EP with the verb's label, ARG1 = the
    verb's event and ARG2 = its ARG2. ``icons:topic``: an ICONS
    ``<verb event> topic <ARG2>``. For an already passive verb the target
    holds: :class:`AlreadyHolds` ("already passive"), or, with
    ``if_passive = "keep"``, an unchanged copy.
    """
    sem = sem or Semantics()
    verb = _verb(m, sem)
    arg2 = verb.args.get("ARG2", "")
    if arg2[:1] != "x":
        raise Inapplicable(f"ARG2 of {verb.predicate} is not an x variable")
    if is_passive(m, verb, sem):
        if if_passive == "keep":
            return copy_mrs(m)
        raise AlreadyHolds("already passive")
    iv = verb.iv or ""
    if sem.passive == "parg_d":
        (ev,) = fresh_variables(m, "e")
        rels = [_copy_ep(ep) for ep in m.rels]
        rels.append(EP("parg_d", verb.label, {ARG0: ev, "ARG1": iv, "ARG2": arg2}))
        variables = {**m.variables, ev: dict(UNTENSED_EVENT)}
        return copy_mrs(m, rels=rels, variables=variables)
    kind, _, relation = sem.passive.partition(":")
    if kind != "icons" or not relation:
        raise Inapplicable(f"unsupported: unknown passive marking {sem.passive!r}")
    return copy_mrs(m, icons=[*m.icons, ICons(iv, relation, arg2)])


@operation("swap_roles")
def swap_roles(m: MRS, sem: Semantics | None = None, *, a: str = "ARG1", b: str = "ARG2") -> MRS:
    """Exchange the verb's arguments *a* and *b* ("The cat chased the dog.").

    A passive clause stays passive: its ``parg_d`` or ``topic`` follows the
    new ARG2.
    """
    sem = sem or Semantics()
    verb = _verb(m, sem)
    va, vb = verb.args.get(a), verb.args.get(b)
    for role, value in ((a, va), (b, vb)):
        if value is None or value[:1] != "x":
            raise Inapplicable(f"{role} of {verb.predicate} is not an x variable")
    assert va is not None and vb is not None
    iv = verb.iv
    rels = []
    for ep in m.rels:
        if ep is verb:
            rels.append(_copy_ep(ep, **{a: vb, b: va}))
        elif b == "ARG2" and ep.predicate == "parg_d" and ep.args.get("ARG1") == iv:
            rels.append(_copy_ep(ep, ARG2=va))
        else:
            rels.append(_copy_ep(ep))
    icons = [  # the passive's topic follows the new ARG2; other ICONS stay with their entity
        ICons(ic.left, ic.relation, va)
        if ic.left == iv and ic.right == vb and str(ic.relation) == "topic" else ic
        for ic in m.icons
    ]
    return copy_mrs(m, rels=rels, icons=icons)


@operation("requantify")
def requantify(
    m: MRS,
    sem: Semantics | None = None,
    *,
    role: str = "ARG1",
    to: str = "_no_q",
    source: Iterable[str] = ("_a_q", "udef_q", "number_q", "_some_q"),
    negation_check: bool = True,
) -> MRS:
    """Replace the quantifier of the verb's *role* argument by *to*.

    Only quantifiers in *source* qualify (indefinites, by default): ``_a_q``
    ("a dog"), ``udef_q`` (bare plurals and mass nouns: "dogs", "water"),
    ``number_q`` and ``_some_q``. Numbered noun phrases ("two dogs":
    ``udef_q`` with a ``card``) do not, since "no two dogs" is not the
    negation of "two dogs". With *negation_check*, a negated clause is
    inapplicable ("already negated").
    """
    sem = sem or Semantics()
    verb = _verb(m, sem)
    var = verb.args.get(role, "")
    if var[:1] != "x":
        raise Inapplicable(f"{role} of {verb.predicate} is not an x variable")
    if negation_check and is_negated(m, sem):
        raise Inapplicable("already negated")
    quant = next((ep for ep in m.rels if ep.is_quantifier() and ep.iv == var), None)
    if quant is None:
        raise Inapplicable(f"{role} of {verb.predicate} has no quantifier")
    if quant.predicate == to:
        raise Inapplicable(f"{role} is already quantified by {to}")
    allowed = tuple(source)
    if quant.predicate not in allowed:
        raise Inapplicable(
            f"{role} quantifier {quant.predicate} is not one of {', '.join(allowed)}"
        )
    if any(ep.predicate == "card" and ep.args.get("ARG1") == var for ep in m.rels):
        raise Inapplicable(f"{role} is a numbered noun phrase (card)")
    rels = [
        EP(to, ep.label, dict(ep.args), lnk=ep.lnk, surface=ep.surface, base=ep.base)
        if ep is quant else _copy_ep(ep)
        for ep in m.rels
    ]
    return copy_mrs(m, rels=rels)
