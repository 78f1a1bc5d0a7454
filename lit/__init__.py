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
    # grammars (issue #2)
    "GrammarProfile": "lit.grammar",
    "Grammar": "lit.grammar",
    "load_profile": "lit.grammar",
    "list_profiles": "lit.grammar",
    "resolve_grammar": "lit.grammar",
    "install_grammar": "lit.install",
    # ACE layer and reading selection (issue #2)
    "AceParser": "lit.ace",
    "AceGenerator": "lit.ace",
    "Reading": "lit.interface",
    "ParseResult": "lit.interface",
    "GenerationResult": "lit.interface",
    "Parser": "lit.interface",
    "Generator": "lit.interface",
    "select_reading": "lit.parse",
    # rules and transformations (issue #3)
    "Rule": "lit.rules",
    "RuleSet": "lit.rules",
    "Applied": "lit.rules",
    "apply_chain": "lit.rules",
    "Semantics": "lit.transform",
    # NLI transformation pipeline (issue #4)
    "Spec": "lit.spec",
    "parse_specs": "lit.spec",
    "LabelTable": "lit.nli",
    "Candidate": "lit.generate",
    "clean_realizations": "lit.generate",
    "Reranker": "lit.rerank",
    "Transformer": "lit.pipeline",
    "augment_nli": "lit.pipeline",
    "Report": "lit.records",
    "NliFields": "lit.records",
    "SentenceResult": "lit.records",
    "read_input": "lit.formats",
    "write_output": "lit.formats",
    # throughput and scale (issue #5)
    "ParseCache": "lit.cache",
    "CachedParser": "lit.cache",
    # evaluation and analysis (issue #6)
    "contrast_sets": "lit.contrast",
    "evaluate_records": "lit.evaluate",
    "Evaluation": "lit.evaluate",
    "Metrics": "lit.evaluate",
    "read_predictions": "lit.evaluate",
    "analyze_parsed": "lit.analyze",
    "Analysis": "lit.analyze",
    "Predictor": "lit.predict",
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
