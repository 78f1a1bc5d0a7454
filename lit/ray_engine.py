"""The :func:`lit.engine.ordered_map` contract on a Ray cluster.

``lit transform --engine ray`` runs the per-item work in Ray actors instead
of local worker processes. Each actor builds its per-process state once
(with *init*; persistent ACE processes) and keeps it for the whole run, so a
cluster of many machines is used like one big worker pool. The results are
the same :class:`~lit.engine.Outcome` objects, in input order, with the same
bounded, lazy consumption of the input, as with the local engine.

Ray is an optional dependency (``pip install 'lit-mrs[ray]'``), imported
only when this engine is used. :func:`ordered_map` connects to a running
cluster when *address* is given (e.g. ``"auto"`` on a cluster node or
``"ray://head:10001"``) and otherwise starts a local Ray instance, which it
shuts down again at the end. If Ray is already initialized in this process,
that instance is used as is.

How to run on a cluster is described in the README ("Throughput and scale").
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from lit.engine import (
    EngineError,
    Outcome,
    _error_text,
    _finish,
    _init_failure,
    _open_state,
    _ordered_window,
    _raise_init_failure,
)
from lit.errors import LitError

__all__ = ["ordered_map", "import_ray"]

logger = logging.getLogger(__name__)

R = TypeVar("R")


def import_ray() -> Any:
    """Import and return the ``ray`` module, or raise :class:`EngineError` saying how to get it."""
    try:
        import ray
    except ImportError as exc:
        raise EngineError(
            "the ray engine needs Ray: pip install 'lit-mrs[ray]' (or use --engine local)"
        ) from exc
    return ray


class _Actor:
    """Holds one worker's state; methods run one at a time, in call order."""

    def __init__(self, fn: Callable[[Any, Any], Any], init: Callable[..., Any] | None,
                 initargs: tuple[Any, ...]) -> None:
        self.fn = fn
        self.stack = contextlib.ExitStack()
        self.init_error: LitError | str | None = None
        self.state: Any = None
        try:
            self.state = _open_state(self.stack, init, initargs)
        except Exception as exc:  # reported to the driver, which raises it
            self.init_error = _init_failure(exc)

    def run(self, index: int, item: Any) -> tuple[str, Any]:
        if self.init_error is not None:
            return "init-failed", self.init_error
        try:
            return "ok", self.fn(self.state, item)
        except Exception as exc:  # the engine boundary: any item failure becomes data
            logger.debug("item %d failed", index, exc_info=True)
            return "error", _error_text(exc)

    def close(self) -> None:
        self.stack.close()


_remote_actor: Any = None


def _actor_class(ray: Any) -> Any:
    global _remote_actor
    if _remote_actor is None:
        _remote_actor = ray.remote(_Actor)
    return _remote_actor


def ordered_map(
    fn: Callable[[Any, Any], R],
    items: Iterable[Any],
    *,
    workers: int | None = None,
    init: Callable[..., Any] | None = None,
    initargs: tuple[Any, ...] = (),
    max_pending: int | None = None,
    prefetch: int = 2,
    timeout: float | None = None,
    address: str | None = None,
    num_cpus: float = 1,
    ordered: bool = True,
) -> Iterator[Outcome[R]]:
    """Like :func:`lit.engine.ordered_map`, with Ray actors as the workers.

    Args:
        fn: called as ``fn(state, item)`` in an actor
        items: the input; consumed lazily
        workers: number of actors (default: the CPUs of the cluster)
        init: builds each actor's state (entered if a context manager)
        initargs: positional arguments for *init*
        max_pending: most items taken but not yet yielded (default ``4 * workers``)
        prefetch: calls queued at each actor at once
        timeout: seconds one item may take before its actor is killed and
            the item fails (default: no limit)
        address: Ray cluster to connect to (default: start a local instance,
            unless Ray is already initialized)
        num_cpus: CPUs Ray reserves for each actor (ACE is single-threaded)
        ordered: ``False`` yields outcomes as they finish (see
            :func:`lit.engine.ordered_map`)

    Yields:
        :class:`~lit.engine.Outcome` objects, one per input item, in input order.

    Raises:
        EngineError: Ray is missing, cannot connect, or the actors cannot
            be initialized
    """
    ray = import_ray()
    started = False
    if not ray.is_initialized():
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = f"the Ray cluster at {address}" if address else "a local Ray instance"
            raise EngineError(f"cannot start or connect to {where}: {exc}") from exc
        started = True
    try:
        n = workers
        if n is None:
            n = max(1, int(ray.cluster_resources().get("CPU", 1) // max(num_cpus, 1e-9)))
        if n < 1:
            raise EngineError(f"workers must be at least 1, got {n}")
        pool = _RayPool(ray, fn, init, initargs, workers=n, prefetch=max(1, prefetch),
                        timeout=timeout, num_cpus=num_cpus)
        try:
            yield from pool.map(items, max_pending or 4 * n, ordered)
        finally:
            pool.close()
    finally:
        if started:
            ray.shutdown()


class _Slot:
    __slots__ = ("actor", "inflight", "busy_since")

    def __init__(self, actor: Any) -> None:
        self.actor = actor
        self.inflight: deque[tuple[int, Any]] = deque()  # (index, object ref), in call order
        self.busy_since = 0.0


class _RayPool:
    def __init__(self, ray: Any, fn: Callable[[Any, Any], Any], init: Callable[..., Any] | None,
                 initargs: tuple[Any, ...], *, workers: int, prefetch: int,
                 timeout: float | None, num_cpus: float) -> None:
        self.ray = ray
        self.cls = _actor_class(ray).options(num_cpus=num_cpus, max_restarts=0)
        self.args = (fn, init, initargs)
        self.prefetch = prefetch
        self.timeout = timeout
        self.slots = [self._new_slot() for _ in range(workers)]
        self.deaths: dict[int, int] = {}  # index -> actors that died running it

    def _new_slot(self) -> _Slot:
        return _Slot(self.cls.remote(*self.args))

    def close(self, grace: float = 30.0) -> None:
        closing = [s.actor.close.remote() for s in self.slots]
        with contextlib.suppress(Exception):  # any Ray failure here: the actors are killed next
            self.ray.wait(closing, num_returns=len(closing), timeout=grace)
        for s in self.slots:
            self.ray.kill(s.actor)
        self.slots = []

    def map(self, items: Iterable[Any], max_pending: int, ordered: bool = True
            ) -> Iterator[Outcome[Any]]:
        yield from _ordered_window(items, max_pending, self._dispatch, self._collect, ordered)

    def _dispatch(self, backlog: deque[int], pending: dict[int, Any]) -> None:
        while backlog:
            slot = min(self.slots, key=lambda s: len(s.inflight))
            if len(slot.inflight) >= self.prefetch:
                return
            index = backlog.popleft()
            if not slot.inflight:
                slot.busy_since = time.monotonic()
            slot.inflight.append((index, slot.actor.run.remote(index, pending[index])))

    def _collect(self, pending: dict[int, Any], backlog: deque[int],
                 done: dict[int, Outcome[Any]]) -> None:
        refs = [ref for slot in self.slots for _, ref in slot.inflight]
        wait_timeout = None
        if self.timeout is not None:
            now = time.monotonic()
            wait_timeout = max(0.0, min(s.busy_since + self.timeout - now
                                        for s in self.slots if s.inflight))
        ready, _ = self.ray.wait(refs, num_returns=1, timeout=wait_timeout)
        if ready:
            ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
        finished = set(ready)
        for slot in list(self.slots):
            # an actor runs its calls in order: take results from the oldest on, so
            # that when it died, the call that was running is the one blamed
            while slot.inflight and slot.inflight[0][1] in finished:
                index, ref = slot.inflight[0]
                try:
                    kind, payload = self.ray.get(ref)
                except self.ray.exceptions.RayActorError as exc:
                    logger.debug("actor died", exc_info=exc)
                    self._replace(slot, pending, backlog, done,
                                  "worker process died (Ray actor died)", crashed=True)
                    break
                if kind == "init-failed":
                    _raise_init_failure(payload)
                slot.inflight.popleft()
                slot.busy_since = time.monotonic()
                _finish(index, kind, payload, pending, done)
        if self.timeout is not None:
            now = time.monotonic()
            for slot in list(self.slots):
                if slot.inflight and now - slot.busy_since > self.timeout:
                    self._replace(slot, pending, backlog, done,
                                  f"timed out after {self.timeout:g} s; worker killed")

    def _replace(self, slot: _Slot, pending: dict[int, Any], backlog: deque[int],
                 done: dict[int, Outcome[Any]], error: str, crashed: bool = False) -> None:
        """Kill *slot*'s actor, account for its calls, and start a new actor.

        When an actor dies, Ray may also lose the reply of a call that had
        just finished, so the oldest call is not certainly the culprit: it is
        run once more on a new actor and fails only if an actor dies under it
        again (a poison item thus takes down two actors). A timed-out item
        fails at once.
        """
        self.slots.remove(slot)
        self.ray.kill(slot.actor)
        if slot.inflight:
            index, _ = slot.inflight.popleft()
            rest = [i for i, _ in slot.inflight]
            self.deaths[index] = self.deaths.get(index, 0) + 1
            if crashed and self.deaths[index] < 2:
                logger.warning("an actor died running item %d; running it once more", index)
                rest.insert(0, index)
            else:
                logger.warning("item %d failed: %s", index, error)
                done[index] = Outcome(index, pending.pop(index), None, error)
            backlog.extendleft(reversed(rest))
        self.slots.append(self._new_slot())
