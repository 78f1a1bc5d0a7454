"""Supervising a child process: draining its stderr, and a wall-clock watchdog.

Generic helpers for :mod:`lit.ace` (the only module that starts ACE); they
start no process themselves.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time
from typing import Any

__all__ = ["ResidentMemory", "StderrTail", "Watchdog"]

logger = logging.getLogger("lit.ace")


class StderrTail:
    """Drain a process's stderr in a daemon thread, keeping the last lines.

    The pipe is read continuously, so ACE can write as much as it likes
    without ever blocking on a full pipe.
    """

    def __init__(self, stream: Any, maxlen: int = 50) -> None:
        self.lines: collections.deque[str] = collections.deque(maxlen=maxlen)
        self._stream = stream
        self._thread = threading.Thread(target=self._drain, name="lit-ace-stderr", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        debug = logger.isEnabledFor(logging.DEBUG)
        try:
            for raw in iter(self._stream.readline, b""):
                line = raw.decode("utf-8", errors="replace").rstrip()
                if line:
                    self.lines.append(line)
                    if debug:
                        logger.debug("ACE stderr: %s", line)
        except (OSError, ValueError):  # stream closed under us
            pass
        finally:
            try:
                self._stream.close()
            except OSError:
                pass

    def text(self, last: int | None = None, wait: float = 0.0) -> str:
        """The kept lines joined by `` / `` (after waiting up to *wait* s for EOF)."""
        if wait:
            self._thread.join(wait)
        lines = list(self.lines)
        if last is not None:
            lines = lines[-last:]
        return " / ".join(lines)


class Watchdog:
    """One daemon thread that calls *expire* when an armed deadline passes."""

    def __init__(self, seconds: float, expire: Any) -> None:
        self.seconds = seconds
        self._expire = expire
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._serial = 0
        self._fired = -1
        self._closed = False
        self._thread: threading.Thread | None = None

    def arm(self) -> int:
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="lit-ace-watchdog", daemon=True
                )
                self._thread.start()
            self._serial += 1
            self._deadline = time.monotonic() + self.seconds
            self._cond.notify()
            return self._serial

    def disarm(self, serial: int) -> bool:
        """Stop the clock; return ``True`` if it fired for *serial*."""
        with self._cond:
            self._deadline = None
            self._cond.notify()
            return self._fired == serial

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                if self._deadline is None:
                    self._cond.wait()
                    continue
                remaining = self._deadline - time.monotonic()
                if remaining > 0:
                    self._cond.wait(remaining)
                    continue
                self._fired = self._serial
                self._deadline = None
                self._expire()


class ResidentMemory:
    """The resident memory of one process, from Linux ``/proc/PID/statm``.

    The file is opened once, as a descriptor, and read again in place for
    each reading (no file is opened per reading). Where ``/proc`` is missing
    (not Linux), :meth:`megabytes` is ``None``.
    """

    _PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

    def __init__(self, pid: int) -> None:
        try:
            self._fd: int | None = os.open(f"/proc/{pid}/statm", os.O_RDONLY)
        except OSError:
            self._fd = None

    def megabytes(self) -> float | None:
        """Resident megabytes now (``None``: cannot be read, e.g. the process is gone)."""
        if self._fd is None:
            return None
        try:
            return int(os.pread(self._fd, 256, 0).split()[1]) * self._PAGE / 2**20
        except (OSError, ValueError, IndexError):
            return None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
