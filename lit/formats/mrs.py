"""MRS input: SimpleMRS lines, ``lit parse`` output, or JSON objects with an ``mrs``.

One reader, :func:`read_mrs_items`, serves every command that takes MRSs
(``lit generate``, ``lit rules apply``). Each non-blank line is an item:

* a SimpleMRS string (its id is the line number);
* ``lit parse`` output: the ``selected`` reading (the first if the field
  is absent; ``null`` means none was selected), or every reading with
  *all_readings*;
* any JSON object with an ``mrs`` string (``lit rules apply`` output); a
  ``null`` mrs carries its ``reason``.

Items with nothing to read carry the reason in ``error``; nothing is dropped.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from delphin.mrs import MRS

from lit.errors import InputError
from lit.formats.jsonl import _input_lines, _source_name
from lit.mrs import decode_mrs

__all__ = ["MrsItem", "read_mrs_items"]

_CARRIED = ("sentence", "chain")  # fields copied from a JSON input line into the item


@dataclass(frozen=True, slots=True)
class MrsItem:
    """One MRS input item: *mrs* is ``None`` when *error* says why.

    *extra* holds fields carried over to the output (``sentence``,
    ``chain``, ``reading``).
    """

    id: Any
    mrs: MRS | None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def sentence(self) -> str | None:
        """The sentence the MRS came from, when the input said."""
        return self.extra.get("sentence")


def read_mrs_items(source: Any, *, all_readings: bool = False, on_error: str = "fail"
                   ) -> Iterator[MrsItem]:
    """Yield an :class:`MrsItem` per MRS in *source* (see the module docs).

    Raises:
        InputError: naming file and line of a malformed line, unless
            *on_error* is ``"skip"``: then the item carries the reason
    """
    name = _source_name(source)
    skip = on_error == "skip"
    for lineno, obj, error in _input_lines(source, name, on_error):
        if obj is None:
            yield MrsItem(lineno, None, error)
            continue
        if isinstance(obj, str):
            candidates: list[tuple[Any, Any, dict[str, Any]]] = [(lineno, obj, {})]
        else:
            item_id = obj.get("id", lineno)
            extra = {k: obj[k] for k in _CARRIED if k in obj}
            try:
                candidates = list(_texts(item_id, obj, extra, all_readings))
            except ValueError as exc:
                if not skip:
                    raise InputError(f"{exc}; fix the line or pass --on-error skip",
                                     filename=name, lineno=lineno) from exc
                yield MrsItem(item_id, None, f"invalid-input: {exc}", extra)
                continue
        for item_id, text, extra in candidates:
            if not isinstance(text, str):
                yield MrsItem(item_id, None, text[1], extra)  # (None, reason)
                continue
            try:
                m = decode_mrs(text)
            except ValueError as exc:
                if not skip:
                    raise InputError(f"invalid SimpleMRS: {exc}; fix the line or pass "
                                     "--on-error skip", filename=name, lineno=lineno) from exc
                yield MrsItem(item_id, None, f"invalid-input: invalid SimpleMRS: {exc}", extra)
                continue
            yield MrsItem(item_id, m, None, extra)


def _texts(item_id: Any, obj: Mapping[str, Any], extra: dict[str, Any], all_readings: bool
           ) -> Iterator[tuple[Any, Any, dict[str, Any]]]:
    """``(id, SimpleMRS or (None, reason), extra)`` for each MRS of a JSON line.

    Raises:
        ValueError: the object has no usable MRS field
    """
    if isinstance(obj.get("readings"), list):
        readings = obj["readings"]
        if not readings:
            yield item_id, (None, str(obj.get("error") or "no parse")), extra
            return
        if all_readings:
            for i in range(len(readings)):
                yield item_id, _reading_text(readings, i), {**extra, "reading": i}
            return
        selected = obj.get("selected", 0)
        if selected is None:
            yield item_id, (None, "no selected reading"), extra
            return
        if not isinstance(selected, int) or not 0 <= selected < len(readings):
            raise ValueError(f"'selected' is {selected!r} but there are {len(readings)} "
                             "readings")
        yield item_id, _reading_text(readings, selected), {**extra, "reading": selected}
    elif "mrs" in obj:
        mrs = obj["mrs"]
        if isinstance(mrs, str):
            yield item_id, mrs, extra
        else:
            reason = obj.get("reason") or obj.get("error") or "no MRS in the input"
            yield item_id, (None, str(reason)), extra
    else:
        raise ValueError("a JSON line needs 'mrs' (lit rules apply) or 'readings' (lit parse)")


def _reading_text(readings: list[Any], i: int) -> str:
    reading = readings[i]
    text = reading.get("mrs") if isinstance(reading, Mapping) else reading
    if not isinstance(text, str):
        raise ValueError(f"reading {i} has no 'mrs' string")
    return text
