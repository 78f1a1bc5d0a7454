"""A bounded pool of ACE backends shared by the requests of ``lit serve``.

Each :class:`Backend` is one ACE parser and one ACE generator (two
persistent processes). :class:`AcePool` holds at most *size* of them,
starts each on first need, and lends them to one request at a time:
concurrent requests wait in line for a free backend, up to a time limit,
and never start more ACE processes than the pool allows.

Example:
    >>> pool = AcePool(lambda: Backend(parser, generator), size=2)  # doctest: +SKIP
    >>> with pool.lease(timeout=30) as backend:                     # doctest: +SKIP
    ...     backend.parser.parse("The dog chased the cat.")
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from lit.errors import LitError

__all__ = ["Backend", "AcePool", "BusyError", "PoolClosedError", "ace_pool"]

logger = logging.getLogger(__name__)


class BusyError(LitError):
    """Every backend of the pool stayed busy for longer than the caller would wait."""


class PoolClosedError(LitError):
    """The pool was closed (the server is shutting down)."""


@dataclass
class Backend:
    """One ACE parser and one ACE generator, used by one request at a time.

    Any objects with ``parse(sentence)`` / ``generate(mrs)`` will do (the
    :class:`lit.ace.Parser` and :class:`lit.ace.Generator` protocols); their
    ``close()`` is called when the pool closes.
    """

    parser: Any
    generator: Any

    def close(self) -> None:
        """Stop both processes (the generator first, then the parser)."""
        for proc in (self.generator, self.parser):
            close = getattr(proc, "close", None)
            if close is not None:
                close()


class AcePool:
    """At most *size* :class:`Backend` objects, lent to one caller at a time.

    Backends are made by *factory* when a caller needs one and none is idle
    (so a pool that is never busy starts one); they are kept until
    :meth:`close`. Thread-safe.

    Args:
        factory: makes a started :class:`Backend` (may raise
            :class:`~lit.errors.ACEError`)
        size: the most backends (and so ACE process pairs) that exist at once
    """

    def __init__(self, factory: Callable[[], Backend], size: int = 1) -> None:
        if size < 1:
            raise ValueError(f"pool size must be >= 1, not {size!r}")
        self._factory = factory
        self.size = size
        # one token per backend slot: a Backend, or None for a slot not started yet
        self._slots: queue.LifoQueue[Backend | None] = queue.LifoQueue()
        for _ in range(size):
            self._slots.put(None)
        self._lock = threading.Lock()
        self._backends: list[Backend] = []
        self._closed = False
        self._waiting = 0
        self._in_use = 0
        self.started = 0
        """How many backends the factory made (a restarted ACE process is not counted)."""

    @property
    def closed(self) -> bool:
        return self._closed

    def stats(self) -> dict[str, int]:
        """``{"size", "started", "in_use", "waiting"}`` right now."""
        with self._lock:
            return {"size": self.size, "started": self.started, "in_use": self._in_use,
                    "waiting": self._waiting}

    def warm(self, n: int = 1) -> None:
        """Start *n* backends now (e.g. to fail at start-up, not at the first request)."""
        held = []
        try:
            for _ in range(min(n, self.size)):
                held.append(self._acquire(timeout=None))
        finally:
            for slot in held:
                self._release(slot)

    @contextmanager
    def lease(self, timeout: float | None = None) -> Iterator[Backend]:
        """Borrow a backend for the ``with`` block.

        Args:
            timeout: seconds to wait for a free backend (``None``: no limit)
        Raises:
            BusyError: no backend became free within *timeout*
            PoolClosedError: the pool is closed
            ACEError: a new backend could not be started
        """
        backend = self._acquire(timeout)
        try:
            yield backend
        finally:
            self._release(backend)

    def _acquire(self, timeout: float | None) -> Backend:
        if self._closed:
            raise PoolClosedError("the ACE pool is closed (the server is shutting down)")
        with self._lock:
            self._waiting += 1
        start = time.monotonic()
        try:
            slot = self._slots.get(timeout=None if timeout is None else max(timeout, 0.0))
        except queue.Empty:
            raise BusyError(
                f"all {self.size} ACE worker(s) stayed busy for {time.monotonic() - start:.0f} s;"
                " try again, or start lit serve with more --workers"
            ) from None
        finally:
            with self._lock:
                self._waiting -= 1
        if self._closed:
            self._slots.put(slot)
            raise PoolClosedError("the ACE pool is closed (the server is shutting down)")
        if slot is None:
            try:
                slot = self._factory()
            except BaseException:
                self._slots.put(None)  # the slot stays free for the next try
                raise
            with self._lock:
                self.started += 1
                self._backends.append(slot)
                closed = self._closed
            logger.info("started ACE backend %d of at most %d", self.started, self.size)
            if closed:  # closed while this one was starting
                slot.close()
                self._slots.put(None)
                raise PoolClosedError("the ACE pool is closed (the server is shutting down)")
        with self._lock:
            self._in_use += 1
        return slot

    def _release(self, backend: Backend) -> None:
        with self._lock:
            self._in_use -= 1
            closed = self._closed
        if closed:
            backend.close()
        self._slots.put(backend)

    def close(self) -> None:
        """Stop every backend's ACE processes; later leases raise :class:`PoolClosedError`.

        Backends lent out at the moment are stopped too (their requests then
        fail); idempotent.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            backends = list(self._backends)
        for backend in backends:
            try:
                backend.close()
            except OSError as exc:  # a process that is already gone
                logger.debug("closing an ACE backend: %s", exc)
        logger.info("stopped %d ACE backend(s)", len(backends))

    def __enter__(self) -> AcePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def ace_pool(grammar: Any, size: int = 1, *, n: int | None = 10,
             env: Any = None, **options: Any) -> AcePool:
    """An :class:`AcePool` of ACE parser/generator pairs for a resolved *grammar*.

    Args:
        grammar: a :class:`~lit.grammar.Grammar` (image, ACE binary and version)
        size: the most backends (each one parser and one generator process)
        n: readings per parse (ACE ``-n``)
        env: the ACE processes' environment (default: inherited)
        options: more :class:`~lit.ace.AceParser` / :class:`~lit.ace.AceGenerator`
            keyword arguments (``timeout``, ``watchdog``, ...)
    """
    from lit.ace import AceGenerator, AceParser

    ace = str(grammar.ace) if grammar.ace is not None else "ace"

    def start() -> Backend:
        parser = AceParser(grammar.image, executable=ace, n=n, env=env,
                           ace_version=grammar.ace_version, **options)
        try:
            generator = AceGenerator(grammar.image, executable=ace, env=env,
                                     ace_version=parser.ace_version, **options)
        except BaseException:
            parser.close()
            raise
        return Backend(parser, generator)

    return AcePool(start, size)
