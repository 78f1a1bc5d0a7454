"""A persistent parse cache in an embedded SQLite database.

Parsing is the most expensive step of a transformation run, and the same
sentences are parsed again whenever a run is repeated with other specs or
resumed. :class:`ParseCache` stores parse results keyed by everything that
determines them:

* the sha256 of the grammar image,
* the ACE version,
* the parse options (number of readings, timeout, memory caps, reading
  selection, ...) as one canonical string (:func:`canonical_options`),
* the sentence.

:class:`CachedParser` wraps any object with a ``parse(sentence)`` method (the
``Parser`` protocol of :mod:`lit.ace`) and consults the cache first.

What is cached
--------------
Only answers, results that come out the same whenever the parse is
repeated (:func:`is_cacheable`): results with readings; no-parses; lexical
gaps; input that cannot be parsed (an empty sentence). Transient failures
(:data:`lit.interface.TRANSIENT_FAILURES`: a time limit or watchdog, a
memory limit, a crash, unreadable output) depend on the load of the machine
and are *not* cached, so the next run tries again; unclassified errors are
not cached either. Next to a parse, :class:`~lit.pipeline.Transformer`
stores the reading selection made from it (:func:`lit.parse.select`, keyed
by the parse's key and the method), so a cached sentence costs no round-trip
generation either; a selection cut short by a limit is not stored. An entry
written under load is thus the same as one
written on an idle machine. The readings themselves do not depend on what an
ACE process parsed before (:class:`lit.ace.AceParser` starts a fresh process
per sentence). Files of an earlier schema are purged when opened. The policy
can be replaced by passing *cacheable* to :class:`CachedParser`.

Concurrency
-----------
The database is in WAL mode with a busy timeout, so several worker
processes can read and write the same file at once. Each process (and
thread) uses its own connection, opened lazily; a :class:`ParseCache` can
be pickled or inherited by a forked child and reconnects there. Writes are
idempotent (``INSERT ... ON CONFLICT DO UPDATE``): two workers that parse
the same sentence store the same row.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from lit.errors import LitError

__all__ = [
    "CacheError",
    "CacheKey",
    "ParseCache",
    "CachedParser",
    "canonical_options",
    "default_cache_path",
    "open_cache",
    "is_cacheable",
    "parser_cache_key",
    "DETERMINISTIC_ERRORS",
]

logger = logging.getLogger(__name__)

#: Error texts (lower-cased prefixes) of deterministic failures, which are
#: cached; used only for results that do not classify their failure.
DETERMINISTIC_ERRORS: tuple[str, ...] = (
    "no parse",
    "no-parse",
    "empty sentence",
    "invalid-input",
    "too long",
    "too many tokens",
)

#: Failures (:data:`lit.interface.FAILURES`) that are answers about the
#: sentence and so are cached: a word the grammar cannot cover, input that
#: cannot be parsed at all.
_DETERMINISTIC_FAILURES = frozenset({"lexical-gap", "invalid"})

#: Parts of error messages of transient failures (never cached, even if an
#: otherwise deterministic marker is present).
_TRANSIENT_PARTS: tuple[str, ...] = (
    "timed out", "timeout", "out of time", "watchdog", "died", "restart", "killed", "crash",
    "unreadable", "broken pipe", "signal", "ram limit", "memory", "edge limit",
)

_SCHEMA_VERSION = "2"
# schema 1 (lit 0.1): entries could hold transient failures (memory limits) and
# readings that depended on what the ACE process had parsed before; they are
# removed when such a file is opened
_PURGED_SCHEMAS = ("1",)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS parses (
    image_sha256 TEXT NOT NULL,
    ace_version TEXT NOT NULL,
    options TEXT NOT NULL,
    sentence TEXT NOT NULL,
    result TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (image_sha256, ace_version, options, sentence)
) WITHOUT ROWID;
"""


class CacheError(LitError):
    """The parse cache file cannot be opened, read or written."""


def default_cache_path(home: str | os.PathLike[str]) -> Path:
    """The default cache file under a lit home directory.

    Example:
        >>> default_cache_path("/data/lit").as_posix()
        '/data/lit/cache/parses.sqlite'
    """
    return Path(home) / "cache" / "parses.sqlite"


def canonical_options(options: Mapping[str, Any]) -> str:
    """Serialize parse *options* into one canonical string for the cache key.

    Keys are sorted and ``None`` values dropped, so equal options give equal
    strings whatever their order.

    Example:
        >>> canonical_options({"timeout": 5, "n": 10, "max_chart_mb": None})
        '{"n":10,"timeout":5}'
    """
    clean = {str(k): v for k, v in options.items() if v is not None}
    try:
        return json.dumps(clean, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError) as exc:
        raise CacheError(f"parse options cannot be used as a cache key: {exc}") from exc


@dataclass(frozen=True, slots=True)
class CacheKey:
    """What, besides the sentence, determines a parse result.

    Attributes:
        image_sha256: sha256 of the grammar image file
        ace_version: version string of the ACE binary
        options: canonical parse options (see :func:`canonical_options`)
    """

    image_sha256: str
    ace_version: str
    options: str

    @classmethod
    def create(
        cls, image_sha256: str, ace_version: str | None, **options: Any
    ) -> CacheKey:
        """Build a key from a checksum, a version and keyword parse options.

        Example:
            >>> CacheKey.create("ab12", "0.9.30", n=5, timeout=5).options
            '{"n":5,"timeout":5}'
        """
        return cls(image_sha256, ace_version or "unknown", canonical_options(options))


def is_cacheable(result: Mapping[str, Any]) -> bool:
    """Whether a parse result (as a dict) is an answer, and so may be cached.

    A result with readings and no failure, a no-parse, a lexical gap or
    input that cannot be parsed is an answer. A transient failure (a time or
    memory limit, a crash: :data:`lit.interface.TRANSIENT_FAILURES`) is not,
    nor is an unclassified error. Results without a ``failure`` field are
    judged by their error text.

    Example:
        >>> is_cacheable({"readings": [], "error": None})
        True
        >>> is_cacheable({"readings": [], "error": "ACE: timeout", "failure": "timeout"})
        False
        >>> is_cacheable({"readings": [], "error": "watchdog: ACE killed after 30 s"})
        False
    """
    error = result.get("error")
    failure = result.get("failure")
    if failure is not None:
        return failure in _DETERMINISTIC_FAILURES
    if not error:
        return True
    text = str(error).strip().lower()
    if any(part in text for part in _TRANSIENT_PARTS):
        return False
    return text.startswith(DETERMINISTIC_ERRORS)


def parser_cache_key(parser: Any, image_sha256: str, **options: Any) -> CacheKey:
    """The :class:`CacheKey` of an :class:`lit.ace.AceParser` and its grammar image.

    The parse options are the ACE command-line arguments of *parser* (``-n``,
    ``--timeout``, memory caps, extra arguments) plus *options* (e.g. the
    reading selection method, if results depend on it).
    """
    version = getattr(parser, "ace_version", None)
    if isinstance(version, (tuple, list)):
        version = ".".join(str(v) for v in version)
    cmdargs = list(getattr(parser, "cmdargs", ()))
    fresh = getattr(parser, "fresh", None)
    return CacheKey.create(image_sha256, version, cmdargs=cmdargs, fresh=fresh, **options)


def _corrupt(path: Path, exc: BaseException) -> CacheError:
    return CacheError(
        f"parse cache {path} is not a usable SQLite database ({exc}); "
        f"delete the file to start a fresh cache, or run with --no-cache"
    )


class ParseCache:
    """Parse results in a SQLite file, shared safely by concurrent processes.

    Args:
        path: the database file; created (with its directory) if missing
        timeout: seconds to wait for a lock held by another writer

    Raises:
        CacheError: when *path* exists but is not a SQLite database (the
            message names the file and says to delete it or use
            ``--no-cache``), or cannot be created.

    Example:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "parses.sqlite"
        >>> key = CacheKey.create("ab12", "0.9.30", n=5)
        >>> with ParseCache(path) as cache:
        ...     cache.put(key, "Dogs bark.", {"readings": [], "error": None})
        ...     cache.get(key, "Dogs bark.")
        {'readings': [], 'error': None}
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 60.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._pid = os.getpid()
        self._connect()  # fail early on an unusable file

    # pickling (spawned workers, Ray actors) carries the path, not the connection
    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "timeout": self.timeout}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], timeout=state["timeout"])  # type: ignore[misc]

    def __enter__(self) -> ParseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ParseCache({os.fspath(self.path)!r})"

    def _connect(self) -> sqlite3.Connection:
        if os.getpid() != self._pid:
            # inherited through fork: never touch the parent's connections
            self._local = threading.local()
            self._lock = threading.Lock()
            self._connections = []
            self._pid = os.getpid()
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheError(
                f"cannot create the parse cache directory {self.path.parent}: {exc}; "
                f"pass --cache PATH or --no-cache"
            ) from exc
        try:
            conn = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise CacheError(
                f"cannot open the parse cache {self.path}: {exc}; "
                f"pass --cache PATH or --no-cache"
            ) from exc
        try:
            self._setup(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise _corrupt(self.path, exc) from exc
        self._local.conn = conn
        with self._lock:
            self._connections.append(conn)
        return conn

    def _setup(self, conn: sqlite3.Connection) -> None:
        conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
        # switching to WAL needs a moment with no other writer; retry briefly
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        if str(mode).lower() != "wal":
            logger.warning("parse cache %s: journal mode is %s, not WAL", self.path, mode)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.executescript(_SCHEMA)
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('schema', ?) ON CONFLICT(key) DO NOTHING",
            (_SCHEMA_VERSION,),
        )
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is not None and row[0] in _PURGED_SCHEMAS:
            with conn:
                n = conn.execute("DELETE FROM parses").rowcount
                conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'",
                             (_SCHEMA_VERSION,))
            logger.warning(
                "parse cache %s was written by an earlier lit (schema %s): its %d entries "
                "may hold cut-short parses or readings that depended on ACE's history, "
                "and were removed", self.path, row[0], n)
            row = (_SCHEMA_VERSION,)
        if row is None or row[0] != _SCHEMA_VERSION:
            found = None if row is None else row[0]
            raise CacheError(
                f"parse cache {self.path} has schema version {found}, this lit needs "
                f"{_SCHEMA_VERSION}; delete the file to start a fresh cache, "
                f"or run with --no-cache"
            )

    def _execute(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        conn = self._connect()
        try:
            return conn.execute(sql, params)
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise CacheError(
                    f"parse cache {self.path} stayed locked for more than {self.timeout} s "
                    f"({exc}); is another process holding it? Retry, pass --cache PATH "
                    f"or --no-cache"
                ) from exc
            raise CacheError(
                f"parse cache {self.path}: {exc}; check the file and its directory, "
                f"delete the file to start a fresh cache, or run with --no-cache"
            ) from exc
        except sqlite3.DatabaseError as exc:
            raise _corrupt(self.path, exc) from exc

    def get(self, key: CacheKey, sentence: str) -> dict[str, Any] | None:
        """The cached result for *sentence* under *key*, or ``None``."""
        row = self._execute(
            "SELECT result FROM parses WHERE image_sha256 = ? AND ace_version = ? "
            "AND options = ? AND sentence = ?",
            (key.image_sha256, key.ace_version, key.options, sentence),
        ).fetchone()
        if row is None:
            return None
        try:
            value = json.loads(row[0])
        except json.JSONDecodeError as exc:
            raise _corrupt(self.path, exc) from exc
        if not isinstance(value, dict):
            raise _corrupt(self.path, ValueError("cached result is not a JSON object"))
        return value

    def put(self, key: CacheKey, sentence: str, result: Mapping[str, Any]) -> None:
        """Store *result* (a JSON-serializable mapping) for *sentence* under *key*."""
        text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
        self._execute(
            "INSERT INTO parses (image_sha256, ace_version, options, sentence, result, created) "
            "VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (image_sha256, ace_version, options, sentence) "
            "DO UPDATE SET result = excluded.result, created = excluded.created",
            (key.image_sha256, key.ace_version, key.options, sentence, text, time.time()),
        )

    def __len__(self) -> int:
        return int(self._execute("SELECT COUNT(*) FROM parses").fetchone()[0])

    def close(self) -> None:
        """Close this process's connections (the cache reopens on next use)."""
        if os.getpid() != self._pid:
            return
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()
        self._local = threading.local()


class _Parser(Protocol):
    def parse(self, sentence: str) -> Any: ...


def _decode_parse_result(data: dict[str, Any]) -> Any:
    from lit.interface import ParseResult

    return ParseResult.from_dict(data)


def _encode(result: Any) -> dict[str, Any]:
    return result if isinstance(result, dict) else result.to_dict()


class CachedParser:
    """A parser that looks sentences up in a :class:`ParseCache` first.

    It has the same ``parse(sentence)`` interface as :class:`lit.ace.AceParser`
    and can be used wherever a parser is expected. Misses are parsed with
    *parser* and stored if *cacheable* says so (see the module docs for the
    policy). Entering the context enters *parser*; closing it does not close
    *cache*, which callers may share.

    Args:
        parser: any object with ``parse(sentence)`` returning a result with
            ``to_dict()`` (e.g. :class:`lit.ace.ParseResult`)
        cache: the cache to use
        key: grammar checksum, ACE version and parse options of *parser*
        decode: turns a cached dict back into a result
            (default: :meth:`lit.ace.ParseResult.from_dict`)
        cacheable: the caching policy (default: :func:`is_cacheable`)

    Attributes:
        hits: lookups answered from the cache
        misses: lookups that had to parse
        stored: results written to the cache
    """

    def __init__(
        self,
        parser: _Parser,
        cache: ParseCache,
        key: CacheKey,
        *,
        decode: Callable[[dict[str, Any]], Any] | None = None,
        cacheable: Callable[[Mapping[str, Any]], bool] = is_cacheable,
    ) -> None:
        self.parser = parser
        self.cache = cache
        self.key = key
        self.decode = decode or _decode_parse_result
        self.cacheable = cacheable
        self.hits = 0
        self.misses = 0
        self.stored = 0

    def __enter__(self) -> CachedParser:
        enter = getattr(self.parser, "__enter__", None)
        if enter is not None:
            enter()
        return self

    def __exit__(self, *exc: Any) -> None:
        exit_ = getattr(self.parser, "__exit__", None)
        if exit_ is not None:
            exit_(*exc)

    def close(self) -> None:
        """Close the wrapped parser, if it can be closed."""
        close = getattr(self.parser, "close", None)
        if close is not None:
            close()

    def parse(self, sentence: str) -> Any:
        """Parse *sentence*, from the cache when possible."""
        data = self.cache.get(self.key, sentence)
        if data is not None:
            self.hits += 1
            return self.decode(data)
        self.misses += 1
        result = self.parser.parse(sentence)
        data = _encode(result)
        if self.cacheable(data):
            self.cache.put(self.key, sentence, data)
            self.stored += 1
        else:
            logger.debug("not caching transient parse failure for %r: %s",
                         sentence, data.get("error"))
        return result

    def stats(self) -> dict[str, int]:
        """``{"hits": ..., "misses": ..., "stored": ...}``."""
        return {"hits": self.hits, "misses": self.misses, "stored": self.stored}


def open_cache(path: str | os.PathLike[str] | None = None, *,
               env: Mapping[str, str] | None = None) -> ParseCache | None:
    """The parse cache of a run: at *path*, else ``LIT_CACHE`` in *env*, else
    :func:`default_cache_path` under the lit home (``LIT_HOME`` in *env*).

    A location the user named (*path* or ``LIT_CACHE``) must work. Where the
    default location cannot be written (a read-only or shared lit home, as
    in the container image) the cache is off, with a warning, and ``None``
    is returned.
    """
    env = {} if env is None else env
    named = path if path is not None else env.get("LIT_CACHE") or None
    if named is not None:
        return ParseCache(named)
    from lit.grammar import lit_home

    default = default_cache_path(lit_home(env))
    if not _writable(default):
        logger.warning("parse cache off: %s is not writable; set LIT_CACHE or pass "
                       "--cache PATH (--no-cache silences this)", default)
        return None
    return ParseCache(default)


def _writable(path: Path) -> bool:
    """Whether *path* (a file, maybe not yet there) can be created or written."""
    if path.exists():
        return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return os.access(parent, os.W_OK | os.X_OK)
