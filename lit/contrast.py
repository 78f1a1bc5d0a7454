"""Group ``lit transform`` output into contrast sets.

``lit transform`` writes one line per (original item, spec). A *contrast
set* (Gardner et al. 2020) is one original example together with its
transformed variants. :func:`contrast_sets` turns the transform records
into one dictionary per original:

.. code-block:: text

    {"id": "<orig id>",
     "original": {<the original item's fields, unchanged>},
     "items": [
       {"id": "<orig id>:<spec>", "spec": "f;p+i",
        "sentence1": ..., "sentence2": ..., "gold_label": ...,
        "label_rule": {...},
        "perturbation": {"spec": "f;p+i", "premise": "f+i", "hypothesis": "p+i"}},
       ...],
     "skipped": [{"spec": "pa;pa", "status": "skipped", "reason": "inapplicable: ..."}],
     "size": 1 + len(items)}

Only records with ``status == "ok"`` become items; the others are listed
under ``skipped`` with their reason, so nothing is dropped silently. For
plain-text transform output an item carries ``sentence`` instead of
``sentence1``/``sentence2``/``gold_label`` and its perturbation is
``{"spec": ..., "chain": ...}``; an untouched side (``o``) has chain
``null``. Candidate lists and MRSs are not copied into contrast sets.

The id of a contrast item is ``<orig id>:<spec>`` (:func:`item_id`); the id
of the original is its own id. ``lit evaluate`` and ``lit predict`` use the
same ids.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from lit.errors import InputError, SpecError
from lit.records import STATUSES
from lit.spec import UNTOUCHED, parse_spec

__all__ = ["contrast_sets", "item_id", "perturbation", "STATUSES"]

logger = logging.getLogger(__name__)

# item fields copied from an NLI transform record
_NLI_FIELDS = ("sentence1", "sentence2", "gold_label", "label_rule")


def item_id(orig_id: Any, spec: str) -> str:
    """Return the id of the contrast item made from *orig_id* by *spec*.

    Example:
        >>> item_id("4705552913.jpg#2r1n", "f;p+i")
        '4705552913.jpg#2r1n:f;p+i'
    """
    return f"{orig_id}:{spec}"


def _unpack(entry: Any, n: int) -> tuple[int, Mapping[str, Any]]:
    if isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], int):
        lineno, record = entry
    else:
        lineno, record = n, entry
    if not isinstance(record, Mapping):
        raise InputError(
            f"expected a transform record (JSON object), got {type(record).__name__}",
            lineno=lineno,
        )
    return lineno, record


def _check(record: Mapping[str, Any], lineno: int, source: str | None) -> None:
    for key in ("id", "spec", "status"):
        if key not in record:
            raise InputError(
                f"transform record has no {key!r} field; is this `lit transform` output?",
                filename=source,
                lineno=lineno,
            )
    if record["status"] not in STATUSES:
        raise InputError(
            f"unknown status {record['status']!r} (expected one of {', '.join(STATUSES)})",
            filename=source,
            lineno=lineno,
        )
    if not isinstance(record["spec"], str):
        raise InputError("'spec' must be a string", filename=source, lineno=lineno)


def _chain(side: Any) -> str | None:
    if isinstance(side, Mapping):
        chain = side.get("chain")
        return chain if isinstance(chain, str) and chain != UNTOUCHED else None
    return None


def _spec_chains(spec: str) -> dict[str, str | None]:
    """Chains of *spec* by the spec language (shared terms apply to both sides)."""
    try:
        parsed = parse_spec(spec)
    except SpecError:
        # not a valid spec: take it apart naively rather than fail on a report
        logger.warning("cannot parse spec %r; splitting it at ';'", spec)
        halves = [h.strip() for h in spec.split(";")]
        sides = [None if h in ("", UNTOUCHED) else h for h in halves]
        if len(sides) == 2:
            return {"premise": sides[0], "hypothesis": sides[1]}
        return {"chain": sides[0]}
    if parsed.is_pair:
        return {"premise": parsed.premise_chain, "hypothesis": parsed.hypothesis_chain}
    return {"chain": parsed.chain}


def perturbation(record: Mapping[str, Any]) -> dict[str, Any]:
    """The perturbation that made *record*: its spec and rule chains.

    NLI records give the premise and hypothesis chains, plain-text records
    one ``chain``; ``None`` is an untouched side. The chains are those the
    record reports (``premise.chain``, ``hypothesis.chain``, ``chain``), or
    else those of the spec, where shared terms apply to both sides
    (``f;p+i`` is ``f+i`` and ``p+i``; see :mod:`lit.spec`).

    Example:
        >>> perturbation({"spec": "f;p+i"})
        {'spec': 'f;p+i', 'premise': 'f+i', 'hypothesis': 'p+i'}
        >>> perturbation({"spec": "m;o", "premise": {"chain": "m"}, "hypothesis": {"chain": None}})
        {'spec': 'm;o', 'premise': 'm', 'hypothesis': None}
        >>> perturbation({"spec": "n", "chain": "n"})
        {'spec': 'n', 'chain': 'n'}
    """
    spec = record["spec"]
    if "premise" in record or "hypothesis" in record:
        return {"spec": spec, "premise": _chain(record.get("premise")),
                "hypothesis": _chain(record.get("hypothesis"))}
    if "chain" in record:
        return {"spec": spec, "chain": _chain(record)}
    return {"spec": spec, **_spec_chains(spec)}


def _item(record: Mapping[str, Any]) -> dict[str, Any]:
    item: dict[str, Any] = {"id": item_id(record["id"], record["spec"]), "spec": record["spec"]}
    if any(key in record for key in ("sentence1", "sentence2", "gold_label")):
        for key in _NLI_FIELDS:
            item[key] = record.get(key)
    else:
        item["sentence"] = record.get("sentence")
    item["perturbation"] = perturbation(record)
    return item


class _Builder:
    __slots__ = ("orig_id", "original", "items", "skipped", "specs", "first_line")

    def __init__(self, orig_id: Any, original: Any, lineno: int) -> None:
        self.orig_id = orig_id
        self.original = original
        self.items: list[dict[str, Any]] = []
        self.skipped: list[dict[str, Any]] = []
        self.specs: dict[str, int] = {}
        self.first_line = lineno

    def add(self, record: Mapping[str, Any], lineno: int, source: str | None) -> None:
        spec = record["spec"]
        if spec in self.specs:
            raise InputError(
                f"duplicate record for id {self.orig_id!r} and spec {spec!r} "
                f"(first on line {self.specs[spec]})",
                filename=source,
                lineno=lineno,
            )
        self.specs[spec] = lineno
        if self.original is None and record.get("original") is not None:
            self.original = record.get("original")
        if record["status"] == "ok":
            self.items.append(_item(record))
        else:
            self.skipped.append(
                {"spec": spec, "status": record["status"], "reason": record.get("reason")}
            )

    def build(self) -> dict[str, Any]:
        return {
            "id": self.orig_id,
            "original": self.original,
            "items": self.items,
            "skipped": self.skipped,
            "size": 1 + len(self.items),
        }


def _key(orig_id: Any) -> str:
    # ids may be ints or strings; group by their JSON-independent text
    return str(orig_id)


def contrast_sets(
    records: Iterable[Mapping[str, Any] | tuple[int, Mapping[str, Any]]],
    *,
    adjacent: bool = True,
    source: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Group transform *records* into contrast sets, one per original item.

    *records* are ``lit transform`` NLI or plain-text records (see
    docs/DESIGN.md), or ``(lineno, record)`` pairs as yielded by
    :func:`lit.formats.jsonl.read_jsonl`, so that errors name the line.

    ``lit transform`` writes the records of one original next to each
    other, so by default (*adjacent* is ``True``) sets are yielded as soon
    as the next original starts, in input order, holding one set in
    memory. With ``adjacent=False`` (``lit evaluate``'s default) the
    records are grouped in memory, for files in which the records of one
    original are spread out (e.g. sorted or concatenated), and the sets are
    yielded in order of first appearance once the input is exhausted.

    Ids should be unique, but an input may repeat one (two items with the
    same ``pairID``). A repeated (id, spec) pair then belongs to the next
    item with that id: each occurrence becomes its own contrast set, with
    a warning, since its item ids (``<orig id>:<spec>``) are ambiguous. With
    *adjacent*, a record whose id was already closed also starts a new
    occurrence (in ``lit transform`` output that is a repeated input id).

    Args:
        records: transform records or ``(lineno, record)`` pairs
        adjacent: whether the records of one original are adjacent
        source: file name used in error messages
    Yields:
        contrast sets (see the module documentation for the format)
    Raises:
        InputError: a record lacks ``id``/``spec``/``status`` or has an
            unknown status (the message names the line)

    Example:
        >>> recs = [
        ...     {"id": "a", "spec": "n;o", "status": "ok", "original": {"gold_label": "neutral"},
        ...      "sentence1": "x", "sentence2": "y", "gold_label": "neutral"},
        ...     {"id": "a", "spec": "pa;pa", "status": "skipped", "reason": "inapplicable: x",
        ...      "original": {"gold_label": "neutral"}},
        ... ]
        >>> [(s["id"], s["size"], [i["id"] for i in s["items"]]) for s in contrast_sets(recs)]
        [('a', 2, ['a:n;o'])]
    """
    if adjacent:
        yield from _adjacent(records, source)
    else:
        yield from _in_memory(records, source)


def _warn_duplicate(orig_id: Any, lineno: int, first: int, source: str | None) -> None:
    where = f"{source}:{lineno}" if source else f"line {lineno}"
    logger.warning(
        "%s: id %r occurs again (first on line %d): a separate contrast set with the same "
        "id; its item ids are ambiguous, give the input unique ids", where, orig_id, first,
    )


def _adjacent(
    records: Iterable[Any], source: str | None
) -> Iterator[dict[str, Any]]:
    current: _Builder | None = None
    done: dict[str, int] = {}
    for n, entry in enumerate(records, start=1):
        lineno, record = _unpack(entry, n)
        _check(record, lineno, source)
        key = _key(record["id"])
        if current is None or _key(current.orig_id) != key or record["spec"] in current.specs:
            if key in done:
                _warn_duplicate(record["id"], lineno, done[key], source)
            else:
                done[key] = lineno
            if current is not None:
                yield current.build()
            current = _Builder(record["id"], record.get("original"), lineno)
        current.add(record, lineno, source)
    if current is not None:
        yield current.build()


def _in_memory(records: Iterable[Any], source: str | None) -> Iterator[dict[str, Any]]:
    builders: list[_Builder] = []
    by_id: dict[str, list[_Builder]] = {}
    for n, entry in enumerate(records, start=1):
        lineno, record = _unpack(entry, n)
        _check(record, lineno, source)
        key = _key(record["id"])
        occurrences = by_id.setdefault(key, [])
        # the k-th record of (id, spec) belongs to the k-th item with that id
        builder = next((b for b in occurrences if record["spec"] not in b.specs), None)
        if builder is None:
            if occurrences:
                _warn_duplicate(record["id"], lineno, occurrences[0].first_line, source)
            builder = _Builder(record["id"], record.get("original"), lineno)
            occurrences.append(builder)
            builders.append(builder)
        builder.add(record, lineno, source)
    for builder in builders:
        yield builder.build()
