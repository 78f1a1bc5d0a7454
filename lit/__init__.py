"""lit: Linguistically-Informed Transformations.

Parse sentences into MRS with ACE and the English Resource Grammar, edit the
MRS with composable phenomenon rules (tense, aspect, modality, negation,
question, it-cleft, passive, argument swap), regenerate every sentence the
grammar licenses, rerank them with a language model, and derive new NLI
labels from declarative tables.

``import lit`` is cheap: it starts no process, loads no model and touches no
network. The public names below are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from lit.__about__ import __version__
from lit.errors import (
    ACEError,
    ChecksumError,
    GrammarError,
    InputError,
    InstallError,
    LabelError,
    LitError,
    RerankError,
    RuleError,
    SpecError,
)

# public name -> module that defines it (imported lazily, see __getattr__)
_LAZY: dict[str, str] = {
    # rules and transformations (issue #3)
    "Rule": "lit.rules",
    "RuleSet": "lit.rules",
    "Applied": "lit.rules",
    "apply_chain": "lit.rules",
    "Semantics": "lit.transform",
}

__all__ = [
    "__version__",
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
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:  # pragma: no cover
    pass
