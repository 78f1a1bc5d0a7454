"""NLI label tables: the new gold label of a transformed pair, with provenance.

A table (``rules/labels.toml`` ships with lit; ``--labels FILE`` replaces it)
maps, for one spec such as ``f;p``, each original label to the new label.
The file format and the matching procedure are described at the top of
``rules/labels.toml``; in short:

1. a row for exactly the spec's two chains (aliases resolved);
2. else, if every shared term (the ``+i`` of ``f;p+i``) is *transparent*
   (truth-preserving: ``i``, ``i2``, ``pa``), the row of the base pair;
3. else no label: the pair is skipped as ``unlabeled``, never guessed.

Example:
    >>> from lit.rules import RuleSet
    >>> from lit.spec import parse_spec
    >>> rules = RuleSet.load()
    >>> table = LabelTable.load(rules=rules)
    >>> result = table.label(parse_spec("f;p+i", rules), "entailment")
    >>> result.label, result.row, result.source, result.via
    ('neutral', 'f;p', 'paper', '+itcleft_arg1')
    >>> table.label(parse_spec("o;q", rules), "entailment").label is None
    True
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lit.errors import LabelError, SpecError
from lit.spec import Spec, parse_spec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["LabelRow", "LabelResult", "LabelTable", "default_table_path", "NLI_LABELS"]

NLI_LABELS = ("entailment", "neutral", "contradiction")
_UNCHANGED = "unchanged"
_SOURCES = ("paper", "extension")
_ROW_KEYS = {"spec", "source", "rationale", "map"}
_TOP_KEYS = {"labels", "transparent", "nonpropositional", "row"}


def default_table_path() -> Path:
    """The label table shipped with lit (``rules/labels.toml``)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_data" / "rules" / "labels.toml",
                      here.parent / "rules" / "labels.toml"):
        if candidate.is_file():
            return candidate
    raise LabelError("the built-in label table is missing; reinstall lit",
                     filename=here / "_data" / "rules" / "labels.toml")


@dataclass(frozen=True, slots=True)
class LabelRow:
    """One row: *spec* maps original labels to new ones (*mapping*)."""

    spec: str
    source: str
    rationale: str
    mapping: Mapping[str, str]
    key: tuple[tuple[str, ...] | None, tuple[str, ...] | None]
    lineno: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"spec": self.spec, "source": self.source, "rationale": self.rationale,
                "map": dict(self.mapping)}


@dataclass(frozen=True, slots=True)
class LabelResult:
    """The outcome of labelling one pair.

    *label* is ``None`` when the table cannot derive one; *reason* says why.
    """

    label: str | None
    original: str
    table: str
    row: str | None = None
    source: str | None = None
    via: str | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``label_rule`` provenance of output records."""
        d: dict[str, Any] = {"table": self.table, "row": self.row, "source": self.source,
                             "from": self.original}
        if self.via:
            d["via"] = self.via
        return d


@dataclass(frozen=True)
class LabelTable:
    """Label rows plus the matching sets; load with :meth:`load`."""

    name: str
    labels: tuple[str, ...]
    rows: tuple[LabelRow, ...]
    transparent: frozenset[str] = field(default_factory=frozenset)
    nonpropositional: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def load(
        cls, path: str | os.PathLike[str] | None = None, *, rules: Any = None
    ) -> LabelTable:
        """Read a label table (default: the built-in ``rules/labels.toml``).

        Args:
            path: a TOML table file
            rules: the :class:`~lit.rules.RuleSet` that resolves aliases and
                validates rule names (default: ``RuleSet.load()``); pass the
                one the specs are parsed with
        Raises:
            LabelError: naming the file and line of the problem
        """
        if path is None:
            file = default_table_path()
            name = "rules/labels.toml"
        else:
            file = Path(path)
            name = os.fspath(path)
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise LabelError("label table not found", filename=file) from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise LabelError(f"cannot read label table: {exc}", filename=file) from exc
        return cls.loads(text, name=name, filename=file, rules=rules)

    @classmethod
    def loads(
        cls, text: str, *, name: str = "<string>", filename: str | os.PathLike[str] | None = None,
        rules: Any = None,
    ) -> LabelTable:
        """Like :meth:`load`, from the TOML *text*."""
        fname = filename if filename is not None else name
        if rules is None:
            from lit.rules import RuleSet

            rules = RuleSet.load()
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            m = re.search(r"at line (\d+)", str(exc))
            line = int(m.group(1)) if m else None
            if line is None and "end of document" in str(exc):
                line = text.count("\n") + 1
            raise LabelError(f"invalid TOML: {exc}", filename=fname, lineno=line) from exc
        return _build_table(data, text, name, fname, rules)

    def row_for(self, spec: Spec) -> tuple[LabelRow | None, str | None]:
        """The row matching *spec* and how (``via``), or ``(None, None)``."""
        exact = self._index().get(spec.key)
        if exact is not None:
            return exact, None
        if spec.is_pair and spec.base is not None and spec.shared and all(
            t in self.transparent for t in spec.shared
        ):
            base_key = tuple(None if s == "o" else (s,) for s in spec.base)
            row = self._index().get(base_key)
            if row is not None:
                return row, "+" + "+".join(spec.shared)
        return None, None

    def label(self, spec: Spec, original: str) -> LabelResult:
        """The new label of a pair with gold label *original* under *spec*."""
        if not spec.is_pair:
            return LabelResult(None, original, self.name,
                               reason=f"{spec.text!r} is a single-sentence spec")
        opaque = sorted(
            {t for side in spec.key if side for t in side} & self.nonpropositional
        )
        if opaque:
            return LabelResult(
                None, original, self.name,
                reason=f"{'/'.join(opaque)} yields a non-proposition (e.g. a question); "
                f"NLI labels are undefined for it in {self.name}",
            )
        row, via = self.row_for(spec)
        if row is None:
            return LabelResult(None, original, self.name,
                               reason=f"no row for {spec.text!r} in {self.name}")
        new = row.mapping.get(original)
        if new is None:
            return LabelResult(
                None, original, self.name, row.spec, row.source, via,
                reason=f"row {row.spec!r} of {self.name} derives no label from {original!r}",
            )
        return LabelResult(new, original, self.name, row.spec, row.source, via)

    def _index(self) -> dict[Any, LabelRow]:
        return {row.key: row for row in self.rows}


def _row_lines(text: str) -> list[int]:
    return [i for i, line in enumerate(text.splitlines(), start=1)
            if re.match(r"\s*\[\[\s*row\s*\]\]", line)]


def _key_line(text: str, key: str) -> int | None:
    for i, line in enumerate(text.splitlines(), start=1):
        if re.match(rf"\s*{re.escape(key)}\s*=", line):
            return i
    return None


def _names(value: Any, key: str, text: str, fname: Any, rules: Any) -> frozenset[str]:
    line = _key_line(text, key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise LabelError(f"'{key}' must be a list of rule names", filename=fname, lineno=line)
    out = set()
    for v in value:
        try:
            spec = parse_spec(v, rules)
        except SpecError as exc:
            raise LabelError(f"'{key}': {exc.message}: {v!r}", filename=fname,
                             lineno=line) from exc
        if spec.is_pair or spec.premise is None or len(spec.premise) != 1:
            raise LabelError(f"'{key}': {v!r} is not a single rule name", filename=fname,
                             lineno=line)
        assert spec.key[0] is not None
        out.add(spec.key[0][0])
    return frozenset(out)


def _build_table(data: dict[str, Any], text: str, name: str, fname: Any,
                 rules: Any) -> LabelTable:
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise LabelError(f"unknown key {unknown[0]!r}; expected one of {sorted(_TOP_KEYS)}",
                         filename=fname, lineno=_key_line(text, unknown[0]))
    labels = data.get("labels", list(NLI_LABELS))
    if (not isinstance(labels, list) or not labels
            or not all(isinstance(x, str) and x for x in labels)):
        raise LabelError("'labels' must be a non-empty list of label names", filename=fname,
                         lineno=_key_line(text, "labels"))
    transparent = _names(data.get("transparent", []), "transparent", text, fname, rules)
    nonprop = _names(data.get("nonpropositional", []), "nonpropositional", text, fname, rules)
    raw_rows = data.get("row", [])
    if not isinstance(raw_rows, list):
        raise LabelError("'row' must be an array of tables ([[row]])", filename=fname,
                         lineno=_key_line(text, "row"))
    lines = _row_lines(text)
    rows: list[LabelRow] = []
    seen: dict[Any, LabelRow] = {}
    for i, raw in enumerate(raw_rows):
        lineno = lines[i] if i < len(lines) else None
        rows.append(_build_row(raw, i, lineno, labels, fname, rules))
        row = rows[-1]
        if row.key in seen:
            raise LabelError(
                f"row {i + 1} ({row.spec!r}) repeats the row at line {seen[row.key].lineno} "
                f"({seen[row.key].spec!r})", filename=fname, lineno=lineno)
        seen[row.key] = row
    return LabelTable(name, tuple(labels), tuple(rows), transparent, nonprop)


def _build_row(raw: Any, i: int, lineno: int | None, labels: Iterable[str], fname: Any,
               rules: Any) -> LabelRow:
    where = f"row {i + 1}"

    def fail(msg: str) -> LabelError:
        return LabelError(f"{where}: {msg}", filename=fname, lineno=lineno)

    if not isinstance(raw, dict):
        raise fail("must be a table")
    unknown = sorted(set(raw) - _ROW_KEYS)
    if unknown:
        raise fail(f"unknown key {unknown[0]!r}; expected {sorted(_ROW_KEYS)}")
    for key in ("spec", "source", "rationale", "map"):
        if key not in raw:
            raise fail(f"missing {key!r}")
    spec_text = raw["spec"]
    if not isinstance(spec_text, str):
        raise fail("'spec' must be a string like 'f;p'")
    try:
        spec = parse_spec(spec_text, rules)
    except SpecError as exc:
        raise fail(f"bad spec: {exc}") from exc
    if not spec.is_pair:
        raise fail(f"spec {spec_text!r} must be a pair 'premise;hypothesis'")
    where = f"row {i + 1} ({spec_text!r})"
    if raw["source"] not in _SOURCES:
        raise fail(f"'source' must be one of {', '.join(_SOURCES)}, not {raw['source']!r}")
    if not isinstance(raw["rationale"], str) or not raw["rationale"].strip():
        raise fail("'rationale' must be a non-empty one-line string")
    label_set = list(labels)
    mapping_raw = raw["map"]
    if mapping_raw == _UNCHANGED:
        mapping = {lab: lab for lab in label_set}
    elif isinstance(mapping_raw, dict):
        mapping = {}
        for old, new in mapping_raw.items():
            if old not in label_set:
                raise fail(f"'map': unknown original label {old!r}; labels are "
                           f"{', '.join(label_set)}")
            if not isinstance(new, str) or new not in label_set:
                raise fail(f"'map': unknown new label {new!r} for {old!r}; labels are "
                           f"{', '.join(label_set)}")
            mapping[old] = new
    else:
        raise fail(f"'map' must be \"{_UNCHANGED}\" or a table like "
                   "{ entailment = \"neutral\" }")
    return LabelRow(spec.text, raw["source"], raw["rationale"].strip(), mapping, spec.key,
                    lineno)
