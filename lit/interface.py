"""What a parser and a generator return, independent of any processor.

The data types here (:class:`Reading`, :class:`ParseResult`,
:class:`GenerationResult`) and the :class:`Parser` / :class:`Generator`
protocols are what the rest of lit programs against, as PyDelphin separates
:mod:`delphin.interface` from :mod:`delphin.ace`. :mod:`lit.ace` implements
the protocols with ACE processes; :mod:`lit.cache` and test stand-ins
implement them too, without importing the process layer.

Example:
    >>> ParseResult("Dogs bark.").ok
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    from delphin.mrs import MRS

__all__ = [
    "Reading",
    "ParseResult",
    "GenerationResult",
    "Parser",
    "Generator",
]




@dataclass(frozen=True, slots=True)
class Reading:
    """One analysis of a sentence.

    *mrs* is the SimpleMRS string as ACE printed it (with character spans);
    *derivation* is ACE's derivation tree (UDF) and *tree* its labelled
    phrase-structure tree, when ACE reported them.
    """

    mrs: str
    derivation: str | None = None
    tree: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"mrs": self.mrs, "derivation": self.derivation, "tree": self.tree}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reading:
        return cls(mrs=data["mrs"], derivation=data.get("derivation"), tree=data.get("tree"))


@dataclass(frozen=True, slots=True)
class ParseResult:
    """The readings of *sentence*, best first.

    No readings and no *error* means the grammar has no analysis (a
    no-parse); *error* says why the item failed (ACE timed out, died, ...).
    """

    sentence: str
    readings: tuple[Reading, ...] = ()
    error: str | None = None

    @property
    def ok(self) -> bool:
        """``True`` if the item did not fail (it may still have no readings)."""
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "sentence": self.sentence,
            "readings": [r.to_dict() for r in self.readings],
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ParseResult:
        return cls(
            sentence=data["sentence"],
            readings=tuple(Reading.from_dict(r) for r in data.get("readings") or ()),
            error=data.get("error"),
        )


@dataclass(frozen=True, slots=True)
class GenerationResult:
    """Every realization of *mrs* in the grammar's order (duplicates kept).

    *mrs* is the SimpleMRS that was sent to ACE (one line, no character
    spans). No surfaces and no *error* means the grammar realizes nothing.
    """

    mrs: str
    surfaces: tuple[str, ...] = ()
    error: str | None = None

    @property
    def ok(self) -> bool:
        """``True`` if the item did not fail (it may still have no surfaces)."""
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        return {"mrs": self.mrs, "surfaces": list(self.surfaces), "error": self.error}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GenerationResult:
        return cls(
            mrs=data["mrs"],
            surfaces=tuple(data.get("surfaces") or ()),
            error=data.get("error"),
        )


@runtime_checkable
class Parser(Protocol):
    """Anything that parses a sentence into a :class:`ParseResult`."""

    def parse(self, sentence: str) -> ParseResult: ...


@runtime_checkable
class Generator(Protocol):
    """Anything that realizes an MRS as a :class:`GenerationResult`."""

    def generate(self, mrs: MRS | str) -> GenerationResult: ...
