"""Hugging Face datasets as input (``lit transform --hf NAME[:CONFIG]:SPLIT``).

Needs the optional ``datasets`` package (``pip install 'lit-mrs[hf]'``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lit.errors import LitError

__all__ = ["split_spec", "load", "label_names"]


def split_spec(spec: str) -> tuple[str, str | None, str]:
    """``(name, config, split)`` of a dataset spec ``NAME[:CONFIG]:SPLIT``.

    Raises:
        ValueError: *spec* is not of that form

    Example:
        >>> split_spec("snli:validation"), split_spec("glue:mnli:validation_matched")
        (('snli', None, 'validation'), ('glue', 'mnli', 'validation_matched'))
    """
    parts = spec.rsplit(":", 2) if spec.count(":") >= 2 else spec.rsplit(":", 1)
    if len(parts) < 2 or not all(parts):
        raise ValueError(f"{spec!r}; expected NAME[:CONFIG]:SPLIT, e.g. snli:validation")
    if len(parts) == 2:
        return parts[0], None, parts[1]
    return parts[0], parts[1], parts[2]


def load(spec: str) -> Any:
    """The dataset split *spec* names: ``NAME[:CONFIG]:SPLIT``.

    *NAME* is a hub name, a local cache, or a directory written by
    ``save_to_disk`` (a ``DatasetDict``, whose *SPLIT* is taken, or a
    single ``Dataset``).

    Raises:
        LitError: a malformed spec, no ``datasets`` package, or a dataset
            or split that cannot be loaded
    """
    try:
        name, config, split = split_spec(spec)
    except ValueError as exc:
        raise LitError(f"--hf {exc}") from exc
    try:
        import datasets
    except ImportError as exc:
        raise LitError("--hf needs the 'datasets' package: pip install 'lit-mrs[hf]'") from exc
    try:
        if Path(name).is_dir() and (Path(name) / "dataset_dict.json").exists():
            return datasets.load_from_disk(name)[split]
        if Path(name).is_dir() and (Path(name) / "dataset_info.json").exists():
            return datasets.load_from_disk(name)
        return datasets.load_dataset(name, config, split=split)
    except KeyError as exc:
        raise LitError(f"--hf {spec}: no split {split!r}") from exc
    except (OSError, ValueError, FileNotFoundError) as exc:
        raise LitError(f"--hf {spec}: cannot load the dataset: {exc}") from exc


def label_names(examples: Any, field: str | None = None) -> list[str] | None:
    """Names of the integer labels of *examples* (a ``datasets.Dataset``'s
    ``ClassLabel`` feature *field*; by default ``label``, else ``gold_label``),
    or ``None`` if it has none."""
    features = getattr(examples, "features", None)
    if features is None:
        return None
    for name in (field,) if field is not None else ("label", "gold_label"):
        try:
            feature = features[name]
        except (KeyError, TypeError):
            continue
        names = getattr(feature, "names", None)
        if names:
            return list(names)
    return None
