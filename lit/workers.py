"""Worker processes: the ACE-bound stage of a run, in other processes.

``lit transform -j N`` (and ``--engine ray``) hand ACE's work to workers
that own their own ACE processes (:func:`open_worker`), one request at a
time (:func:`run_unit`): a *parse unit* parses a sentence and selects its
reading; a *generation unit* realizes one distinct transformed MRS. The
main process applies the chains (cheap, pure), sends each distinct MRS to
be realized once, however many chains, specs and items share it, ranks
with the LM and writes the records in input order. Spreading the work per
request, not per item, keeps both workers busy while one sentence has many
chains to realize. :func:`worker_map` builds the map function a
:class:`~lit.pipeline.Transformer` takes as ``prepare_map``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from delphin.codecs import simplemrs

from lit.errors import ACEError
from lit.records import Parsed

if TYPE_CHECKING:  # pragma: no cover
    from lit.pipeline import Transformer

__all__ = ["ENGINES", "UNITS", "open_worker", "run_unit", "parsed_to_wire", "parsed_from_wire",
           "worker_map"]

#: where workers run: processes on this machine, or actors on a Ray cluster
ENGINES = ("local", "ray")

#: the kinds of work unit: ``("parse", sentence)``, ``("generate", SimpleMRS line)``
UNITS = ("parse", "generate")


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
    from lit.pipeline import Transformer

    return Transformer(**kwargs).open()


def run_unit(transformer: Transformer, unit: tuple[str, str]) -> Any:
    """Do one unit of ACE work in a worker; picklable results.

    ``("parse", sentence)`` returns ``("parse", wire, requests)`` with the
    :class:`~lit.records.Parsed` as :func:`parsed_to_wire`;
    ``("generate", mrs)`` returns ``("generate", GenerationResult,
    requests)``. *requests* counts the ACE requests the unit made
    (:attr:`Transformer.requests`). An :class:`~lit.errors.ACEError` (ACE
    cannot run at all, e.g. a bad image) is returned as ``("ACEError",
    message, {})`` and raised again by the main process, so the run stops
    instead of turning every item into an error record.
    """
    kind, payload = unit
    before = dict(transformer.requests)
    try:
        if kind == "parse":
            value: Any = parsed_to_wire(transformer.parse(payload))
        elif kind == "generate":
            value = transformer.realize(payload)
        else:
            raise ValueError(f"unknown work unit {kind!r}; expected one of {UNITS}")
    except ACEError as exc:
        return "ACEError", str(exc), {}
    spent = {k: n - before.get(k, 0) for k, n in transformer.requests.items()
             if n != before.get(k, 0)}
    return kind, value, spent


def parsed_to_wire(parsed: Parsed) -> tuple[Any, ...]:
    """*parsed* as picklable plain data (the MRS as SimpleMRS)."""
    text = None if parsed.mrs is None else simplemrs.encode(parsed.mrs, lnk=False)
    return (parsed.sentence, parsed.readings, parsed.selected, text, parsed.error,
            parsed.failure, parsed.selection)


def parsed_from_wire(wire: tuple[Any, ...]) -> Parsed:
    """The :class:`~lit.records.Parsed` of :func:`parsed_to_wire`."""
    sentence, readings, selected, text, error, failure, selection = wire
    m = None if text is None else simplemrs.decode(text)
    return Parsed(sentence, readings, selected, m, error, failure, selection)


def worker_map(
    options: Mapping[str, Any],
    *,
    engine: str = "local",
    workers: int | None = None,
    address: str | None = None,
) -> Callable[[Iterable[Any]], Iterator[Any]]:
    """The ``prepare_map`` of a :class:`~lit.pipeline.Transformer` whose
    ACE-bound stage runs in *workers* processes (or Ray actors); one local
    worker is a thread of the calling process (:func:`lit.engine.ordered_map`),
    so the main process ranks and writes while ACE works.

    Args:
        options: the worker transformers' keyword arguments; ``grammar`` must
            be a resolved :class:`~lit.grammar.Grammar` (resolved and
            checksummed once, not once per worker) and ``cache`` a path
        engine: ``"local"`` or ``"ray"``
        workers: processes or actors (default: the CPU count, or the
            cluster's CPUs)
        address: the Ray cluster to join (``engine="ray"`` only)
    """
    backend: Any
    extra: dict[str, Any] = {}
    if engine == "ray":
        from lit import ray_engine as backend

        backend.import_ray()  # fail now, with the install hint, not inside the run
        extra["address"] = address
    elif engine == "local":
        from lit import engine as backend

        workers = workers or backend.default_workers()
    else:
        raise ValueError(f"unknown engine {engine!r}; choose from {', '.join(ENGINES)}")
    # units are small and many, and the pipeline puts their results in order
    # itself: outcomes come as they finish and a worker takes a unit only when
    # it is free, so a long unit holds back nothing but itself
    return partial(backend.ordered_map, run_unit, workers=workers, init=open_worker,
                   initargs=(dict(options),), max_pending=8 * (workers or 2), prefetch=1,
                   ordered=False, **extra)
