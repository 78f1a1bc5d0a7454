"""The ``lit`` command line.

Each stage is a subcommand; each reads stdin when no path (or ``-``) is
given and writes JSONL to stdout, so stages pipe into each other.
"""

from __future__ import annotations

import importlib

from lit.cli._app import app

# Command modules register themselves on ``app`` when imported; this order is
# the order of `lit --help` (the pipeline's order).
_COMMAND_MODULES = ("grammar", "parse", "rules", "rerank", "transform", "evaluate", "serve")
for _name in _COMMAND_MODULES:
    importlib.import_module(f"lit.cli.{_name}")

__all__ = ["app", "main"]


def main() -> None:
    """Entry point of the ``lit`` console script."""
    app()
