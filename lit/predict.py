"""Predict NLI labels for a transform output with a Hugging Face classifier.

:class:`Predictor` loads a sequence-classification model (a hub id or a
local directory) and labels the originals and contrast items of a
``lit transform`` output, in batches, producing the predictions file that
:mod:`lit.evaluate` reads: one ``{"id", "label"}`` per example, where an
original keeps its id and a contrast item is ``<orig id>:<spec>``.

torch and transformers are imported only when a :class:`Predictor` is
entered, never at import time.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from lit.contrast import item_id
from lit.errors import InputError, LitError

__all__ = ["Example", "Predictor", "examples_from_records", "parse_label_map"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Example:
    """One input to classify: an id, a text and (for NLI pairs) a second text."""

    id: str
    text: str
    text_pair: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "text_pair": self.text_pair}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Example:
        return cls(d["id"], d["text"], d.get("text_pair"))


def parse_label_map(text: str) -> dict[int, str]:
    """Parse ``0=entailment,1=neutral,2=contradiction`` into ``{0: 'entailment', ...}``.

    Labels are lower-cased.

    Example:
        >>> parse_label_map("0=Entailment, 1=neutral,2=contradiction")
        {0: 'entailment', 1: 'neutral', 2: 'contradiction'}

    Raises:
        LitError: an entry is not ``INDEX=LABEL`` or an index repeats
    """
    mapping: dict[int, str] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        index, sep, label = part.partition("=")
        if not sep or not index.strip().isdigit() or not label.strip():
            raise LitError(
                f"bad --label-map entry {part!r}: expected INDEX=LABEL, "
                "e.g. 0=entailment,1=neutral,2=contradiction"
            )
        i = int(index)
        if i in mapping:
            raise LitError(f"bad --label-map: index {i} given twice")
        mapping[i] = label.strip().lower()
    if not mapping:
        raise LitError("empty --label-map; e.g. 0=entailment,1=neutral,2=contradiction")
    return mapping


def _texts(obj: Mapping[str, Any]) -> tuple[str, str | None] | None:
    s1, s2 = obj.get("sentence1"), obj.get("sentence2")
    if isinstance(s1, str) and isinstance(s2, str):
        return s1, s2
    s = obj.get("sentence")
    if isinstance(s, str):
        return s, None
    return None


def examples_from_records(
    records: Iterable[Mapping[str, Any] | tuple[int, Mapping[str, Any]]],
    *,
    source: str | None = None,
) -> Iterator[Example]:
    """The examples to classify in ``lit transform`` *records*.

    Each original is yielded once (the first time its id appears), from
    its ``original`` fields; each record with ``status == "ok"`` yields its
    contrast item, id ``<orig id>:<spec>``. NLI records give sentence pairs,
    plain-text records single sentences.

    Raises:
        InputError: a record (or its original) has no sentence(s), or an
            (id, spec) pair repeats (duplicate ids)
    """
    seen: set[str] = set()
    pairs: dict[tuple[str, str], int] = {}
    for n, entry in enumerate(records, start=1):
        if isinstance(entry, tuple):
            lineno, rec = entry
        else:
            lineno, rec = n, entry
        if "id" not in rec or "spec" not in rec:
            raise InputError("not a transform record (no 'id'/'spec')", source, lineno)
        oid = str(rec["id"])
        key = (oid, str(rec["spec"]))
        if key in pairs:
            raise InputError(
                f"id {rec['id']!r} and spec {rec['spec']!r} again (first on line {pairs[key]}); "
                "predictions are keyed by id, so the originals need unique ids",
                source, lineno,
            )
        pairs[key] = lineno
        if oid not in seen:
            seen.add(oid)
            original = rec.get("original")
            texts = _texts(original) if isinstance(original, Mapping) else None
            if texts is None:
                raise InputError(
                    "the record's 'original' has no sentence1/sentence2 (or sentence)",
                    source, lineno,
                )
            yield Example(oid, *texts)
        if rec.get("status") == "ok":
            texts = _texts(rec)
            if texts is None:
                raise InputError(
                    "an ok record has no sentence1/sentence2 (or sentence)", source, lineno
                )
            yield Example(item_id(rec["id"], str(rec["spec"])), *texts)


def _batches(items: Iterable[Example], size: int) -> Iterator[list[Example]]:
    batch: list[Example] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class Predictor:
    """A sequence-classification model that labels :class:`Example` objects.

    Use it as a context manager; the model is loaded on entry.

    Args:
        model: Hugging Face model id or local directory
        label_map: class index -> label; default: the config's
            ``id2label``, lower-cased (generic ``LABEL_0`` names are
            refused: pass a map)
        batch_size: examples per forward pass
        max_length: truncate inputs to this many tokens (at most the
            model's ``max_position_embeddings``)
        device: torch device

    The label is the arg-max class; on a tie the lowest class index wins.

    Example:
        >>> with Predictor("my-nli-model") as p:  # doctest: +SKIP
        ...     list(p.predict([Example("1", "A dog runs.", "An animal runs.")]))
        [{'id': '1', 'label': 'entailment'}]
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        label_map: Mapping[int, str] | None = None,
        batch_size: int = 32,
        max_length: int = 256,
        device: str = "cpu",
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.model_name = os.fspath(model)
        self.label_map = dict(label_map) if label_map is not None else None
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self._model: Any = None
        self._tokenizer: Any = None
        self._torch: Any = None
        self.labels: dict[int, str] = {}

    def __enter__(self) -> Predictor:
        self.load()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def load(self) -> None:
        """Load tokenizer and model (done by ``with``)."""
        try:
            import torch  # noqa: PLC0415
            from transformers import (  # noqa: PLC0415
                AutoModelForSequenceClassification,
                AutoTokenizer,
            )
        except ImportError as exc:  # pragma: no cover - both are dependencies
            raise LitError(f"lit predict needs torch and transformers: {exc}") from exc
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.model_name)
            model = AutoModelForSequenceClassification.from_pretrained(self.model_name)
        except (OSError, ValueError) as exc:
            raise LitError(
                f"cannot load sequence-classification model {self.model_name!r}: {exc}; "
                "give a local model directory or a Hugging Face id reachable from here"
            ) from exc
        n = int(model.config.num_labels)
        if self.label_map is not None:
            missing = [i for i in range(n) if i not in self.label_map]
            if missing:
                raise LitError(
                    f"--label-map has no label for class(es) {missing} of {self.model_name!r} "
                    f"({n} classes)"
                )
            labels = dict(self.label_map)
        else:
            id2label = {int(k): str(v).lower() for k, v in model.config.id2label.items()}
            if all(v == f"label_{k}" for k, v in id2label.items()):
                raise LitError(
                    f"the config of {self.model_name!r} has only generic labels "
                    f"({', '.join(id2label[k] for k in sorted(id2label))}); pass --label-map, "
                    "e.g. 0=entailment,1=neutral,2=contradiction"
                )
            labels = id2label
        try:
            model.to(self.device)
        except (RuntimeError, ValueError) as exc:
            raise LitError(f"cannot use device {self.device!r}: {exc}") from exc
        model.eval()
        # never feed more tokens than the model has positions for
        limits = [self.max_length, getattr(model.config, "max_position_embeddings", None),
                  getattr(tokenizer, "model_max_length", None)]
        self.max_length = min(int(x) for x in limits if isinstance(x, int) and x > 0)
        self._torch, self._tokenizer, self._model, self.labels = torch, tokenizer, model, labels

    def close(self) -> None:
        """Release the model."""
        self._model = self._tokenizer = self._torch = None

    def predict(
        self,
        examples: Iterable[Example],
        *,
        on_batch: Callable[[int], Any] | None = None,
    ) -> Iterator[dict[str, str]]:
        """Yield ``{"id", "label"}`` for each of *examples*, in order.

        *on_batch*, if given, is called with the size of each finished batch
        (for progress bars).
        """
        if self._model is None:
            raise LitError("the Predictor is not loaded; use it in a `with` block")
        torch, tok, model = self._torch, self._tokenizer, self._model
        for batch in _batches(examples, self.batch_size):
            pairs = [e.text_pair for e in batch]
            if all(p is not None for p in pairs):
                enc = tok([e.text for e in batch], pairs, padding=True, truncation=True,
                          max_length=self.max_length, return_tensors="pt")
            elif all(p is None for p in pairs):
                enc = tok([e.text for e in batch], padding=True, truncation=True,
                          max_length=self.max_length, return_tensors="pt")
            else:
                # mixed pairs and single sentences: encode separately per kind
                yield from self._mixed(batch)
                if on_batch is not None:
                    on_batch(len(batch))
                continue
            enc = {k: v.to(self.device) for k, v in enc.items()}
            with torch.no_grad():
                logits = model(**enc).logits
            for e, index in zip(batch, logits.argmax(dim=-1).tolist(), strict=True):
                yield {"id": e.id, "label": self._label(int(index))}
            if on_batch is not None:
                on_batch(len(batch))

    def _mixed(self, batch: list[Example]) -> Iterator[dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for group in ([e for e in batch if e.text_pair is None],
                      [e for e in batch if e.text_pair is not None]):
            if group:
                for pred in self.predict(group):
                    out[pred["id"]] = pred
        for e in batch:
            yield out[e.id]

    def _label(self, index: int) -> str:
        try:
            return self.labels[index]
        except KeyError:
            raise LitError(f"the model predicted class {index}, which has no label") from None
