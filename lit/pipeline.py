"""The transformation pipeline: parse → apply chain → generate → rerank → label.

:class:`Transformer` owns the backends (an ACE parser and generator, built
from :mod:`lit.ace` unless injected, and an optional
:class:`~lit.rerank.Reranker`) and turns sentences, NLI pairs and whole
datasets into transformed, labelled records. :func:`augment_nli` is the
dataset-level entry point.

Work is shared: each distinct sentence is parsed once, each distinct
(sentence, chain) is applied, generated and ranked once, whichever items
and specs need it, and the candidates of a whole chunk of items are scored
by the language model in one batched call.

Every (item, spec) yields exactly one record whose ``status`` is ``ok``,
``skipped`` or ``error``; skips and errors carry a ``reason`` of the form
``"<category>: <detail>"`` with a category from :data:`CATEGORIES`. A
:class:`Report` counts them per spec; its counts add up to items × specs.

Example (needs ACE and an installed grammar):
    >>> with Transformer("erg-1214", reranker=None) as t:  # doctest: +SKIP
    ...     t.transform_sentence("The dog chased the cat.", "f").sentence
    'The dog will chase the cat.'
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from delphin.codecs import simplemrs
from delphin.mrs import MRS

from lit.errors import ACEError, LitError, SpecError
from lit.generate import Candidate, Expectation, Realizations, clean_realizations
from lit.jsonl import Skipped
from lit.nli import LabelResult, LabelTable
from lit.rerank import Reranker, rank_candidates
from lit.spec import Spec, parse_specs

__all__ = [
    "CATEGORIES",
    "NliFields",
    "Parsed",
    "SentenceResult",
    "Report",
    "Transformer",
    "augment_nli",
    "open_worker",
    "prepare_jobs",
    "record_key",
    "record_keys",
]

logger = logging.getLogger(__name__)

#: categories of ``reason`` for skipped and failed records
CATEGORIES = ("no-parse", "inapplicable", "no-realization", "unlabeled", "invalid-input",
              "error")

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

    @property
    def reason(self) -> str | None:
        """``None`` if a reading was selected, else a categorized reason."""
        if self.error is not None:
            return f"error: parse failed: {self.error}"
        if self.readings == 0:
            return "no-parse: no reading"
        if self.mrs is None:
            return f"no-parse: none of {self.readings} readings selected"
        return None


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
    """

    original: str
    chain: str | None
    status: str
    reason: str | None = None
    sentence: str | None = None
    candidates: tuple[Candidate, ...] = ()
    mrs: str | None = None

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


class _LRU(OrderedDict):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def put(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        if len(self) > self.size:
            self.popitem(last=False)

    def fetch(self, key: Any) -> Any:
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value


@dataclass
class _Job:
    """One (sentence, chain) to transform, with intermediate results."""

    sentence: str
    chain: str         # canonical chain ("future+itcleft_arg1")
    written: str       # as written in the spec ("f+i")
    result: SentenceResult | None = None
    realizations: Realizations | None = None
    expectation: Expectation | None = None
    mrs: MRS | None = None


class Transformer:
    """Parse, transform, regenerate, rerank and label; a context manager.

    Args:
        grammar: a grammar name (``"erg-1214"``; default: the default
            profile), a resolved :class:`~lit.grammar.Grammar`, or a
            :class:`~lit.grammar.GrammarProfile` (with injected backends)
        rules: the :class:`~lit.rules.RuleSet` (default ``RuleSet.load()``)
        reranker: a :class:`~lit.rerank.Reranker`, a model name or path
            (loaded on entry), or ``None`` to keep grammar order
        parser, generator: backends (:class:`lit.ace.Parser` /
            :class:`lit.ace.Generator`); by default ACE processes for
            *grammar* are started on entry and stopped on exit
        labels: the :class:`~lit.nli.LabelTable` (default: built-in)
        select: reading selection, ``"roundtrip"`` or ``"first"``
        candidates: keep this many ranked candidates in records (``None``:
            only the chosen sentence)
        verify: re-parse the chosen sentence and check the intended change
            (index properties, new predicates and arguments of the
            transformed MRS); failing candidates fall to the next
        keep_mrs: add transformed MRSs to records
        n: readings per parse (ACE's ``-n``); round-trip selection without a
            ranking model needs more than the first few
        home, env: passed to :func:`~lit.grammar.resolve_grammar`
        ace_options: more keyword arguments for the ACE processes
        chunk_size: items processed (and LM-batched) together
        cache_size: distinct sentences/chains remembered
        cache: a :class:`~lit.cache.ParseCache`; the ACE parser started on
            entry then looks sentences up there first (``None``: no cache)
        prepare_map: runs the ACE-bound stage (parse, apply chain, generate)
            of many jobs elsewhere, e.g. in worker processes: called once
            per run with an iterable of job lists (the jobs of one sentence),
            it must yield one :class:`~lit.engine.Outcome` per list, in order,
            whose value is :func:`prepare_jobs`' result (see
            :func:`open_worker`). Ranking,
            verification and labelling stay in this process, so the LM is
            loaded once and scores the candidates of whole chunks together.
        max_words: sentences with more whitespace-separated words are not
            parsed (never sent to ACE) and skipped as ``no-parse: too long``
    """

    def __init__(
        self,
        grammar: Any = None,
        *,
        rules: Any = None,
        reranker: Reranker | str | os.PathLike[str] | None = None,
        parser: Any = None,
        generator: Any = None,
        labels: LabelTable | None = None,
        select: str = "roundtrip",
        candidates: int | None = None,
        verify: bool = False,
        keep_mrs: bool = False,
        n: int | None = 10,
        home: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        ace_options: Mapping[str, Any] | None = None,
        chunk_size: int = 64,
        cache_size: int = 20000,
        cache: Any = None,
        prepare_map: Callable[[Iterable[Any]], Iterator[Any]] | None = None,
        max_words: int | None = None,
    ) -> None:
        if rules is None:
            from lit.rules import RuleSet

            rules = RuleSet.load()
        self.rules = rules
        self._grammar_arg = grammar
        self.home, self.env = home, env
        self.parser, self.generator = parser, generator
        self._injected = (parser, generator)
        self.profile: Any = None
        self.grammar: Any = None
        self._labels = labels
        self.select = select
        self.candidates = candidates
        self.verify = verify
        self.keep_mrs = keep_mrs
        self.n = n
        self.max_words = max_words
        self.ace_options = dict(ace_options or {})
        self.chunk_size = max(1, chunk_size)
        self.cache = cache
        self.prepare_map = prepare_map
        if isinstance(reranker, (str, os.PathLike)):
            reranker = Reranker(reranker)
        self.reranker = reranker
        self._loaded_reranker = False
        self._started: list[Any] = []
        self._parses = _LRU(cache_size)
        self._jobs = _LRU(cache_size)
        self._entered = False

    # -- lifecycle -----------------------------------------------------------

    def __enter__(self) -> Transformer:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> Transformer:
        """Resolve the grammar, start missing backends, load the reranker."""
        if self._entered:
            return self
        self._resolve_grammar()
        # with a prepare_map, workers parse and generate: this process needs a
        # parser only to re-parse candidates for --verify, and no generator
        need_parser = self.parser is None and (self.prepare_map is None or self.verify)
        need_generator = self.generator is None and self.prepare_map is None
        try:
            if need_parser or need_generator:
                from lit.ace import AceGenerator, AceParser

                ace = str(self.grammar.ace) if self.grammar.ace is not None else "ace"
                if need_parser:
                    self.parser = AceParser(self.grammar.image, executable=ace, n=self.n,
                                            env=self.env, **self.ace_options)
                    self._started.append(self.parser)
                    if self.cache is not None:
                        self.parser = self._cached(self.parser)
                if need_generator:
                    self.generator = AceGenerator(self.grammar.image, executable=ace,
                                                  env=self.env, **self.ace_options)
                    self._started.append(self.generator)
            if self.reranker is not None and not self.reranker.loaded:
                self.reranker.load()
                self._loaded_reranker = True
        except BaseException:
            self.close()
            raise
        self._entered = True
        return self

    def close(self) -> None:
        """Stop the ACE processes this transformer started; release the LM it loaded."""
        while self._started:
            proc = self._started.pop()
            proc.close()
        self.parser, self.generator = self._injected
        if self._loaded_reranker and self.reranker is not None:
            self.reranker.close()
            self._loaded_reranker = False
        self._entered = False

    def _cached(self, parser: Any) -> Any:
        from lit.cache import CachedParser, parser_cache_key
        from lit.grammar import file_sha256

        sha = self.grammar.image_sha256 or file_sha256(self.grammar.image)
        return CachedParser(parser, self.cache, parser_cache_key(parser, sha))

    def _resolve_grammar(self) -> None:
        from lit.grammar import Grammar, GrammarProfile, default_grammar, load_profile

        g = self._grammar_arg
        if isinstance(g, Grammar):
            self.grammar, self.profile = g, g.profile
            return
        if isinstance(g, GrammarProfile):
            self.profile = g
            if self.parser is None or self.generator is None:
                from lit.grammar import resolve_grammar

                self.grammar = resolve_grammar(g.name, home=self.home, env=self.env)
            return
        name = g if g is not None else default_grammar(home=self.home)
        if self.parser is not None and self.generator is not None:
            self.profile = load_profile(name, home=self.home)
            return
        from lit.grammar import resolve_grammar

        self.grammar = resolve_grammar(name, home=self.home, env=self.env)
        self.profile = self.grammar.profile

    def _require(self) -> None:
        if not self._entered:
            raise LitError("the Transformer is not open; use it in a 'with' block or call "
                           ".open()")

    @property
    def labels(self) -> LabelTable:
        """The label table (the built-in one unless given)."""
        if self._labels is None:
            self._labels = LabelTable.load(rules=self.rules)
        return self._labels

    def parse_specs(self, specs: str | Sequence[Spec], *, pair: bool | None = None
                    ) -> list[Spec]:
        """*specs* (``"f;p+i,m;o"``) parsed against this transformer's rules."""
        if isinstance(specs, str):
            return parse_specs(specs, self.rules, pair=pair)
        out = list(specs)
        if pair is not None:
            for s in out:
                if s.is_pair != pair:
                    kind = "pair" if pair else "single-sentence"
                    raise SpecError(f"spec {s.text!r} is not a {kind} spec")
        return out

    # -- stages --------------------------------------------------------------

    def parse(self, sentence: str) -> Parsed:
        """Parse *sentence* and select a reading (cached)."""
        self._require()
        cached = self._parses.fetch(sentence)
        if cached is not None:
            return cached
        from lit.parse import decode_mrs, select_reading, strip_lnk

        result = self.parser.parse(sentence)
        if result.error and not result.readings:
            parsed = Parsed(sentence, 0, None, None, result.error)
        else:
            selected = select_reading(result, self.select, sentence=sentence,
                                      generator=self.generator)
            m = None if selected is None else strip_lnk(decode_mrs(result.readings[selected].mrs))
            parsed = Parsed(sentence, len(result.readings), selected, m)
        self._parses.put(sentence, parsed)
        return parsed

    def transform(self, sentence_or_mrs: str | MRS, chain: str) -> Any:
        """Apply *chain* (``"f+i"``) to a sentence's selected reading or to an MRS.

        Returns a :class:`~lit.rules.Applied`; for a sentence without a
        selected reading, its ``reason`` is the parse's reason.
        """
        from lit.rules import Applied, apply_chain

        rules = self.rules.parse_chain(chain)
        if isinstance(sentence_or_mrs, MRS):
            return apply_chain(sentence_or_mrs, rules, self.profile)
        parsed = self.parse(sentence_or_mrs)
        if parsed.mrs is None:
            return Applied(None, parsed.reason, chain)
        return apply_chain(parsed.mrs, rules, self.profile)

    def generate(self, m: MRS | str) -> Realizations:
        """Clean, distinct realizations of *m* (see :mod:`lit.generate`).

        Raises:
            LitError: if the generator reports an error
        """
        self._require()
        result = self.generator.generate(m)
        if result.error:
            raise LitError(f"generation failed: {result.error}")
        return clean_realizations(result.surfaces)

    def rerank(self, groups: Sequence[Sequence[str]]) -> list[list[Candidate]]:
        """Rank candidate lists (LM perplexity, or grammar order without an LM)."""
        return rank_candidates(groups, self.reranker)

    # -- sentences -----------------------------------------------------------

    def transform_sentence(self, sentence: str, chain: str | None) -> SentenceResult:
        """Transform one sentence by *chain* (``None`` or ``"o"``: untouched)."""
        if chain is None or chain == "o":
            return SentenceResult(sentence, None, "ok", sentence=sentence,
                                  candidates=(Candidate(sentence),))
        canonical = "+".join(r.name for r in self.rules.parse_chain(chain))
        job = _Job(sentence, canonical, chain)
        self._run_jobs([job])
        assert job.result is not None
        return job.result

    def transform_sentences(
        self, items: Iterable[Any], specs: str | Sequence[Spec], *,
        done: Container[tuple[Any, ...]] = (),
    ) -> Iterator[dict[str, Any]]:
        """Records for plain sentences: *items* are strings, ``(id, sentence)``
        pairs or :class:`~lit.jsonl.Skipped` lines; one record per item and spec.

        *done* holds ``(id, spec)`` keys (see :func:`record_key`) of records
        an earlier run already wrote (``--resume``): they are neither
        computed nor yielded again.
        """
        spec_list = self.parse_specs(specs, pair=False)
        seen: Counter[tuple[Any, ...]] = Counter()  # occurrences of (id, spec): duplicate ids

        def build() -> Iterator[tuple[Any, dict[tuple[str, str], _Job]]]:
            for chunk in chunked(enumerate(items, start=1), self.chunk_size):
                prepared = []
                jobs: dict[tuple[str, str], _Job] = {}
                for pos, item in chunk:
                    item_id, sentence, invalid = _sentence_item(pos, item)
                    # keys are counted only when resuming: memory stays flat otherwise
                    todo = [s for s in spec_list
                            if not done or _key_seen(seen, item_id, s.text) not in done]
                    prepared.append((item_id, sentence, invalid, todo))
                    if invalid is None:
                        for spec in todo:
                            self._job_for(jobs, sentence, spec.premise, spec.key[0])
                yield prepared, jobs

        for prepared, jobs in self._run_chunks(build()):
            for item_id, sentence, invalid, todo in prepared:
                for spec in todo:
                    yield self._sentence_record(item_id, sentence, invalid, spec, jobs)

    def _sentence_record(self, item_id: Any, sentence: Any, invalid: str | None, spec: Spec,
                         jobs: dict[tuple[str, str], _Job]) -> dict[str, Any]:
        rec: dict[str, Any] = {"id": item_id, "spec": spec.text}
        if invalid is not None:
            rec.update(status="skipped", reason=f"invalid-input: {invalid}",
                       original={"sentence": sentence}, sentence=None, chain=spec.chain)
            return rec
        res = self._side(jobs, sentence, spec.premise, spec.key[0])
        rec.update(status=res.status, reason=res.reason, original={"sentence": sentence},
                   sentence=res.sentence, chain=spec.chain)
        if self.candidates:
            rec["candidates"] = [c.to_dict() for c in res.candidates[: self.candidates]]
        if self.keep_mrs:
            rec["mrs"] = res.mrs
        return rec

    # -- pairs ---------------------------------------------------------------

    def transform_pair(self, example: Mapping[str, Any], specs: str | Sequence[Spec], *,
                       fields: NliFields | None = None) -> list[dict[str, Any]]:
        """The records (one per spec) for one NLI *example*."""
        return list(self.transform_pairs([example], specs, fields=fields))

    def transform_pairs(
        self,
        items: Iterable[Any],
        specs: str | Sequence[Spec],
        *,
        fields: NliFields | None = None,
        label_names: Sequence[str] | None = None,
        done: Container[tuple[Any, ...]] = (),
    ) -> Iterator[dict[str, Any]]:
        """Records for NLI pairs: one per item and spec, in input order.

        Args:
            items: mappings (or :class:`~lit.jsonl.Skipped` lines)
            specs: a spec list or parsed specs (``premise;hypothesis``)
            fields: field names (default: detected from the first item)
            label_names: names of integer labels (``datasets`` ClassLabel)
            done: ``(id, spec)`` keys (:func:`record_key`) of records an
                earlier run already wrote (``--resume``): skipped entirely
        """
        spec_list = self.parse_specs(specs, pair=True)
        table = self.labels
        seen: Counter[tuple[Any, ...]] = Counter()  # occurrences of (id, spec): duplicate ids

        def build() -> Iterator[tuple[Any, dict[tuple[str, str], _Job]]]:
            nonlocal fields
            for chunk in chunked(enumerate(items, start=1), self.chunk_size):
                if fields is None:
                    first = next((it for _, it in chunk if isinstance(it, Mapping)), None)
                    if first is not None:
                        fields = NliFields.detect(first)
                flds = fields or NliFields()
                prepared = []
                jobs: dict[tuple[str, str], _Job] = {}
                for pos, item in chunk:
                    pair = _pair_item(pos, item, flds, label_names, table)
                    labelled = []
                    for spec in spec_list:
                        # keys are counted only when resuming: memory stays flat otherwise
                        if done and _key_seen(seen, pair.id, spec.text) in done:
                            continue
                        lab = None if pair.invalid else table.label(spec, pair.gold)
                        labelled.append((spec, lab))
                        if lab is not None and lab.label is not None:
                            self._job_for(jobs, pair.premise, spec.premise, spec.key[0])
                            self._job_for(jobs, pair.hypothesis, spec.hypothesis,
                                          spec.key[1])
                    prepared.append((pair, labelled))
                yield prepared, jobs

        for prepared, jobs in self._run_chunks(build()):
            for pair, labelled in prepared:
                for spec, lab in labelled:
                    yield self._pair_record(pair, spec, lab, jobs)

    def _pair_record(self, pair: _Pair, spec: Spec, lab: LabelResult | None,
                     jobs: dict[tuple[str, str], _Job]) -> dict[str, Any]:
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
        rec["label_rule"] = lab.to_dict()
        sides = []
        for name, sentence, chain, key in (
            ("premise", pair.premise, spec.premise, spec.key[0]),
            ("hypothesis", pair.hypothesis, spec.hypothesis, spec.key[1]),
        ):
            res = self._side(jobs, sentence, chain, key)
            rec[name] = res.to_dict(candidates=self.candidates, keep_mrs=self.keep_mrs)
            sides.append((name, res))
        failed = next(((n, r) for n, r in sides if r.status != "ok"), None)
        if failed is not None:
            name, res = failed
            category, _, detail = (res.reason or "error: unknown").partition(": ")
            rec["status"] = res.status
            rec["reason"] = f"{category}: {name}: {detail}"
            return rec
        rec.update(status="ok", sentence1=sides[0][1].sentence, sentence2=sides[1][1].sentence,
                   gold_label=lab.label)
        return rec

    # -- shared work ---------------------------------------------------------

    def _job_for(self, jobs: dict[tuple[str, str], _Job], sentence: str,
                 written: tuple[str, ...] | None, key: tuple[str, ...] | None) -> None:
        if written is None or key is None:
            return
        chain = "+".join(key)
        if (sentence, chain) not in jobs:
            jobs[(sentence, chain)] = _Job(sentence, chain, "+".join(written))

    def _side(self, jobs: dict[tuple[str, str], _Job], sentence: str,
              written: tuple[str, ...] | None, key: tuple[str, ...] | None) -> SentenceResult:
        if written is None or key is None:
            return SentenceResult(sentence, None, "ok", sentence=sentence)
        job = jobs[(sentence, "+".join(key))]
        assert job.result is not None
        res = job.result
        if res.chain != job.written:  # same chain, written differently by another spec
            res = SentenceResult(res.original, "+".join(written), res.status, res.reason,
                                 res.sentence, res.candidates, res.mrs)
        return res

    def _run_jobs(self, jobs: list[_Job]) -> None:
        """Parse, apply, generate, rank (one LM call) and verify *jobs*."""
        todo = self._lookup(jobs)
        for job in todo:
            self._prepare(job)
        self._finish(todo)

    def _lookup(self, jobs: Iterable[_Job]) -> list[_Job]:
        """Fill in the jobs done before; return the others."""
        self._require()
        todo = []
        for job in jobs:
            cached = self._jobs.fetch((job.sentence, job.chain))
            if cached is not None:
                job.result = cached
            else:
                todo.append(job)
        return todo

    def _run_chunks(self, chunks: Iterator[tuple[Any, dict[tuple[str, str], _Job]]]
                    ) -> Iterator[tuple[Any, dict[tuple[str, str], _Job]]]:
        """Yield each ``(state, jobs)`` of *chunks* once all its jobs are done.

        With a :attr:`prepare_map`, the prepare stage of all chunks streams
        through it (the jobs of later chunks are prepared while earlier ones
        are ranked here); the chunks are consumed only as fast as it asks.
        """
        if self.prepare_map is None:
            for state, jobs in chunks:
                self._run_jobs(list(jobs.values()))
                yield state, jobs
            return
        built: deque[tuple[Any, dict[tuple[str, str], _Job], list[list[_Job]]]] = deque()

        def source() -> Iterator[list[_Job]]:
            # one work unit per sentence: a worker parses it once for all its chains
            for state, jobs in chunks:
                groups: dict[str, list[_Job]] = {}
                for job in self._lookup(jobs.values()):
                    groups.setdefault(job.sentence, []).append(job)
                built.append((state, jobs, list(groups.values())))
                yield from groups.values()

        outcomes = iter(self.prepare_map(source()))
        ahead: deque[Any] = deque()
        try:
            while True:
                if not built:
                    # pulling an outcome builds chunks until one has work to do
                    outcome = next(outcomes, None)
                    if outcome is None:
                        return
                    ahead.append(outcome)
                    continue
                state, jobs, groups = built.popleft()
                for group in groups:
                    _absorb(group, ahead.popleft() if ahead else next(outcomes))
                self._finish([job for group in groups for job in group])
                yield state, jobs
        finally:
            close = getattr(outcomes, "close", None)
            if close is not None:
                close()

    def _finish(self, todo: list[_Job]) -> None:
        """Rank (one LM call), verify and remember prepared jobs."""
        pending = [j for j in todo if j.result is None]
        groups = [j.realizations.candidates for j in pending]  # type: ignore[union-attr]
        ranked = self.rerank(groups) if pending else []
        for job, cands in zip(pending, ranked, strict=True):
            self._choose(job, cands)
        for job in todo:
            self._jobs.put((job.sentence, job.chain), job.result)

    def _prepare(self, job: _Job) -> None:
        from lit.rules import apply_chain

        def done(status: str, reason: str, mrs: str | None = None) -> None:
            job.result = SentenceResult(job.sentence, job.written, status, reason, mrs=mrs)

        if not job.sentence.strip():
            return done("skipped", "invalid-input: empty sentence")
        words = len(job.sentence.split())
        if self.max_words is not None and words > self.max_words:
            return done("skipped", f"no-parse: too long: {words} words > max_words "
                                   f"{self.max_words} (not sent to ACE)")
        parsed = self.parse(job.sentence)
        if parsed.mrs is None:
            reason = parsed.reason or "no-parse: no reading"
            return done("error" if reason.startswith("error") else "skipped", reason)
        applied = apply_chain(parsed.mrs, self.rules.parse_chain(job.chain), self.profile)
        if applied.mrs is None:
            return done("skipped", f"inapplicable: {applied.reason}")
        job.mrs = applied.mrs
        text = simplemrs.encode(applied.mrs, lnk=False)
        result = self.generator.generate(applied.mrs)
        if result.error and not result.surfaces:
            return done("error", f"error: generation failed: {result.error}", text)
        job.realizations = clean_realizations(result.surfaces)
        if not job.realizations.candidates:
            why = ("the grammar realizes nothing" if not job.realizations.total else
                   f"all {job.realizations.total} realizations had surface blemishes")
            return done("skipped", f"no-realization: {why}", text)
        if self.verify:
            job.expectation = Expectation.derive(parsed.mrs, applied.mrs)

    def _choose(self, job: _Job, ranked: list[Candidate]) -> None:
        text = None if job.mrs is None else simplemrs.encode(job.mrs, lnk=False)
        chosen = list(ranked)
        if self.verify and job.expectation is not None:
            passing = [c for c in ranked if self._verified(c.sentence, job.expectation)]
            if not passing:
                job.result = SentenceResult(
                    job.sentence, job.written, "skipped",
                    f"no-realization: --verify rejected all {len(ranked)} candidates "
                    f"({job.expectation.describe()})", mrs=text)
                return
            chosen = passing + [c for c in ranked if c not in passing]
        job.result = SentenceResult(job.sentence, job.written, "ok", None, chosen[0].sentence,
                                    tuple(chosen), text)

    def _verified(self, sentence: str, expectation: Expectation) -> bool:
        from lit.parse import decode_mrs, strip_lnk

        result = self.parser.parse(sentence)
        for reading in result.readings:
            try:
                m = strip_lnk(decode_mrs(reading.mrs))
            except ValueError:
                continue
            if expectation.check(m):
                return True
        logger.debug("--verify: %r lacks %s", sentence, expectation.describe())
        return False


# -- worker processes ----------------------------------------------------------


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


def open_worker(options: Mapping[str, Any]) -> Transformer:
    """An open :class:`Transformer` for a worker process (its ``init``).

    *options* are :class:`Transformer` keyword arguments plus ``grammar``;
    ``cache`` may be a path, opened here (one SQLite connection per process).
    The worker's transformer starts its own ACE processes and loads no LM.
    """
    kwargs = dict(options)
    cache = kwargs.get("cache")
    if cache is not None and not hasattr(cache, "get"):
        from lit.cache import ParseCache

        kwargs["cache"] = ParseCache(cache)
    kwargs["reranker"] = None
    return Transformer(**kwargs).open()


def prepare_jobs(transformer: Transformer, jobs: Sequence[_Job]) -> Any:
    """Run the ACE-bound stage (parse, apply chain, generate) of *jobs*.

    The jobs share one sentence, which is parsed once. Returns, for each
    job, what :meth:`Transformer._run_chunks` needs back, picklable (the MRS
    as SimpleMRS text). An :class:`~lit.errors.ACEError` (ACE cannot run at
    all, e.g. a bad image) is returned as ``("ACEError", message)`` and
    raised again by the main process, so the run stops instead of turning
    every item into an error record.
    """
    out = []
    for job in jobs:
        try:
            transformer._prepare(job)
        except ACEError as exc:
            return "ACEError", str(exc)
        text = None if job.mrs is None else simplemrs.encode(job.mrs, lnk=False)
        out.append((job.result, job.realizations, job.expectation, text))
    return out


def _absorb(jobs: Sequence[_Job], outcome: Any) -> None:
    """Copy a worker's :func:`prepare_jobs` result (an Outcome) into *jobs*."""
    if not outcome.ok:
        for job in jobs:
            job.result = SentenceResult(job.sentence, job.written, "error",
                                        f"error: {outcome.error}")
        return
    if isinstance(outcome.value, tuple) and outcome.value[0] == "ACEError":
        raise ACEError(outcome.value[1])
    for job, (result, realizations, expectation, text) in zip(jobs, outcome.value,
                                                               strict=True):
        job.result, job.realizations, job.expectation = result, realizations, expectation
        job.mrs = None if text is None else simplemrs.decode(text)


# -- items -------------------------------------------------------------------


@dataclass
class _Pair:
    id: Any
    original: dict[str, Any]
    premise: str = ""
    hypothesis: str = ""
    gold: str = ""
    invalid: str | None = None


def chunked(it: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """Lists of up to *size* consecutive items of *it*, read lazily.

    Example:
        >>> list(chunked(range(5), 2))
        [[0, 1], [2, 3], [4]]
    """
    iterator = iter(it)
    while chunk := list(islice(iterator, size)):
        yield chunk


def _item_id(record: Mapping[str, Any], fields: NliFields, pos: int) -> Any:
    if fields.id is not None:
        return record.get(fields.id, pos)
    for key in _ID_FIELDS:
        if key in record:
            return record[key]
    return pos


def _pair_item(pos: int, item: Any, fields: NliFields, label_names: Sequence[str] | None,
               table: LabelTable) -> _Pair:
    if isinstance(item, Skipped):
        return _Pair(f"line {item.lineno}", {"line": item.lineno, "text": item.text},
                     invalid=f"line {item.lineno}: {item.reason}")
    if not isinstance(item, Mapping):
        return _Pair(pos, {"item": repr(item)[:200]},
                     invalid=f"item {pos}: expected a record, got {type(item).__name__}")
    original = dict(item)
    pair = _Pair(_item_id(item, fields, pos), original)
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


def _sentence_item(pos: int, item: Any) -> tuple[Any, Any, str | None]:
    if isinstance(item, Skipped):
        return f"line {item.lineno}", item.text, f"line {item.lineno}: {item.reason}"
    if isinstance(item, tuple) and len(item) == 2:
        item_id, sentence = item
    else:
        item_id, sentence = pos, item
    if not isinstance(sentence, str) or not sentence.strip():
        return item_id, sentence, "empty line or not a sentence"
    return item_id, sentence, None


def _label_names(examples: Any, label_field: str) -> list[str] | None:
    features = getattr(examples, "features", None)
    if features is None:
        return None
    try:
        feature = features[label_field]
    except (KeyError, TypeError):
        return None
    names = getattr(feature, "names", None)
    return list(names) if names else None


def augment_nli(
    examples: Iterable[Mapping[str, Any]],
    specs: str | Sequence[Spec],
    *,
    transformer: Transformer,
    fields: NliFields | None = None,
    include_skipped: bool = False,
    report: Report | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield new labelled NLI examples made from *examples* by *specs*.

    Args:
        examples: an iterable of dicts, or a ``datasets.Dataset`` (integer
            labels are named from its ``ClassLabel`` feature; ``premise``/
            ``hypothesis``/``label`` columns are detected)
        specs: ``"f;p+i,m;o"`` or parsed specs
        transformer: an open :class:`Transformer`
        fields: field names (default: detected)
        include_skipped: also yield the skipped and failed records
        report: a :class:`Report` that counts every (example, spec)
        progress: called with the number of examples finished, per chunk
    Yields:
        records in the format of ``lit transform`` (``sentence1``,
        ``sentence2``, ``gold_label``, ``label_rule``, ...), ``status == "ok"``
        unless *include_skipped*

    Example:
        >>> with Transformer("erg-1214") as t:                   # doctest: +SKIP
        ...     new = list(augment_nli(snli, "f;p+i,m;o", transformer=t))
    """
    label_names = None
    if fields is not None:
        label_names = _label_names(examples, fields.label)
    else:
        for name in ("label", "gold_label"):
            label_names = label_names or _label_names(examples, name)
    specs_n = len(transformer.parse_specs(specs, pair=True))
    done = 0
    for record in transformer.transform_pairs(examples, specs, fields=fields,
                                              label_names=label_names):
        done += 1
        if report is not None:
            report.add(record)
            report.items = done // specs_n
        if progress is not None and done % specs_n == 0:
            progress(1)
        if include_skipped or record["status"] == "ok":
            yield record
