"""lit.evaluate and `lit evaluate`: metrics computed by hand on a hand-built transform output.

The fixture has six originals and four specs:

* ``n;o`` (negation), ``f;f`` (tense), ``pa;pa`` (passive), ``f;p+i``
  (tense and cleft: one item counts under two phenomena);
* A: every spec ok; B: ``pa;pa`` skipped; C: nothing ok (a set of size
  one); D: ``pa;pa`` error and no prediction for ``D:n;o``; E: no
  prediction for the original; F: unlabeled original (gold ``-``);
* B's ``n;o`` prediction repeats B's (both wrong: consistent although
  wrong), A's ``n;o`` differs from A's (both right: not consistent);
* one record of E comes last (records of an original not adjacent).
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import snli_sample_path
from typer.testing import CliRunner

from lit.cli import app
from lit.contrast import contrast_sets
from lit.errors import InputError, LitError
from lit.evaluate import (
    Metrics,
    evaluate,
    evaluate_records,
    evaluation_table,
    phenomenon_resolver,
    plot_evaluation,
    read_predictions,
)
from lit.spec import parse_spec

GOLD = {"A": "entailment", "B": "neutral", "C": "contradiction", "D": "entailment",
        "E": "neutral", "F": "-"}

# (orig, spec, status, gold of the contrast item)
RECORDS = [
    ("A", "n;o", "ok", "contradiction"),
    ("A", "f;f", "ok", "entailment"),
    ("A", "pa;pa", "ok", "entailment"),
    ("A", "f;p+i", "ok", "neutral"),
    ("B", "n;o", "ok", "neutral"),
    ("B", "f;f", "ok", "neutral"),
    ("B", "pa;pa", "skipped", None),
    ("C", "n;o", "skipped", None),
    ("C", "f;f", "skipped", None),
    ("C", "pa;pa", "skipped", None),
    ("D", "n;o", "ok", "contradiction"),
    ("D", "f;f", "ok", "entailment"),
    ("D", "pa;pa", "error", None),
    ("E", "n;o", "ok", "neutral"),
    ("F", "f;f", "ok", "neutral"),
    ("E", "f;f", "ok", "neutral"),  # not adjacent to E's first record
]

PREDICTIONS = {
    "A": "entailment",            # right
    "A:n;o": "contradiction",     # right, differs from A
    "A:f;f": "entailment",        # right, same as A
    "A:pa;pa": "neutral",         # wrong, differs from A
    "A:f;p+i": "neutral",         # right, differs from A
    "B": "contradiction",         # wrong
    "B:n;o": "contradiction",     # wrong, same as B (consistent though wrong)
    "B:f;f": "neutral",           # right, differs from B
    "C": "contradiction",         # C has no contrast item: unused by the metrics
    "D": "entailment",            # right; D:n;o has no prediction
    "D:f;f": "entailment",        # right, same as D
    "E:n;o": "neutral",           # E has no prediction
    "E:f;f": "neutral",
    "F": "neutral",
    "F:f;f": "neutral",
    "Z:n;o": "neutral",           # an id not in the transform output
}


def record(orig, spec, status, gold, preds=None, field=None):
    parsed = parse_spec(spec)  # chains as lit transform reports them (null: untouched)
    premise, hypothesis = parsed.premise_chain, parsed.hypothesis_chain
    rec = {"id": orig, "spec": spec, "status": status,
           "reason": None if status == "ok" else f"{status}: because",
           "original": {"pairID": orig, "sentence1": f"{orig} p", "sentence2": f"{orig} h",
                        "gold_label": GOLD[orig]}}
    if status == "ok":
        rec.update({"sentence1": f"{orig} {spec} p", "sentence2": f"{orig} {spec} h",
                    "gold_label": gold,
                    "label_rule": {"table": "labels.toml", "row": spec, "source": "paper",
                                   "from": GOLD[orig]},
                    "premise": {"chain": premise, "sentence": "..."},
                    "hypothesis": {"chain": hypothesis, "sentence": "..."}})
    if field is not None:
        if orig in preds:
            rec["original"][field] = preds[orig]
        if status == "ok" and f"{orig}:{spec}" in preds:
            rec[field] = preds[f"{orig}:{spec}"]
    return rec


def records(preds=None, field=None):
    return [record(*r, preds=preds, field=field) for r in RECORDS]


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def predictions_file(path: Path, preds=PREDICTIONS) -> Path:
    return write_jsonl(path, [{"id": k, "label": v} for k, v in preds.items()])


def M(sets, items, ori, ctr, cons, allc):
    return Metrics(sets=sets, items=items, ori_correct=ori, ctr_correct=ctr, consistent=cons,
                   all_correct=allc)


# hand computation, missing predictions excluded (the default):
#   n;o   A(o+ i+ cons- all+)  B(o- i- cons+ all-)  D: item missing -> no item left
#         E: original missing -> not evaluated
#   f;f   A(o+ i+ cons+ all+)  B(o- i+ cons- all-)  D(o+ i+ cons+ all+)  E: excluded
#         F: unlabeled original
#   pa;pa A(o+ i- cons- all-)
#   f;p+i A(o+ i+ cons- all+)
EXCLUDE_BY_SPEC = {
    "n;o": M(2, 2, 1, 1, 1, 1),
    "f;f": M(3, 3, 2, 3, 2, 2),
    "pa;pa": M(1, 1, 1, 0, 0, 0),
    "f;p+i": M(1, 1, 1, 1, 0, 1),
}
# tense = f;f + f;p+i: A(items f;f+, f;p+i+; cons 1; all+) B(f;f) D(f;f)
EXCLUDE_BY_PHENOMENON = {
    "tense": M(3, 4, 2, 4, 2, 2),
    "negation": EXCLUDE_BY_SPEC["n;o"],
    "cleft": EXCLUDE_BY_SPEC["f;p+i"],
    "passive": EXCLUDE_BY_SPEC["pa;pa"],
}
# overall: A(4 items: 3 right; consistent only f;f; not all right)
#          B(2 items: 1 right; consistent n;o)  D(1 item left: right, consistent, all right)
EXCLUDE_OVERALL = M(3, 7, 2, 5, 3, 1)

# missing predictions counted as wrong:
#   n;o  + D(o+ i- cons- all-) + E(o- i+ cons- all-)
#   f;f  + E(o- i+ cons- all-)
WRONG_BY_SPEC = {
    "n;o": M(4, 4, 2, 2, 1, 1),
    "f;f": M(4, 4, 2, 4, 2, 2),
    "pa;pa": M(1, 1, 1, 0, 0, 0),
    "f;p+i": M(1, 1, 1, 1, 0, 1),
}
# overall: A as before; B as before; D(2 items: n;o wrong, f;f right; cons 1; not all)
#          E(o-, 2 items right, cons 0)
WRONG_OVERALL = M(4, 10, 2, 7, 3, 0)


def test_metrics_properties():
    m = M(3, 7, 2, 5, 3, 1)
    assert (m.acc_ori, m.acc_ctr, m.consistency, m.contrast_consistency) == pytest.approx(
        (2 / 3, 5 / 7, 3 / 7, 1 / 3))
    assert M(0, 0, 0, 0, 0, 0).acc_ori is None
    assert Metrics.from_dict(m.to_dict()) == m


def test_hand_computed_metrics_missing_excluded():
    ev = evaluate_records(records(), PREDICTIONS, resolve=phenomenon_resolver())
    assert ev.by_spec == EXCLUDE_BY_SPEC
    assert list(ev.by_spec) == ["n;o", "f;f", "pa;pa", "f;p+i"]  # order of appearance
    assert ev.by_phenomenon == EXCLUDE_BY_PHENOMENON
    assert list(ev.by_phenomenon) == ["tense", "negation", "cleft", "passive"]
    assert ev.overall == EXCLUDE_OVERALL
    f = ev.by_spec["f;f"]
    assert (f.acc_ori, f.acc_ctr, f.consistency, f.contrast_consistency) == pytest.approx(
        (2 / 3, 1, 2 / 3, 2 / 3))
    assert ev.counts == {
        "originals": 6, "with_contrast_items": 5, "without_contrast_items": 1,
        "unlabeled_originals": 1, "unlabeled_items": 0, "not_evaluated_missing": 1,
        "evaluated_sets": 3,
        "missing_originals": 1, "missing_items": 1,
    }
    assert ev.missing == {"originals": {"count": 1, "sample": ["E"]},
                          "items": {"count": 1, "sample": ["D:n;o"]}}
    assert ev.status == {"n;o": {"ok": 4, "skipped": 1}, "f;f": {"ok": 5, "skipped": 1},
                         "pa;pa": {"ok": 1, "skipped": 2, "error": 1}, "f;p+i": {"ok": 1}}
    # C (no contrast item), F and F:f;f (unlabeled) and Z:n;o (unknown id) are unused
    assert ev.unused_predictions == 4


def test_specs_without_ok_records_are_listed():
    recs = records() + [record("A", "o;q", "skipped", None), record("B", "o;q", "error", None)]
    ev = evaluate_records(recs, PREDICTIONS)
    assert ev.by_spec["o;q"] == Metrics() and ev.by_spec["o;q"].acc_ori is None
    assert ev.status["o;q"] == {"skipped": 1, "error": 1}
    rows = [str(c) for c in evaluation_table(ev).columns[0]._cells]
    assert "spec o;q" in rows


def test_hand_computed_metrics_missing_wrong():
    ev = evaluate_records(records(), PREDICTIONS, missing="wrong")
    assert ev.by_spec == WRONG_BY_SPEC
    assert ev.overall == WRONG_OVERALL
    assert ev.missing_policy == "wrong"
    assert ev.counts["missing_originals"] == 1 and ev.counts["missing_items"] == 1


def test_registry_and_builtin_phenomena_agree():
    with_registry = evaluate_records(records(), PREDICTIONS)
    builtin = evaluate_records(records(), PREDICTIONS,
                               resolve=phenomenon_resolver())
    assert with_registry.by_phenomenon == builtin.by_phenomenon == EXCLUDE_BY_PHENOMENON
    resolve = phenomenon_resolver()
    assert [resolve(t) for t in "o p pr f prog perf m n q i i2 pa s".split()] == [
        None, "tense", "tense", "tense", "aspect", "aspect", "modality", "negation",
        "question", "cleft", "cleft", "passive", "swap"]


def test_identity_and_unknown_rules(caplog):
    sets = [{"id": "a", "original": {"gold_label": "neutral"}, "skipped": [], "items": [
        {"id": "a:o;o", "spec": "o;o", "gold_label": "neutral",
         "perturbation": {"premise": None, "hypothesis": None}},
        {"id": "a:zz;o", "spec": "zz;o", "gold_label": "neutral",
         "perturbation": {"premise": "zz", "hypothesis": "o"}}]}]
    ev = evaluate(sets, {"a": "neutral", "a:o;o": "neutral", "a:zz;o": "entailment"},
                  resolve=phenomenon_resolver())
    assert ev.by_phenomenon == {"identity": M(1, 1, 1, 1, 1, 1), "other": M(1, 1, 1, 0, 0, 0)}
    assert "unknown rule 'zz'" in caplog.text


def test_labels_are_compared_case_insensitively():
    preds = {k: v.upper() for k, v in PREDICTIONS.items()}
    assert evaluate_records(records(), preds).overall == EXCLUDE_OVERALL


def test_predictions_from_a_field_of_the_transform_output():
    ev = evaluate_records(records(PREDICTIONS, "pred"), pred_field="pred")
    assert ev.by_spec == EXCLUDE_BY_SPEC and ev.overall == EXCLUDE_OVERALL


def test_ids_must_be_unique():
    # streaming (--adjacent) a file whose records of E are spread out: E looks like two
    # originals with the same id, which predictions keyed by id cannot tell apart
    with pytest.raises(InputError, match="id 'E' belongs to two contrast sets"):
        evaluate_records(records(), PREDICTIONS, adjacent=True)
    twice = records() + [record("A", "n;o", "ok", "contradiction")]
    with pytest.raises(InputError, match="id 'A' belongs to two contrast sets"):
        evaluate_records(twice, PREDICTIONS)


def test_plain_text_output_cannot_be_evaluated():
    recs = [{"id": 1, "spec": "n", "status": "ok", "original": {"sentence": "Dogs bark."},
             "sentence": "Dogs do not bark.", "chain": "n"}]
    with pytest.raises(InputError, match="needs NLI transform output"):
        evaluate_records(recs, {"1": "x"})


def test_read_predictions(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [
        {"id": "a", "label": "Entailment"}, {"id": 3, "label": "neutral"},
        {"id": "a", "label": "entailment"}])  # a repeat with the same label is fine
    assert read_predictions(path) == {"a": "entailment", "3": "neutral"}
    write_jsonl(path, [{"id": "a", "label": "entailment"}, {"id": "a", "label": "neutral"}])
    with pytest.raises(InputError, match=r"p.jsonl:2: id 'a' predicted twice .*line 1"):
        read_predictions(path)
    write_jsonl(path, [{"id": "a", "prediction": "entailment"}])
    with pytest.raises(InputError, match=r"p.jsonl:1: a prediction needs 'id' and 'label'"):
        read_predictions(path)
    assert read_predictions(path, label_field="prediction") == {"a": "entailment"}


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width > 100 and height > 100
    from PIL import Image

    with Image.open(path) as im:
        im.verify()
    import matplotlib.image

    assert matplotlib.image.imread(path).shape[:2] == (height, width)


def test_plot_is_a_png(tmp_path):
    ev = evaluate_records(records(), PREDICTIONS)
    plot_evaluation(ev, tmp_path / "m.png")
    assert_png(tmp_path / "m.png")
    # drawn without pyplot: no global figure is left open
    pyplot = sys.modules.get("matplotlib.pyplot")
    assert pyplot is None or not pyplot.get_fignums()
    with pytest.raises(LitError, match="cannot write plot"):
        plot_evaluation(ev, tmp_path / "no-such-dir" / "m.png")


def test_plot_without_matplotlib_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    ev = evaluate_records(records(), PREDICTIONS)
    with pytest.raises(LitError, match=r"pip install lit-mrs\[plot\]"):
        plot_evaluation(ev, tmp_path / "m.png")
    assert not (tmp_path / "m.png").exists()


# -- CLI ---------------------------------------------------------------------------


@pytest.fixture
def files(tmp_path):
    return (write_jsonl(tmp_path / "transformed.jsonl", records()),
            predictions_file(tmp_path / "predictions.jsonl"))


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_cli_json(files):
    transformed, predictions = files
    result = invoke("evaluate", str(transformed), str(predictions), "--json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    for spec, m in EXCLUDE_BY_SPEC.items():
        assert out["by_spec"][spec] == m.to_dict()
        got = out["by_spec"][spec]
        assert (got["acc_ori"], got["acc_ctr"], got["consistency"],
                got["contrast_consistency"]) == pytest.approx(
            (m.acc_ori, m.acc_ctr, m.consistency, m.contrast_consistency))
    assert out["overall"] == EXCLUDE_OVERALL.to_dict()
    assert out["missing"]["items"] == {"count": 1, "sample": ["D:n;o"]}
    # the table went to stderr, with the missing predictions reported
    assert "Acc@Ori" in result.stderr
    assert "1 originals without a prediction (left out): E" in result.stderr
    assert "1 items without a prediction (left out): D:n;o" in result.stderr


def test_cli_table_on_stdout(files):
    transformed, predictions = files
    result = invoke("evaluate", str(transformed), str(predictions), "--missing", "wrong")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    row = next(line for line in lines if "spec f;f" in line)
    # group, sets, items, Acc@Ori, Acc@Ctr, Cons., C.Cons., skipped
    cells = [c.strip() for c in row.split("│")[1:-1]]
    assert cells == ["spec f;f", "4", "4", "50.0", "100.0", "50.0", "50.0", "1"]
    overall = [c.strip() for c in next(x for x in lines if "overall" in x).split("│")[1:-1]]
    assert overall == ["overall", "4", "10", "50.0", "70.0", "30.0", "0.0", ""]
    assert "counted as wrong" in result.stderr


def test_cli_pred_field_and_plot(tmp_path):
    transformed = write_jsonl(tmp_path / "t.jsonl", records(PREDICTIONS, "prediction"))
    result = invoke("-q", "evaluate", str(transformed), "--pred-field", "prediction", "--json",
                    "--plot", str(tmp_path / "plot.png"))
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["overall"] == EXCLUDE_OVERALL.to_dict()
    assert result.stderr == ""
    assert_png(tmp_path / "plot.png")


def test_cli_errors(files, tmp_path):
    transformed, _ = files
    result = invoke("evaluate", str(transformed))
    assert result.exit_code == 2 and "--pred-field" in result.stderr
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "A", "label": "entailment"},
                                               {"id": "A", "label": "neutral"}])
    result = invoke("evaluate", str(transformed), str(bad))
    assert result.exit_code == 1
    assert "bad.jsonl:2: id 'A' predicted twice" in result.stderr
    result = invoke("evaluate", str(transformed), str(tmp_path / "nope.jsonl"))
    assert result.exit_code == 1 and "nope.jsonl: no such file" in result.stderr
    result = invoke("evaluate", str(transformed), str(bad), "--missing", "maybe")
    assert result.exit_code == 2


# -- end to end: lit transform (with the fake-ace test double) -> lit evaluate -----------


@pytest.fixture
def fake_env(lit_home, tmp_path, monkeypatch):
    """LIT_ACE / LIT_GRAMMAR_ERG_1214 pointing at tests/fake_ace.py, a test double for
    ACE (not obtainable here) that replays the recorded ERG 1214 output."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from fake_ace_support import fake_ace_env

    for var in list(os.environ):
        if var.startswith("FAKE_ACE_"):
            monkeypatch.delenv(var)
    for key, value in fake_ace_env(tmp_path / "fake", "erg-1214").items():
        monkeypatch.setenv(key, value)


def run_lit(*args: str) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-c", "from lit.cli import main; main()", *args],
        capture_output=True, text=True, timeout=120, env=dict(os.environ),
    )
    assert result.returncode == 0, result.stderr
    return result


def test_transform_then_evaluate(fake_env, tmp_path):
    pairs = tmp_path / "snli.jsonl"
    with open(snli_sample_path(), encoding="utf-8") as f:
        pairs.write_text("".join(f.readline() for _ in range(30)))
    specs = "m;o,i;i,p;f,f;f"
    # lit transform in a real subprocess (with a time limit, so a hang fails the test)
    result = run_lit("-q", "transform",
                     "--select", "roundtrip", "-g", "erg-1214", "--lm", "none", "-r", specs,
                     str(pairs))
    transformed = tmp_path / "t.jsonl"
    transformed.write_text(result.stdout)
    recs = [json.loads(line) for line in result.stdout.splitlines()]
    ok = [r for r in recs if r["status"] == "ok"]
    assert len(ok) >= 10 and {r["spec"] for r in ok} == set(specs.split(","))

    # --format contrast-sets is lit.contrast over the same records
    result = run_lit("-q", "transform",
                     "--select", "roundtrip", "-g", "erg-1214", "--lm", "none", "-r", specs,
                     "--format", "contrast-sets", str(pairs))
    sets = [json.loads(line) for line in result.stdout.splitlines()]
    assert sets == list(contrast_sets(recs)) and len(sets) == 30

    # a "model" that gets every original right and always says entailment otherwise
    preds = {r["id"]: r["original"]["gold_label"] for r in recs}
    preds.update({f"{r['id']}:{r['spec']}": "entailment" for r in ok})
    predictions = predictions_file(tmp_path / "p.jsonl", preds)
    result = invoke("evaluate", str(transformed), str(predictions), "--json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    for spec in specs.split(","):
        items = [r for r in ok if r["spec"] == spec]
        entail = sum(r["gold_label"] == "entailment" for r in items)
        same = sum(r["original"]["gold_label"] == "entailment" for r in items)
        got = out["by_spec"][spec]
        assert (got["sets"], got["acc_ori"]) == (len(items), 1.0)
        assert got["acc_ctr"] == pytest.approx(entail / len(items))
        assert got["consistency"] == pytest.approx(same / len(items))
        assert got["contrast_consistency"] == pytest.approx(entail / len(items))
    assert out["overall"]["items"] == len(ok)
    assert out["missing"]["originals"]["count"] == out["missing"]["items"]["count"] == 0
