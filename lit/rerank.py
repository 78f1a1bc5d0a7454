"""Rank candidate sentences by language-model perplexity.

This is the only module that imports ``torch`` and ``transformers``, and it
does so lazily, inside :meth:`Reranker.load`: ``import lit.rerank`` is cheap.

**Score.** The score of a sentence *s* is its perplexity under a causal LM,
``exp(mean NLL)``, lower is better. The token sequence is
``[P] + tokens(s) + [E]`` where ``tokens`` is the tokenizer's encoding of *s*
without special tokens, ``P`` is the BOS token (the EOS token if the
tokenizer has no BOS; GPT-2 uses ``<|endoftext|>`` for both) and ``E`` is
the EOS token (omitted if there is none). The mean is taken over the
negative log-probabilities of every token after ``P``, EOS included, so a
one-token sentence (or the empty string) still has at least one predicted
token, and a sentence that does not end well is penalised. Sequences longer
than the model's context are truncated to it (logged).

**Batching.** Sentences are sorted by length and scored in batches of
*batch_size*, right-padded with an attention mask; the result equals
one-by-one scoring up to floating-point tolerance. Identical sentences are
scored once. When a batch runs out of memory, the batch size is halved (and
stays halved) until it fits; out of memory with one sentence is a
:class:`~lit.errors.RerankError`.

**Determinism.** The model is in eval mode (no dropout) and scored under
``torch.inference_mode``; ties keep grammar order (stable sort).

Example:
    >>> with Reranker("gpt2") as lm:                       # doctest: +SKIP
    ...     [c.sentence for c in lm.rerank(["Dog the barks.", "The dog barks."])]
    ['The dog barks.', 'Dog the barks.']
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lit.errors import RerankError
from lit.generate import Candidate

__all__ = ["Reranker", "rank_candidates", "DEFAULT_LM"]

logger = logging.getLogger(__name__)

#: the default language model (as in the LIT paper)
DEFAULT_LM = "gpt2"


def _looks_like_path(name: str) -> bool:
    return (
        os.path.isabs(name)
        or name.startswith(("./", "../", "~", ".\\", "..\\"))
        or name.endswith(".gguf")
        or name.count("/") > 1
        or (os.sep != "/" and os.sep in name)
    )


def _is_oom(exc: BaseException) -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover
        return False
    oom_types = tuple(
        t for t in (getattr(torch, "OutOfMemoryError", None),
                    getattr(torch.cuda, "OutOfMemoryError", None)) if t is not None
    )
    return isinstance(exc, oom_types) or "out of memory" in str(exc).lower()


class Reranker:
    """A causal language model that scores sentences by perplexity.

    Args:
        model: a Hugging Face model id (``"gpt2"``; needs the hub or its
            local cache), a local model directory, or a ``.gguf`` file
        gguf_file: the GGUF file inside *model* (a directory or hub id);
            loading GGUF needs the ``gguf`` and ``accelerate`` packages
            (``pip install 'lit-mrs[gguf]'``)
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...; ``None`` picks
            CUDA when available
        batch_size: sentences per forward pass (halved on out-of-memory)
        dtype: ``"float32"``, ``"float16"``, ``"bfloat16"``, ``"auto"`` or
            ``None`` (the library default)
        local_files_only: never contact the hub
    Use it as a context manager (or call :meth:`load`/:meth:`close`); the
    model is loaded on entry, not on construction.
    """

    def __init__(
        self,
        model: str | os.PathLike[str] = DEFAULT_LM,
        *,
        gguf_file: str | os.PathLike[str] | None = None,
        device: str | None = None,
        batch_size: int = 16,
        dtype: str | None = None,
        local_files_only: bool = False,
    ) -> None:
        if batch_size < 1:
            raise RerankError(f"batch size must be at least 1, not {batch_size}")
        self.model_name = os.fspath(model)
        self.gguf_file = None if gguf_file is None else os.fspath(gguf_file)
        self.requested_device = device
        self.batch_size = batch_size
        self.dtype = dtype
        self.local_files_only = local_files_only
        self.device: str | None = None
        self._model: Any = None
        self._tokenizer: Any = None
        self._torch: Any = None
        self._max_len: int | None = None

    # -- lifecycle -----------------------------------------------------------

    def __enter__(self) -> Reranker:
        return self.load()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Reranker({self.model_name!r}, device={self.device or self.requested_device!r})"

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def _source(self) -> tuple[str, str | None]:
        name, gguf = self.model_name, self.gguf_file
        if gguf is None and name.endswith(".gguf"):
            path = Path(name).expanduser()
            if not path.is_file():
                raise RerankError(f"GGUF model file not found: {name}")
            return str(path.parent), path.name
        if gguf is not None and os.path.isabs(gguf):
            path = Path(gguf)
            if not path.is_file():
                raise RerankError(f"GGUF model file not found: {gguf}")
            return str(path.parent), path.name
        path = Path(name).expanduser()
        if path.exists():
            if gguf is not None and not (path / gguf).is_file():
                raise RerankError(f"GGUF file {gguf!r} not found in {name}")
            return str(path), gguf
        if _looks_like_path(name):
            raise RerankError(
                f"language model not found: {name} is not a directory or file; pass a local "
                "model directory, a .gguf file, a Hugging Face model id, or --lm none"
            )
        return name, gguf

    def load(self) -> Reranker:
        """Load tokenizer and model (idempotent)."""
        if self._model is not None:
            return self
        source, gguf = self._source()
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - both are dependencies
            raise RerankError(f"cannot import torch/transformers: {exc}") from exc
        kwargs: dict[str, Any] = {"local_files_only": self.local_files_only}
        if gguf is not None:
            kwargs["gguf_file"] = gguf
        model_kwargs = dict(kwargs)
        if self.dtype is not None:
            model_kwargs["dtype"] = (
                self.dtype if self.dtype == "auto" else getattr(torch, self.dtype, None)
            )
            if model_kwargs["dtype"] is None:
                raise RerankError(f"unknown dtype {self.dtype!r}; use float32, float16, "
                                  "bfloat16 or auto")
        what = f"{source} ({gguf})" if gguf else source
        try:
            tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
            model = AutoModelForCausalLM.from_pretrained(source, **model_kwargs)
        except ImportError as exc:
            hint = " (GGUF needs: pip install 'lit-mrs[gguf]')" if gguf else ""
            raise RerankError(f"cannot load language model {what}: {exc}{hint}") from exc
        except (OSError, ValueError) as exc:
            raise RerankError(
                f"cannot load language model {what}: {exc}; pass a local model directory, "
                "a .gguf file, or --lm none to keep grammar order"
            ) from exc
        device = self.requested_device or ("cuda" if torch.cuda.is_available() else "cpu")
        try:
            model.to(device)  # type: ignore[arg-type]
        except (RuntimeError, AssertionError) as exc:
            raise RerankError(f"cannot move the language model to {device}: {exc}") from exc
        model.eval()
        if tokenizer.bos_token_id is None and tokenizer.eos_token_id is None:
            raise RerankError(
                f"the tokenizer of {what} has neither a BOS nor an EOS token; cannot define "
                "sentence perplexity"
            )
        config = model.config
        self._max_len = (getattr(config, "max_position_embeddings", None)
                         or getattr(config, "n_positions", None))
        self._torch, self._tokenizer, self._model, self.device = torch, tokenizer, model, device
        logger.info("loaded language model %s on %s", what, device)
        return self

    def close(self) -> None:
        """Release the model (and cached GPU memory)."""
        torch = self._torch
        self._model = self._tokenizer = None
        if torch is not None and self.device and self.device.startswith("cuda"):
            torch.cuda.empty_cache()

    # -- scoring -------------------------------------------------------------

    def encode(self, sentence: str) -> list[int]:
        """The token ids scored for *sentence* (BOS/EOS added; see module docs)."""
        tok = self._require()[0]
        ids = list(tok(sentence, add_special_tokens=False)["input_ids"])
        prefix = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        seq = [prefix, *ids]
        if tok.eos_token_id is not None:
            seq.append(tok.eos_token_id)
        if self._max_len and len(seq) > self._max_len:
            logger.warning("truncating a %d-token sentence to the model's %d positions",
                           len(seq), self._max_len)
            seq = seq[: self._max_len]
        return seq

    def score(self, sentences: Sequence[str]) -> list[float]:
        """Perplexities of *sentences* (in order); empty input makes no model call."""
        if not sentences:
            return []
        self._require()
        distinct = list(dict.fromkeys(sentences))
        seqs = [self.encode(s) for s in distinct]
        nll = self._score_ids(seqs)
        by_sentence = {s: math.exp(v) for s, v in zip(distinct, nll, strict=True)}
        return [by_sentence[s] for s in sentences]

    def rerank(self, candidates: Sequence[str], *, top_k: int | None = None) -> list[Candidate]:
        """*candidates* sorted by perplexity (stable), optionally the best *top_k*."""
        return self.rerank_groups([candidates], top_k=top_k)[0]

    def rerank_groups(
        self, groups: Sequence[Sequence[str]], *, top_k: int | None = None
    ) -> list[list[Candidate]]:
        """Rerank several candidate lists, batching all their sentences together."""
        flat = [s for g in groups for s in g]
        scores = dict(zip(flat, self.score(flat), strict=True))
        out = []
        for g in groups:
            ranked = sorted((Candidate(s, scores[s]) for s in g),
                            key=lambda c: c.score)  # type: ignore[arg-type,return-value]
            out.append(ranked if top_k is None else ranked[:top_k])
        return out

    def _require(self) -> tuple[Any, Any]:
        if self._model is None:
            raise RerankError("the reranker is not loaded; use it in a 'with' block or "
                              "call .load()")
        return self._tokenizer, self._model

    def _score_ids(self, seqs: list[list[int]]) -> list[float]:
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        results: list[float] = [0.0] * len(seqs)
        i = 0
        while i < len(order):
            chunk = order[i: i + self.batch_size]
            try:
                values = self._nll_batch([seqs[j] for j in chunk])
            except RuntimeError as exc:
                if not _is_oom(exc):
                    raise
                if len(chunk) == 1:
                    raise RerankError(
                        f"out of memory scoring a single {len(seqs[chunk[0]])}-token sentence "
                        f"on {self.device}; use a smaller model, --device cpu, or --lm none"
                    ) from exc
                self.batch_size = max(1, (len(chunk) + 1) // 2)
                logger.warning("out of memory with batch size %d; retrying with %d",
                               len(chunk), self.batch_size)
                if self._torch is not None and self.device and self.device.startswith("cuda"):
                    self._torch.cuda.empty_cache()
                continue
            for j, v in zip(chunk, values, strict=True):
                results[j] = v
            i += len(chunk)
        return results

    def _forward(self, input_ids: Any, attention_mask: Any) -> Any:
        """One forward pass: logits of shape (batch, length, vocabulary)."""
        return self._model(input_ids=input_ids, attention_mask=attention_mask).logits

    def _nll_batch(self, batch: list[list[int]]) -> list[float]:
        """Mean NLL of each sequence of *batch* (right-padded, masked)."""
        torch = self._torch
        tok = self._tokenizer
        pad = tok.pad_token_id
        if pad is None:
            pad = tok.eos_token_id if tok.eos_token_id is not None else 0
        width = max(len(s) for s in batch)
        ids = torch.full((len(batch), width), pad, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, seq in enumerate(batch):
            ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
            mask[row, : len(seq)] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        with torch.inference_mode():
            logits = self._forward(ids, mask)
            logp = torch.log_softmax(logits[:, :-1, :].float(), dim=-1)
            target = ids[:, 1:]
            nll = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1)
            weights = mask[:, 1:].to(nll.dtype)
            mean = (nll * weights).sum(dim=1) / weights.sum(dim=1)
        return [float(v) for v in mean.cpu()]


def rank_candidates(
    groups: Sequence[Sequence[str]],
    reranker: Reranker | None = None,
    *,
    top_k: int | None = None,
) -> list[list[Candidate]]:
    """Rank candidate lists with *reranker*, or keep grammar order (``None``).

    Example:
        >>> [c.sentence for c in rank_candidates([["B.", "A."]])[0]]
        ['B.', 'A.']
    """
    if reranker is None:
        return [[Candidate(s) for s in (g if top_k is None else g[:top_k])] for g in groups]
    return reranker.rerank_groups(groups, top_k=top_k)
