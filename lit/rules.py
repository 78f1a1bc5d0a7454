"""Rule declarations (``rules/*.toml``) -> :class:`Rule`; :class:`RuleSet`;
chains (``f+i``); plugins.

A rule file holds ``[[rule]]`` tables::

    [[rule]]
    name = "past"                     # canonical name (used in reasons)
    aliases = ["p"]                   # short names used in chains and specs
    phenomenon = "tense"
    description = "Put the clause in the past tense."
    preconditions = ["no_unknown", "verb", "x:ARG1"]   # lit.transform.PRECONDITIONS
    requires = []                     # [semantics] keys that must be non-empty
    operations = [{ op = "set_tense", value = "past" }] # lit.transform.OPERATIONS

Operations run in order, each on the previous one's MRS. ``requires`` names
grammar capabilities (``"itcleft"``, ``"modals.might"``): a grammar whose
profile leaves them empty makes the rule inapplicable with the profile's
reason (``unsupported: erg-2018 does not generate it-clefts``).

A rule file may also hold ``[[preset]]`` tables: a named list of specs that
stands for all of them in a spec list (``--rules lit-paper``; see
:class:`Preset` and ``rules/presets.toml``)::

    [[preset]]
    name = "tense"
    description = "Every tense."
    chains = ["p", "pr", "f"]         # single-sentence specs
    pairs = ["f;p", "p;f"]            # pair specs (premise;hypothesis)

The built-in rules live in the package's ``rules/`` directory (label tables,
``labels*.toml``, are not rule files). More come from directories or files
passed to :meth:`RuleSet.load`, and from plugins: an entry point in the group
``lit.rules`` may name a :class:`Rule`, an iterable of rules, a path to a rule
file or directory, or a callable returning any of these.

Chains name *targets*: each step makes something hold of the sentence (past
tense, progressive aspect, passive voice, ...). A step whose target already
holds is a no-op (:class:`~lit.transform.AlreadyHolds`), not a refusal, so
``p+prog`` on "The dog chased the cat." gives "The dog was chasing the
cat.". A chain is inapplicable when a step cannot apply (no verb, ARG2 not
an ``x`` variable, "already negated", ...) or when its result equals its
input (``p`` on a past sentence: ``TENSE is already past``). See
:func:`apply_chain`.

Why this module is long: it is the rule registry as a whole: the rule-file
format (rules and presets, with file-and-line errors), chain application
with its target semantics, rule sets, and plugins, which share that format;
the MRS edits themselves live in :mod:`lit.transform`.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from delphin.mrs import MRS, is_isomorphic

from lit.errors import RuleError, SpecError
from lit.mrs import index_ep
from lit.transform import OPERATIONS, PRECONDITIONS, AlreadyHolds, Inapplicable, Semantics

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

logger = logging.getLogger(__name__)

__all__ = [
    "ENTRY_POINT_GROUP",
    "DEFAULT_PRECONDITIONS",
    "Step",
    "Rule",
    "Preset",
    "Applied",
    "RuleSet",
    "apply_chain",
    "builtin_rules_dir",
    "load_rule_file",
    "load_presets",
    "same_mrs",
    "UNCHANGED",
    "apply_from_iterable",
]

#: The entry point group plugins register rules in.
ENTRY_POINT_GROUP = "lit.rules"

#: Preconditions of a rule that does not declare its own.
DEFAULT_PRECONDITIONS: tuple[str, ...] = ("no_unknown", "verb", "x:ARG1", "index_not_in_np",
                                          "not_identity_gerund:ARG1")

_NAME = re.compile(r"^[A-Za-z0-9_:\-]+$")
_RULE_KEYS = {
    "name", "aliases", "phenomenon", "description", "preconditions", "requires",
    "operations", "examples",
}
_PRESET_KEYS = {"name", "description", "chains", "pairs"}

#: A rule implemented in Python: ``func(m, semantics) -> MRS`` (raising
#: :class:`~lit.transform.Inapplicable`, or returning a reason string; raising
#: :class:`~lit.transform.AlreadyHolds` makes it a no-op step).
RuleFunction = Callable[[MRS, Semantics], "MRS | str"]


@dataclass(frozen=True, slots=True)
class Step:
    """One operation of a rule: the name of an operation and its parameters."""

    op: str
    params: tuple[tuple[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, **dict(self.params)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Step:
        params = {k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items() if k != "op"}
        return cls(str(d["op"]), tuple(sorted(params.items())))


@dataclass(frozen=True, slots=True)
class Rule:
    """A transformation rule.

    Attributes:
        name: canonical name (``"past"``); named in reasons of chains
        aliases: other names accepted in chains (``("p",)``)
        phenomenon: ``tense``, ``aspect``, ``modality``, ``negation``,
            ``question``, ``cleft``, ``voice``, ``argument``, ``identity`` ...
        description: one line for ``lit rules list``
        preconditions: names in :data:`lit.transform.PRECONDITIONS`
        requires: grammar capabilities (``[semantics]`` keys) it needs
        operations: the steps, run in order
        function: a Python implementation instead of *operations* (plugins)
        source: the file (and line) or plugin it came from
    """

    name: str
    aliases: tuple[str, ...] = ()
    phenomenon: str = ""
    description: str = ""
    preconditions: tuple[str, ...] = DEFAULT_PRECONDITIONS
    requires: tuple[str, ...] = ()
    operations: tuple[Step, ...] = ()
    function: RuleFunction | None = field(default=None, compare=False)
    source: str | None = field(default=None, compare=False)

    @property
    def names(self) -> tuple[str, ...]:
        """The name followed by the aliases."""
        return (self.name, *self.aliases)

    def unsupported(self, profile: Any) -> str | None:
        """Why the grammar of *profile* cannot use this rule, or ``None``."""
        sem = Semantics.from_profile(profile)
        for req in self.requires:
            reason = sem.unsupported(req)
            if reason is not None:
                return "unsupported: " + reason
        return None

    def apply(self, m: MRS, profile: Any) -> Applied:
        """Apply this rule alone to *m* (see :func:`apply_chain`)."""
        return apply_chain(m, (self,), profile)

    @property
    def is_identity(self) -> bool:
        """``True`` for a rule meant to change nothing (only ``identity``
        operations, as ``original``)."""
        return self.function is None and all(s.op == "identity" for s in self.operations)

    def _run(self, m: MRS, sem: Semantics) -> tuple[MRS, tuple[str, ...]]:
        """*m* with the rule applied, and the reasons of the operations that
        were no-ops because their target already held.

        Raises:
            Inapplicable: (not :class:`AlreadyHolds`) if the rule cannot apply
        """
        for name in self.preconditions:
            PRECONDITIONS[name](m, sem)
        if self.function is not None:
            try:
                out = self.function(m, sem)
            except AlreadyHolds as exc:
                return m, (exc.reason,)
            if isinstance(out, str):
                raise Inapplicable(out)
            return out, ()
        held = []
        for step in self.operations:
            try:
                m = OPERATIONS[step.op](m, sem, **dict(step.params))
            except AlreadyHolds as exc:
                held.append(exc.reason)
        return m, tuple(held)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "aliases": list(self.aliases),
            "phenomenon": self.phenomenon,
            "description": self.description,
            "preconditions": list(self.preconditions),
            "requires": list(self.requires),
            "operations": [s.to_dict() for s in self.operations],
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, source: str | None = None) -> Rule:
        """Build a rule from a declaration (a ``[[rule]]`` table).

        Raises:
            RuleError: for unknown keys, operations or preconditions
        """
        unknown = set(d) - _RULE_KEYS
        if unknown:
            raise RuleError(f"unknown key(s) {', '.join(sorted(unknown))} in rule")
        if "name" not in d or not isinstance(d["name"], str) or not _NAME.match(d["name"]):
            raise RuleError("a rule needs a 'name' of letters, digits, '_', ':' or '-'")
        name = d["name"]
        aliases = _str_tuple(d.get("aliases", ()), "aliases", name)
        for alias in aliases:
            if not _NAME.match(alias):
                raise RuleError(f"rule {name!r}: bad alias {alias!r}")
        pre = _str_tuple(d.get("preconditions", DEFAULT_PRECONDITIONS), "preconditions", name)
        for p in pre:
            if p not in PRECONDITIONS:
                raise RuleError(
                    f"rule {name!r}: unknown precondition {p!r}; "
                    f"known: {', '.join(sorted(PRECONDITIONS))}"
                )
        requires = _str_tuple(d.get("requires", ()), "requires", name)
        for req in requires:
            try:
                Semantics().unsupported(req)
            except KeyError:
                raise RuleError(f"rule {name!r}: unknown requirement {req!r}") from None
        ops = d.get("operations", ())
        if not isinstance(ops, (list, tuple)) or not ops:
            raise RuleError(f"rule {name!r}: 'operations' must be a non-empty list")
        steps = []
        for op in ops:
            if not isinstance(op, Mapping) or "op" not in op:
                raise RuleError(f"rule {name!r}: each operation needs an 'op'")
            if op["op"] not in OPERATIONS:
                raise RuleError(
                    f"rule {name!r}: unknown operation {op['op']!r}; "
                    f"known: {', '.join(sorted(OPERATIONS))}"
                )
            steps.append(Step.from_dict(op))
        return cls(
            name=name,
            aliases=aliases,
            phenomenon=str(d.get("phenomenon", "")),
            description=str(d.get("description", "")),
            preconditions=pre,
            requires=requires,
            operations=tuple(steps),
            source=source,
        )


def _str_tuple(value: Any, key: str, name: str) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise RuleError(f"{name!r}: {key!r} must be a list of strings")
    return tuple(value)


@dataclass(frozen=True, slots=True)
class Preset:
    """A named list of specs, usable as one word in a spec list
    (``--rules lit-paper``, ``--rules lit-paper,n:no``).

    Attributes:
        name: the word (not a rule name or alias)
        description: one line for ``lit rules list``
        chains: single-sentence specs (``"p+prog+perf"``), used for
            sentences (and by ``lit rules apply``)
        pairs: pair specs (``"f;p+i"``), used for NLI pairs
        source: the file and line it came from
    """

    name: str
    description: str = ""
    chains: tuple[str, ...] = ()
    pairs: tuple[str, ...] = ()
    source: str | None = field(default=None, compare=False)

    def specs(self, pair: bool | None) -> tuple[str, ...]:
        """The specs for sentence pairs (*pair* ``True``), single sentences
        (``False``) or either (``None``: the chains if there are any).

        Raises:
            SpecError: if the preset has no specs of that kind
        """
        if pair is None:
            pair = not self.chains
        found = self.pairs if pair else self.chains
        if not found:
            have, want = ("single-sentence chains", "sentence pairs") if pair else (
                "pair specs", "single sentences")
            raise SpecError(f"preset {self.name!r} has only {have}, but the input has {want}")
        return found

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "chains": list(self.chains), "pairs": list(self.pairs), "source": self.source}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, source: str | None = None) -> Preset:
        """Build a preset from a ``[[preset]]`` table.

        Raises:
            RuleError: for unknown keys, a bad name, or no specs
        """
        unknown = set(d) - _PRESET_KEYS
        if unknown:
            raise RuleError(f"unknown key(s) {', '.join(sorted(unknown))} in preset")
        name = d.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise RuleError("a preset needs a 'name' of letters, digits, '_', ':' or '-'")
        chains = _str_tuple(d.get("chains", ()), "chains", name)
        pairs = _str_tuple(d.get("pairs", ()), "pairs", name)
        if not chains and not pairs:
            raise RuleError(f"preset {name!r}: give 'chains' or 'pairs' (lists of specs)")
        return cls(name, str(d.get("description", "")), chains, pairs, source)


@dataclass(frozen=True, slots=True)
class Applied:
    """The result of applying a chain: an MRS, or the reason it did not apply.

    Attributes:
        mrs: the new MRS, or ``None``
        reason: why the chain does not apply (``None`` if it does)
        chain: the chain's canonical rule names joined by ``+``
        noops: the steps that changed nothing because their target already
            held, as ``"<rule>: <reason>"`` (``"past: TENSE is already past"``)
    """

    mrs: MRS | None
    reason: str | None
    chain: str
    noops: tuple[str, ...] = ()

    @property
    def applicable(self) -> bool:
        return self.mrs is not None

    def to_dict(self) -> dict[str, Any]:
        from delphin.codecs import simplemrs

        text = None if self.mrs is None else simplemrs.encode(self.mrs, lnk=False)
        return {"chain": self.chain, "mrs": text, "reason": self.reason,
                "noops": list(self.noops)}


#: The reason of a chain of several rules whose result equals its input.
UNCHANGED = "the chain changes nothing"


def apply_chain(m: MRS, rules: Sequence[Rule], profile: Any) -> Applied:
    """Apply *rules* left to right, each to the previous one's MRS.

    A chain names a *target*: a step whose target already holds (its
    operations raise :class:`~lit.transform.AlreadyHolds`: ``TENSE is
    already past``, ``PROG is already +``, ``already passive``, ...) is a
    no-op, listed in :attr:`Applied.noops`. The chain is inapplicable when

    * a rule is not supported by the grammar (``unsupported: ...``);
    * a step cannot apply: the reason is the rule's, prefixed with
      ``step <name>:`` when the chain has more than one rule
      (``step passive: ARG2 of _sit_v_1 is not an x variable``); adding
      something that is already there is such a case for negation
      (``already negated``) and modals (``already has a modal``), whose
      labels assume the change happened;
    * the result equals the input (compared as SimpleMRS, then by
      isomorphism with the INDEX): for one rule the reason is its own
      (``TENSE is already past``), for several :data:`UNCHANGED` with the
      no-op steps (``the chain changes nothing (past: TENSE is already past;
      progressive: PROG is already +)``). Chains of identity rules (``o``)
      are exempt: changing nothing is what they are for.

    *profile* is a :class:`~lit.grammar.GrammarProfile` (or anything
    :meth:`Semantics.from_profile` accepts). Never raises for an
    inapplicable rule, and never modifies the input.

    Example:
        >>> from delphin.codecs import simplemrs
        >>> from lit.transform import DOG_CHASED_CAT
        >>> rs = RuleSet.load(plugins=False)
        >>> past = simplemrs.decode(DOG_CHASED_CAT)   # "The dog chased the cat."
        >>> out = apply_chain(past, rs.parse_chain("p+prog"), Semantics())
        >>> out.noops, out.mrs.variables["e2"]["PROG"]
        (('past: TENSE is already past',), '+')
        >>> apply_chain(past, rs.parse_chain("p"), Semantics()).reason
        'TENSE is already past'
        >>> out = apply_chain(past, rs.parse_chain("p+-prog"), Semantics())
        >>> out.applicable, out.reason.startswith("the chain changes nothing (past: ")
        (False, True)
    """
    sem = Semantics.from_profile(profile)
    chain = "+".join(r.name for r in rules)
    for rule in rules:
        reason = rule.unsupported(sem)
        if reason is not None:
            return Applied(None, reason, chain)
    out = m
    noops: list[str] = []
    held: list[str] = []
    for rule in rules:
        try:
            new, reasons = rule._run(out, sem)
        except Inapplicable as exc:
            reason = exc.reason if len(rules) == 1 else f"step {rule.name}: {exc.reason}"
            return Applied(None, reason, chain)
        if reasons and same_mrs(out, new):  # the step's targets already held
            noops.append(f"{rule.name}: {', '.join(reasons)}")
            held.extend(reasons)
        out = new
    if not all(r.is_identity for r in rules) and same_mrs(m, out):
        if len(rules) == 1 and held:
            reason = ", ".join(held)
        else:
            reason = UNCHANGED + (f" ({'; '.join(noops)})" if noops else "")
        return Applied(None, reason, chain, tuple(noops))
    return Applied(out, None, chain, tuple(noops))


def same_mrs(a: MRS, b: MRS) -> bool:
    """``True`` if *a* and *b* are the same MRS up to variable names and
    character spans: equal SimpleMRS, or isomorphic (with properties,
    :func:`delphin.mrs.is_isomorphic`) with the same index EP predicate
    and INDEX properties (isomorphism ignores TOP and INDEX).

    Example:
        >>> from delphin.codecs import simplemrs
        >>> from lit.transform import DOGS_BARK
        >>> same_mrs(simplemrs.decode(DOGS_BARK),
        ...          simplemrs.decode(DOGS_BARK.replace("x3", "x9")))
        True
    """
    from delphin.codecs import simplemrs

    if a is b or simplemrs.encode(a, lnk=False) == simplemrs.encode(b, lnk=False):
        return True
    if not is_isomorphic(a, b, properties=True):
        return False
    ia, ib = index_ep(a), index_ep(b)
    return (
        (ia is None) == (ib is None)
        and (ia is None or ib is None or ia.predicate == ib.predicate)
        and a.variables.get(a.index or "") == b.variables.get(b.index or "")
    )


def builtin_rules_dir() -> Path:
    """The directory of the rules shipped with lit."""
    here = Path(__file__).resolve().parent
    installed = here / "_data" / "rules"
    return installed if installed.is_dir() else here.parent / "rules"


def _rule_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.glob("*.toml") if not p.name.startswith("labels"))
    if path.is_file():
        return [path]
    raise RuleError("no such rule file or directory", filename=path)


def load_rule_file(path: str | os.PathLike[str]) -> list[Rule]:
    """The rules declared in the TOML file *path* (its presets: see
    :func:`load_presets`).

    Raises:
        RuleError: naming the file and line of a bad declaration
    """
    return _load_file(Path(path))[0]


def load_presets(path: str | os.PathLike[str]) -> list[Preset]:
    """The presets (``[[preset]]`` tables) declared in the TOML file *path*.

    Raises:
        RuleError: naming the file and line of a bad declaration
    """
    return _load_file(Path(path))[1]


def _load_file(path: Path) -> tuple[list[Rule], list[Preset]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RuleError(f"cannot read rule file: {exc.strerror}", filename=path) from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = re.search(r"line (\d+)", str(exc))
        raise RuleError(
            f"invalid TOML: {exc}", filename=path, lineno=int(line.group(1)) if line else None
        ) from exc
    extra = set(data) - {"rule", "preset"}
    if extra or not all(isinstance(data.get(k, []), list) for k in ("rule", "preset")):
        raise RuleError(
            "a rule file holds only [[rule]] and [[preset]] tables; found "
            + ", ".join(sorted(extra or {"rule", "preset"})),
            filename=path,
        )
    rules = _from_tables(Rule.from_dict, data, text, "rule", path)
    presets = _from_tables(Preset.from_dict, data, text, "preset", path)
    return rules, presets


_T = TypeVar("_T")


def _from_tables(build: Callable[..., _T], data: Mapping[str, Any], text: str, key: str,
                 path: Path) -> list[_T]:
    """``build(table, source=...)`` for each ``[[key]]`` table of a file; a
    :class:`RuleError` names the file and the table's line."""
    lines = [i for i, ln in enumerate(text.splitlines(), 1)
             if ln.strip().startswith(f"[[{key}]]")]
    out = []
    for i, table in enumerate(data.get(key, [])):
        lineno = lines[i] if i < len(lines) else None
        try:
            out.append(build(table, source=f"{path}:{lineno}"))
        except RuleError as exc:
            raise RuleError(exc.message, filename=path, lineno=lineno) from None
    return out


class RuleSet:
    """Rules by name and alias.

    Use :meth:`load` for the built-in rules plus files and plugins.
    """

    def __init__(self, rules: Iterable[Rule] = (), presets: Iterable[Preset] = ()) -> None:
        self._rules: dict[str, Rule] = {}
        self._names: dict[str, str] = {}
        self._presets: dict[str, Preset] = {}
        for rule in rules:
            self.add(rule)
        for preset in presets:
            self.add_preset(preset)

    def add(self, rule: Rule) -> None:
        """Add *rule*; a rule of the same name is replaced.

        Raises:
            RuleError: if one of its names is an alias of another rule
        """
        old = self._rules.pop(rule.name, None)
        if old is not None:
            logger.info("rule %r from %s replaces %s", rule.name, rule.source, old.source)
            for n in old.names:
                self._names.pop(n, None)
        for n in rule.names:
            if n in self._presets:
                if old is not None:
                    self._rules[old.name] = old
                    for o in old.names:
                        self._names[o] = old.name
                raise RuleError(
                    f"rule {rule.name!r}: name {n!r} is already used by preset {n!r} "
                    f"({self._presets[n].source})",
                    filename=rule.source,
                )
            other = self._names.get(n)
            if other is not None and other != rule.name:
                if old is not None:
                    self._rules[old.name] = old
                raise RuleError(
                    f"rule {rule.name!r}: name {n!r} is already used by rule {other!r} "
                    f"({self._rules[other].source})",
                    filename=rule.source,
                )
        self._rules[rule.name] = rule
        for n in rule.names:
            self._names[n] = rule.name

    @classmethod
    def load(
        cls,
        paths: Iterable[str | os.PathLike[str]] | None = None,
        *,
        plugins: bool = True,
        builtin: bool = True,
    ) -> RuleSet:
        """The built-in rules, then those in *paths* (files or directories,
        later ones replace earlier rules of the same name), then plugins;
        likewise the presets of those files.

        Raises:
            RuleError: for a bad file, a name used twice, or a preset whose
                specs do not parse against the rules
        """
        rs = cls()
        presets: list[Preset] = []
        sources: list[Path] = [builtin_rules_dir()] if builtin else []
        sources.extend(Path(p) for p in paths or ())
        for src in sources:
            for f in _rule_files(src):
                rules, found = _load_file(f)
                for rule in rules:
                    rs.add(rule)
                presets.extend(found)
        if plugins:
            for item in _plugin_rules():
                if isinstance(item, Preset):
                    presets.append(item)
                else:
                    rs.add(item)
        for preset in presets:
            rs.add_preset(preset)
        rs.check_presets()
        return rs

    def add_preset(self, preset: Preset) -> None:
        """Add *preset*; a preset of the same name is replaced. Its specs
        are checked by :meth:`check_presets`.

        Raises:
            RuleError: if its name is the name or alias of a rule
        """
        if preset.name in self._names:
            rule = self._rules[self._names[preset.name]]
            raise RuleError(
                f"preset {preset.name!r}: the name is already used by rule {rule.name!r} "
                f"({rule.source})",
                *_location(preset.source),
            )
        old = self._presets.get(preset.name)
        if old is not None:
            logger.info("preset %r from %s replaces %s", preset.name, preset.source, old.source)
        self._presets[preset.name] = preset

    @property
    def presets(self) -> Mapping[str, Preset]:
        """The presets by name (read-only)."""
        return MappingProxyType(self._presets)

    def check_presets(self) -> None:
        """Check that the specs of every preset parse against these rules.

        Raises:
            RuleError: naming the preset, its file and line, and the bad spec
        """
        from lit.spec import parse_specs

        for preset in self._presets.values():
            for pair, specs in ((False, preset.chains), (True, preset.pairs)):
                for spec in specs:
                    if "," in spec or spec.strip() in self._presets:
                        raise RuleError(
                            f"preset {preset.name!r}: {spec!r} is not one spec "
                            "(presets list specs, not presets or spec lists)",
                            *_location(preset.source),
                        )
                if not specs:
                    continue
                try:
                    parse_specs(",".join(specs), self, pair=pair)
                except SpecError as exc:
                    raise RuleError(
                        f"preset {preset.name!r}: {exc}", *_location(preset.source)
                    ) from None

    def get(self, name: str) -> Rule:
        """The rule called *name* (a name or an alias).

        Raises:
            SpecError: naming the known rules
        """
        try:
            return self._rules[self._names[name]]
        except KeyError:
            raise SpecError(
                f"unknown rule {name!r}; known: {', '.join(sorted(self._names))}"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[Rule]:
        return iter(self._rules.values())

    def __len__(self) -> int:
        return len(self._rules)

    def parse_chain(self, chain: str) -> tuple[Rule, ...]:
        """``"f+i"`` -> the rules, in order.

        Raises:
            SpecError: pointing at the bad token
        """
        rules = []
        pos = 0
        for token in chain.split("+"):
            name = token.strip()
            start = pos + (len(token) - len(token.lstrip()))
            if not name:
                raise SpecError("empty rule name in chain", spec=chain, position=start)
            if name not in self._names:
                raise SpecError(
                    f"unknown rule {name!r} in chain; see `lit rules list`",
                    spec=chain,
                    position=start,
                )
            rules.append(self.get(name))
            pos += len(token) + 1
        return tuple(rules)

    def parse_chains(self, chains: str) -> list[tuple[str, tuple[Rule, ...]]]:
        """``"p,f+i"`` -> ``[("p", rules), ("f+i", rules)]``; a preset
        stands for its chains (``"lit-paper"``).

        Raises:
            SpecError: pointing at the bad token in *chains*
        """
        out: list[tuple[str, tuple[Rule, ...]]] = []
        pos = 0
        for part in chains.split(","):
            text = part.strip()
            offset = pos + (len(part) - len(part.lstrip()))
            preset = self._presets.get(text)
            if preset is not None:
                try:
                    specs = preset.specs(False)
                except SpecError as exc:
                    raise SpecError(exc.message, spec=chains, position=offset) from None
                out.extend((spec, self.parse_chain(spec)) for spec in specs)
                pos += len(part) + 1
                continue
            try:
                out.append((text, self.parse_chain(text)))
            except SpecError as exc:
                raise SpecError(
                    exc.message, spec=chains, position=offset + (exc.position or 0)
                ) from None
            pos += len(part) + 1
        return out


def _location(source: str | None) -> tuple[str | None, int | None]:
    """``"file:line"`` (a rule's or preset's *source*) -> ``(file, line)``."""
    if source is None:
        return None, None
    path, _, line = source.rpartition(":")
    return (path, int(line)) if path and line.isdigit() else (source, None)


def _plugin_rules() -> Iterator[Rule | Preset]:
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        where = f"plugin {ep.name} ({ep.value})"
        try:
            obj = ep.load()
        except (ImportError, AttributeError) as exc:
            raise RuleError(f"cannot load rule {where}: {exc}") from exc
        if callable(obj) and not isinstance(obj, Rule):
            obj = obj()
        yield from _rules_from(obj, where)


def _rules_from(obj: Any, where: str) -> Iterator[Rule | Preset]:
    if isinstance(obj, Rule):
        yield obj if obj.source else _with_source(obj, where)
    elif isinstance(obj, Preset):
        yield obj
    elif isinstance(obj, (str, os.PathLike)):
        for f in _rule_files(Path(obj)):
            rules, presets = _load_file(f)
            yield from rules
            yield from presets
    elif isinstance(obj, Iterable):
        for item in obj:
            yield from _rules_from(item, where)
    else:
        raise RuleError(
            f"{where} gave {type(obj).__name__}; expected a Rule, rules, or a path to rule files"
        )


def _with_source(rule: Rule, source: str) -> Rule:
    return Rule(
        rule.name, rule.aliases, rule.phenomenon, rule.description, rule.preconditions,
        rule.requires, rule.operations, rule.function, source,
    )


def apply_from_iterable(
    items: Iterable[Any],
    chains: Sequence[tuple[str, Sequence[Rule]]],
    profile: Any,
) -> Iterator[dict[str, Any]]:
    """Yield a ``lit rules apply`` record per (item, chain).

    *items* are :class:`lit.formats.mrs.MrsItem` (or anything with ``id``,
    ``sentence``, ``mrs`` and ``error``).

    Records: ``{"id", "sentence"?, "chain", "mrs", "reason"}``; *mrs* is
    SimpleMRS without character spans, or ``None`` with the *reason*.
    """
    from delphin.codecs import simplemrs

    sem = Semantics.from_profile(profile)
    for item in items:
        for text, rules in chains:
            record: dict[str, Any] = {"id": item.id}
            if item.sentence is not None:
                record["sentence"] = item.sentence
            record["chain"] = text
            if item.mrs is None:
                record.update(mrs=None, reason=item.error)
            else:
                out = apply_chain(item.mrs, rules, sem)
                mrs = None if out.mrs is None else simplemrs.encode(out.mrs, lnk=False)
                record.update(mrs=mrs, reason=out.reason)
            yield record
