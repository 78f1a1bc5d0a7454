"""The web layer of ``lit serve``: routes, request limits, the page's assets, the server.

This is the only module that imports Starlette and uvicorn (``pip install
'lit-mrs[serve]'``); it translates HTTP requests into calls of an
:class:`~lit.serve.explore.Explorer` and its answers and errors into JSON.

Routes:

``GET /``, ``GET /static/NAME``
    the explorer page and its script and style, read into memory when the
    app is made (requests never touch the file system; nothing is loaded
    from elsewhere, so the page works offline)
``GET /api/info``, ``GET /api/rules``, ``GET /api/labels``
    the set-up, the rule registry and the label table
``POST /api/parse``, ``POST /api/transform``
    a JSON object in, a JSON object out (see the README)

Errors are ``{"error": "..."}`` with status 400 (bad input), 404, 405, 413
(body too large), 415 (not JSON), 503 (every ACE backend busy, or shutting
down), 504 (out of time) or 500. Bound to a loopback address, the app
answers only requests whose ``Host`` is a local name (a guard against DNS
rebinding).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
from collections.abc import Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any

from lit.errors import ACEError, InputError, LitError, SpecError
from lit.serve.explore import Limits, RequestError, TimeLimitError
from lit.serve.pool import BusyError, PoolClosedError

__all__ = ["create_app", "load_assets", "bind", "is_local", "url_of", "run", "serve", "missing"]

logger = logging.getLogger(__name__)

#: the page's assets: file name -> media type
ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "dmrs.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}

_SECURITY_HEADERS = [
    (b"content-security-policy",
     b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
     b"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]
_LOCAL_NAMES = {"localhost", "127.0.0.1", "[::1]", "::1"}

_PARSE_FIELDS = {"sentence", "id"}
_SENTENCE_FIELDS = {"sentence", "rules", "reading", "candidates", "verify", "id"}
_PAIR_FIELDS = {"sentence1", "sentence2", "gold_label", "rules", "reading1", "reading2",
                "candidates", "verify", "id"}


class _HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def load_assets() -> dict[str, bytes]:
    """The page's files (:data:`ASSETS`), read from the package."""
    base = resources.files("lit.serve") / "static"
    return {name: (base / name).read_bytes() for name in ASSETS}


def is_local(host: str) -> bool:
    """``True`` if *host* is a loopback address or ``localhost``.

    Example:
        >>> is_local("127.0.0.1"), is_local("::1"), is_local("0.0.0.0")
        (True, True, False)
    """
    if host.strip("[]") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def url_of(host: str, port: int) -> str:
    """``http://HOST:PORT`` (IPv6 addresses in brackets).

    Example:
        >>> url_of("::1", 8765)
        'http://[::1]:8765'
    """
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def bind(host: str, port: int, backlog: int = 128) -> socket.socket:
    """A listening TCP socket on *host*:*port* (port 0: a free port).

    Raises:
        LitError: the address cannot be used (e.g. the port is taken)
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise LitError(f"cannot listen on {host!r}: {exc.strerror}; pass --host "
                       "127.0.0.1 or another address of this machine") from exc
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        raise LitError(f"cannot listen on {url_of(host, port)}: {exc.strerror}; pass another "
                       "--port (0 picks a free one)") from exc
    return sock


def create_app(
    explorer: Any,
    *,
    local_only: bool = True,
    on_shutdown: Callable[[], None] | None = None,
    assets: Mapping[str, bytes] | None = None,
) -> Any:
    """The Starlette app serving *explorer*.

    Args:
        explorer: an :class:`~lit.serve.explore.Explorer`
        local_only: answer only requests addressed to a local name
            (``Host: 127.0.0.1``, ``localhost``, ``[::1]``)
        on_shutdown: called when the server stops (e.g. the pool's
            ``close``, which stops ACE)
        assets: the page's files (default: :func:`load_assets`)
    """
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    files = dict(load_assets() if assets is None else assets)
    limits = explorer.limits

    def reply(data: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Any:
        body = json.dumps(data, ensure_ascii=False).encode("utf-8")
        return Response(body, status_code=status, headers=dict(headers or {}),
                        media_type="application/json")

    def error(status: int, message: str, headers: Mapping[str, str] | None = None) -> Any:
        return reply({"error": message}, status, headers)

    async def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return reply(await run_in_threadpool(fn, *args, **kwargs))
        except (RequestError, SpecError, InputError) as exc:
            return error(400, str(exc))
        except BusyError as exc:
            return error(503, str(exc), {"Retry-After": "5"})
        except PoolClosedError as exc:
            return error(503, str(exc))
        except TimeLimitError as exc:
            return error(504, str(exc))
        except ACEError as exc:
            logger.error("ACE: %s", exc)
            return error(500, f"ACE failed: {exc}")
        except LitError as exc:
            logger.error("%s", exc)
            return error(500, str(exc))

    async def page(request: Request) -> Any:
        return Response(files["index.html"], media_type=ASSETS["index.html"])

    async def asset(request: Request) -> Any:
        name = request.path_params["name"]
        if name not in ASSETS or name == "index.html":
            return error(404, f"no such file: /static/{name}")
        return Response(files[name], media_type=ASSETS[name])

    async def info(request: Request) -> Any:
        return reply(explorer.info())

    async def rule_list(request: Request) -> Any:
        return reply({"grammar": explorer.profile.name, "rules": explorer.rule_list()})

    async def label_table(request: Request) -> Any:
        return reply(explorer.label_table())

    async def parse(request: Request) -> Any:
        try:
            body = await _json_body(request, limits.max_body)
            _known(body, _PARSE_FIELDS)
            sentence = _string(body, "sentence")
            item_id = _item_id(body)
        except _HttpError as exc:
            return error(exc.status, exc.message)
        return await call(explorer.parse, sentence, item_id=item_id,
                          deadline=explorer.clock() + limits.request_timeout)

    async def transform(request: Request) -> Any:
        try:
            body = await _json_body(request, limits.max_body)
            pair = "sentence1" in body or "sentence2" in body
            _known(body, _PAIR_FIELDS if pair else _SENTENCE_FIELDS)
            rules = _string(body, "rules")
            options = {
                "candidates": _integer(body, "candidates", 10),
                "verify": _boolean(body, "verify", False),
                "item_id": _item_id(body),
                "deadline": explorer.clock() + limits.request_timeout,
            }
            if pair:
                args: tuple[Any, ...] = (_string(body, "sentence1"), _string(body, "sentence2"),
                                         _string(body, "gold_label"), rules)
                options["readings"] = (_reading(body, "reading1"), _reading(body, "reading2"))
                fn = explorer.transform_pair
            else:
                args = (_string(body, "sentence"), rules)
                options["reading"] = _reading(body, "reading")
                fn = explorer.transform
        except _HttpError as exc:
            return error(exc.status, exc.message)
        return await call(fn, *args, **options)

    async def http_error(request: Request, exc: Exception) -> Any:
        assert isinstance(exc, HTTPException)
        messages = {404: f"not found: {request.url.path}",
                    405: f"method {request.method} not allowed for {request.url.path}"}
        return error(exc.status_code, messages.get(exc.status_code, str(exc.detail)),
                     dict(exc.headers or {}))

    async def internal_error(request: Request, exc: Exception) -> Any:
        logger.error("internal error on %s", request.url.path, exc_info=exc)
        return JSONResponse({"error": f"internal error ({type(exc).__name__}); see the "
                                      "server's log"}, status_code=500)

    @asynccontextmanager
    async def lifespan(app: Any) -> Any:
        yield
        if on_shutdown is not None:
            await run_in_threadpool(on_shutdown)

    routes = [
        Route("/", page, methods=["GET"]),
        Route("/static/{name}", asset, methods=["GET"]),
        Route("/api/info", info, methods=["GET"]),
        Route("/api/rules", rule_list, methods=["GET"]),
        Route("/api/labels", label_table, methods=["GET"]),
        Route("/api/parse", parse, methods=["POST"]),
        Route("/api/transform", transform, methods=["POST"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={HTTPException: http_error, Exception: internal_error})
    return _Guard(app, local_only=local_only)


class _Guard:
    """ASGI middleware: security headers on every response; local ``Host`` names only."""

    def __init__(self, app: Any, *, local_only: bool) -> None:
        self.app = app
        self.local_only = local_only

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.local_only:
            host = _host_name(dict(scope.get("headers") or ()).get(b"host", b"").decode(
                "latin-1"))
            if host not in _LOCAL_NAMES:
                await _send_json(send, 400, {"error": (
                    f"Host {host!r} refused: this lit serve answers only requests to "
                    "127.0.0.1, localhost or [::1] (start it with --host to serve others)")})
                return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = [*message.get("headers", ()), *_SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _host_name(header: str) -> str:
    """The name in a ``Host`` header, without the port (IPv6 keeps its brackets)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[: header.find("]") + 1] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


async def _send_json(send: Callable[[dict[str, Any]], Awaitable[None]], status: int,
                     data: Any) -> None:
    body = json.dumps(data).encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *_SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": body})


async def _json_body(request: Any, limit: int) -> dict[str, Any]:
    """The request's JSON object, read up to *limit* bytes."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json":
        raise _HttpError(415, "send a JSON object with Content-Type: application/json "
                              "(e.g. curl --json '{\"sentence\": \"...\"}' URL)")
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > limit):
        raise _HttpError(413, f"request body too large: {length} bytes > {limit}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _HttpError(413, f"request body too large: more than {limit} bytes")
        chunks.append(chunk)
    try:
        data = json.loads(b"".join(chunks).decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _HttpError(400, f"the body is not UTF-8: {exc.reason} at byte {exc.start}"
                         ) from None
    except json.JSONDecodeError as exc:
        raise _HttpError(400, f"malformed JSON: {exc.msg} at line {exc.lineno} column "
                              f"{exc.colno}") from None
    if not isinstance(data, dict):
        raise _HttpError(400, f"the body must be a JSON object, not {type(data).__name__}")
    return data


def _known(body: Mapping[str, Any], fields: set[str]) -> None:
    unknown = sorted(set(body) - fields)
    if unknown:
        raise _HttpError(400, f"unknown field(s) {', '.join(map(repr, unknown))}; this request "
                              f"takes {', '.join(sorted(fields))}")


def _string(body: Mapping[str, Any], field: str) -> str:
    value = body.get(field)
    if not isinstance(value, str):
        what = "missing" if value is None else f"a {type(value).__name__}"
        raise _HttpError(400, f"{field}: expected a string, got {what}")
    return value


def _integer(body: Mapping[str, Any], field: str, default: int) -> int:
    value = body.get(field, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _HttpError(400, f"{field}: expected a whole number, got {value!r}")
    return value


def _boolean(body: Mapping[str, Any], field: str, default: bool) -> bool:
    value = body.get(field, default)
    if not isinstance(value, bool):
        raise _HttpError(400, f"{field}: expected true or false, got {value!r}")
    return value


def _reading(body: Mapping[str, Any], field: str) -> int | None:
    value = body.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _HttpError(400, f"{field}: expected a reading number (0, 1, ...) or null, got "
                              f"{value!r}")
    return value


def _item_id(body: Mapping[str, Any]) -> Any:
    value = body.get("id", 1)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value is None:
        raise _HttpError(400, f"id: expected a string or a number, got {value!r}")
    return value


def run(
    app: Any,
    sock: socket.socket,
    *,
    log_level: str = "warning",
    access_log: bool = False,
    graceful_timeout: int = 5,
    max_connections: int = 100,
) -> None:
    """Serve *app* on the listening socket *sock* (see :func:`bind`) until Ctrl-C.

    uvicorn handles SIGINT and SIGTERM: it stops accepting, lets running
    requests finish (at most *graceful_timeout* seconds), runs the app's
    shutdown (which stops ACE), and re-raises the signal, so Ctrl-C ends
    in :class:`KeyboardInterrupt`. More than *max_connections* open
    connections are answered 503.
    """
    import uvicorn

    config = uvicorn.Config(
        app, log_config=None, log_level=log_level, access_log=access_log, lifespan="on",
        timeout_graceful_shutdown=graceful_timeout, limit_concurrency=max_connections,
        server_header=False, proxy_headers=False,
    )
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


def missing() -> str | None:
    """The install hint if Starlette or uvicorn is missing, else ``None``."""
    import importlib.util

    absent = [m for m in ("starlette", "uvicorn") if importlib.util.find_spec(m) is None]
    if not absent:
        return None
    return (f"lit serve needs {' and '.join(absent)}: pip install 'lit-mrs[serve]'")


def serve(
    grammar: Any = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    workers: int = 1,
    reranker: Any = None,
    lm_name: str | None = None,
    rules: Any = None,
    labels: Any = None,
    select: str = "roundtrip",
    n: int = 10,
    limits: Limits | None = None,
    home: Any = None,
    env: Mapping[str, str] | None = None,
    ace_options: Mapping[str, Any] | None = None,
    on_listen: Callable[[str, bool], None] | None = None,
    log_level: str = "warning",
) -> None:
    """Run the explorer for *grammar* on *host*:*port* until Ctrl-C, then stop ACE.

    Args:
        grammar: a grammar name (default: the default grammar) or a
            resolved :class:`~lit.grammar.Grammar`
        host, port: where to listen (port 0: a free port)
        workers: ACE backends (parser and generator pairs) shared by requests
        reranker: a :class:`~lit.rerank.Reranker` (loaded here if it is not),
            or ``None`` for grammar order
        lm_name: how to name the LM on the page
        rules, labels: the :class:`~lit.rules.RuleSet` and
            :class:`~lit.nli.LabelTable` (default: the built-in ones)
        select: reading selection, ``roundtrip`` or ``first``
        n: readings per parse
        limits: request :class:`~lit.serve.explore.Limits`
        home, env: for :func:`~lit.grammar.resolve_grammar` and ACE
        ace_options: more ACE process options (``timeout``, ``watchdog``)
        on_listen: called with the URL and whether it is local only, once
            the server is ready
        log_level: uvicorn's log level
    Raises:
        LitError: the grammar, ACE, the LM or the address cannot be used
    """
    from lit.__about__ import __version__
    from lit.grammar import Grammar, default_grammar, resolve_grammar
    from lit.serve.explore import Explorer
    from lit.serve.pool import ace_pool

    hint = missing()
    if hint is not None:
        raise LitError(hint)
    if not isinstance(grammar, Grammar):
        grammar = resolve_grammar(grammar or default_grammar(home=home), home=home, env=env)
    if rules is None:
        from lit.rules import RuleSet

        rules = RuleSet.load()
    if labels is None:
        from lit.nli import LabelTable

        labels = LabelTable.load(rules=rules)
    limits = limits or Limits()
    sock = bind(host, port)
    pool = ace_pool(grammar, workers, n=n, env=env, **dict(ace_options or {}))
    loaded = False
    try:
        pool.warm(1)  # a grammar ACE cannot run fails now, not at the first request
        if reranker is not None and not reranker.loaded:
            reranker.load()
            loaded = True
        with pool.lease(timeout=None) as backend:
            version = getattr(backend.parser, "ace_version", None) or grammar.ace_version
        if isinstance(version, tuple):
            version = ".".join(map(str, version))
        about = {"version": __version__, "ace_version": version,
                 "erg_version": grammar.profile.erg_version, "readings": n,
                 "workers": workers, "lm": lm_name if reranker is not None else None}
        explorer = Explorer(pool, grammar.profile, rules=rules, labels=labels,
                            reranker=reranker, select=select, limits=limits, about=about)
        local = is_local(host)
        app = create_app(explorer, local_only=local, on_shutdown=pool.close)
        if on_listen is not None:
            on_listen(url_of(host, sock.getsockname()[1]), local)
        run(app, sock, log_level=log_level, access_log=log_level in ("info", "debug"))
    finally:
        sock.close()
        pool.close()
        if loaded:
            reranker.close()
