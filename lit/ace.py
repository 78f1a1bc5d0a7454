"""The ACE process layer: the only place lit starts ACE.

:class:`AceParser` and :class:`AceGenerator` each own one persistent ACE
process (never a process per sentence) and are context managers. They are
built on PyDelphin's :mod:`delphin.ace` (its ``ACEParser`` / ``ACEGenerator``
classes read ACE's ``--tsdb-stdout`` protocol) and add what a long unattended
run needs:

* a wall-clock **watchdog** in Python. PyDelphin blocks on ``readline`` and
  has none, so when ACE hangs past *watchdog* seconds on an item the process
  is killed and restarted, the item is reported as failed with the reason,
  and the next item is processed normally;
* **restarts** when ACE dies: the item is retried *retries* times (default
  once) on the fresh process and then reported as failed;
* ACE's **stderr** goes to a pipe drained by a daemon thread that keeps the
  last lines for error messages, so a chatty ACE can never fill the pipe and
  deadlock, and nothing is printed to the terminal;
* clear :class:`~lit.errors.ACEError` messages when ACE cannot start (binary
  missing, image missing or unreadable), naming the files and the fix;
* **renewal after memory-heavy items**: ACE keeps the memory an item made
  it take, and on the real ERG a process that has grown past a few hundred
  megabytes is slower on every later item and may hit its memory limit on an
  item a fresh process completes. When the process's resident memory exceeds
  *renew_megabytes* after an item, it is replaced by a fresh one at once
  (about 50 ms, while lit works on the answer; the image is memory-mapped).
  Replaying the 373 generation requests of 30 SNLI sentences of the
  ``lit-paper`` workload (ERG 1214), renewal above 400 MB made 2 renewals and
  took 104 s instead of 112 s, with identical results;
* ``ace -V`` runs at most once per object (PyDelphin runs it on every
  access to ``ace_version``, including every restart), and the caller's
  argument lists are copied, never extended.

Failures of single items never raise: they come back as results with an
``error`` field. :class:`ACEError` is raised only when ACE cannot be run at
all. ``delphin.ace`` is imported on first use (it calls
:func:`locale.setlocale` at import time), so ``import lit.ace`` has no side
effects.

The :class:`Parser` and :class:`Generator` protocols describe the two
methods the rest of lit needs, so other backends (a cache, a test stand-in)
can take the place of ACE.

Example:
    >>> with AceParser("erg-1214.dat", n=3) as parser:  # doctest: +SKIP
    ...     result = parser.parse("The dog chased the cat.")
    >>> result.readings[0].mrs  # doctest: +SKIP
    '[ LTOP: h0 INDEX: e2 ... ]'

Why this module is long: one ACE process protocol (start, version probe, line protocol,
watchdog, restart and retry, polite shutdown) shared by the parser and the generator;
splitting it would scatter one state machine over several files. Generic process
supervision (stderr drain, watchdog thread) lives in :mod:`lit._process`.
"""

from __future__ import annotations

import logging
import math
import os
import re
import shutil
import subprocess
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lit._process import ResidentMemory as _ResidentMemory
from lit._process import StderrTail as _StderrTail
from lit._process import Watchdog as _Watchdog
from lit.errors import ACEError
from lit.interface import GenerationResult, ParseResult, Reading

if TYPE_CHECKING:  # pragma: no cover
    from delphin.mrs import MRS

__all__ = [
    "probe_version",
    "compile_image",
    "AceParser",
    "AceGenerator",
    "parse_from_iterable",
    "generate_from_iterable",
    "DEFAULT_N",
    "DEFAULT_TIMEOUT",
    "DEFAULT_WATCHDOG",
    "DEFAULT_MAX_CHART_MEGABYTES",
    "DEFAULT_MAX_UNPACK_MEGABYTES",
    "DEFAULT_MAX_REALIZATIONS",
    "DEFAULT_RENEW_MEGABYTES",
    "RETRY_FACTOR",
    "classify_error",
]

logger = logging.getLogger(__name__)

DEFAULT_N = 5
"""Readings per sentence (ACE ``-n``)."""
DEFAULT_TIMEOUT = 10
"""ACE's own per-item time limit in seconds (``--timeout``)."""
DEFAULT_WATCHDOG = 30.0
"""Wall-clock seconds per item after which lit kills and restarts ACE."""
RETRY_FACTOR = 2.0
"""How much larger the time limits are when an item cut by one is retried."""
DEFAULT_RENEW_MEGABYTES = 400
"""Resident megabytes of an ACE process after an item above which it is
replaced by a fresh one at once (see the module notes)."""
DEFAULT_MAX_CHART_MEGABYTES = 1200
DEFAULT_MAX_UNPACK_MEGABYTES = 1500
DEFAULT_MAX_REALIZATIONS = 1000
"""Realizations per generation request: an MRS with more is refused
(failure ``overgeneration``). Without a parse-ranking model ACE unpacks every
realization; a long sentence with many modifiers has thousands (every order of
its PPs and adverbs), which cost seconds each thousand and can exhaust
``--max-unpack-megabytes`` after 20 s. ACE is asked for one more than the cap
(``-n``): the complete set when there are at most that many, and the count
says deterministically when there are more."""

_STDERR_LINES = 50  # lines of ACE's stderr kept for error messages
_VERSION_RE = re.compile(r"ACE version ([0-9]+(?:\.[0-9]+)*)")
_INSTALL_HINT = (
    "install ACE and a grammar with `lit grammar install NAME`, register files you "
    "have with `lit grammar add NAME --image PATH --ace PATH`, or set LIT_ACE"
)


# --------------------------------------------------------------------------
# helpers


def _one_line(sentence: str) -> str:
    """*sentence* as one line of plain text for ACE's line protocol.

    Newlines (and other line or paragraph separators) would split one item
    into two and desynchronize the protocol, so every run of whitespace or
    control characters becomes a single space.
    """
    cleaned = "".join(
        " " if unicodedata.category(c) in ("Cc", "Zl", "Zp") else c for c in sentence
    )
    return " ".join(cleaned.split())


def _utf8_environment(env: Mapping[str, str]) -> dict[str, str]:
    """*env* with a UTF-8 character locale for ACE.

    ACE reads grammar images and input as multibyte text in the locale's
    encoding; under the C locale (cron, containers, a minimal ``env``) it
    exits at start with "multibyte decoding failed". Unless the effective
    ``LC_CTYPE`` already names UTF-8, ``LC_ALL=C.UTF-8`` is set.

    Example:
        >>> _utf8_environment({"LANG": "C"})["LC_ALL"]
        'C.UTF-8'
        >>> "LC_ALL" in _utf8_environment({"LANG": "en_US.UTF-8"})
        False
    """
    out = dict(env)
    effective = out.get("LC_ALL") or out.get("LC_CTYPE") or out.get("LANG") or ""
    if "utf-8" not in effective.lower() and "utf8" not in effective.lower():
        out["LC_ALL"] = "C.UTF-8"
    return out


def _int_seconds(value: float) -> int:
    return max(1, math.ceil(value))


def _find_executable(executable: str | os.PathLike[str]) -> str:
    text = os.fspath(executable)
    if os.sep in text or (os.altsep and os.altsep in text):
        path = Path(text).expanduser()
        if not path.exists():
            raise ACEError(f"ACE binary not found: {path}; {_INSTALL_HINT}")
        if path.is_dir() or not os.access(path, os.X_OK):
            raise ACEError(f"ACE binary is not an executable file: {path}; {_INSTALL_HINT}")
        return str(path)
    found = shutil.which(text)
    if found is None:
        raise ACEError(f"ACE binary {text!r} not found on PATH; {_INSTALL_HINT}")
    return found


def probe_version(
    executable: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> str:
    """Run ``ACE -V`` and return the version it reports (e.g. ``"0.9.34"``).

    Raises:
        ACEError: if the binary cannot be run, times out, or prints no
            ``ACE version X.Y.Z`` line
    """
    try:
        proc = subprocess.run(
            [os.fspath(executable), "-V"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            env=None if env is None else dict(env),
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ACEError(f"{executable} -V did not answer within {timeout:g} s") from exc
    except OSError as exc:
        raise ACEError(
            f"cannot run ACE binary {executable}: {exc.strerror or exc}; {_INSTALL_HINT}"
        ) from exc
    output = (proc.stdout + proc.stderr).decode("utf-8", errors="replace")
    match = _VERSION_RE.search(output)
    if match is None:
        head = " / ".join(output.strip().splitlines()[:2]) or "no output"
        raise ACEError(
            f"{executable} -V printed no 'ACE version' line (exit code {proc.returncode}): "
            f"{head}; is it the ACE binary?"
        )
    return match.group(1)


def compile_image(
    executable: str | os.PathLike[str],
    config: str | os.PathLike[str],
    image: str | os.PathLike[str],
    *,
    timeout: float | None = None,
) -> None:
    """Compile the grammar whose ACE configuration is *config* into *image*.

    Runs ``ACE -g CONFIG -G IMAGE`` in the directory of *config*.

    Raises:
        ACEError: ACE cannot be run, takes longer than *timeout* seconds, or
            fails (the message has ACE's last lines of output)
    """
    config = Path(config).resolve()
    cmd = [os.fspath(executable), "-g", str(config), "-G", os.fspath(image)]
    logger.info("compiling: %s", " ".join(cmd))
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout, check=False, cwd=config.parent)
    except subprocess.TimeoutExpired as exc:
        raise ACEError(f"compiling {config} took longer than {timeout} s") from exc
    except OSError as exc:
        raise ACEError(f"cannot run ACE binary {executable}: {exc.strerror or exc}") from exc
    if proc.returncode != 0 or not Path(image).is_file():
        tail = proc.stderr.decode("utf-8", errors="replace").strip().splitlines()[-5:]
        raise ACEError(
            f"compiling {config} with {executable} failed (exit code {proc.returncode}): "
            + (" / ".join(tail) or "no output")
        )


def _option_value(args: Sequence[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _parse_version(version: str | Sequence[int]) -> tuple[int, ...]:
    if isinstance(version, str):
        match = re.search(r"[0-9]+(?:\.[0-9]+)*", version)
        if match is None:
            raise ValueError(f"not an ACE version: {version!r}")
        return tuple(int(p) for p in match.group(0).split("."))
    return tuple(int(p) for p in version)


class _ProcessEnded(Exception):
    """ACE closed its stdout (it exited or was killed) in the middle of an item."""


#: the error in ACE's ``NOTE: tsdb parse: ... (:error . "...")`` line
_TSDB_ERROR = re.compile(r'\(:error \. "((?:[^"\\]|\\.)*)"\)')


@lru_cache(maxsize=None)
def _delphin_classes() -> tuple[type, type]:
    """PyDelphin's ACE classes, adapted; built on first use (imports delphin.ace)."""
    from delphin import ace as dace

    class _Adapted(dace.ACEProcess):
        """Overrides of ``delphin.ace.ACEProcess`` hooks.

        * ``ace_version`` returns the version lit determined once;
        * ``_open`` starts the process through lit (stderr pipe + drain
          thread) and only when lit allows it: PyDelphin's own silent
          re-open after a crash is suppressed, lit restarts explicitly;
        * ``send`` does not re-open either, and ``_result_lines`` raises
          :class:`_ProcessEnded` at end of file instead of returning a
          truncated response that looks like a no-parse.
        """

        _lit_owner: _AceProcess
        _lit_may_open: bool
        _lit_tsdbinfo = True  # ACE's --tsdb-stdout protocol

        def __init__(self, grm: str, *, owner: _AceProcess, cmdargs: list[str]) -> None:
            self._lit_owner = owner
            self._lit_may_open = True
            super().__init__(
                grm, cmdargs=list(cmdargs), executable=owner.executable, env=owner.env,
                tsdbinfo=self._lit_tsdbinfo,
            )
            self._lit_may_open = False

        @property
        def ace_version(self) -> tuple[int, ...]:
            return self._lit_owner.ace_version

        def _open(self) -> None:
            if not self._lit_may_open:
                return
            argv = [self.executable, "-g", self.grm, *self._cmdargs, *self.cmdargs]
            self._p = self._lit_owner._spawn(argv, self.env)
            self._run_id += 1
            version = ".".join(map(str, self._lit_owner.ace_version))
            self.run_infos.append(
                {
                    "run-id": self._run_id,
                    "application": f"ACE {version} via lit",
                    "environment": " ".join(self.cmdargs),
                    "start": datetime.now(),
                }
            )

        def send(self, datum: str) -> None:
            assert self._p.stdin is not None
            self._p.stdin.write(datum.rstrip() + "\n")
            self._p.stdin.flush()

        def _result_lines(self, termini: list[Any] | None = None) -> list[str]:
            if termini is None:
                termini = list(self._termini)
            assert self._p.stdout is not None
            readline = self._p.stdout.readline
            lines: list[str] = []
            i = 0
            while i < len(termini):
                s = readline()
                if s == "":
                    raise _ProcessEnded()
                if s.startswith("NOTE: tsdb run:"):
                    self._read_run_info(s.rstrip())
                    continue
                lines.append(s.rstrip())
                if termini[i].search(s):
                    i += 1
            return [line for line in lines if line != ""]

    class _Parser(_Adapted, dace.ACEParser):
        pass

    class _Generator(_Adapted, dace.ACEGenerator):
        """Realizations in ACE's plain protocol: one surface per line, then
        ACE's ``NOTE: tsdb parse:`` line (with an ``(:error . "...")`` if
        any). ``--tsdb-stdout --report-labels`` would add a derivation per
        realization: on a sentence with thousands of realizations, 100 times
        the output and three times ACE's time, for nothing lit uses."""

        _lit_tsdbinfo = False

        def _default_receive(self) -> Any:
            response = super()._default_receive()
            for note in response.get("NOTES") or ():
                if note.startswith("tsdb parse:"):
                    found = _TSDB_ERROR.search(note)
                    if found is not None:
                        response["error"] = found.group(1).replace('\\"', '"')
            return response

    return _Parser, _Generator


# --------------------------------------------------------------------------
# the process owner


class _AceProcess:
    """One persistent ACE process with watchdog, restarts and retries."""

    _kind = ""  # "parser" | "generator"

    def __init__(
        self,
        image: str | os.PathLike[str],
        *,
        executable: str | os.PathLike[str],
        cmdargs: Sequence[str],
        watchdog: float | None,
        retries: int,
        env: Mapping[str, str] | None,
        ace_version: str | Sequence[int] | None,
        startup_wait: float,
        close_timeout: float,
        fresh: bool = False,
        timeout_retries: int = 1,
        renew_megabytes: float | None = DEFAULT_RENEW_MEGABYTES,
    ) -> None:
        self.image = Path(image).expanduser()
        if not self.image.is_file():
            what = "is not a file" if self.image.exists() else "not found"
            raise ACEError(f"grammar image {what}: {self.image}; {_INSTALL_HINT}")
        self.executable = _find_executable(executable)
        self.env: Mapping[str, str] | None = None if env is None else dict(env)
        if ace_version is None:
            self.ace_version = _parse_version(probe_version(self.executable, env=self.env))
        else:
            self.ace_version = _parse_version(ace_version)
        if watchdog is not None and watchdog <= 0:
            raise ValueError(f"watchdog must be positive seconds or None, not {watchdog!r}")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, not {retries!r}")
        timeout = _option_value(cmdargs, "--timeout")
        if watchdog is not None and timeout is not None and watchdog <= float(timeout):
            logger.warning(
                "the watchdog (%g s) does not exceed ACE's --timeout (%s s): items that ACE "
                "would stop itself are killed instead", watchdog, timeout,
            )
        self.cmdargs: tuple[str, ...] = tuple(cmdargs)
        self.retries = retries
        self.startup_wait = startup_wait
        self.close_timeout = close_timeout
        if renew_megabytes is not None and renew_megabytes <= 0:
            raise ValueError(f"renew_megabytes must be positive or None, not {renew_megabytes!r}")
        self.fresh = fresh
        self.renew_megabytes = renew_megabytes
        self.timeout_retries = timeout_retries
        self.restarts = 0
        """How many times the process was restarted after a crash or hang."""
        self.renewals = 0
        """How many times an idle process was replaced (``fresh`` mode, retries,
        memory above *renew_megabytes*)."""
        self.items = 0
        """How many items were sent to ACE."""
        self._tails: dict[int, _StderrTail] = {}
        self._memory: _ResidentMemory | None = None  # of the current process
        self._items_on_process = 0
        self._spawned = 0
        self._closed = False
        self._watchdog = None if watchdog is None else _Watchdog(watchdog, self._expire)
        self._proc: Any = None
        self._start()

    # -- process management --------------------------------------------

    @property
    def watchdog(self) -> float | None:
        """Seconds per item before lit kills ACE (``None``: no watchdog); settable."""
        return None if self._watchdog is None else self._watchdog.seconds

    @watchdog.setter
    def watchdog(self, seconds: float | None) -> None:
        if seconds is not None and seconds <= 0:
            raise ValueError(f"watchdog must be positive seconds or None, not {seconds!r}")
        if seconds is None:
            if self._watchdog is not None:
                self._watchdog.close()
            self._watchdog = None
        elif self._watchdog is None:
            self._watchdog = _Watchdog(seconds, self._expire)
        else:
            self._watchdog.seconds = seconds

    @property
    def pid(self) -> int | None:
        """The process id of the running ACE process (``None`` when closed)."""
        proc = self._proc
        if proc is None or self._closed:
            return None
        return int(proc._p.pid)

    def _start(self) -> None:
        cls = _delphin_classes()[0 if self._kind == "parser" else 1]
        try:
            self._proc = cls(str(self.image), owner=self, cmdargs=list(self.cmdargs))
        except ValueError as exc:  # PyDelphin's validation of ACE options
            raise ACEError(f"invalid ACE options {list(self.cmdargs)}: {exc}") from exc

    def _spawn(self, argv: list[str], env: Mapping[str, str] | None) -> subprocess.Popen[str]:
        """Start ACE; raise :class:`ACEError` if it cannot start."""
        logger.debug("starting ACE: %s", " ".join(argv))
        try:
            p = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=_utf8_environment(os.environ if env is None else env),
                encoding="utf-8",
                errors="replace",
                bufsize=1,
            )
        except OSError as exc:
            raise ACEError(
                f"cannot run ACE binary {argv[0]}: {exc.strerror or exc}; {_INSTALL_HINT}"
            ) from exc
        # the stderr pipe is binary for the drain thread; Popen made it text
        assert p.stderr is not None
        tail = _StderrTail(p.stderr.buffer)  # type: ignore[attr-defined]
        self._tails = {p.pid: tail}
        if self._memory is not None:
            self._memory.close()
        self._memory = None if self.renew_megabytes is None else _ResidentMemory(p.pid)
        self._items_on_process = 0
        first = self._spawned == 0
        self._spawned += 1
        if first and self.startup_wait > 0:
            try:
                code = p.wait(timeout=self.startup_wait)
            except subprocess.TimeoutExpired:
                pass
            else:
                self._reap(p)
                raise self._start_error(code, tail)
        return p

    def _start_error(self, code: int, tail: _StderrTail) -> ACEError:
        stderr = tail.text(last=10, wait=1.0) or "nothing on stderr"
        return ACEError(
            f"ACE exited at start (exit code {code}) with grammar image {self.image}: "
            f"{stderr}; check that the image was compiled for this ACE version "
            f"({'.'.join(map(str, self.ace_version))}) or re-install it with "
            f"`lit grammar install NAME --force`"
        )

    def _expire(self) -> None:
        """Watchdog callback: kill the current ACE process."""
        proc = self._proc
        if proc is None:
            return
        p = proc._p
        if p.poll() is None:
            logger.warning(
                "ACE %s did not answer within %g s; killing process %d",
                self._kind, self.watchdog, p.pid,
            )
            p.kill()

    def _reap(self, p: subprocess.Popen[str]) -> int:
        """Make sure process *p* is gone; return its exit code."""
        if p.poll() is None:
            p.kill()
        code = p.wait()
        for stream in (p.stdin, p.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        return code

    def _restart(self) -> None:
        """Replace a crashed or hung ACE process by a new one."""
        self._reap(self._proc._p)
        self.restarts += 1
        self._reopen()
        logger.info("ACE %s restarted (pid %d)", self._kind, self._proc._p.pid)

    def _renew(self) -> None:
        """Replace the idle ACE process by a new one (``fresh`` mode, retries,
        memory above *renew_megabytes*)."""
        # ACE is between items and has nothing to finish: SIGTERM ends it in a
        # few ms; end of input makes it tidy up first (some 10 ms per renewal,
        # a parse's worth with a fresh parser per sentence)
        p = self._proc._p
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=self.close_timeout)
            except subprocess.TimeoutExpired:
                pass
        self._reap(p)
        self.renewals += 1
        self._reopen()

    def _grown(self) -> bool:
        """``True`` if the process is resident above *renew_megabytes*."""
        if self.renew_megabytes is None or self._memory is None:
            return False
        rss = self._memory.megabytes()
        if rss is None or rss <= self.renew_megabytes:
            return False
        logger.info("ACE %s grew to %.0f MB (more than %g MB); replacing it by a fresh "
                    "process", self._kind, rss, self.renew_megabytes)
        return True

    def _reopen(self) -> None:
        proc = self._proc
        proc._lit_may_open = True
        try:
            proc._open()
        finally:
            proc._lit_may_open = False

    @contextmanager
    def _limits_scaled(self, factor: float) -> Iterator[None]:
        """Run with ACE's ``--timeout`` and the watchdog *factor* times larger.

        ACE takes its options at start, so the process is restarted with the
        larger limit and again with the usual one afterwards.
        """
        proc = self._proc
        usual, watchdog = list(proc.cmdargs), self.watchdog
        timeout = _option_value(usual, "--timeout")
        scaled = [a for a in usual]
        if timeout is not None:
            i = scaled.index("--timeout") if "--timeout" in scaled else -1
            if i >= 0:
                scaled[i + 1] = str(_int_seconds(float(timeout) * factor))
        proc.cmdargs = scaled
        if watchdog is not None:
            self.watchdog = watchdog * factor
        self._renew()
        try:
            yield
        finally:
            proc.cmdargs = usual
            if watchdog is not None:
                self.watchdog = watchdog
            if not self._closed:
                self._renew()

    def _retry_transient(self, result: Any, again: Callable[[], Any]) -> Any:
        """*result*, or if a time limit cut it, the result of *again* with the
        limits scaled by :data:`RETRY_FACTOR` (``timeout_retries`` times)."""
        tries = 0
        while result.failure == "timeout" and tries < self.timeout_retries and not self._closed:
            tries += 1
            logger.info("ACE %s: %s; retrying with %g times the time limits",
                        self._kind, result.error, RETRY_FACTOR)
            with self._limits_scaled(RETRY_FACTOR ** tries):
                result = again()
        return result

    # -- items ------------------------------------------------------------

    def _interact(self, datum: str) -> tuple[Any, str | None, str | None]:
        """Send *datum*; return ``(response, None, None)`` or ``(None, reason,
        failure)`` with *failure* one of :data:`lit.interface.FAILURES`."""
        if self._closed:
            raise ACEError(f"the ACE {self._kind} is closed")
        attempt = 0
        while True:
            proc = self._proc
            p = proc._p
            if p.poll() is not None:
                # died between items (e.g. killed from outside): not this item's fault
                tail = self._tails.get(p.pid)
                if p.returncode > 0 and self._items_on_process == 0 and tail is not None:
                    self._reap(p)
                    raise self._start_error(p.returncode, tail)
                logger.warning(
                    "ACE %s process exited between items (exit code %s); restarting",
                    self._kind, p.returncode,
                )
                self._restart()
                p = proc._p
            self.items += 1
            serial = self._watchdog.arm() if self._watchdog is not None else 0
            problem: str | None = None
            response = None
            try:
                response = proc.interact(datum)
                self._check(response)
            except (_ProcessEnded, BrokenPipeError, ConnectionResetError):
                problem = "died"
            except (
                AssertionError, AttributeError, ValueError, IndexError, KeyError, TypeError
            ) as exc:
                # PyDelphin could not read ACE's answer (garbage on stdout)
                problem = f"unreadable output from ACE ({type(exc).__name__}: {exc})"
            finally:
                fired = self._watchdog.disarm(serial) if self._watchdog is not None else False
            if fired:
                self._restart()
                return None, (
                    f"ACE timed out after {self.watchdog:g} s (watchdog); process restarted"
                ), "timeout"
            if problem is None and p.poll() is None:
                self._items_on_process += 1
                if self.fresh or self._grown():
                    # now, not before the next item: the new ACE loads while lit
                    # works on this answer
                    self._renew()
                return response, None, None
            if problem is None:
                # a complete answer, then the process exited: keep the answer
                logger.warning("ACE %s exited after an item; restarting", self._kind)
                self._restart()
                return response, None, None
            if problem != "died":
                logger.warning("%s; restarting ACE %s", problem, self._kind)
                self._restart()
                return None, problem + "; process restarted", "crash"
            tail = self._tails.get(p.pid)
            code = self._reap(p)
            if code > 0 and self._items_on_process == 0:
                # ACE ends with an exit status (not a signal) only when it
                # cannot run at all, e.g. a bad image: no use restarting
                raise self._start_error(code, tail) if tail else ACEError(
                    f"ACE exited (exit code {code}) with grammar image {self.image}"
                )
            last = tail.text(last=1, wait=0.5) if tail else ""
            detail = f"; last stderr line: {last[:300]}" if last else ""
            logger.warning("ACE %s process died (exit code %s)%s", self._kind, code, detail)
            self._restart()
            if attempt < self.retries:
                attempt += 1
                logger.info("retrying the item on the fresh ACE process (retry %d)", attempt)
                continue
            tries = f" {attempt + 1} times" if attempt else ""
            return None, f"ACE process died{tries} (exit code {code}); restarted{detail}", "crash"

    def _check(self, response: Any) -> None:
        """Raise ValueError if *response* is not a well-formed answer."""

    def close(self) -> int | None:
        """Stop ACE (politely: end of input, then kill after *close_timeout*)."""
        if self._closed:
            return None
        self._closed = True
        if self._watchdog is not None:
            self._watchdog.close()
        if self._memory is not None:
            self._memory.close()
            self._memory = None
        proc = self._proc
        if proc is None:
            return None
        p = proc._p
        try:
            if p.stdin is not None:
                p.stdin.close()
        except OSError:
            pass
        try:
            code = p.wait(timeout=self.close_timeout)
        except subprocess.TimeoutExpired:
            logger.warning("ACE %s did not exit within %g s; killing it",
                           self._kind, self.close_timeout)
            p.kill()
            code = p.wait()
        self._reap(p)
        tail = self._tails.get(p.pid)
        if tail is not None:
            tail.text(wait=1.0)  # let the drain thread finish
        return code

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - safety net only
        proc = getattr(self, "_proc", None)
        if proc is not None and not getattr(self, "_closed", True):
            try:
                proc._p.kill()
            except (OSError, AttributeError):
                pass


def _common_args(
    timeout: float | None, max_chart_megabytes: int | None, max_unpack_megabytes: int | None
) -> list[str]:
    args: list[str] = []
    if timeout is not None:
        args += ["--timeout", str(_int_seconds(timeout))]
    if max_chart_megabytes is not None:
        args += ["--max-chart-megabytes", str(int(max_chart_megabytes))]
    if max_unpack_megabytes is not None:
        args += ["--max-unpack-megabytes", str(int(max_unpack_megabytes))]
    return args


def _ace_errors(response: Any) -> tuple[str | None, str | None]:
    """ACE's error messages for an item, and their :func:`classify_error`."""
    messages = [str(e) for e in response.get("ERRORS") or ()]
    if response.get("error"):
        messages.append(str(response["error"]))
    if not messages:
        return None, None
    text = "ACE: " + "; ".join(messages)
    return text, classify_error(text)


def classify_error(message: str) -> str:
    """The failure (one of :data:`lit.interface.FAILURES`) an ACE message reports.

    Example:
        >>> classify_error("ACE: timeout, ran out of time while unpacking")
        'timeout'
        >>> classify_error("ACE: post-reduction lexical gap")
        'lexical-gap'
        >>> classify_error("ACE: hit RAM limit while unpacking")
        'resource'
    """
    text = message.lower()
    if "lexical gap" in text:
        return "lexical-gap"
    if any(w in text for w in ("timeout", "timed out", "out of time", "taking too long")):
        return "timeout"
    if any(w in text for w in ("ram limit", "too much ram", "memory", "edge limit")):
        return "resource"
    return "error"


class AceParser(_AceProcess):
    """A persistent ACE parsing process.

    One object drives one ACE process and is not thread-safe: give each
    thread or worker its own.

    Args:
        image: path to a compiled grammar image
        executable: the ACE binary (a path, or a name looked up on ``PATH``)
        n: at most this many readings per sentence (ACE ``-n``; ``None``: all)
        timeout: ACE's own per-item time limit in seconds (``--timeout``)
        max_chart_megabytes: ACE ``--max-chart-megabytes``
        max_unpack_megabytes: ACE ``--max-unpack-megabytes``
        watchdog: wall-clock seconds per item after which lit kills and
            restarts ACE and reports the item as failed (``None``: no
            watchdog); keep it above *timeout*
        retries: how often an item whose ACE process died is retried on
            the fresh process before it is reported as failed (an item that
            hung past the watchdog is not retried)
        env: environment of the ACE process (default: inherited)
        ace_version: ACE's version if known (e.g. ``"0.9.34"``); otherwise
            ``ACE -V`` is run once
        extra_args: more ACE options (e.g. ``["--disable-generalization"]``)
        startup_wait: seconds to watch a new ACE for an immediate exit (a bad
            image); an exit later, before the first answer, is detected too
        close_timeout: seconds to let ACE finish after end of input
        fresh: a new ACE process for every item, so that the answer
            depends on the item alone: without a parse-ranking model, which
            readings ACE returns under ``-n`` depends on what the same
            process parsed before. The next process is started as soon as an
            item is answered, so it loads while lit works on the answer
        timeout_retries: how often an item cut by a time limit (ACE's
            ``--timeout`` or the watchdog) is tried again, each time with
            limits :data:`RETRY_FACTOR` times larger, before it is reported
            with ``failure == "timeout"``
        renew_megabytes: replace the process by a fresh one when its
            resident memory exceeds this many megabytes after an item
            (``None``: never; see the module notes)
    Raises:
        ACEError: ACE or the image is missing, or ACE exits at start
    Example:
        >>> with AceParser("erg.dat", executable="ace", n=2) as parser:  # doctest: +SKIP
        ...     [len(r.readings) for r in parser.parse_from_iterable(["Dogs bark."])]
        [2]
    """

    _kind = "parser"

    def __init__(
        self,
        image: str | os.PathLike[str],
        *,
        executable: str | os.PathLike[str] = "ace",
        n: int | None = DEFAULT_N,
        timeout: float | None = DEFAULT_TIMEOUT,
        max_chart_megabytes: int | None = DEFAULT_MAX_CHART_MEGABYTES,
        max_unpack_megabytes: int | None = DEFAULT_MAX_UNPACK_MEGABYTES,
        watchdog: float | None = DEFAULT_WATCHDOG,
        retries: int = 1,
        env: Mapping[str, str] | None = None,
        ace_version: str | Sequence[int] | None = None,
        extra_args: Sequence[str] = (),
        startup_wait: float = 0.2,
        close_timeout: float = 5.0,
        fresh: bool = True,
        timeout_retries: int = 1,
        renew_megabytes: float | None = DEFAULT_RENEW_MEGABYTES,
    ) -> None:
        if n is not None and n < 1:
            raise ValueError(f"n must be >= 1 or None, not {n!r}")
        self.n = n
        cmdargs = ["-n", str(n)] if n else []
        cmdargs += _common_args(timeout, max_chart_megabytes, max_unpack_megabytes)
        cmdargs += list(extra_args)
        super().__init__(
            image,
            executable=executable,
            cmdargs=cmdargs,
            watchdog=watchdog,
            retries=retries,
            env=env,
            ace_version=ace_version,
            startup_wait=startup_wait,
            close_timeout=close_timeout,
            fresh=fresh,
            timeout_retries=timeout_retries,
            renew_megabytes=renew_megabytes,
        )

    def __enter__(self) -> AceParser:
        return self

    def _check(self, response: Any) -> None:
        for result in response.get("results") or ():
            mrs = result.get("mrs")
            if not isinstance(mrs, str) or not mrs.lstrip().startswith("["):
                raise ValueError(f"a result without an MRS: {str(result)[:200]}")

    def parse(self, sentence: str) -> ParseResult:
        """Parse *sentence*; failures come back as a result with ``error``.

        A parse cut by a time limit is tried again with larger limits
        (*timeout_retries*); if it is cut again, its ``failure`` is
        ``"timeout"`` (transient: no answer).
        """
        line = _one_line(sentence)
        if not line:
            return ParseResult(sentence, (), "empty sentence: nothing to parse", "invalid")
        return self._retry_transient(self._parse_line(sentence, line),
                                     lambda: self._parse_line(sentence, line))

    def _parse_line(self, sentence: str, line: str) -> ParseResult:
        response, error, failure = self._interact(line)
        if response is None:
            return ParseResult(sentence, (), error, failure)
        readings = tuple(
            Reading(
                mrs=res["mrs"].strip(),
                derivation=res.get("derivation"),
                tree=res.get("tree"),
            )
            for res in response.get("results") or ()
        )
        if self.n:
            readings = readings[: self.n]
        return ParseResult(sentence, readings, *_ace_errors(response))

    def parse_from_iterable(self, sentences: Iterable[str]) -> Iterator[ParseResult]:
        """Yield a :class:`ParseResult` for each of *sentences*, in order."""
        for sentence in sentences:
            yield self.parse(sentence)


class AceGenerator(_AceProcess):
    """A persistent ACE generation process (``ace -e``).

    Takes the same arguments as :class:`AceParser` except *n*, and
    *max_realizations*: an MRS with more realizations than that gets no
    surfaces and the failure ``overgeneration`` (``None``: no cap; see
    :data:`DEFAULT_MAX_REALIZATIONS`).

    Example:
        >>> with AceGenerator("erg.dat") as generator:  # doctest: +SKIP
        ...     generator.generate(reading_mrs).surfaces
        ('The dog chased the cat.',)
    """

    _kind = "generator"

    def __init__(
        self,
        image: str | os.PathLike[str],
        *,
        executable: str | os.PathLike[str] = "ace",
        timeout: float | None = DEFAULT_TIMEOUT,
        max_chart_megabytes: int | None = DEFAULT_MAX_CHART_MEGABYTES,
        max_unpack_megabytes: int | None = DEFAULT_MAX_UNPACK_MEGABYTES,
        watchdog: float | None = DEFAULT_WATCHDOG,
        retries: int = 1,
        env: Mapping[str, str] | None = None,
        ace_version: str | Sequence[int] | None = None,
        extra_args: Sequence[str] = (),
        startup_wait: float = 0.2,
        close_timeout: float = 5.0,
        fresh: bool = False,
        timeout_retries: int = 1,
        max_realizations: int | None = DEFAULT_MAX_REALIZATIONS,
        renew_megabytes: float | None = DEFAULT_RENEW_MEGABYTES,
    ) -> None:
        if max_realizations is not None and max_realizations < 1:
            raise ValueError(f"max_realizations must be at least 1, not {max_realizations}")
        self.max_realizations = max_realizations
        cmdargs = [] if max_realizations is None else ["-n", str(max_realizations + 1)]
        cmdargs += _common_args(timeout, max_chart_megabytes, max_unpack_megabytes)
        cmdargs += list(extra_args)
        super().__init__(
            image,
            executable=executable,
            cmdargs=cmdargs,
            watchdog=watchdog,
            retries=retries,
            env=env,
            ace_version=ace_version,
            startup_wait=startup_wait,
            close_timeout=close_timeout,
            fresh=fresh,
            timeout_retries=timeout_retries,
            renew_megabytes=renew_megabytes,
        )

    def __enter__(self) -> AceGenerator:
        return self

    def _check(self, response: Any) -> None:
        for result in response.get("results") or ():
            if not isinstance(result.get("surface", result.get("SENT")), str):
                raise ValueError(f"a realization without a surface: {str(result)[:200]}")

    def generate(self, mrs: MRS | str) -> GenerationResult:
        """Realize *mrs* (an MRS or SimpleMRS string); character spans are removed.

        Failures, including an MRS that cannot be read, come back as a
        result with ``error``.
        """
        from lit.mrs import mrs_for_generation

        try:
            line = mrs_for_generation(mrs)
        except ValueError as exc:
            text = mrs if isinstance(mrs, str) else repr(mrs)
            return GenerationResult(text, (), f"invalid MRS: {exc}", "invalid")
        return self._retry_transient(self._generate_line(line),
                                     lambda: self._generate_line(line))

    def _generate_line(self, line: str) -> GenerationResult:
        response, error, failure = self._interact(line)
        if response is None:
            return GenerationResult(line, (), error, failure)
        surfaces = tuple(
            str(res.get("surface", res.get("SENT"))).strip()
            for res in response.get("results") or ()
        )
        cap = self.max_realizations
        if cap is not None and len(surfaces) > cap:
            # which cap + 1 of them ACE unpacked depends on the process's history
            return GenerationResult(line, (), f"more than {cap} realizations (the cap; "
                                    "ACE is asked for one more)", "overgeneration")
        return GenerationResult(line, surfaces, *_ace_errors(response))

    def generate_from_iterable(self, mrss: Iterable[MRS | str]) -> Iterator[GenerationResult]:
        """Yield a :class:`GenerationResult` for each of *mrss*, in order."""
        for m in mrss:
            yield self.generate(m)


def parse_from_iterable(
    image: str | os.PathLike[str], sentences: Iterable[str], **kwargs: Any
) -> Iterator[ParseResult]:
    """Parse each of *sentences* with one :class:`AceParser` (closed at the end).

    *kwargs* are passed to :class:`AceParser`.

    Example:
        >>> results = list(parse_from_iterable("erg.dat", ["Dogs bark."]))  # doctest: +SKIP
    """
    with AceParser(image, **kwargs) as parser:
        yield from parser.parse_from_iterable(sentences)


def generate_from_iterable(
    image: str | os.PathLike[str], mrss: Iterable[MRS | str], **kwargs: Any
) -> Iterator[GenerationResult]:
    """Realize each of *mrss* with one :class:`AceGenerator` (closed at the end).

    *kwargs* are passed to :class:`AceGenerator`.
    """
    with AceGenerator(image, **kwargs) as generator:
        yield from generator.generate_from_iterable(mrss)
