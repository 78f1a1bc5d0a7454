"""Exception hierarchy for lit.

Every error lit raises on purpose is a :class:`LitError`. Messages say what
failed, where, and what to try next; the CLI prints them without a traceback
(unless ``-v``) and exits with code 1.
"""

from __future__ import annotations

import os

__all__ = [
    "LitError",
    "GrammarError",
    "InstallError",
    "ChecksumError",
    "ACEError",
    "RuleError",
    "SpecError",
    "LabelError",
    "RerankError",
    "InputError",
]


class LitError(Exception):
    """Base class for all errors raised by lit."""


class GrammarError(LitError):
    """A grammar profile is invalid, unknown, or its files are missing."""


class InstallError(GrammarError):
    """Downloading, verifying or unpacking ACE or a grammar image failed."""


class ChecksumError(InstallError):
    """A file's sha256 does not match the expected or recorded value."""


class ACEError(LitError):
    """The ACE process could not be started, crashed, or misbehaved."""


class _LocatedError(LitError):
    """An error that can point at a file and line."""

    def __init__(
        self,
        message: str,
        filename: str | os.PathLike[str] | None = None,
        lineno: int | None = None,
    ) -> None:
        self.message = message
        self.filename = None if filename is None else os.fspath(filename)
        self.lineno = lineno
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.filename is not None:
            where = self.filename
            if self.lineno is not None:
                where += f":{self.lineno}"
            where += ": "
        elif self.lineno is not None:
            where = f"line {self.lineno}: "
        return where + self.message


class RuleError(_LocatedError):
    """A rule declaration or rule plugin is invalid."""


class LabelError(_LocatedError):
    """A label table is invalid."""


class SpecError(LitError):
    """A rule chain or transformation spec (``f;p+i``) is malformed.

    The *position* attribute, when known, is the 0-based character offset
    of the offending token in *spec*.
    """

    def __init__(self, message: str, spec: str | None = None, position: int | None = None):
        self.message = message
        self.spec = spec
        self.position = position
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.spec is None or self.position is None:
            return self.message
        pointer = " " * self.position + "^"
        return f"{self.message}\n  {self.spec}\n  {pointer}"


class RerankError(LitError):
    """The language model could not be loaded or used for scoring."""


class InputError(_LocatedError):
    """An input record is malformed (the message names file and line)."""
