"""lit.predict and `lit predict` with a tiny, randomly initialised BERT classifier.

The model and its word-piece vocabulary are built and saved by the test
(no hub access); the expected labels are computed here by running the
same model directly, one pair at a time.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lit.cli import app
from lit.errors import InputError, LitError
from lit.predict import Example, Predictor, examples_from_records, parse_label_map

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

WORDS = "a an the dog cat man woman runs sleeps is not will be it that who".split()
LABELS = {0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"}


def build_model(path: Path, id2label=None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "vocab.txt").write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", *WORDS]) + "\n")
    tokenizer = transformers.BertTokenizer(str(path / "vocab.txt"))
    config = transformers.BertConfig(
        vocab_size=6 + len(WORDS), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64, num_labels=3,
        id2label=id2label or LABELS,
        label2id={v: k for k, v in (id2label or LABELS).items()},
    )
    torch.manual_seed(1)
    model = transformers.BertForSequenceClassification(config)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return build_model(tmp_path_factory.mktemp("models") / "tiny")


def expected_labels(path: Path, examples, labels) -> dict[str, str]:
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(path).eval()
    out = {}
    for e in examples:
        enc = tokenizer(e.text, e.text_pair, return_tensors="pt")
        with torch.no_grad():
            out[e.id] = labels[int(model(**enc).logits[0].argmax())]
    return out


def transform_records():
    def rec(orig, spec, status, s1=None, s2=None):
        r = {"id": orig, "spec": spec, "status": status, "reason": None,
             "original": {"sentence1": f"the {orig} runs .", "sentence2": "a dog sleeps .",
                          "gold_label": "neutral"}}
        if status == "ok":
            r.update({"sentence1": s1, "sentence2": s2, "gold_label": "contradiction"})
        return r

    return [
        rec("dog", "n;o", "ok", "the dog is not running .", "a dog sleeps ."),
        rec("dog", "f;f", "ok", "the dog will run .", "a dog will sleep ."),
        rec("dog", "pa;pa", "skipped"),
        rec("cat", "n;o", "ok", "the cat is not running .", "a dog sleeps ."),
        rec("man", "n;o", "skipped"),
        rec("woman", "i;o", "ok", "it is the woman who runs . " * 12, "a cat sleeps ."),
    ]


def test_examples_from_records():
    examples = list(examples_from_records(transform_records()))
    assert [e.id for e in examples] == ["dog", "dog:n;o", "dog:f;f", "cat", "cat:n;o", "man",
                                        "woman", "woman:i;o"]
    assert examples[1] == Example("dog:n;o", "the dog is not running .", "a dog sleeps .")
    plain = [{"id": 1, "spec": "n", "status": "ok", "original": {"sentence": "Dogs bark."},
              "sentence": "Dogs do not bark.", "chain": "n"}]
    assert list(examples_from_records(plain)) == [
        Example("1", "Dogs bark."), Example("1:n", "Dogs do not bark.")]
    twice = transform_records() + transform_records()[:1]
    with pytest.raises(InputError, match=r"line 1\); predictions are keyed by id"):
        list(examples_from_records(twice))
    with pytest.raises(InputError, match=r"t.jsonl:1: .*'original' has no sentence1"):
        list(examples_from_records([(1, {"id": 1, "spec": "n", "status": "skipped",
                                         "original": {}})], source="t.jsonl"))


def test_parse_label_map():
    assert parse_label_map("0=entailment,1=Neutral,2=contradiction") == {
        0: "entailment", 1: "neutral", 2: "contradiction"}
    for bad in ("0:entailment", "x=a", "0=a,0=b", ""):
        with pytest.raises(LitError, match="label-map"):
            parse_label_map(bad)


def test_predictions_match_the_model_run_directly(tiny):
    examples = list(examples_from_records(transform_records()))
    short = [e for e in examples if e.id != "woman:i;o"]
    expected = expected_labels(tiny, short, {k: v.lower() for k, v in LABELS.items()})
    batches = []
    with Predictor(tiny, batch_size=3, max_length=64) as p:
        got = list(p.predict(examples, on_batch=batches.append))
    assert batches == [3, 3, 2]
    assert [g["id"] for g in got] == [e.id for e in examples]  # order kept
    # the long example is truncated to 64 tokens; the others are as in a direct run
    assert {g["id"]: g["label"] for g in got if g["id"] != "woman:i;o"} == expected
    assert {g["label"] for g in got} <= {"entailment", "neutral", "contradiction"}
    with Predictor(tiny, batch_size=1) as p:  # 256 tokens asked, capped at the model's 64
        assert p.max_length == 64
        assert list(p.predict(examples)) == got  # padding does not change the result


def test_label_map_and_generic_labels(tmp_path, tiny):
    examples = [Example("a", "the dog runs .", "a dog sleeps .")]
    with Predictor(tiny, label_map={0: "yes", 1: "maybe", 2: "no"}) as p:
        assert next(p.predict(examples))["label"] in {"yes", "maybe", "no"}
    with pytest.raises(LitError, match=r"no label for class\(es\) \[2\]"):
        Predictor(tiny, label_map={0: "yes", 1: "no"}).load()
    generic = build_model(tmp_path / "generic", id2label={0: "LABEL_0", 1: "LABEL_1",
                                                          2: "LABEL_2"})
    with pytest.raises(LitError, match="only generic labels .*pass --label-map"):
        Predictor(generic).load()
    with pytest.raises(LitError, match="cannot load sequence-classification model"):
        Predictor(tmp_path / "missing-model").load()


def test_ties_go_to_the_lowest_class_index(tmp_path):
    path = build_model(tmp_path / "flat", id2label={0: "neutral", 1: "entailment",
                                                    2: "contradiction"})
    model = transformers.AutoModelForSequenceClassification.from_pretrained(path)
    with torch.no_grad():  # every class gets the same logit
        model.classifier.weight.zero_()
        model.classifier.bias.zero_()
    model.save_pretrained(path)
    examples = list(examples_from_records(transform_records()))
    with Predictor(path, batch_size=4) as p:
        assert {pred["label"] for pred in p.predict(examples)} == {"neutral"}


def test_cli_predict_then_evaluate(tmp_path, tiny):
    transformed = tmp_path / "t.jsonl"
    transformed.write_text("".join(json.dumps(r) + "\n" for r in transform_records()))
    runner = CliRunner()
    result = runner.invoke(app, ["predict", "--model", str(tiny), "--batch-size", "2",
                                 str(transformed)], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    preds = [json.loads(line) for line in result.stdout.splitlines()]
    assert [p["id"] for p in preds] == ["dog", "dog:n;o", "dog:f;f", "cat", "cat:n;o", "man",
                                        "woman", "woman:i;o"]
    assert "8 predictions" in result.stderr
    (tmp_path / "p.jsonl").write_text(result.stdout)
    result = runner.invoke(app, ["evaluate", str(transformed), str(tmp_path / "p.jsonl"),
                                 "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["overall"]["sets"] == 3 and out["overall"]["items"] == 4
    assert out["missing"]["items"]["count"] == 0
    result = runner.invoke(app, ["predict", str(transformed)])
    assert result.exit_code == 2 and "--model" in result.stderr
    result = runner.invoke(app, ["predict", "--model", str(tiny), "--label-map", "0=a",
                                 str(transformed)])
    assert result.exit_code == 1 and "no label for class(es) [1, 2]" in result.stderr
