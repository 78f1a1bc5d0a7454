"""The answers of ``lit serve``: readings and their selection, chains run on a chosen reading.

:class:`Explorer` answers what the explorer page asks, in the records of
the command line, with a little more to look at:

* :meth:`Explorer.parse` gives the ``lit parse --dmrs`` record of a
  sentence, and for each reading whether it is a round-trip *candidate*
  (and if not, why), whether it *round-trips* (and what the grammar
  realizes from it otherwise), plus which reading the selection strategy
  chose and why (``select``);
* :meth:`Explorer.transform` and :meth:`Explorer.transform_pair` give the
  ``lit transform --candidates K --keep-mrs`` records of a sentence or an
  NLI pair under some specs, computed as :class:`~lit.pipeline.Transformer`
  computes them, but on *any* reading the caller picks (by default the
  selected one), each with an ``explain`` object: the rules of the chain
  with their phenomena, what generation returned and dropped, what
  ``--verify`` found per candidate, and for pairs the label-table row.

ACE work runs on a backend borrowed from an :class:`~lit.serve.pool.AcePool`;
parses and realizations are remembered (a bounded, thread-safe cache), so
toggling between readings does not parse again. Requests carry a deadline;
between ACE calls the explorer checks it and stops with
:class:`TimeLimitError`. Nothing here reads files: requests carry text only.

Why this module is long: it answers every explorer question (readings, their
selection, chains on any reading, pairs with labels) with explanations that the
command line does not produce; selection, transformation and records are those
of :mod:`lit.parse`, :class:`~lit.pipeline.Transformer` and :mod:`lit.records`.

Example (needs ACE, or the tests' stand-in):
    >>> explorer = Explorer(pool, profile, rules=rules, labels=table)   # doctest: +SKIP
    >>> explorer.parse("The dog chased the cat.")["selected"]          # doctest: +SKIP
    0
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast

from delphin.mrs import MRS

from lit.errors import LitError

__all__ = ["Limits", "Explorer", "RequestError", "TimeLimitError", "ReadingInfo", "Readings"]

logger = logging.getLogger(__name__)


class RequestError(LitError):
    """A request asks for something malformed or out of bounds (HTTP 400)."""


class TimeLimitError(LitError):
    """A request ran out of its time (HTTP 504)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on what one request may ask and take.

    Attributes:
        max_body: bytes of a request body
        max_chars: characters of a sentence
        max_words: whitespace-separated words of a sentence
        max_specs: specs (chains) per transform request
        max_candidates: candidates per chain in a response
        request_timeout: seconds a request may take, waiting included
        queue_timeout: seconds a request waits for a free ACE backend
    """

    max_body: int = 64 * 1024
    max_chars: int = 1000
    max_words: int = 50
    max_specs: int = 20
    max_candidates: int = 50
    request_timeout: float = 120.0
    queue_timeout: float = 30.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class ReadingInfo:
    """What the explorer says about one reading.

    Attributes:
        candidate: no ``unknown`` EP and a verbal index EP
        roundtrip: whether the grammar regenerates the sentence from it
            (``None``: not tried, because it is not a candidate)
        note: why it is (not) a candidate, and the round-trip outcome
        index_ep: the predicate of its index EP, if any
        realizations: what the grammar realized from it (cleaned, at most 5)
    """

    candidate: bool
    roundtrip: bool | None
    note: str
    index_ep: str | None = None
    realizations: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"candidate": self.candidate, "roundtrip": self.roundtrip, "note": self.note,
                "index_ep": self.index_ep, "realizations": list(self.realizations)}


@dataclass(frozen=True, slots=True)
class Readings:
    """A parsed sentence as the explorer sees it: readings, their infos, the selection."""

    result: Any  # lit.ace.ParseResult
    infos: tuple[ReadingInfo, ...]
    selected: int | None
    method: str
    reason: str

    def mrs(self, i: int) -> MRS:
        """Reading *i* as an MRS without character spans."""
        from lit.mrs import decode_mrs, strip_lnk

        return strip_lnk(decode_mrs(self.result.readings[i].mrs))

    def parsed(self, i: int | None) -> Any:
        """Reading *i* as the :class:`~lit.pipeline.Parsed` the pipeline would work on."""
        from lit.records import Parsed

        r = self.result
        if r.error and not r.readings:
            return Parsed(r.sentence, 0, None, None, r.error)
        m = None
        if i is not None:
            try:
                m = self.mrs(i)
            except ValueError:
                m = None
        return Parsed(r.sentence, len(r.readings), i, m)


class _LRU:
    """A small thread-safe least-recently-used mapping."""

    def __init__(self, size: int) -> None:
        self._data: OrderedDict[Any, Any] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self._size:
                self._data.popitem(last=False)


class Explorer:
    """Parse, select, transform and label for the explorer page; thread-safe.

    Args:
        pool: the :class:`~lit.serve.pool.AcePool` lending ACE backends
        profile: the grammar's :class:`~lit.grammar.GrammarProfile`
        rules: the :class:`~lit.rules.RuleSet`
        labels: the :class:`~lit.nli.LabelTable` for pairs
        reranker: a loaded :class:`~lit.rerank.Reranker`, or ``None`` for
            grammar order (no scores)
        select: the selection strategy (:data:`lit.parse.SELECT_METHODS`)
        limits: the request :class:`Limits`
        about: more facts for :meth:`info` (ACE version, LM name, ...)
        cache_size: parses and realizations remembered
        clock: the monotonic clock deadlines are measured on
    """

    def __init__(
        self,
        pool: Any,
        profile: Any,
        *,
        rules: Any,
        labels: Any,
        reranker: Any = None,
        select: str = "ranked",
        limits: Limits | None = None,
        about: dict[str, Any] | None = None,
        cache_size: int = 512,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        from lit.parse import SELECT_METHODS

        if select not in SELECT_METHODS:
            raise ValueError(f"unknown selection method {select!r}; use one of "
                             f"{', '.join(SELECT_METHODS)}")
        self.pool = pool
        self.profile = profile
        self.rules = rules
        self.labels = labels
        self.reranker = reranker
        self.select = select
        self.limits = limits or Limits()
        self.about = dict(about or {})
        self.clock = clock
        self._parses = _LRU(cache_size)
        self._realizations = _LRU(cache_size * 4)
        self._views = _LRU(cache_size)
        self._lm_lock = threading.Lock()

    # -- what the page shows before any request ------------------------------

    def info(self) -> dict[str, Any]:
        """The server's set-up: grammar, LM, selection, limits and the pool's state."""
        return {**self.about, "grammar": self.profile.name, "select": self.select,
                "limits": self.limits.to_dict(), "pool": self.pool.stats(),
                "labels": self.labels.name}

    def rule_list(self) -> list[dict[str, Any]]:
        """The rule registry as ``lit rules list --json`` gives it, with ``unsupported``
        (the reason this grammar cannot use a rule, or ``None``)."""
        out = []
        for rule in self.rules:
            d = rule.to_dict()
            d["unsupported"] = rule.unsupported(self.profile)
            out.append(d)
        return out

    def label_table(self) -> dict[str, Any]:
        """The label table: its name, labels and rows (spec, source, rationale, map)."""
        return {"table": self.labels.name, "labels": list(self.labels.labels),
                "rows": [row.to_dict() for row in self.labels.rows]}

    # -- parse ---------------------------------------------------------------

    def parse(self, sentence: str, *, item_id: Any = 1, deadline: float | None = None
              ) -> dict[str, Any]:
        """The ``lit parse --dmrs`` record of *sentence*, explained.

        Each reading gains ``candidate``, ``roundtrip``, ``note``,
        ``index_ep`` and ``realizations`` (:class:`ReadingInfo`); the record
        gains ``select``: ``{"method", "reason"}``.

        Raises:
            RequestError: the sentence is empty or too long
            TimeLimitError, BusyError: the request ran out of time
        """
        from lit.records import parse_record

        self._check_sentence(sentence, "sentence")
        deadline = self._deadline(deadline)
        view = self._view(sentence, deadline)
        record = parse_record(item_id, view.result, view.selected, dmrs=True)
        for out, info in zip(record["readings"], view.infos, strict=True):
            out.update(info.to_dict())
        record["select"] = {"method": view.method, "reason": view.reason}
        return record

    # -- transform -----------------------------------------------------------

    def transform(
        self,
        sentence: str,
        rules: str,
        *,
        reading: int | None = None,
        candidates: int = 10,
        verify: bool = False,
        item_id: Any = 1,
        deadline: float | None = None,
    ) -> dict[str, Any]:
        """Apply single-sentence *rules* (``"p,pa,i,n"``) to a reading of *sentence*.

        Args:
            sentence: the sentence
            rules: chains, comma-separated (``lit transform --rules`` for text)
            reading: the reading to transform (default: the selected one)
            candidates: ranked candidates kept per record
            verify: re-parse candidates and check the change (``--verify``)
            item_id: the ``id`` of the records
            deadline: :attr:`clock` time by which to finish
        Returns:
            ``{"id", "sentence", "reading", "selected", "records"}``: one
            record per spec as ``lit transform --input-format text
            --candidates K --keep-mrs`` writes it, plus ``explain``
        Raises:
            RequestError, SpecError: bad input
            TimeLimitError, BusyError: the request ran out of time
        """
        from lit.records import sentence_record
        from lit.spec import parse_specs

        self._check_sentence(sentence, "sentence")
        k = self._check_candidates(candidates)
        specs = parse_specs(rules, self.rules, pair=False)
        self._check_specs(specs)
        deadline = self._deadline(deadline)
        records = []
        with self._lease(deadline) as backend:
            view = self._view(sentence, deadline, backend)
            used = self._pick(view, reading, "reading")
            for spec in specs:
                res, explain = self._side(backend, view, reading, spec.premise, verify,
                                          deadline)
                rec = sentence_record(item_id, sentence, spec, res, candidates=k,
                                      keep_mrs=True)
                rec["explain"] = explain
                records.append(rec)
        return {"id": item_id, "sentence": sentence, "reading": used,
                "selected": view.selected, "records": records}

    def transform_pair(
        self,
        premise: str,
        hypothesis: str,
        gold_label: str,
        rules: str,
        *,
        readings: Sequence[int | None] = (None, None),
        candidates: int = 10,
        verify: bool = False,
        item_id: Any = 1,
        deadline: float | None = None,
    ) -> dict[str, Any]:
        """Apply pair specs (``"f;p+i,m;o"``) to an NLI pair and label the results.

        *readings* picks the premise and hypothesis readings (``None``: the
        selected one). Returns ``{"id", "sentence1", "sentence2",
        "gold_label", "readings", "selected", "records"}`` with one ``lit
        transform`` record per spec (``premise``/``hypothesis`` with
        candidates and MRS, ``label_rule``), plus ``explain`` (the label
        table row, and per side what :meth:`transform` explains).

        Raises:
            RequestError, SpecError: bad input
            TimeLimitError, BusyError: the request ran out of time
        """
        from lit.spec import parse_specs

        self._check_sentence(premise, "sentence1")
        self._check_sentence(hypothesis, "sentence2")
        if gold_label not in self.labels.labels:
            raise RequestError(f"gold_label {gold_label!r} is not one of "
                               f"{', '.join(self.labels.labels)}")
        if len(readings) != 2:
            raise RequestError("readings: give two (premise, hypothesis), null for the selected")
        k = self._check_candidates(candidates)
        specs = parse_specs(rules, self.rules, pair=True)
        self._check_specs(specs)
        deadline = self._deadline(deadline)
        original = {"id": item_id, "sentence1": premise, "sentence2": hypothesis,
                    "gold_label": gold_label}
        sentences = (premise, hypothesis)
        labelled = [(spec, self.labels.label(spec, gold_label)) for spec in specs]
        needed = {i for spec, lab in labelled if lab.label is not None
                  for i, chain in enumerate((spec.premise, spec.hypothesis))
                  if chain is not None}
        views: list[Readings | None] = [None, None]
        used: list[int | None] = [None, None]
        records = []
        with self._lease(deadline) as backend:
            for i in sorted(needed):
                view = views[i] = self._view(sentences[i], deadline, backend)
                used[i] = self._pick(view, readings[i], f"reading{i + 1}")
            for spec, lab in labelled:
                records.append(self._pair_record(backend, original, sentences, views, readings,
                                                 spec, lab, k, verify, deadline))
        return {**original, "readings": used,
                "selected": [None if v is None else v.selected for v in views],
                "records": records}

    def _pair_record(self, backend: Any, original: dict[str, Any], sentences: tuple[str, str],
                     views: list[Readings | None], readings: Sequence[int | None], spec: Any,
                     lab: Any, k: int, verify: bool, deadline: float) -> dict[str, Any]:
        # lit.records.pair_record on the chosen readings, with explanations
        from lit.records import Pair, pair_record

        row, _ = self.labels.row_for(spec)
        explain: dict[str, Any] = {"label_row": None if row is None else row.to_dict(),
                                   "label_reason": lab.reason}
        pair = Pair(original["id"], original, sentences[0], sentences[1],
                    original["gold_label"])
        sides = None
        if lab.label is not None:
            done = []
            for i, name in enumerate(("premise", "hypothesis")):
                chain = spec.premise if i == 0 else spec.hypothesis
                view = views[i]
                if chain is None or view is None:
                    res, side_explain = self._untouched(sentences[i]), None
                else:
                    res, side_explain = self._side(backend, view, readings[i], chain, verify,
                                                   deadline)
                explain[name] = side_explain
                done.append(res)
            sides = (done[0], done[1])
        rec = pair_record(pair, spec, lab, sides, candidates=k, keep_mrs=True)
        rec["explain"] = explain
        return rec

    # -- one side: a reading transformed by one chain -------------------------

    def _untouched(self, sentence: str) -> Any:
        from lit.records import SentenceResult

        return SentenceResult(sentence, None, "ok", sentence=sentence)

    def _side(self, backend: Any, view: Readings, reading: int | None,
              chain: tuple[str, ...] | None, verify: bool, deadline: float
              ) -> tuple[Any, dict[str, Any] | None]:
        """(SentenceResult, explain) for *chain* on *reading* (``None``: the
        selected one) of *view*'s sentence, computed by the pipeline itself
        (:meth:`lit.pipeline.Transformer.transform_sentence`)."""
        sentence = view.result.sentence
        if chain is None:
            return self._untouched(sentence), None
        written = "+".join(chain)
        self._check_time(deadline, f"transforming by {written}")
        with self._transformer(backend, verify) as t:
            res = t.transform_sentence(sentence, written, reading=reading)
        real = res.realizations
        explain: dict[str, Any] = {
            "reading": res.reading,
            "rules": [{"name": r.name, "phenomenon": r.phenomenon,
                       "description": r.description} for r in self.rules.parse_chain(written)],
            "generated": None if real is None else real.total,
            "dropped": [] if real is None else [{"sentence": t_, "reason": r}
                                                for t_, r in real.dropped],
            "rejected": [{"sentence": t_, "reason": r} for t_, r in res.rejected],
            "verify": None,
        }
        if res.verified:
            explain["verify"] = {"expectation": res.expectation,
                                 "results": [{"sentence": t_, "ok": ok}
                                             for t_, ok in res.verified]}
        return res, explain

    def _transformer(self, backend: Any, verify: bool) -> Any:
        """A :class:`~lit.pipeline.Transformer` over the leased *backend*."""
        from lit.pipeline import Transformer

        return Transformer(self.profile, rules=self.rules, labels=self.labels,
                           reranker=None if self.reranker is None else cast(
                               Any, _Locked(self.reranker, self._lm_lock)),
                           parser=_CachedParser(self, backend), select=self.select,
                           generator=_CachedGenerator(self, backend), verify=verify)

    # -- readings and their selection -----------------------------------------

    def _view(self, sentence: str, deadline: float, backend: Any = None) -> Readings:
        view = self._views.get(sentence)
        if view is not None:
            return view
        if backend is None:
            with self._lease(deadline) as leased:
                return self._view(sentence, deadline, leased)
        from lit.interface import TransientFailure
        from lit.parse import select

        self._check_time(deadline, "parsing")
        result = self._parse(backend, sentence)
        infos = []
        for i in range(len(result.readings)):
            self._check_time(deadline, f"checking the round trip of reading {i}")
            infos.append(self._reading_info(backend, result, i))
        if result.error and not result.readings:
            selected, reason = None, f"no reading: {result.error}"
        elif not result.readings:
            selected, reason = None, ("no reading: the grammar has no analysis of the sentence "
                                      "(no parse)")
        else:
            try:
                chosen = select(result, self.select, generator=_CachedGenerator(self, backend))
            except TransientFailure as exc:
                selected, reason = None, f"undecided: {exc}"
            else:
                selected, reason = chosen.index, chosen.reason
        view = Readings(result, tuple(infos), selected, self.select, reason)
        if not result.error or result.readings:  # a failed parse is tried again next time
            self._views.put(sentence, view)
        return view

    def _reading_info(self, backend: Any, result: Any, i: int) -> ReadingInfo:
        """What the page shows of reading *i*: candidate or not (and why), and
        whether it round-trips (every candidate is tried, for display)."""
        from lit.generate import clean_realizations, respell, respellings
        from lit.mrs import decode_mrs, index_ep, strip_lnk
        from lit.parse import same_surface, why_not_candidate

        try:
            m = strip_lnk(decode_mrs(result.readings[i].mrs))
        except ValueError as exc:
            return ReadingInfo(False, None, f"not a candidate: unreadable MRS ({exc})")
        ep = index_ep(m)
        pred = None if ep is None else ep.predicate
        why = why_not_candidate(m)
        if why is not None:
            return ReadingInfo(False, None, f"not a candidate: {why}", pred)
        gen = self._generate(backend, m)
        spellings = respellings(m, result.sentence)
        shown = clean_realizations(gen.surfaces, result.sentence,
                                   spellings=spellings).candidates[:5]
        if any(same_surface(respell(s, spellings), result.sentence) for s in gen.surfaces):
            return ReadingInfo(True, True, "candidate; the grammar regenerates the sentence "
                               "from it", pred, shown)
        if gen.error and not gen.surfaces:
            return ReadingInfo(True, False, f"candidate; generation failed: {gen.error}", pred)
        if not gen.surfaces:
            return ReadingInfo(True, False, "candidate; the grammar realizes nothing from it",
                               pred)
        return ReadingInfo(True, False, f"candidate; does not round-trip: the grammar realizes "
                           f"{len(gen.surfaces)} other string(s)", pred, shown)

    def _pick(self, view: Readings, reading: Any, field: str) -> int | None:
        if reading is None:
            return view.selected
        n = len(view.result.readings)
        if isinstance(reading, bool) or not isinstance(reading, int) or not 0 <= reading < n:
            raise RequestError(f"{field}: {reading!r} is not a reading of the sentence "
                               f"(it has {n}: 0 to {n - 1})" if n else
                               f"{field}: the sentence has no readings")
        return reading

    # -- ACE, cached -----------------------------------------------------------

    def _parse(self, backend: Any, sentence: str) -> Any:
        result = self._parses.get(sentence)
        if result is None:
            result = backend.parser.parse(sentence)
            if not result.transient:  # cut-short answers are not remembered
                self._parses.put(sentence, result)
        return result

    def _generate(self, backend: Any, m: MRS) -> Any:
        from lit.mrs import mrs_for_generation

        key = mrs_for_generation(m)
        result = self._realizations.get(key)
        if result is None:
            result = backend.generator.generate(m)
            if not result.transient:
                self._realizations.put(key, result)
        return result

    # -- limits ----------------------------------------------------------------

    def _deadline(self, deadline: float | None) -> float:
        return self.clock() + self.limits.request_timeout if deadline is None else deadline

    def _lease(self, deadline: float) -> Any:
        wait = min(self.limits.queue_timeout, max(0.0, deadline - self.clock()))
        return self.pool.lease(timeout=wait)

    def _check_time(self, deadline: float, doing: str) -> None:
        if self.clock() > deadline:
            raise TimeLimitError(
                f"the request took longer than {self.limits.request_timeout:g} s (stopped while "
                f"{doing}); try fewer chains or a shorter sentence, or start lit serve with a "
                "larger --request-timeout")

    def _check_sentence(self, sentence: Any, field: str) -> None:
        if not isinstance(sentence, str) or not sentence.strip():
            raise RequestError(f"{field}: give a non-empty sentence")
        if len(sentence) > self.limits.max_chars:
            raise RequestError(f"{field}: too long: {len(sentence)} characters > "
                               f"{self.limits.max_chars} (--max-chars)")
        words = len(sentence.split())
        if words > self.limits.max_words:
            raise RequestError(f"{field}: too long: {words} words > {self.limits.max_words} "
                               "(--max-words)")

    def _check_candidates(self, k: Any) -> int:
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= \
                self.limits.max_candidates:
            raise RequestError(f"candidates: {k!r} is not a number from 1 to "
                               f"{self.limits.max_candidates}")
        return k

    def _check_specs(self, specs: Sequence[Any]) -> None:
        if len(specs) > self.limits.max_specs:
            raise RequestError(f"rules: {len(specs)} specs > {self.limits.max_specs} per "
                               "request")


class _CachedParser:
    """The leased parser behind the explorer's parse cache (a :class:`~lit.interface.Parser`)."""

    def __init__(self, explorer: Explorer, backend: Any) -> None:
        self._explorer, self._backend = explorer, backend

    def parse(self, sentence: str) -> Any:
        return self._explorer._parse(self._backend, sentence)


class _CachedGenerator:
    """The leased generator behind the explorer's realization cache."""

    def __init__(self, explorer: Explorer, backend: Any) -> None:
        self._explorer, self._backend = explorer, backend

    def generate(self, m: Any) -> Any:
        from lit.mrs import decode_mrs

        return self._explorer._generate(self._backend, decode_mrs(m))


class _Locked:
    """A loaded reranker whose scoring takes a lock (requests share one model)."""

    def __init__(self, reranker: Any, lock: threading.Lock) -> None:
        self._reranker, self._lock = reranker, lock
        self.loaded = True

    def score(self, sentences: Any) -> list[float]:
        with self._lock:
            return list(self._reranker.score(sentences))
