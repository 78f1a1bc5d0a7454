"""`lit` commands: parse (placeholder; see docs/DESIGN.md for ownership)."""

from __future__ import annotations

from lit.cli._app import app  # noqa: F401
