"""Worker processes: the ACE-bound stage of a run, in other processes.

``lit transform -j N`` (and ``--engine ray``) run the parse, apply and
generate stage of each sentence in a worker that owns its own ACE processes
(:func:`open_worker`, :func:`prepare_jobs`); the main process absorbs the
results (:func:`absorb`), ranks with the LM and writes the records in input
order. :func:`worker_map` builds the map function a
:class:`~lit.pipeline.Transformer` takes as ``prepare_map``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from delphin.codecs import simplemrs

from lit.errors import ACEError
from lit.records import SentenceResult

if TYPE_CHECKING:  # pragma: no cover
    from lit.pipeline import Transformer, _Job

__all__ = ["ENGINES", "open_worker", "prepare_jobs", "absorb", "worker_map"]

#: where workers run: processes on this machine, or actors on a Ray cluster
ENGINES = ("local", "ray")


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


def prepare_jobs(transformer: Transformer, jobs: Sequence[_Job]) -> Any:
    """Run the ACE-bound stage (parse, apply chain, generate) of *jobs*.

    The jobs share one sentence, which is parsed once. Returns, for each
    job, what :meth:`Transformer._run_chunks` needs back, picklable (the MRS
    as SimpleMRS text). An :class:`~lit.errors.ACEError` (ACE cannot run at
    all, e.g. a bad image) is returned as ``("ACEError", message)`` and
    raised again by the main process, so the run stops instead of turning
    every item into an error record.
    """
    out: list[Any] = []
    for job in jobs:
        try:
            transformer._prepare(job)
        except ACEError as exc:
            return "ACEError", str(exc)
        text = None if job.mrs is None else simplemrs.encode(job.mrs, lnk=False)
        out.append((job.result, job.realizations, job.expectation, text, job.reading,
                    job.selection))
    return out


def absorb(jobs: Sequence[_Job], outcome: Any) -> None:
    """Copy a worker's :func:`prepare_jobs` result (an Outcome) into *jobs*."""
    if not outcome.ok:
        for job in jobs:
            job.result = SentenceResult(job.sentence, job.written, "error",
                                        f"error: {outcome.error}")
        return
    if isinstance(outcome.value, tuple) and outcome.value[0] == "ACEError":
        raise ACEError(outcome.value[1])
    for job, (result, realizations, expectation, text, reading, selection) in zip(
            jobs, outcome.value, strict=True):
        job.result, job.realizations, job.expectation = result, realizations, expectation
        job.reading, job.selection = reading, selection
        job.mrs = None if text is None else simplemrs.decode(text)


def worker_map(
    options: Mapping[str, Any],
    *,
    engine: str = "local",
    workers: int | None = None,
    address: str | None = None,
) -> Callable[[Iterable[Any]], Iterator[Any]] | None:
    """The ``prepare_map`` of a :class:`~lit.pipeline.Transformer` whose
    ACE-bound stage runs in *workers* processes (or Ray actors), or ``None``
    to run it in the calling process (one local worker).

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
        if workers == 1:
            return None
    else:
        raise ValueError(f"unknown engine {engine!r}; choose from {', '.join(ENGINES)}")
    return partial(backend.ordered_map, prepare_jobs, workers=workers, init=open_worker,
                   initargs=(dict(options),), **extra)
