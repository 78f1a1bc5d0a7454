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
    "FAILURES",
    "TRANSIENT_FAILURES",
    "TransientFailure",
    "Reading",
    "ParseResult",
    "GenerationResult",
    "Parser",
    "Generator",
]




#: Why an item has no (complete) answer. ``lexical-gap``: a word the grammar
#: cannot cover (a no-parse); ``invalid``: input that cannot be sent (an empty
#: sentence, an unreadable MRS); ``timeout``: ACE's time limit or lit's watchdog
#: cut the item; ``resource``: a memory limit cut it; ``crash``: the process died
#: or answered garbage; ``overgeneration``: an MRS has more realizations than
#: the generator's cap (an answer about the MRS, not transient);
#: ``error``: any other message from ACE.
FAILURES = ("lexical-gap", "invalid", "timeout", "resource", "crash", "overgeneration",
            "error")

#: Failures that say nothing about the item, only about the run (the load of the
#: machine, a limit, a crash): such a result is never an answer, never cached,
#: and the item is tried again in the next run.
TRANSIENT_FAILURES = frozenset({"timeout", "resource", "crash"})


class TransientFailure(Exception):
    """A step could not be decided because of a transient failure (see
    :data:`TRANSIENT_FAILURES`): e.g. the round trip of a reading timed out.

    Control flow between lit's stages, not a :class:`~lit.errors.LitError`:
    the item is recorded as an ``error`` with the *failure* as its category.
    """

    def __init__(self, failure: str, detail: str) -> None:
        super().__init__(f"{failure}: {detail}")
        self.failure = failure
        self.detail = detail


class _Outcome:
    """What every result shares: *error* says why the item failed, *failure*
    classifies it (one of :data:`FAILURES`)."""

    __slots__ = ()
    error: str | None
    failure: str | None

    @property
    def ok(self) -> bool:
        """``True`` if the item did not fail (it may still have no answer in it)."""
        return self.error is None

    @property
    def transient(self) -> bool:
        """``True`` if a limit or crash cut the item: the result is no answer."""
        return self.failure in TRANSIENT_FAILURES


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
class ParseResult(_Outcome):
    """The readings of *sentence*, best first.

    No readings and no *error* means the grammar has no analysis (a
    no-parse); *error* says why the item failed (ACE timed out, died, ...)
    and *failure* classifies it (one of :data:`FAILURES`).
    """

    sentence: str
    readings: tuple[Reading, ...] = ()
    error: str | None = None
    failure: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "sentence": self.sentence,
            "readings": [r.to_dict() for r in self.readings],
            "error": self.error,
            "failure": self.failure,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ParseResult:
        return cls(
            sentence=data["sentence"],
            readings=tuple(Reading.from_dict(r) for r in data.get("readings") or ()),
            error=data.get("error"),
            failure=data.get("failure"),
        )


@dataclass(frozen=True, slots=True)
class GenerationResult(_Outcome):
    """Every realization of *mrs* in the grammar's order (duplicates kept).

    *mrs* is the SimpleMRS that was sent to ACE (one line, no character
    spans). No surfaces and no *error* means the grammar realizes nothing.
    A *transient* result (a time or memory limit cut generation short) may
    carry the realizations found so far; they are not all there are.
    """

    mrs: str
    surfaces: tuple[str, ...] = ()
    error: str | None = None
    failure: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"mrs": self.mrs, "surfaces": list(self.surfaces), "error": self.error,
                "failure": self.failure}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GenerationResult:
        return cls(
            mrs=data["mrs"],
            surfaces=tuple(data.get("surfaces") or ()),
            error=data.get("error"),
            failure=data.get("failure"),
        )


@runtime_checkable
class Parser(Protocol):
    """Anything that parses a sentence into a :class:`ParseResult`."""

    def parse(self, sentence: str) -> ParseResult: ...


@runtime_checkable
class Generator(Protocol):
    """Anything that realizes an MRS as a :class:`GenerationResult`."""

    def generate(self, mrs: MRS | str) -> GenerationResult: ...
