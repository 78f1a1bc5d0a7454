"""Small iterator helpers shared by the pipeline and the CLI."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

__all__ = ["chunked"]


def chunked(it: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """Lists of up to *size* consecutive items of *it*, read lazily.

    Example:
        >>> list(chunked(range(5), 2))
        [[0, 1], [2, 3], [4]]
    """
    iterator = iter(it)
    while chunk := list(islice(iterator, size)):
        yield chunk
