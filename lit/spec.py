"""The transformation spec language of ``lit transform``: ``f;p+i,m;o``.

A *spec list* is one or more specs separated by commas. A spec is a
``+``-separated sequence of *terms*; a term is a rule token (``f``,
``future``, ``m:might``) or, at most once per spec, a *pair* ``L;R`` whose
left side applies to the premise and whose right side applies to the
hypothesis. ``;`` binds tighter than ``+``, and the other terms of the spec
apply to both sides in their position (as in the LIT paper, Table 1):

=================  ==================  ====================  =========================
spec               premise chain       hypothesis chain      note
=================  ==================  ====================  =========================
``f;p``            ``f``               ``p``
``f;p+i``          ``f+i``             ``p+i``               paper, Table 1
``a;b+c+d``        ``a+c+d``           ``b+c+d``             every shared term applies
``n+f;p``          ``n+f``             ``n+p``               terms before the pair too
``m;o``            ``m``               untouched             ``o`` = the untouched side
``o;n+i``          untouched           ``n+i``               ``o`` stays untouched
``o;o``            untouched           untouched             the identity pair
``p+i``            ``p+i`` (one sentence; plain-text input)
``o``              untouched (one sentence: the identity)
=================  ==================  ====================  =========================

A *preset* (``lit-paper``; ``[[preset]]`` tables in the rule files, see
:class:`lit.rules.Preset`) stands, alone between commas, for its list of
specs: its single-sentence chains, or, when *pair* is ``True``, its pair
specs. It combines with other specs by comma: ``lit-paper,n:no``.

``o`` means *untouched*, so the shared terms never apply to an ``o`` side.
Consequently ``o`` may only stand alone (``o``) or as one side of a pair:
``o+i`` is rejected (write ``i``), and so is ``o;o+i`` (its shared ``+i``
would apply to no side). A rule may appear only once per chain. Rule tokens
are validated against a :class:`~lit.rules.RuleSet` when one is given; a
token may carry a parameter after ``:`` (``m:might``), which is part of the
token. Errors are :class:`~lit.errors.SpecError` with the offending token's
position, rendered with a caret.

Example:
    >>> [s.text for s in parse_specs("f;p+i, m;o")]
    ['f;p+i', 'm;o']
    >>> s = parse_specs("f;p+i")[0]
    >>> s.premise_chain, s.hypothesis_chain
    ('f+i', 'p+i')
    >>> parse_specs("o;n")[0].premise is None
    True
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from lit.errors import SpecError

__all__ = ["UNTOUCHED", "Spec", "parse_spec", "parse_specs"]

#: the token for an untouched side
UNTOUCHED = "o"

_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_:.\-]")


class _ChainParser(Protocol):  # what we need of lit.rules.RuleSet (and .presets, if any)
    def parse_chain(self, chain: str) -> Any: ...


def _presets(rules: _ChainParser | None) -> Any:
    """The presets of *rules* by name (``{}`` without a rule set)."""
    return getattr(rules, "presets", None) or {}


@dataclass(frozen=True, slots=True)
class Spec:
    """One parsed spec.

    Attributes:
        text: the spec as written, without surrounding whitespace
        premise: the rule tokens for the premise, or for the single
            sentence of a single-sentence spec; ``None`` = untouched
        hypothesis: the rule tokens for the hypothesis (``None`` =
            untouched, and always ``None`` for a single-sentence spec)
        is_pair: ``True`` for ``L;R`` specs (NLI pairs)
        base: the pair term ``(L, R)`` in canonical rule names (``o`` for an
            untouched side), or ``None`` for single-sentence specs
        shared: the other terms in canonical rule names, in order
        key: ``(premise, hypothesis)`` in canonical rule names; used to
            match label-table rows, so ``future;past`` matches ``f;p``
    """

    text: str
    premise: tuple[str, ...] | None
    hypothesis: tuple[str, ...] | None
    is_pair: bool
    base: tuple[str, str] | None
    shared: tuple[str, ...]
    key: tuple[tuple[str, ...] | None, tuple[str, ...] | None]

    @property
    def premise_chain(self) -> str | None:
        """The premise chain as a string (``"f+i"``), ``None`` if untouched."""
        return None if self.premise is None else "+".join(self.premise)

    @property
    def hypothesis_chain(self) -> str | None:
        """The hypothesis chain as a string, ``None`` if untouched."""
        return None if self.hypothesis is None else "+".join(self.hypothesis)

    @property
    def chain(self) -> str | None:
        """The chain of a single-sentence spec (``None`` for ``o``)."""
        return self.premise_chain

    def chains(self) -> tuple[str | None, ...]:
        """``(premise, hypothesis)`` chains of a pair spec, ``(chain,)`` otherwise."""
        if self.is_pair:
            return (self.premise_chain, self.hypothesis_chain)
        return (self.premise_chain,)

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.text,
            "premise": self.premise_chain,
            "hypothesis": self.hypothesis_chain,
            "pair": self.is_pair,
        }


# -- tokenizer ---------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # "name", "+", ";", ","
    value: str
    pos: int


def _tokenize(text: str) -> Iterator[_Tok]:
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "+;,":
            yield _Tok(c, c, i)
            i += 1
        elif _TOKEN_CHARS.match(c):
            j = i
            while j < n and _TOKEN_CHARS.match(text[j]):
                j += 1
            yield _Tok("name", text[i:j], i)
            i = j
        else:
            raise SpecError(
                f"unexpected character {c!r} in spec; rule names use letters, digits, "
                "'_', '-', '.' and ':' (for parameters, as in m:might)",
                text, i,
            )


# -- parser ------------------------------------------------------------------

@dataclass
class _Term:
    left: _Tok
    right: _Tok | None  # set for a pair term


def _split_specs(text: str) -> list[tuple[int, list[_Tok]]]:
    """Split the token stream at commas: [(start position, tokens)]."""
    groups: list[tuple[int, list[_Tok]]] = []
    current: list[_Tok] = []
    start = 0
    for tok in _tokenize(text):
        if tok.kind == ",":
            if not current:
                raise SpecError("empty spec before ','", text, tok.pos)
            groups.append((start, current))
            current = []
            start = tok.pos + 1
            continue
        current.append(tok)
    if not current:
        if groups:
            raise SpecError("empty spec after ','", text, len(text.rstrip()) - 1)
        raise SpecError("empty spec; give rules like 'f;p+i' or 'n'", text, 0)
    groups.append((start, current))
    return groups


def _parse_terms(text: str, toks: list[_Tok]) -> list[_Term]:
    terms: list[_Term] = []
    i = 0
    seen_pair: _Tok | None = None

    def expect_name(j: int, after: str) -> _Tok:
        if j >= len(toks):
            where = toks[-1].pos + len(toks[-1].value)
            raise SpecError(f"expected a rule name after {after!r}", text, where)
        if toks[j].kind != "name":
            raise SpecError(f"expected a rule name after {after!r}", text, toks[j].pos)
        return toks[j]

    first = toks[0]
    if first.kind != "name":
        raise SpecError(f"a spec cannot start with {first.value!r}", text, first.pos)
    while True:
        left = expect_name(i, "+") if i else toks[0]
        i += 1
        right = None
        if i < len(toks) and toks[i].kind == ";":
            if seen_pair is not None:
                raise SpecError(
                    "only one ';' per spec (premise;hypothesis); separate specs with ','",
                    text, toks[i].pos,
                )
            seen_pair = toks[i]
            right = expect_name(i + 1, ";")
            i += 2
            if i < len(toks) and toks[i].kind == ";":
                raise SpecError(
                    "only one ';' per spec (premise;hypothesis); separate specs with ','",
                    text, toks[i].pos,
                )
        terms.append(_Term(left, right))
        if i >= len(toks):
            return terms
        if toks[i].kind != "+":
            raise SpecError(
                f"expected '+', ';' or ',' before {toks[i].value!r}", text, toks[i].pos
            )
        i += 1
        expect_name(i, "+")


def _canonical(rules: _ChainParser | None, tok: _Tok, text: str) -> str:
    """The canonical name of the rule *tok* (validated against *rules*)."""
    if tok.value == UNTOUCHED or rules is None:
        return tok.value
    if tok.value in _presets(rules):
        raise SpecError(
            f"{tok.value!r} is a preset (a list of specs): it stands alone between commas, "
            f"e.g. '{tok.value},n'", text, tok.pos,
        )
    try:
        parsed = rules.parse_chain(tok.value)
    except SpecError as exc:
        offset = exc.position or 0
        raise SpecError(exc.message, text, tok.pos + offset) from None
    found = tuple(parsed)
    if len(found) != 1:  # pragma: no cover - a single token names a single rule
        raise SpecError(f"{tok.value!r} does not name a single rule", text, tok.pos)
    return str(getattr(found[0], "name", tok.value))


def _build(text: str, start: int, toks: list[_Tok], rules: _ChainParser | None) -> Spec:
    terms = _parse_terms(text, toks)
    spec_text = text[start: toks[-1].pos + len(toks[-1].value)].strip()
    pair_index = next((k for k, t in enumerate(terms) if t.right is not None), None)

    # 'o' may only stand alone or be a side of the pair
    if len(terms) > 1:
        for k, t in enumerate(terms):
            if k != pair_index and t.left.value == UNTOUCHED:
                raise SpecError(
                    "'o' (untouched) can only stand alone or be one side of a pair "
                    "like 'o;n'; drop it here",
                    text, t.left.pos,
                )

    canon = {id(t.left): _canonical(rules, t.left, text) for t in terms}
    canon.update(
        {id(t.right): _canonical(rules, t.right, text) for t in terms if t.right is not None}
    )

    def side(pick: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        written: list[str] = []
        names: list[str] = []
        seen: dict[str, _Tok] = {}
        for k, t in enumerate(terms):
            tok = t.left if (k != pair_index or pick == "left") else t.right
            assert tok is not None
            if k == pair_index and tok.value == UNTOUCHED:
                return None
            name = canon[id(tok)]
            if name == UNTOUCHED:  # a lone 'o'
                return None
            if name in seen:
                hint = ""
                if pair_index is not None:
                    hint = ("; note that ';' binds tighter than '+': 'f;p+i' already gives "
                            "premise f+i and hypothesis p+i")
                raise SpecError(
                    f"rule {tok.value!r} appears twice in one chain{hint}", text, tok.pos
                )
            seen[name] = tok
            written.append(tok.value)
            names.append(name)
        return tuple(written), tuple(names)

    shared = tuple(canon[id(t.left)] for k, t in enumerate(terms)
                   if k != pair_index and t.left.value != UNTOUCHED)
    if pair_index is None:
        single = side("left")
        premise = None if single is None else single[0]
        key = (None if single is None else single[1], None)
        return Spec(spec_text, premise, None, False, None, shared, key)

    pair = terms[pair_index]
    assert pair.right is not None
    left, right = side("left"), side("right")
    if left is None and right is None and shared:
        other = next(t for k, t in enumerate(terms) if k != pair_index)
        raise SpecError(
            "both sides are 'o' (untouched), so this term applies to no side",
            text, other.left.pos,
        )
    base = (canon[id(pair.left)], canon[id(pair.right)])
    return Spec(
        spec_text,
        None if left is None else left[0],
        None if right is None else right[0],
        True,
        base,
        shared,
        (None if left is None else left[1], None if right is None else right[1]),
    )


def parse_specs(
    text: str, rules: _ChainParser | None = None, *, pair: bool | None = None
) -> list[Spec]:
    """Parse a comma-separated spec list such as ``"f;p+i,m;o"``.

    Args:
        text: the spec list
        rules: a :class:`~lit.rules.RuleSet` to validate rule tokens
            against (and to map aliases to canonical names); without it,
            tokens are only checked syntactically
        pair: ``True`` to require ``premise;hypothesis`` specs (NLI
            input), ``False`` to require single-sentence specs (plain
            text), ``None`` to accept both
    Returns:
        the specs, in order
    Raises:
        SpecError: pointing at the offending token

    Example:
        >>> parse_specs("p+i", pair=False)[0].chain
        'p+i'
        >>> parse_specs("f;p;i")
        Traceback (most recent call last):
        ...
        lit.errors.SpecError: only one ';' per spec (premise;hypothesis); separate specs with ','
          f;p;i
             ^
    """
    specs: list[Spec] = []
    seen: dict[str, str | None] = {}
    presets = _presets(rules)
    for start, toks in _split_specs(text):
        first = toks[0].pos
        if len(toks) == 1 and toks[0].value in presets:
            preset = presets[toks[0].value]
            for spec in _expand(preset, text, first, rules, pair):
                _add(specs, seen, spec, text, first, preset.name)
            continue
        spec = _build(text, start, toks, rules)
        if pair is True and not spec.is_pair:
            raise SpecError(
                f"{spec.text!r} is a single-sentence spec, but the input has sentence pairs; "
                f"write 'premise;hypothesis', e.g. '{spec.text};o' or 'o;{spec.text}'",
                text, first,
            )
        if pair is False and spec.is_pair:
            raise SpecError(
                f"{spec.text!r} is a pair spec, but the input has single sentences; "
                "drop the ';' part", text, first,
            )
        _add(specs, seen, spec, text, first, None)
    return specs


def _expand(preset: Any, text: str, pos: int, rules: _ChainParser | None,
            pair: bool | None) -> Iterator[Spec]:
    """The specs of *preset* (a :class:`lit.rules.Preset`) named at *pos* of *text*."""
    where = f"preset {preset.name!r}" + (f" ({preset.source})" if preset.source else "")
    try:
        entries = preset.specs(pair)
    except SpecError as exc:
        others = [p.name for p in _presets(rules).values() if (p.pairs if pair else p.chains)]
        hint = f"; presets for that: {', '.join(others)}" if others else ""
        raise SpecError(exc.message + hint, text, pos) from None
    for entry in entries:
        try:
            (start, toks), = _split_specs(entry)
            yield _build(entry, start, toks, rules)
        except (SpecError, ValueError) as exc:
            raise SpecError(f"{where}: bad spec {entry!r}: {exc}", text, pos) from None


def _add(specs: list[Spec], seen: dict[str, str | None], spec: Spec, text: str, pos: int,
         preset: str | None) -> None:
    canon = f"{spec.is_pair}{spec.key}"
    if canon in seen:
        origins = [f"preset {p!r}" for p in (seen[canon], preset) if p]
        via = f" (from {' and '.join(origins)})" if origins else ""
        raise SpecError(f"duplicate spec {spec.text!r}{via}", text, pos)
    seen[canon] = preset
    specs.append(spec)


def parse_spec(text: str, rules: _ChainParser | None = None) -> Spec:
    """Parse exactly one spec (no commas); see :func:`parse_specs`."""
    specs = parse_specs(text, rules)
    if len(specs) != 1:
        raise SpecError("expected one spec, found several", text, text.index(","))
    return specs[0]
