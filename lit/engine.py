"""An order-preserving, bounded parallel map over worker processes.

:func:`ordered_map` applies a function to a stream of items in *workers*
processes and yields one :class:`Outcome` per item, in input order. It is
built for long inputs and for work that needs expensive per-process state,
such as persistent ACE processes:

* **Per-process state.** *init* runs once in each worker and its result is
  passed to every call of *fn* in that worker; if it is a context manager it
  is entered there and exited when the worker stops (so ACE processes are
  closed cleanly).
* **Bounded.** At most *max_pending* items are taken from the input and not
  yet yielded, so memory stays flat on an input of any length, and the input
  iterable is consumed lazily.
* **Failures are results.** An exception raised by *fn* for an item, a
  worker process that dies (killed, segfault, out of memory) or an item that
  exceeds *timeout* becomes an :class:`Outcome` with an ``error``; a dead or
  hung worker is replaced and the rest of the input goes on.
* **Clean shutdown.** Closing the iterator early, an exception in the
  consumer or Ctrl-C stops the workers (each exits its state first).
* ``workers=1`` runs everything in the calling process, in one helper
  thread (no pickling, no processes): *init*, every call of *fn* and the
  exit of its state happen in that thread, one item at a time, and up to
  *prefetch* items wait for it, so the consumer's own work overlaps with
  *fn*'s waits (for ACE, which runs in its own process). An exception raised
  by *init* is raised again by the map.
* **Input that depends on output.** The input may yield :data:`WAIT` for
  "nothing to hand out until more results are in" (its next items depend on
  outcomes not yet yielded): the map waits for a result and asks again. If
  nothing is in flight, it yields :data:`WAIT` itself, so the consumer can
  act before the input is asked again.

Worker processes ignore SIGINT (the main process decides when to stop) and
turn SIGTERM into a normal exit, so their state is always torn down.
*fn*, *init* and *initargs* must be picklable (module-level functions) when
``workers > 1``.

Example:
    >>> def square(state, x):
    ...     return x * x
    >>> [o.value for o in ordered_map(square, range(5), workers=1)]
    [0, 1, 4, 9, 16]

Why this module is long: the order-preserving bounded pool handles worker start
failures, crashes, retries and log forwarding; the parts depend on one another's
state.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import pickle
import queue
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Generic, NoReturn, TypeVar

from lit.errors import LitError

__all__ = ["EngineError", "Outcome", "WAIT", "ordered_map", "describe_exit",
           "default_workers"]

logger = logging.getLogger(__name__)

R = TypeVar("R")

#: a worker that dies this many times in a row before it is ready is a setup problem
_MAX_INIT_FAILURES = 3

#: seconds between checks, in an idle worker, that the main process is alive
_PARENT_CHECK = 1.0


class _Wait:
    __slots__ = ()

    def __repr__(self) -> str:
        return "WAIT"


#: yielded by an input (and passed on by :func:`ordered_map`): nothing to do now
WAIT: Any = _Wait()


class EngineError(LitError):
    """The worker pool could not be started or kept running."""


@dataclass(frozen=True, slots=True)
class Outcome(Generic[R]):
    """The result of applying the mapped function to one input item.

    Attributes:
        index: 0-based position of the item in the input
        item: the input item itself
        value: what the function returned (``None`` on failure)
        error: ``None`` on success, else what went wrong, e.g.
            ``"ValueError: bad MRS"`` or ``"worker process died (killed by SIGKILL)"``
    """

    index: int
    item: Any
    value: R | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """``True`` if the function returned normally for this item."""
        return self.error is None


def default_workers() -> int:
    """The number of CPUs this process may use (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def describe_exit(exitcode: int | None) -> str:
    """Human-readable form of a process exit code.

    Example:
        >>> describe_exit(-9)
        'killed by SIGKILL'
        >>> describe_exit(3)
        'exit code 3'
    """
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


def _init_failure(exc: BaseException) -> LitError | str:
    """What a worker reports when its initializer fails.

    A :class:`LitError` (e.g. ``ACEError: ACE exited at start``) travels as
    itself, so the main process raises the same error, with the same
    message, as it would without workers; anything else travels as text.
    """
    if isinstance(exc, LitError):
        try:
            pickle.loads(pickle.dumps(exc))
        except (pickle.PicklingError, TypeError, AttributeError):
            pass
        else:
            return exc
    return _error_text(exc)


def _raise_init_failure(payload: LitError | str) -> NoReturn:
    if isinstance(payload, LitError):
        raise payload
    raise EngineError(f"worker initialization failed: {payload}")


def _error_text(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _open_state(stack: contextlib.ExitStack, init: Callable[..., Any] | None,
                initargs: tuple[Any, ...]) -> Any:
    if init is None:
        return None
    state = init(*initargs)
    if hasattr(state, "__enter__") and hasattr(state, "__exit__"):
        state = stack.enter_context(state)
    return state


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
    start_method: str | None = None,
    ordered: bool = True,
) -> Iterator[Outcome[R]]:
    """Yield ``Outcome(index, item, fn(state, item))`` for each item, in input order.

    Args:
        fn: called as ``fn(state, item)`` in a worker, where *state* is what
            ``init(*initargs)`` returned in that worker (``None`` without *init*)
        items: the input; consumed lazily, never materialized
        workers: number of worker processes (default: the CPU count);
            ``1`` runs inline in this process
        init: builds the per-process state once per worker; a context
            manager is entered, and exited when the worker stops
        initargs: positional arguments for *init*
        max_pending: most items taken from *items* but not yet yielded
            (default: ``4 * workers``); bounds memory and the reorder buffer
        prefetch: items queued at each worker at once, so it never idles
        timeout: seconds one item may take before its worker is killed and
            the item fails (default: no limit; ACE has its own watchdog)
        start_method: ``multiprocessing`` start method (default:
            ``forkserver`` where available, else ``spawn``; ``fork`` is
            unsafe once torch or other threaded libraries are loaded)
        ordered: ``False`` yields outcomes as they finish (each still has its
            ``index``), so one long item does not hold back the results of
            later ones; *max_pending* then bounds the items in flight

    Yields:
        :class:`Outcome` objects, one per input item, in input order (see *ordered*).

    Raises:
        EngineError: if the workers cannot be started (e.g. *init* fails)
    """
    n = default_workers() if workers is None else workers
    if n < 1:
        raise EngineError(f"workers must be at least 1, got {n}")
    if n == 1:
        yield from _inline_map(fn, items, init, initargs, max(1, prefetch))
        return
    pool = _Pool(fn, init, initargs, workers=n, prefetch=max(1, prefetch),
                 timeout=timeout, start_method=start_method)
    try:
        yield from pool.map(items, max_pending or 4 * n, ordered)
    finally:
        pool.close()


def _inline_map(
    fn: Callable[[Any, Any], R],
    items: Iterable[Any],
    init: Callable[..., Any] | None,
    initargs: tuple[Any, ...],
    prefetch: int,
) -> Iterator[Outcome[R]]:
    tasks: queue.SimpleQueue[tuple[int, Any] | None] = queue.SimpleQueue()
    results: queue.SimpleQueue[tuple[str, int, Any]] = queue.SimpleQueue()
    thread = threading.Thread(target=_serve_inline, args=(fn, init, initargs, tasks, results),
                              name="lit-inline-worker", daemon=True)
    thread.start()
    try:
        kind, _, payload = results.get()
        if kind == "init-failed":
            raise payload
        in_flight: deque[tuple[int, Any]] = deque()
        source = iter(items)
        index = 0
        exhausted = False
        while True:
            while not exhausted and len(in_flight) <= prefetch:
                item = next(source, _END)
                if item is WAIT:  # its next items depend on outcomes not yet yielded
                    break
                if item is _END:
                    exhausted = True
                else:
                    in_flight.append((index, item))
                    tasks.put((index, item))
                    index += 1
            if not in_flight:
                if exhausted:
                    return
                yield WAIT  # nothing runs: the consumer acts
                continue
            position, item = in_flight.popleft()
            kind, done, payload = results.get()
            assert done == position, "the inline worker answers in order"
            if kind == "failed":
                yield Outcome(position, item, None, payload)
            else:
                yield Outcome(position, item, payload)
    finally:
        tasks.put(None)  # the worker ends after the item it is on, and exits its state
        thread.join()


_END = object()


def _serve_inline(fn: Callable[[Any, Any], Any], init: Callable[..., Any] | None,
                  initargs: tuple[Any, ...], tasks: Any, results: Any) -> None:
    """The helper thread of ``workers=1``: *init*, then items until ``None``."""
    with contextlib.ExitStack() as stack:
        try:
            state = _open_state(stack, init, initargs)
        except BaseException as exc:  # raised again by the map, in the caller's thread
            results.put(("init-failed", -1, exc))
            return
        results.put(("ready", -1, None))
        while (task := tasks.get()) is not None:
            index, item = task
            try:
                value = fn(state, item)
            except BaseException as exc:  # the engine boundary: any item failure becomes
                # data (and the map, waiting for this answer, must get one)
                logger.debug("item %d failed", index, exc_info=True)
                results.put(("failed", index, _error_text(exc)))
            else:
                results.put(("done", index, value))


# --- worker process -------------------------------------------------------------


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def _worker_main(conn: Connection, tasks: Any, fn: Callable[[Any, Any], Any],
                 init: Callable[..., Any] | None, initargs: tuple[Any, ...],
                 log_level: int = logging.WARNING) -> None:
    """Body of a worker process: build state, serve tasks, tear down.

    The worker stops (tearing its state down) on the stop sentinel, on
    SIGTERM, and when the main process is gone (killed), so no orphaned
    worker keeps its ACE processes alive. Its ``lit`` log records go to
    stderr at the main process's level, marked with the worker's pid.
    """
    _log_like_main(log_level)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    parent = multiprocessing.parent_process()
    with contextlib.ExitStack() as stack:
        try:
            state = _open_state(stack, init, initargs)
        except Exception as exc:  # reported to the main process, which raises it
            logger.debug("worker initializer failed", exc_info=True)
            _send(conn, ("init-failed", None, _init_failure(exc)))
            return
        if not _send(conn, ("ready", None, None)):
            return
        while True:
            try:
                task = tasks.get(timeout=_PARENT_CHECK)
            except queue.Empty:
                if parent is not None and not parent.is_alive():
                    logger.debug("main process is gone; worker %d stops", os.getpid())
                    return
                continue
            if task is None:
                break
            index, item = task
            try:
                reply = ("ok", index, fn(state, item))
            except Exception as exc:  # the engine boundary: any item failure becomes data
                logger.debug("item %d failed", index, exc_info=True)
                reply = ("error", index, _error_text(exc))
            try:
                sent = _send(conn, reply)
            except (TypeError, AttributeError, ValueError, pickle.PicklingError) as exc:
                sent = _send(conn, ("error", index,
                                    f"result cannot be sent back: {_error_text(exc)}"))
            if not sent:
                return


def _log_like_main(level: int) -> None:
    # a spawned worker starts with logging unconfigured: without this its
    # warnings would reach stderr bare (Python's last-resort handler)
    root = logging.getLogger("lit")
    if not root.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(
            "lit: worker %(process)d: %(levelname)s: %(message)s"))
        root.addHandler(handler)
        root.propagate = False
    root.setLevel(level)


def _send(conn: Connection, message: tuple[Any, ...]) -> bool:
    """Send *message* to the main process; ``False`` if it is gone."""
    try:
        conn.send(message)
    except (BrokenPipeError, ConnectionResetError, EOFError):
        return False
    return True


def _discard(queue: Any) -> None:
    # the reader may be dead: do not wait for buffered tasks to be flushed to it
    queue.cancel_join_thread()
    queue.close()


# --- main-process side --------------------------------------------------------


def _ordered_window(
    items: Iterable[Any],
    max_pending: int,
    dispatch: Callable[[deque[int], dict[int, Any]], None],
    collect: Callable[[dict[int, Any], deque[int], dict[int, Outcome[Any]]], None],
    ordered: bool = True,
) -> Iterator[Outcome[Any]]:
    """The bounded, ordered window shared by the local and the Ray pool.

    Takes items while fewer than *max_pending* are taken but not yet
    yielded, hands the waiting indices to ``dispatch(backlog, pending)``,
    yields finished outcomes in input order (or, not *ordered*, as they
    finish), and otherwise waits with
    ``collect(pending, backlog, done)``, which moves finished (or failed)
    items from *pending* to *done* and may put indices back on *backlog*.
    An input item :data:`WAIT` stops taking input for now; with nothing in
    flight and nothing to yield, :data:`WAIT` is yielded.
    """
    it = iter(items)
    pending: dict[int, Any] = {}  # index -> item, taken but not finished
    backlog: deque[int] = deque()  # indices waiting for a worker
    done: dict[int, Outcome[Any]] = {}  # finished, waiting for their turn
    next_index = 0  # next index to take from the input
    next_yield = 0  # next index to yield (ordered)
    out = 0  # outcomes yielded
    exhausted = False
    while True:
        # take new items while the window allows
        waiting = False
        while not exhausted and next_index - out < max_pending:
            try:
                item = next(it)
            except StopIteration:
                exhausted = True
                break
            if item is WAIT:
                waiting = True
                break
            pending[next_index] = item
            backlog.append(next_index)
            next_index += 1
        dispatch(backlog, pending)
        yielded = False
        while (next_yield in done) if ordered else done:
            index = next_yield if ordered else min(done)
            yield done.pop(index)
            next_yield += 1
            out += 1
            yielded = True
        if exhausted and out == next_index:
            return
        if yielded:
            continue  # the consumer may have made more input available: take it first
        if waiting and not pending:
            yield WAIT  # the input waits on the consumer
            continue
        if not pending:
            # nothing in flight: take more input (waiting for results would
            # block forever once the window was full when input was last read)
            continue
        collect(pending, backlog, done)


def _finish(index: int, kind: str, payload: Any, pending: dict[int, Any],
            done: dict[int, Outcome[Any]]) -> None:
    """Move item *index* from *pending* to *done*: a value if *kind* is ``"ok"``, else an error."""
    item = pending.pop(index)
    if kind == "ok":
        done[index] = Outcome(index, item, payload)
    else:
        done[index] = Outcome(index, item, None, payload)


class _Worker:
    __slots__ = ("process", "conn", "tasks", "inflight", "ready", "busy_since")

    def __init__(self, process: Any, conn: Connection, tasks: Any) -> None:
        self.process = process
        self.conn = conn
        self.tasks = tasks
        self.inflight: deque[int] = deque()
        self.ready = False
        self.busy_since = 0.0


class _Pool:
    def __init__(
        self,
        fn: Callable[[Any, Any], Any],
        init: Callable[..., Any] | None,
        initargs: tuple[Any, ...],
        *,
        workers: int,
        prefetch: int,
        timeout: float | None,
        start_method: str | None,
    ) -> None:
        if start_method is None:
            methods = multiprocessing.get_all_start_methods()
            start_method = "forkserver" if "forkserver" in methods else "spawn"
        self.ctx: Any = multiprocessing.get_context(start_method)
        self.fn = fn
        self.init = init
        self.initargs = initargs
        self.size = workers
        self.prefetch = prefetch
        self.timeout = timeout
        self.workers: list[_Worker] = []
        self.init_failures = 0
        self.closed = False

    # lifecycle ---------------------------------------------------------------

    def _spawn(self) -> _Worker:
        parent_conn, child_conn = self.ctx.Pipe(duplex=False)
        tasks = self.ctx.Queue()  # put() never blocks (feeder thread), unlike a bare pipe
        process = self.ctx.Process(
            target=_worker_main,
            args=(child_conn, tasks, self.fn, self.init, self.initargs,
                  logging.getLogger("lit").getEffectiveLevel()),
            name="lit-worker",
            daemon=True,
        )
        process.start()
        child_conn.close()
        worker = _Worker(process, parent_conn, tasks)
        self.workers.append(worker)
        logger.debug("started worker pid %s", process.pid)
        return worker

    def close(self, grace: float = 10.0) -> None:
        """Stop all workers: ask politely, then SIGTERM, then SIGKILL."""
        if self.closed:
            return
        self.closed = True
        for w in self.workers:
            if w.process.is_alive():
                with contextlib.suppress(OSError, ValueError):
                    w.tasks.put(None)
        # keep reading (and dropping) results so no worker stays blocked in send()
        deadline = time.monotonic() + grace
        live: dict[Any, _Worker] = {w.process.sentinel: w for w in self.workers}
        conns: dict[Any, _Worker] = {w.conn: w for w in self.workers}
        while live and time.monotonic() < deadline:
            for handle in wait([*live, *conns], max(0.0, deadline - time.monotonic())):
                if handle in live:
                    del live[handle]
                    continue
                try:
                    conns[handle].conn.recv()
                except (EOFError, OSError):
                    del conns[handle]
        for w in self.workers:
            if w.process.is_alive():
                logger.debug("terminating worker pid %s", w.process.pid)
                w.process.terminate()
        deadline = time.monotonic() + grace
        for w in self.workers:
            w.process.join(max(0.0, deadline - time.monotonic()))
            if w.process.is_alive():
                logger.warning("killing worker pid %s", w.process.pid)
                w.process.kill()
                w.process.join()
            w.conn.close()
            _discard(w.tasks)
        self.workers = []

    # the map loop ------------------------------------------------------------

    def map(self, items: Iterable[Any], max_pending: int, ordered: bool = True
            ) -> Iterator[Outcome[Any]]:
        for _ in range(self.size):
            self._spawn()
        yield from _ordered_window(items, max_pending, self._dispatch, self._collect, ordered)

    def _dispatch(self, backlog: deque[int], pending: dict[int, Any]) -> None:
        while backlog:
            candidates = [w for w in self.workers if w.ready and len(w.inflight) < self.prefetch]
            if not candidates:
                return
            worker = min(candidates, key=lambda w: len(w.inflight))
            index = backlog.popleft()
            if not worker.inflight:
                worker.busy_since = time.monotonic()
            worker.inflight.append(index)
            worker.tasks.put((index, pending[index]))
            logger.debug("item %d -> worker pid %s", index, worker.process.pid)

    def _collect(self, pending: dict[int, Any], backlog: deque[int],
                 done: dict[int, Outcome[Any]]) -> None:
        """Wait for results or worker deaths and account for them."""
        wait_timeout = None
        if self.timeout is not None:
            now = time.monotonic()
            busy = [w.busy_since + self.timeout - now for w in self.workers if w.inflight]
            if busy:
                wait_timeout = max(0.0, min(busy))
        by_handle: dict[Any, _Worker] = {}
        for w in self.workers:
            by_handle[w.conn] = w
            by_handle[w.process.sentinel] = w
        ready = wait(list(by_handle), wait_timeout)
        dead: list[_Worker] = []
        for handle in ready:
            w = by_handle[handle]
            alive = handle is w.conn and self._drain(w, pending, done)
            if not alive and w not in dead:
                dead.append(w)
        for w in dead:
            self._drain(w, pending, done)
            w.process.join(5)
            self._replace(w, pending, backlog, done, reason=None)
        if self.timeout is not None:
            now = time.monotonic()
            for w in list(self.workers):
                if w.inflight and now - w.busy_since > self.timeout:
                    w.process.kill()
                    w.process.join(5)
                    self._drain(w, pending, done)
                    if w.inflight:
                        self._replace(w, pending, backlog, done,
                                      reason=f"timed out after {self.timeout:g} s; worker killed")

    def _drain(self, w: _Worker, pending: dict[int, Any], done: dict[int, Outcome[Any]]) -> bool:
        """Read every message *w* has sent; ``False`` if its pipe is closed."""
        try:
            while w.conn.poll():
                kind, index, payload = w.conn.recv()
                if kind == "ready":
                    w.ready = True
                    logger.debug("worker pid %s is ready", w.process.pid)
                    self.init_failures = 0
                elif kind == "init-failed":
                    _raise_init_failure(payload)
                else:
                    w.inflight.remove(index)
                    w.busy_since = time.monotonic()
                    _finish(index, kind, payload, pending, done)
        except (EOFError, OSError):
            return False
        return True

    def _replace(self, w: _Worker, pending: dict[int, Any], backlog: deque[int],
                 done: dict[int, Outcome[Any]], reason: str | None) -> None:
        """Account for a dead worker's items and start a new worker."""
        self.workers.remove(w)
        w.conn.close()
        _discard(w.tasks)
        cause = describe_exit(w.process.exitcode)
        if not w.ready:
            self.init_failures += 1
            logger.warning("worker pid %s died during initialization (%s)", w.process.pid, cause)
            if self.init_failures >= _MAX_INIT_FAILURES:
                raise EngineError(
                    f"worker processes keep dying during initialization ({cause}); "
                    f"try --workers 1 to see the error"
                )
        if w.inflight:
            # the worker handles its queue in order: the first item was the one running
            index = w.inflight.popleft()
            error = f"worker process died ({cause})" if reason is None else reason
            logger.warning("item %d failed: %s", index, error)
            done[index] = Outcome(index, pending.pop(index), None, error)
            # the others had not started: run them elsewhere, keeping input order
            backlog.extendleft(reversed(w.inflight))
            w.inflight.clear()
        if not self.closed:
            self._spawn()
