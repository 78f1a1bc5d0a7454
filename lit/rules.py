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

The built-in rules live in the package's ``rules/`` directory (label tables,
``labels*.toml``, are not rule files). More come from directories or files
passed to :meth:`RuleSet.load`, and from plugins: an entry point in the group
``lit.rules`` may name a :class:`Rule`, an iterable of rules, a path to a rule
file or directory, or a callable returning any of these.
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
from typing import Any

from delphin.mrs import MRS

from lit.errors import RuleError, SpecError
from lit.transform import OPERATIONS, PRECONDITIONS, Inapplicable, Semantics

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
    "Applied",
    "RuleSet",
    "apply_chain",
    "builtin_rules_dir",
    "load_rule_file",
    "apply_from_iterable",
]

#: The entry point group plugins register rules in.
ENTRY_POINT_GROUP = "lit.rules"

#: Preconditions of a rule that does not declare its own.
DEFAULT_PRECONDITIONS: tuple[str, ...] = ("no_unknown", "verb", "x:ARG1", "index_not_in_np")

_NAME = re.compile(r"^[A-Za-z0-9_:\-]+$")
_RULE_KEYS = {
    "name", "aliases", "phenomenon", "description", "preconditions", "requires",
    "operations", "examples",
}

#: A rule implemented in Python: ``func(m, semantics) -> MRS`` (raising
#: :class:`~lit.transform.Inapplicable`, or returning a reason string).
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

    def _run(self, m: MRS, sem: Semantics) -> MRS:
        for name in self.preconditions:
            PRECONDITIONS[name](m, sem)
        if self.function is not None:
            out = self.function(m, sem)
            if isinstance(out, str):
                raise Inapplicable(out)
            return out
        for step in self.operations:
            m = OPERATIONS[step.op](m, sem, **dict(step.params))
        return m

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
        raise RuleError(f"rule {name!r}: {key!r} must be a list of strings")
    return tuple(value)


@dataclass(frozen=True, slots=True)
class Applied:
    """The result of applying a chain: an MRS, or the reason it did not apply."""

    mrs: MRS | None
    reason: str | None
    chain: str

    @property
    def applicable(self) -> bool:
        return self.mrs is not None

    def to_dict(self) -> dict[str, Any]:
        from delphin.codecs import simplemrs

        text = None if self.mrs is None else simplemrs.encode(self.mrs, lnk=False)
        return {"chain": self.chain, "mrs": text, "reason": self.reason}


def apply_chain(m: MRS, rules: Sequence[Rule], profile: Any) -> Applied:
    """Apply *rules* left to right, each to the previous one's MRS.

    *profile* is a :class:`~lit.grammar.GrammarProfile` (or anything
    :meth:`Semantics.from_profile` accepts). Never raises for an
    inapplicable rule: if a rule is not supported by the grammar the reason
    is ``unsupported: ...``; if a step does not apply and the chain has
    more than one rule, the reason is ``step <name>: <reason>``. The input
    is never modified.

    Example:
        >>> from delphin.codecs import simplemrs
        >>> from lit.transform import DOGS_BARK
        >>> rs = RuleSet.load(plugins=False)
        >>> out = apply_chain(simplemrs.decode(DOGS_BARK), rs.parse_chain("p+p"), Semantics())
        >>> out.reason
        'step past: TENSE is already past'
    """
    sem = Semantics.from_profile(profile)
    chain = "+".join(r.name for r in rules)
    for rule in rules:
        reason = rule.unsupported(sem)
        if reason is not None:
            return Applied(None, reason, chain)
    for rule in rules:
        try:
            m = rule._run(m, sem)
        except Inapplicable as exc:
            reason = exc.reason if len(rules) == 1 else f"step {rule.name}: {exc.reason}"
            return Applied(None, reason, chain)
    return Applied(m, None, chain)


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
    """The rules declared in the TOML file *path*.

    Raises:
        RuleError: naming the file and line of a bad declaration
    """
    path = Path(path)
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
    tables = data.get("rule", [])
    extra = set(data) - {"rule"}
    if extra or not isinstance(tables, list):
        raise RuleError(
            "a rule file holds only [[rule]] tables; found "
            + ", ".join(sorted(extra or {"rule"})),
            filename=path,
        )
    lines = [i for i, ln in enumerate(text.splitlines(), 1) if ln.strip().startswith("[[rule]]")]
    rules = []
    for i, table in enumerate(tables):
        lineno = lines[i] if i < len(lines) else None
        try:
            rules.append(Rule.from_dict(table, source=f"{path}:{lineno}"))
        except RuleError as exc:
            raise RuleError(exc.message, filename=path, lineno=lineno) from None
    return rules


class RuleSet:
    """Rules by name and alias.

    Use :meth:`load` for the built-in rules plus files and plugins.
    """

    def __init__(self, rules: Iterable[Rule] = ()) -> None:
        self._rules: dict[str, Rule] = {}
        self._names: dict[str, str] = {}
        for rule in rules:
            self.add(rule)

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
        later ones replace earlier rules of the same name), then plugins.
        """
        rs = cls()
        sources: list[Path] = [builtin_rules_dir()] if builtin else []
        sources.extend(Path(p) for p in paths or ())
        for src in sources:
            for f in _rule_files(src):
                for rule in load_rule_file(f):
                    rs.add(rule)
        if plugins:
            for rule in _plugin_rules():
                rs.add(rule)
        return rs

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
        """``"p,f+i"`` -> ``[("p", rules), ("f+i", rules)]``.

        Raises:
            SpecError: pointing at the bad token in *chains*
        """
        out = []
        pos = 0
        for part in chains.split(","):
            text = part.strip()
            offset = pos + (len(part) - len(part.lstrip()))
            try:
                out.append((text, self.parse_chain(text)))
            except SpecError as exc:
                raise SpecError(
                    exc.message, spec=chains, position=offset + (exc.position or 0)
                ) from None
            pos += len(part) + 1
        return out


def _plugin_rules() -> Iterator[Rule]:
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        where = f"plugin {ep.name} ({ep.value})"
        try:
            obj = ep.load()
        except (ImportError, AttributeError) as exc:
            raise RuleError(f"cannot load rule {where}: {exc}") from exc
        if callable(obj) and not isinstance(obj, Rule):
            obj = obj()
        yield from _rules_from(obj, where)


def _rules_from(obj: Any, where: str) -> Iterator[Rule]:
    if isinstance(obj, Rule):
        yield obj if obj.source else _with_source(obj, where)
    elif isinstance(obj, (str, os.PathLike)):
        for f in _rule_files(Path(obj)):
            yield from load_rule_file(f)
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
