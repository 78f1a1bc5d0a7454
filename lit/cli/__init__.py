"""The ``lit`` command line.

Each stage is a subcommand; each reads stdin when no path (or ``-``) is
given and writes JSONL to stdout, so stages pipe into each other.
"""

from __future__ import annotations

from lit.cli import evaluate as _evaluate  # noqa: F401,E402

# Command modules register themselves on ``app`` when imported.
from lit.cli import grammar as _grammar  # noqa: F401,E402
from lit.cli import parse as _parse  # noqa: F401,E402
from lit.cli import rules as _rules  # noqa: F401,E402
from lit.cli import transform as _transform  # noqa: F401,E402
from lit.cli._app import app

__all__ = ["app", "main"]


def main() -> None:
    """Entry point of the ``lit`` console script."""
    app()
