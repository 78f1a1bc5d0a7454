"""The transformation pipeline: parse → apply chain → generate → rerank → label.

:class:`Transformer` owns the backends (an ACE parser and generator, built
from :mod:`lit.ace` unless injected, and an optional
:class:`~lit.rerank.Reranker`) and turns sentences, NLI pairs and whole
datasets into transformed, labelled records. :func:`augment_nli` is the
dataset-level entry point.

Work is shared: each distinct sentence is parsed once, each distinct
(sentence, chain) is applied and ranked once, each distinct transformed MRS
is realized once (``p`` and ``p+-prog`` often give the same MRS), whichever
items and specs need it, and the candidates of a whole chunk of items are
scored by the language model in one batched call. With workers, ACE's work
is spread request by request (:class:`_Schedule`).

Every (item, spec) yields exactly one record whose ``status`` is ``ok``,
``skipped`` or ``error``; skips and errors carry a ``reason`` of the form
``"<category>: <detail>"`` with a category from :data:`CATEGORIES`. A
:class:`Report` counts them per spec; its counts add up to items × specs.

Example (needs ACE and an installed grammar):
    >>> with Transformer("erg-1214", reranker=None) as t:  # doctest: +SKIP
    ...     t.transform_sentence("The dog chased the cat.", "f").sentence
    'The dog will chase the cat.'

Why this module is long: :class:`Transformer` is the orchestration of the stages
(lifecycle of the backends, shared work across items and specs, chunked LM batches,
worker outcomes); the records, formats, worker protocol and selection live in their
own modules.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from delphin.codecs import simplemrs
from delphin.mrs import MRS

from lit._iterables import chunked
from lit.ace import DEFAULT_MAX_REALIZATIONS
from lit.cache import ParseCache
from lit.choose import REORDERING_PHENOMENA, Choice, choose
from lit.engine import WAIT
from lit.errors import ACEError, LitError, SpecError
from lit.formats.hf import label_names as _dataset_label_names
from lit.generate import (
    Candidate,
    Expectation,
    Realizations,
    clean_realizations,
    respellings,
)
from lit.grammar import (
    Grammar,
    GrammarProfile,
    default_grammar,
    lit_home,
    load_profile,
    resolve_grammar,
    with_checksum,
)
from lit.interface import GenerationResult, Generator, Parser, TransientFailure
from lit.nli import LabelResult, LabelTable
from lit.parse import DEFAULT_SELECT
from lit.records import (
    NliFields,
    Pair,
    Parsed,
    Report,
    SentenceResult,
    _key_seen,
    pair_item,
    pair_record,
    sentence_item,
    sentence_record,
)
from lit.rerank import Reranker, rank_candidates
from lit.rules import RuleSet
from lit.spec import Spec, parse_specs

__all__ = [
    "Transformer",
    "augment_nli",
]

logger = logging.getLogger(__name__)


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
    reading: int | None = None
    selection: str | None = None
    requested: int | None = None  # a reading asked for instead of the selected one
    parsed: Parsed | None = None  # the sentence's parse and selected reading
    line: str | None = None       # the transformed MRS as sent to ACE (generation key)


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
        select: reading selection: ``"ranked"`` (default), ``"roundtrip"`` or
            ``"first"`` (see :mod:`lit.parse`)
        candidates: keep this many ranked candidates in records (``None``:
            only the chosen sentence)
        verify: re-parse the chosen sentence and check the intended change
            (index properties, new predicates and arguments of the
            transformed MRS); failing candidates fall to the next
        keep_mrs: add transformed MRSs to records
        n: readings per parse (ACE's ``-n``); round-trip selection without a
            ranking model needs more than the first few
        home: the lit data directory (default: ``LIT_HOME`` in *env*, else
            the per-user data directory)
        env: the environment for grammar resolution (``LIT_ACE``,
            ``LIT_GRAMMAR_<NAME>``) and the ACE processes (default:
            ``os.environ``, as for the CLI)
        ace_options: more keyword arguments for the ACE processes
        chunk_size: items processed (and LM-batched) together
        cache_size: distinct sentences/chains remembered
        cache: a :class:`~lit.cache.ParseCache`; the ACE parser started on
            entry then looks sentences up there first (``None``: no cache)
        prepare_map: runs ACE's work elsewhere, e.g. in worker processes
            (:func:`~lit.workers.worker_map`): called once per run with an
            iterable of work units (``("parse", sentence)``, ``("generate",
            mrs)``; the iterable may yield :data:`lit.engine.WAIT`), it must
            yield one :class:`~lit.engine.Outcome` per unit, in any order,
            whose value is :func:`~lit.workers.run_unit`'s result (and pass
            ``WAIT`` on when nothing is in flight), as
            :func:`lit.engine.ordered_map` does. Applying chains, ranking,
            verification and labelling stay in this process, so the LM is
            loaded once and scores the candidates of whole chunks together.
        max_words: sentences with more whitespace-separated words are not
            parsed (never sent to ACE) and skipped as ``no-parse: too long``
        max_realizations: an MRS with more realizations is not realized
            (``no-realization: more than N realizations``; see
            :data:`lit.ace.DEFAULT_MAX_REALIZATIONS`; ``None``: no cap)
    """

    def __init__(
        self,
        grammar: Grammar | GrammarProfile | str | None = None,
        *,
        rules: RuleSet | None = None,
        reranker: Reranker | str | os.PathLike[str] | None = None,
        parser: Parser | None = None,
        generator: Generator | None = None,
        labels: LabelTable | None = None,
        select: str = DEFAULT_SELECT,
        candidates: int | None = None,
        verify: bool = False,
        keep_mrs: bool = False,
        n: int | None = 10,
        home: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        ace_options: Mapping[str, Any] | None = None,
        chunk_size: int = 64,
        cache_size: int = 20000,
        cache: ParseCache | None = None,
        prepare_map: Callable[[Iterable[Any]], Iterator[Any]] | None = None,
        max_words: int | None = None,
        max_realizations: int | None = DEFAULT_MAX_REALIZATIONS,
    ) -> None:
        if rules is None:
            from lit.rules import RuleSet

            rules = RuleSet.load()
        self.rules = rules
        self._grammar_arg = grammar
        # like the CLI, the API honours LIT_HOME, LIT_ACE and LIT_GRAMMAR_<NAME>
        self.env: dict[str, str] = dict(os.environ if env is None else env)
        self.home = Path(home) if home is not None else lit_home(self.env)
        self.parser: Parser | None = parser
        self.generator: Generator | None = generator
        #: realizes readings to select one (a second ACE process, whose ``-n`` stops
        #: unpacking at :data:`~lit.parse.MAX_ROUNDTRIP_REALIZATIONS`); ``None``: the
        #: generator does it
        self.roundtrip_generator: Generator | None = None
        self._injected = (parser, generator)
        self.profile: GrammarProfile | None = None
        self.grammar: Grammar | None = None
        self._labels = labels
        self.select = select
        self.candidates = candidates
        self.verify = verify
        self.keep_mrs = keep_mrs
        self.n = n
        self.max_words = max_words
        self.max_realizations = max_realizations
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
        self._generations = _LRU(cache_size)
        #: ACE requests made so far, by kind: ``parse`` (sent to ACE),
        #: ``parse-cached`` (answered by the parse cache), ``roundtrip`` (a
        #: generation to select a reading), ``generate`` (one per distinct
        #: transformed MRS), ``verify`` (a re-parse of a chosen sentence)
        self.requests: Counter[str] = Counter()
        self._entered = False
        self._preloaded = False

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
        # parser only to re-parse candidates (--verify, or the voice check of a
        # grammar that leaves voice open), and no generator
        need_parser = self.parser is None and (
            self.prepare_map is None or self.verify or self._voice_open())
        need_generator = self.generator is None and self.prepare_map is None
        try:
            if need_parser or need_generator:
                from lit.ace import AceGenerator, AceParser

                assert self.grammar is not None  # resolved: a backend is missing
                ace = str(self.grammar.ace) if self.grammar.ace is not None else "ace"
                if need_parser:
                    self.parser = AceParser(self.grammar.image, executable=ace, n=self.n,
                                            env=self.env, **self.ace_options)
                    self._started.append(self.parser)
                    if self.cache is not None:
                        self.parser = self._cached(self.parser)
                if need_generator:
                    self.generator = AceGenerator(self.grammar.image, executable=ace,
                                                  env=self.env,
                                                  max_realizations=self.max_realizations,
                                                  **self.ace_options)
                    self._started.append(self.generator)
                    if self.select != "first":  # "first" needs no round trips
                        self.roundtrip_generator = AceGenerator(
                            self.grammar.image, executable=ace, env=self.env,
                            max_realizations=self._roundtrip_cap(), **self.ace_options)
                        self._started.append(self.roundtrip_generator)
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
        self.roundtrip_generator = None
        if self._loaded_reranker and self.reranker is not None:
            self.reranker.close()
            self._loaded_reranker = False
        self._entered = False

    def _cached(self, parser: Parser) -> Parser:
        from lit.cache import CachedParser, parser_cache_key

        assert self.grammar is not None and self.cache is not None
        self.grammar = with_checksum(self.grammar)
        sha = self.grammar.image_sha256
        assert sha is not None
        return CachedParser(parser, self.cache, parser_cache_key(parser, sha))

    def _resolve_grammar(self) -> None:
        g = self._grammar_arg
        if isinstance(g, Grammar):
            self.grammar, self.profile = g, g.profile
            return
        if isinstance(g, GrammarProfile):
            self.profile = g
            if self.parser is None or self.generator is None:
                self.grammar = resolve_grammar(g.name, home=self.home, env=self.env)
            return
        name = g if g is not None else default_grammar(home=self.home)
        if self.parser is not None and self.generator is not None:
            self.profile = load_profile(name, home=self.home)
            return
        self.grammar = resolve_grammar(name, home=self.home, env=self.env)
        self.profile = self.grammar.profile

    def _backend(self, kind: str) -> Any:
        """The open parser or generator (*kind*); a LitError if there is none."""
        backend = self.parser if kind == "parser" else self.generator
        if backend is None:
            raise LitError(f"the Transformer has no {kind}: open it first (a 'with' block)")
        return backend

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

    def parse(self, sentence: str, reading: int | None = None) -> Parsed:
        """Parse *sentence* and select a reading (cached); with *reading*, use
        that reading (0-based) instead.

        Raises:
            LitError: *reading* is not a reading of the sentence
        """
        self._require()
        from lit.mrs import decode_mrs, strip_lnk

        if reading is not None:
            result = self._parse_request(sentence)
            n = len(result.readings)
            if not 0 <= reading < n:
                raise LitError(f"reading {reading}: {sentence!r} has {n} readings"
                               + (f" (0 to {n - 1})" if n else ""))
            return Parsed(sentence, n, reading,
                          strip_lnk(decode_mrs(result.readings[reading].mrs)),
                          selection=f"reading {reading} of {n}, as asked")
        cached = self._parses.fetch(sentence)
        if cached is not None:
            return cached
        result = self._parse_request(sentence)
        failure = getattr(result, "failure", None)
        if getattr(result, "transient", False):
            parsed = Parsed(sentence, len(result.readings), None, None, result.error, failure)
        elif result.error and not result.readings:
            parsed = Parsed(sentence, 0, None, None, result.error, failure)
        else:
            try:
                chosen = self._select(sentence, result)
            except TransientFailure as exc:
                parsed = Parsed(sentence, len(result.readings), None, None, exc.detail,
                                exc.failure)
            else:
                selected = chosen.index
                m = None if selected is None else strip_lnk(
                    decode_mrs(result.readings[selected].mrs))
                parsed = Parsed(sentence, len(result.readings), selected, m,
                                selection=chosen.reason)
        self._keep_parse(sentence, parsed)
        return parsed

    def _keep_parse(self, sentence: str, parsed: Parsed) -> None:
        if not parsed.transient:  # a cut-short answer is tried again next time
            self._parses.put(sentence, parsed)

    def _keep_generation(self, line: str, result: GenerationResult) -> None:
        if not getattr(result, "transient", False):  # cut short: not all realizations
            self._generations.put(line, result)

    def _select(self, sentence: str, result: Any) -> Any:
        """:func:`lit.parse.select` on *result*, remembered in the parse cache
        (if any) next to the parse, so a cached sentence costs no round trip."""
        from lit.parse import Selection, select

        parser = self.parser
        key = getattr(parser, "key", None)
        cache = getattr(parser, "cache", None)
        cap = self._roundtrip_cap()  # a reading with more realizations does not round-trip
        if key is not None and cache is not None:
            from lit.cache import canonical_options
            from lit.parse import LARGE_READING_EPS, MAX_ROUNDTRIPS

            key = dataclasses.replace(key, options=canonical_options(
                {"parse": key.options, "select": self.select, "limit": MAX_ROUNDTRIPS,
                 "realizations": cap, "large": LARGE_READING_EPS}))
            known = cache.get(key, sentence)
            if known is not None:
                return Selection.from_dict(known)
        backend = self.roundtrip_generator or self.generator
        generator = None if backend is None else _Counted(backend, self.requests, "roundtrip")
        chosen = select(result, self.select, sentence=sentence, generator=generator,
                        max_realizations=cap)
        if key is not None and cache is not None:  # an answer (transient ones raise)
            cache.put(key, sentence, chosen.to_dict())
        return chosen

    def _roundtrip_cap(self) -> int | None:
        """The most realizations a round-tripping reading may have: the
        selection's bound, or the generator's cap if that is lower."""
        from lit.parse import MAX_ROUNDTRIP_REALIZATIONS

        caps = [c for c in (MAX_ROUNDTRIP_REALIZATIONS, getattr(
            self.generator, "max_realizations", self.max_realizations)) if c is not None]
        return min(caps) if caps else None

    def _parse_request(self, sentence: str, kind: str = "parse") -> Any:
        """The parser's result for *sentence*, counted in :attr:`requests`."""
        parser = self._backend("parser")
        hits = getattr(parser, "hits", 0)
        result = parser.parse(sentence)
        cached = getattr(parser, "hits", 0) > hits
        self.requests[f"{kind}-cached" if cached else kind] += 1
        return result

    def realize(self, line: str) -> GenerationResult:
        """ACE's realizations of one transformed MRS (*line*, as
        :func:`~lit.mrs.mrs_for_generation` writes it), remembered: each
        distinct MRS is sent to ACE once, whichever chains, specs and items
        share it. Transient results (cut short) are not remembered.
        """
        self._require()
        known = self._generations.fetch(line)
        if known is not None:
            return known
        result = self._backend("generator").generate(line)
        self.requests["generate"] += 1
        self._keep_generation(line, result)
        return result

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
        result = self._backend("generator").generate(m)
        if result.error:
            raise LitError(f"generation failed: {result.error}")
        return clean_realizations(result.surfaces)

    def rerank(self, groups: Sequence[Sequence[str]]) -> list[list[Candidate]]:
        """Rank candidate lists (LM perplexity, or grammar order without an LM)."""
        return rank_candidates(groups, self.reranker)

    # -- sentences -----------------------------------------------------------

    def transform_sentence(self, sentence: str, chain: str | None, *,
                           reading: int | None = None) -> SentenceResult:
        """Transform one sentence by *chain* (``None`` or ``"o"``: untouched).

        *reading* (0-based) transforms that reading instead of the selected one.
        """
        if chain is None or chain == "o":
            return SentenceResult(sentence, None, "ok", sentence=sentence,
                                  candidates=(Candidate(sentence),))
        canonical = "+".join(r.name for r in self.rules.parse_chain(chain))
        job = _Job(sentence, canonical, chain, requested=reading)
        if reading is None:
            self._run_jobs([job])
        else:  # not the selected reading: nothing to share with other items
            self._require()
            self._prepare(job, {})
            self._finish([job], remember=False)
        assert job.result is not None
        return job.result

    def transform_sentences(
        self, items: Iterable[Any], specs: str | Sequence[Spec], *,
        done: Container[tuple[Any, ...]] = (),
    ) -> Iterator[dict[str, Any]]:
        """Records for plain sentences: *items* are strings, ``(id, sentence)``
        pairs or :class:`~lit.formats.jsonl.Skipped` lines; one record per item and spec.

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
                    item_id, sentence, invalid = sentence_item(pos, item)
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
        res = None if invalid is not None else self._side(jobs, sentence, spec.premise,
                                                          spec.key[0])
        return sentence_record(item_id, sentence, spec, res, invalid=invalid,
                               candidates=self.candidates, keep_mrs=self.keep_mrs)

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
            items: mappings (or :class:`~lit.formats.jsonl.Skipped` lines)
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
                    pair = pair_item(pos, item, flds, label_names, table)
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

    def _pair_record(self, pair: Pair, spec: Spec, lab: LabelResult | None,
                     jobs: dict[tuple[str, str], _Job]) -> dict[str, Any]:
        sides = None
        if pair.invalid is None and lab is not None and lab.label is not None:
            sides = (self._side(jobs, pair.premise, spec.premise, spec.key[0]),
                     self._side(jobs, pair.hypothesis, spec.hypothesis, spec.key[1]))
        return pair_record(pair, spec, lab, sides, candidates=self.candidates,
                           keep_mrs=self.keep_mrs)

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
            res = dataclasses.replace(res, chain="+".join(written))
        return res

    def _run_jobs(self, jobs: list[_Job]) -> None:
        """Parse, apply, generate, rank (one LM call) and verify *jobs*."""
        todo = self._lookup(jobs)
        # one parse per sentence here, as with workers (_Schedule): a transient
        # failure is not kept in the parse cache, and must not be met once per chain
        parses: dict[tuple[str, int | None], Parsed] = {}
        for job in todo:
            self._prepare(job, parses)
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
        """Yield each ``(state, jobs)`` of *chunks* once all its jobs are done."""
        if not self._preloaded:  # choosing realizations needs nltk: import it meanwhile
            from lit.generate import preload

            preload()
            self._preloaded = True
        if self.prepare_map is None:
            for state, jobs in chunks:
                self._run_jobs(list(jobs.values()))
                yield state, jobs
            return
        yield from _Schedule(self, chunks).run()

    def _finish(self, todo: list[_Job], *, remember: bool = True) -> None:
        """Score (one LM call), choose, verify and (*remember*) keep prepared jobs."""
        pending = [j for j in todo if j.result is None]
        scores = None
        if self.reranker is not None and pending:
            texts = list(dict.fromkeys(
                s for j in pending
                for s in (j.sentence, *j.realizations.candidates)))  # type: ignore[union-attr]
            scores = dict(zip(texts, self.reranker.score(texts), strict=True))
        for job in pending:
            assert job.realizations is not None
            reorders = any(r.phenomenon in REORDERING_PHENOMENA
                           for r in self.rules.parse_chain(job.chain))
            self._choose(job, choose(job.sentence, job.realizations.candidates,
                                     scores=scores, reorders=reorders))
        for job in todo if remember else ():
            if job.result is not None and job.result.status != "error":
                self._jobs.put((job.sentence, job.chain), job.result)  # failures: next time

    # the ACE-bound stage of one job, in steps: here in one go (_prepare), or
    # spread over workers request by request (_Schedule)

    def _prepare(self, job: _Job, parses: dict[tuple[str, int | None], Parsed]) -> None:
        """The job's ACE-bound stage; *parses* holds the parses of the jobs run with it."""
        if self._check(job):
            return
        key = (job.sentence, job.requested)
        parsed = parses.get(key)
        if parsed is None:
            parsed = parses[key] = self.parse(job.sentence, job.requested)
        self._apply(job, parsed)
        if job.line is not None:
            self._realized(job, self.realize(job.line))

    def _done(self, job: _Job, status: str, reason: str, line: str | None = None) -> None:
        job.result = SentenceResult(job.sentence, job.written, status, reason, mrs=line,
                                    reading=job.reading, selection=job.selection)

    def _check(self, job: _Job) -> bool:
        """Settle a job whose sentence is not sent to ACE; ``True`` if settled."""
        if not job.sentence.strip():
            self._done(job, "skipped", "invalid-input: empty sentence")
            return True
        words = len(job.sentence.split())
        if self.max_words is not None and words > self.max_words:
            self._done(job, "skipped", f"no-parse: too long: {words} words > max_words "
                                       f"{self.max_words} (not sent to ACE)")
            return True
        return False

    def _apply(self, job: _Job, parsed: Parsed) -> None:
        """Apply the job's chain to the selected reading: sets :attr:`_Job.line`
        (what to realize), or settles the job."""
        from lit.mrs import mrs_for_generation
        from lit.rules import apply_chain

        job.parsed = parsed
        job.reading, job.selection = parsed.selected, parsed.selection
        if parsed.mrs is None:
            return self._done(job, parsed.status, parsed.reason or "no-parse: no reading")
        applied = apply_chain(parsed.mrs, self.rules.parse_chain(job.chain), self.profile)
        if applied.mrs is None:
            return self._done(job, "skipped", f"inapplicable: {applied.reason}")
        job.mrs = applied.mrs
        job.line = mrs_for_generation(applied.mrs)

    def _realized(self, job: _Job, result: GenerationResult) -> None:
        """Take the realizations of the job's MRS: candidates to rank, or a settled job."""
        assert job.mrs is not None and job.parsed is not None and job.parsed.mrs is not None
        text = simplemrs.encode(job.mrs, lnk=False)
        if getattr(result, "transient", False):  # cut short: not all realizations
            return self._done(job, "error", f"{result.failure}: generation: {result.error}",
                              text)
        if result.failure == "overgeneration":  # an answer about this MRS
            return self._done(job, "skipped", f"no-realization: {result.error}", text)
        if result.error and not result.surfaces:
            return self._done(job, "error", f"error: generation failed: {result.error}", text)
        job.realizations = clean_realizations(
            result.surfaces, job.sentence, spellings=respellings(job.mrs, job.sentence))
        if not job.realizations.candidates:
            why = ("the grammar realizes nothing" if not job.realizations.total else
                   f"all {job.realizations.total} realizations had surface blemishes")
            job.realizations = None
            return self._done(job, "skipped", f"no-realization: {why}", text)
        if self.verify:
            job.expectation = Expectation.derive(job.parsed.mrs, job.mrs)
        elif self._voice_open() and not any(
                r.phenomenon == "voice" for r in self.rules.parse_chain(job.chain)):
            # the grammar realizes an MRS without ICONS in either voice: keep the
            # original's (checked by re-parsing the chosen candidate)
            job.expectation = Expectation.of_voice(job.mrs)

    def _choose(self, job: _Job, choice: Choice) -> None:
        text = None if job.mrs is None else simplemrs.encode(job.mrs, lnk=False)
        ranked = list(choice.candidates)
        verified: list[tuple[str, bool]] = []

        def result(status: str, reason: str | None, chosen: list[Candidate]) -> None:
            job.result = SentenceResult(
                job.sentence, job.written, status, reason,
                chosen[0].sentence if chosen else None, tuple(chosen), text, job.reading,
                job.selection, job.realizations, choice.rejected, tuple(verified),
                None if job.expectation is None else job.expectation.describe())

        if not ranked:
            return result("skipped", f"no-realization: {choice.reason}", [])
        chosen = list(ranked)
        if job.expectation is not None:
            try:
                for c in ranked:
                    verified.append((c.sentence, self._verified(c.sentence, job.expectation)))
            except TransientFailure as exc:
                return result("error", f"{exc.failure}: --verify: {exc.detail}", [])
            passing = [c for c, (_, ok) in zip(ranked, verified, strict=True) if ok]
            if not passing:
                who = "--verify" if self.verify else "the voice check (a re-parse)"
                return result("skipped", f"no-realization: {who} rejected all {len(ranked)} "
                                         f"candidates ({job.expectation.describe()})", [])
            chosen = passing + [c for c in ranked if c not in passing]
        result("ok", None, chosen)

    def _voice_open(self) -> bool:
        """Whether the grammar leaves voice open in an MRS without ICONS."""
        from lit.transform import Semantics

        return Semantics.from_profile(self.profile).passive.startswith("icons:")

    def _verified(self, sentence: str, expectation: Expectation) -> bool:
        from lit.mrs import decode_mrs, strip_lnk

        result = self._parse_request(sentence, "verify")
        for reading in result.readings:
            try:
                m = strip_lnk(decode_mrs(reading.mrs))
            except ValueError:
                continue
            if expectation.check(m):
                return True
        if getattr(result, "transient", False):
            raise TransientFailure(result.failure, f"re-parse of {sentence!r}: {result.error}")
        logger.debug("--verify: %r lacks %s", sentence, expectation.describe())
        return False


class _Counted:
    """A generator whose requests are counted in *counter* under *kind*."""

    def __init__(self, generator: Generator, counter: Counter[str], kind: str) -> None:
        self.generator, self.counter, self.kind = generator, counter, kind

    def generate(self, m: MRS | str) -> GenerationResult:
        self.counter[self.kind] += 1
        return self.generator.generate(m)


@dataclass
class _Chunk:
    state: Any
    jobs: dict[tuple[str, str], _Job]
    todo: list[_Job]
    open: int = 0  # jobs not yet prepared


class _Schedule:
    """The ACE-bound stage of chunks of jobs, spread over a transformer's
    ``prepare_map`` request by request.

    A parse unit goes out for each distinct sentence whose parse is not
    known; when its parse comes back, the chains of its jobs are applied
    here, and a generation unit goes out for each distinct transformed MRS
    not realized before or already on its way. Chunks come back in input
    order once all their jobs are prepared, and are ranked then. At most
    :attr:`AHEAD` chunks are read ahead of the one being finished.
    """

    AHEAD = 2

    def __init__(self, transformer: Transformer,
                 chunks: Iterator[tuple[Any, dict[tuple[str, str], _Job]]]) -> None:
        self.t = transformer
        self.chunks = chunks
        self.exhausted = False
        self.built: deque[_Chunk] = deque()
        self.parses: deque[tuple[str, str]] = deque()       # units to hand out
        self.generations: deque[tuple[str, str]] = deque()  # (before parses: they finish items)
        self.waiting: dict[tuple[str, str], list[_Job]] = {}  # unit -> jobs it settles
        self.owner: dict[int, _Chunk] = {}

    def run(self) -> Iterator[tuple[Any, dict[tuple[str, str], _Job]]]:
        assert self.t.prepare_map is not None
        outcomes = iter(self.t.prepare_map(self._units()))
        ended = False
        try:
            while True:
                while self.built and self.built[0].open == 0:
                    chunk = self.built.popleft()
                    self.t._finish(chunk.todo)
                    yield chunk.state, chunk.jobs
                if ended or (self.exhausted and not self.built):
                    if self.built:
                        raise RuntimeError("the work units ended before the jobs were done")
                    return
                outcome = next(outcomes, None)
                if outcome is None:
                    ended = True
                elif outcome is not WAIT:
                    self._absorb(outcome)
        finally:
            close = getattr(outcomes, "close", None)
            if close is not None:
                close()

    def _units(self) -> Iterator[Any]:
        while True:
            if self.generations or self.parses:
                yield (self.generations or self.parses).popleft()
            elif not self.exhausted and len(self.built) < self.AHEAD:
                try:
                    state, jobs = next(self.chunks)
                except StopIteration:
                    self.exhausted = True
                    continue
                self._admit(state, jobs)
                if not (self.generations or self.parses):
                    yield WAIT  # nothing to send: let the consumer finish the chunk
            elif self.exhausted and not self.waiting:
                return
            else:
                yield WAIT

    def _admit(self, state: Any, jobs: dict[tuple[str, str], _Job]) -> None:
        chunk = _Chunk(state, jobs, self.t._lookup(jobs.values()))
        self.built.append(chunk)
        for job in chunk.todo:
            chunk.open += 1
            self.owner[id(job)] = chunk
        for job in chunk.todo:
            if self.t._check(job):
                self._settled(job)
                continue
            parsed = self.t._parses.fetch(job.sentence)
            if parsed is not None:
                self._parsed(job, parsed)
            else:
                self._wait(("parse", job.sentence), job, self.parses)

    def _wait(self, unit: tuple[str, str], job: _Job, queue: deque[tuple[str, str]]) -> None:
        jobs = self.waiting.get(unit)
        if jobs is None:
            self.waiting[unit] = jobs = []
            queue.append(unit)
        jobs.append(job)

    def _parsed(self, job: _Job, parsed: Parsed) -> None:
        self.t._apply(job, parsed)
        if job.line is None:
            return self._settled(job)
        known = self.t._generations.fetch(job.line)
        if known is not None:
            self.t._realized(job, known)
            return self._settled(job)
        self._wait(("generate", job.line), job, self.generations)

    def _settled(self, job: _Job) -> None:
        self.owner.pop(id(job)).open -= 1

    def _absorb(self, outcome: Any) -> None:
        from lit.workers import parsed_from_wire

        unit = outcome.item
        jobs = self.waiting.pop(unit)
        if not outcome.ok:
            for job in jobs:
                self.t._done(job, "error", f"error: {outcome.error}")
                self._settled(job)
            return
        kind, value, spent = outcome.value
        if kind == "ACEError":
            raise ACEError(value)
        self.t.requests.update(spent)
        if kind == "parse":
            parsed = parsed_from_wire(value)
            self.t._keep_parse(unit[1], parsed)
            for job in jobs:
                self._parsed(job, parsed)
            return
        self.t._keep_generation(unit[1], value)
        for job in jobs:
            self.t._realized(job, value)
            self._settled(job)


# -- items -------------------------------------------------------------------


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
    label_names = _dataset_label_names(examples, None if fields is None else fields.label)
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
