"""The records lit writes, and the types and rules behind them.

Every (input item, spec) of ``lit transform`` yields exactly one record
whose ``status`` is one of :data:`STATUSES`; a record that is not ``ok``
has a ``reason`` of the form ``"<category>: <detail>"`` with a category
from :data:`CATEGORIES`. This module holds those conventions, the result
types of one transformed sentence (:class:`SentenceResult`) and one parse
(:class:`Parsed`), the builders of the ``lit parse`` and ``lit transform``
records, the input-item normalisation they share (:class:`NliFields`,
:class:`Pair`), the resume keys (:func:`record_key`) and the per-spec counts
(:class:`Report`).

Example:
    >>> category("no-parse: premise: no reading")
    'no-parse'
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from delphin.mrs import MRS

from lit.formats.jsonl import Skipped
from lit.generate import Candidate, Realizations
from lit.interface import TRANSIENT_FAILURES
from lit.mrs import to_dmrs_json

if TYPE_CHECKING:  # pragma: no cover
    from lit.interface import ParseResult
    from lit.nli import LabelResult, LabelTable
    from lit.spec import Spec

__all__ = [
    "STATUSES",
    "CATEGORIES",
    "category",
    "NliFields",
    "Parsed",
    "SentenceResult",
    "Report",
    "Pair",
    "pair_item",
    "sentence_item",
    "parse_record",
    "sentence_record",
    "pair_record",
    "record_key",
    "record_keys",
]

logger = logging.getLogger(__name__)

#: the values of a record's ``status`` field
STATUSES = ("ok", "skipped", "error")

#: categories of ``reason`` for skipped and failed records: the first five are
#: answers about the item (status ``skipped``); ``timeout``, ``resource`` and
#: ``crash`` are transient failures (status ``error``; never cached, tried again
#: in the next run); ``error`` is any other failure
CATEGORIES = ("no-parse", "inapplicable", "no-realization", "unlabeled", "invalid-input",
              "timeout", "resource", "crash", "error")

_ID_FIELDS = ("id", "pairID", "idx", "guid")

@dataclass(frozen=True, slots=True)
class NliFields:
    """Which fields of an input record hold premise, hypothesis, label and id.

    *id* ``None`` means the first of ``id``, ``pairID``, ``idx``, ``guid``
    present (else the item's position, from 1).
    """

    premise: str = "sentence1"
    hypothesis: str = "sentence2"
    label: str = "gold_label"
    id: str | None = None

    @classmethod
    def detect(cls, record: Mapping[str, Any]) -> NliFields:
        """SNLI/MNLI names, or Hugging Face ``premise``/``hypothesis``/``label``."""
        if "sentence1" not in record and "premise" in record:
            return cls("premise", "hypothesis", "label")
        return cls()



@dataclass(frozen=True, slots=True)
class Parsed:
    """A parsed sentence and its selected reading (spans removed)."""

    sentence: str
    readings: int
    selected: int | None
    mrs: MRS | None
    error: str | None = None
    failure: str | None = None
    selection: str | None = None

    @property
    def transient(self) -> bool:
        """``True`` if a limit or crash cut parsing or selection: no answer."""
        return self.failure in TRANSIENT_FAILURES

    @property
    def reason(self) -> str | None:
        """``None`` if a reading was selected, else a categorized reason.

        Example:
            >>> Parsed("Hi §.", 0, None, None, "ACE: post-reduction lexical gap",
            ...        "lexical-gap").reason
            'no-parse: lexical gap: ACE: post-reduction lexical gap'
            >>> Parsed("Dogs bark.", 3, None, None, "ACE timed out", "timeout").reason
            'timeout: parse: ACE timed out'
        """
        if self.failure in TRANSIENT_FAILURES:
            return f"{self.failure}: parse: {self.error}"
        if self.failure == "lexical-gap":
            return f"no-parse: lexical gap: {self.error}"
        if self.error is not None:
            return f"error: parse failed: {self.error}"
        if self.readings == 0:
            return "no-parse: no reading"
        if self.mrs is None:
            return f"no-parse: {self.selection or f'none of {self.readings} readings selected'}"
        return None

    @property
    def status(self) -> str:
        """The record status of a sentence without a selected reading."""
        return "skipped" if category(self.reason) in ("no-parse", "invalid-input") else "error"



@dataclass(frozen=True, slots=True)
class SentenceResult:
    """One sentence transformed by one chain.

    Attributes:
        original: the input sentence
        chain: the chain as written (``None`` = untouched)
        status: ``ok``, ``skipped`` or ``error``
        reason: ``"<category>: <detail>"`` unless ok
        sentence: the chosen sentence (the best candidate), if ok
        candidates: ranked candidates (best first)
        mrs: the transformed MRS (SimpleMRS), when the chain applied
        reading: the index of the reading the chain was applied to
        selection: why that reading was selected
        realizations: what generation returned, cleaned (not in records)
        rejected: ``(sentence, reason)`` of candidates the guards dropped
        verified: ``(sentence, passed)`` of candidates a re-parse checked
        expectation: what that re-parse looked for
    """

    original: str
    chain: str | None
    status: str
    reason: str | None = None
    sentence: str | None = None
    candidates: tuple[Candidate, ...] = ()
    mrs: str | None = None
    reading: int | None = None
    selection: str | None = None
    realizations: Realizations | None = None
    rejected: tuple[tuple[str, str], ...] = ()
    verified: tuple[tuple[str, bool], ...] = ()
    expectation: str | None = None

    @property
    def score(self) -> float | None:
        return self.candidates[0].score if self.candidates and self.status == "ok" else None

    def to_dict(self, *, candidates: int | None = None, keep_mrs: bool = False
                ) -> dict[str, Any]:
        d: dict[str, Any] = {"chain": self.chain, "sentence": self.sentence,
                             "score": self.score}
        if candidates and self.chain is not None:
            d["candidates"] = [c.to_dict() for c in self.candidates[:candidates]]
        if keep_mrs and self.chain is not None:
            d["mrs"] = self.mrs
        if self.reading is not None:
            d["reading"] = self.reading
            d["selection"] = self.selection
        return d



@dataclass
class Report:
    """Counts of records per spec and status/category; they add up.

    ``to_dict()`` gives ``{"items": n, "records": n, "specs": {spec: {"total",
    "ok", "skipped": {category: n}, "error"}}, "reasons": {category: n}}``.
    """

    items: int = 0
    specs: dict[str, Counter[str]] = field(default_factory=dict)

    def add(self, record: Mapping[str, Any]) -> None:
        counts = self.specs.setdefault(record["spec"], Counter())
        counts["total"] += 1
        status = record["status"]
        if status == "ok":
            counts["ok"] += 1
        else:
            category = str(record.get("reason") or "error").split(":", 1)[0]
            counts[f"{status}:{category}"] += 1

    @property
    def records(self) -> int:
        return sum(c["total"] for c in self.specs.values())

    def reasons(self) -> Counter[str]:
        out: Counter[str] = Counter()
        for c in self.specs.values():
            for key, n in c.items():
                if ":" in key:
                    out[key.split(":", 1)[1]] += n
        return out

    def to_dict(self) -> dict[str, Any]:
        specs = {}
        for spec, c in self.specs.items():
            skipped = {k.split(":", 1)[1]: n for k, n in sorted(c.items())
                       if k.startswith("skipped:")}
            errors = sum(n for k, n in c.items() if k.startswith("error:"))
            specs[spec] = {"total": c["total"], "ok": c["ok"], "skipped": skipped,
                           "error": errors}
        return {"items": self.items, "records": self.records, "specs": specs,
                "reasons": dict(sorted(self.reasons().items()))}

    def summary(self) -> str:
        """``"120 ok, 30 no-parse, 8 inapplicable"`` over all specs."""
        ok = sum(c["ok"] for c in self.specs.values())
        parts = [f"{ok} ok"] + [f"{n} {k}" for k, n in self.reasons().most_common()]
        return f"{self.items} items x {len(self.specs)} specs: " + ", ".join(parts)



def record_key(item_id: Any, spec: str, occurrence: int = 1) -> tuple[Any, ...]:
    """The resume key of an output record: its item id (as JSON) and spec.

    Ids need not be unique: *occurrence* is 1 for the first item with this
    id, 2 for the second, ... (in input order, which is output order), and
    is part of the key from the second on, so a resumed run neither drops
    nor repeats items with duplicate ids. Read keys back from an output
    file with :func:`record_keys`.

    Example:
        >>> record_key(12, "f;p"), record_key(12, "f;p", 2)
        (('12', 'f;p'), ('12', 'f;p', 2))
    """
    key = json.dumps(item_id, ensure_ascii=False, sort_keys=True, default=str), spec
    return key if occurrence == 1 else (*key, occurrence)



def record_keys() -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    """A key function for :func:`lit.resume.scan_output`: the :func:`record_key`
    of each output record, counting repeated ``(id, spec)`` in file order.

    Example:
        >>> key = record_keys()
        >>> [key({"id": "a", "spec": "f;p"}) for _ in range(2)]
        [('"a"', 'f;p'), ('"a"', 'f;p', 2)]
    """
    seen: Counter[tuple[Any, ...]] = Counter()

    def key(record: Mapping[str, Any]) -> tuple[Any, ...]:
        base = record_key(record["id"], record["spec"])
        seen[base] += 1
        return record_key(record["id"], record["spec"], seen[base])

    return key



def _key_seen(seen: Counter[tuple[Any, ...]], item_id: Any, spec: str) -> tuple[Any, ...]:
    """The :func:`record_key` of the next item with *item_id*, counted in *seen*."""
    base = record_key(item_id, spec)
    seen[base] += 1
    return record_key(item_id, spec, seen[base])



@dataclass
class Pair:
    id: Any
    original: dict[str, Any]
    premise: str = ""
    hypothesis: str = ""
    gold: str = ""
    invalid: str | None = None



def _item_id(record: Mapping[str, Any], fields: NliFields, pos: int) -> Any:
    if fields.id is not None:
        return record.get(fields.id, pos)
    for key in _ID_FIELDS:
        if key in record:
            return record[key]
    return pos



def pair_item(pos: int, item: Any, fields: NliFields, label_names: Sequence[str] | None,
               table: LabelTable) -> Pair:
    if isinstance(item, Skipped):
        return Pair(f"line {item.lineno}", {"line": item.lineno, "text": item.text},
                     invalid=f"line {item.lineno}: {item.reason}")
    if not isinstance(item, Mapping):
        return Pair(pos, {"item": repr(item)[:200]},
                     invalid=f"item {pos}: expected a record, got {type(item).__name__}")
    original = dict(item)
    pair = Pair(_item_id(item, fields, pos), original)
    for name in (fields.premise, fields.hypothesis):
        value = item.get(name)
        if not isinstance(value, str) or not value.strip():
            pair.invalid = f"field {name!r} is missing or not a non-empty string"
            return pair
    pair.premise, pair.hypothesis = item[fields.premise], item[fields.hypothesis]
    gold = item.get(fields.label)
    if isinstance(gold, int) and not isinstance(gold, bool):
        if label_names is None or not 0 <= gold < len(label_names):
            pair.invalid = f"label {gold!r} has no name (gold label missing)"
            return pair
        gold = label_names[gold]
    if not isinstance(gold, str) or gold not in table.labels:
        note = " (no annotator majority)" if gold == "-" else ""
        pair.invalid = (f"{fields.label} {gold!r}{note} is not one of "
                        f"{', '.join(table.labels)}")
        return pair
    pair.gold = gold
    return pair



def sentence_item(pos: int, item: Any) -> tuple[Any, Any, str | None]:
    if isinstance(item, Skipped):
        return f"line {item.lineno}", item.text, f"line {item.lineno}: {item.reason}"
    if isinstance(item, tuple) and len(item) == 2:
        item_id, sentence = item
    else:
        item_id, sentence = pos, item
    if not isinstance(sentence, str) or not sentence.strip():
        return item_id, sentence, "empty line or not a sentence"
    return item_id, sentence, None





def category(reason: str | None) -> str:
    """The category of a ``reason`` (the text before the first ``:``)."""
    return str(reason or "error").split(":", 1)[0]


def sentence_record(item_id: Any, sentence: Any, spec: Spec, result: SentenceResult | None,
                    *, invalid: str | None = None, candidates: int | None = None,
                    keep_mrs: bool = False) -> dict[str, Any]:
    """The ``lit transform`` record of one plain sentence and single-sentence *spec*.

    *result* is the sentence transformed by the spec's chain (``None`` when
    the item is *invalid*, with the reason).
    """
    rec: dict[str, Any] = {"id": item_id, "spec": spec.text}
    if invalid is not None or result is None:
        rec.update(status="skipped", reason=f"invalid-input: {invalid}",
                   original={"sentence": sentence}, sentence=None, chain=spec.chain)
        return rec
    rec.update(status=result.status, reason=result.reason, original={"sentence": sentence},
               sentence=result.sentence, chain=spec.chain)
    if candidates:
        rec["candidates"] = [c.to_dict() for c in result.candidates[:candidates]]
    if keep_mrs:
        rec["mrs"] = result.mrs
    if result.reading is not None:
        rec["reading"] = result.reading
        rec["selection"] = result.selection
    return rec


def pair_record(pair: Pair, spec: Spec, lab: LabelResult | None,
                sides: tuple[SentenceResult, SentenceResult] | None, *,
                candidates: int | None = None, keep_mrs: bool = False) -> dict[str, Any]:
    """The ``lit transform`` record of one NLI *pair* and pair *spec*.

    *lab* is the new label (``None`` for an invalid pair); *sides* are the
    premise and hypothesis transformed by the spec's chains (``None``
    unless the pair is valid and labelled).
    """
    rec: dict[str, Any] = {"id": pair.id, "spec": spec.text, "status": "skipped",
                           "reason": None, "original": pair.original,
                           "sentence1": None, "sentence2": None, "gold_label": None,
                           "label_rule": None}
    if pair.invalid is not None:
        rec["reason"] = f"invalid-input: {pair.invalid}"
        return rec
    assert lab is not None
    if lab.label is None:
        rec["reason"] = f"unlabeled: {lab.reason}"
        return rec
    assert sides is not None
    rec["label_rule"] = lab.to_dict()
    named = (("premise", sides[0]), ("hypothesis", sides[1]))
    for name, res in named:
        rec[name] = res.to_dict(candidates=candidates, keep_mrs=keep_mrs)
    failed = next(((n, r) for n, r in named if r.status != "ok"), None)
    if failed is not None:
        name, res = failed
        cat, _, detail = (res.reason or "error: unknown").partition(": ")
        rec["status"] = res.status
        rec["reason"] = f"{cat}: {name}: {detail}"
        return rec
    rec.update(status="ok", sentence1=sides[0].sentence, sentence2=sides[1].sentence,
               gold_label=lab.label)
    return rec

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


