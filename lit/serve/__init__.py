"""``lit serve``: a local web explorer for readings, rules and candidates.

A researcher types a sentence (or an NLI pair) and sees its readings with
their DMRS graphs and the selection, picks rule chains or specs, and sees
the candidates per chain with their scores, what ``--verify`` found and,
for a pair, the new label with the table row behind it. The page is plain
HTML and JavaScript served by lit itself (no build step, nothing fetched
from elsewhere); a JSON API under it returns the command line's records.

Modules:

* :mod:`lit.serve.pool`: a bounded pool of ACE parser/generator pairs
  shared by the requests (:class:`AcePool`);
* :mod:`lit.serve.explore`: the answers, as records (:class:`Explorer`);
* :mod:`lit.serve.app`: the Starlette app and the uvicorn server (the only
  module importing them; ``pip install 'lit-mrs[serve]'``), and
  :func:`serve`, which puts it all together.

Example:
    >>> from lit.serve import serve
    >>> serve("erg-1214", port=8765, workers=2,                  # doctest: +SKIP
    ...       on_listen=lambda url, local: print("listening on", url))
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "AcePool": "lit.serve.pool",
    "Backend": "lit.serve.pool",
    "BusyError": "lit.serve.pool",
    "PoolClosedError": "lit.serve.pool",
    "ace_pool": "lit.serve.pool",
    "Explorer": "lit.serve.explore",
    "Limits": "lit.serve.explore",
    "RequestError": "lit.serve.explore",
    "TimeLimitError": "lit.serve.explore",
    "create_app": "lit.serve.app",
    "serve": "lit.serve.app",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lit.serve' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
