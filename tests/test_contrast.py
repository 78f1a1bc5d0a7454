"""lit.contrast: grouping `lit transform` records into contrast sets."""

from __future__ import annotations

import io
import json

import pytest

from lit.contrast import contrast_sets, item_id, perturbation
from lit.errors import InputError
from lit.formats.jsonl import read_jsonl
from lit.spec import parse_spec


def nli(orig_id, spec, status="ok", gold="entailment", orig_gold="neutral", reason=None):
    # the chains as lit transform reports them: null for an untouched side
    parsed = parse_spec(spec)
    premise, hypothesis = parsed.premise_chain, parsed.hypothesis_chain
    rec = {
        "id": orig_id, "spec": spec, "status": status, "reason": reason,
        "original": {"pairID": str(orig_id), "sentence1": "A dog barks.",
                     "sentence2": "An animal barks.", "gold_label": orig_gold},
    }
    if status == "ok":
        rec.update({
            "sentence1": f"{spec} premise", "sentence2": f"{spec} hypothesis", "gold_label": gold,
            "label_rule": {"table": "labels.toml", "row": spec, "source": "paper",
                           "from": orig_gold},
            "premise": {"chain": premise, "sentence": f"{spec} premise",
                        "candidates": [{"sentence": "x", "score": 1.0}], "mrs": "[ ... ]"},
            "hypothesis": {"chain": hypothesis, "sentence": f"{spec} hypothesis",
                           "candidates": []},
        })
    return rec


def test_item_id_is_orig_id_colon_spec():
    assert item_id("p1", "f;p+i") == "p1:f;p+i"
    assert item_id(7, "n;o") == "7:n;o"


def test_groups_adjacent_records_in_order():
    records = [
        nli("a", "n;o", gold="contradiction"),
        nli("a", "pa;pa", status="skipped", reason="inapplicable: ARG2 is not an x"),
        nli("a", "f;p+i", gold="neutral"),
        nli("b", "n;o", status="error", reason="error: ACE died"),
    ]
    sets = list(contrast_sets(records))
    assert [s["id"] for s in sets] == ["a", "b"]
    a, b = sets
    assert a["original"] == records[0]["original"]
    assert [i["id"] for i in a["items"]] == ["a:n;o", "a:f;p+i"]
    assert a["size"] == 3
    first = a["items"][0]
    assert first["sentence1"] == "n;o premise" and first["gold_label"] == "contradiction"
    assert first["label_rule"]["row"] == "n;o"
    assert first["perturbation"] == {"spec": "n;o", "premise": "n", "hypothesis": None}
    assert a["items"][1]["perturbation"] == {"spec": "f;p+i", "premise": "f+i",
                                             "hypothesis": "p+i"}
    # candidate lists and MRSs are not copied
    assert "candidates" not in json.dumps(a) and "mrs" not in first
    assert a["skipped"] == [{"spec": "pa;pa", "status": "skipped",
                             "reason": "inapplicable: ARG2 is not an x"}]
    # a set of size one: nothing dropped, the reason is kept
    assert b["items"] == [] and b["size"] == 1
    assert b["skipped"][0]["status"] == "error"


def test_streams_one_set_at_a_time():
    pulled = []

    def records():
        for rec in [nli("a", "n;o"), nli("a", "f;f"), nli("b", "n;o"), nli("b", "f;f"),
                    nli("c", "n;o")]:
            pulled.append(rec["id"])
            yield rec

    it = contrast_sets(records())
    first = next(it)
    assert first["id"] == "a"
    # only one record of the next original has been read
    assert pulled == ["a", "a", "b"]
    assert [s["id"] for s in it] == ["b", "c"]


def test_scattered_records_are_grouped_in_memory():
    text = "\n".join(json.dumps(r) for r in [nli("a", "n;o"), nli("b", "n;o"), nli("a", "f;f")])
    sets = list(contrast_sets(read_jsonl(io.StringIO(text)), adjacent=False))
    assert [(s["id"], [i["spec"] for i in s["items"]]) for s in sets] == [
        ("a", ["n;o", "f;f"]), ("b", ["n;o"])]


def test_repeated_ids_make_separate_sets_with_a_warning(caplog):
    # two input items with the same id, as lit transform writes them
    records = [nli("a", "n;o", gold="neutral"), nli("a", "f;f"),
               nli("a", "n;o", gold="contradiction"), nli("a", "f;f"),
               nli("b", "n;o"), nli("a", "n;o")]
    text = "\n".join(json.dumps(r) for r in records)
    streamed = list(contrast_sets(read_jsonl(io.StringIO(text)), source="t.jsonl"))
    assert [(s["id"], len(s["items"])) for s in streamed] == [("a", 2), ("a", 2), ("b", 1),
                                                             ("a", 1)]
    assert [s["items"][0]["gold_label"] for s in streamed[:2]] == ["neutral", "contradiction"]
    assert "t.jsonl:3: id 'a' occurs again (first on line 1)" in caplog.text
    assert "t.jsonl:6: id 'a' occurs again" in caplog.text
    # in memory, the k-th record of (id, spec) goes to the k-th item with that id
    grouped = list(contrast_sets(read_jsonl(io.StringIO(text)), adjacent=False))
    assert [(s["id"], [i["spec"] for i in s["items"]]) for s in grouped] == [
        ("a", ["n;o", "f;f"]), ("a", ["n;o", "f;f"]), ("b", ["n;o"]), ("a", ["n;o"])]


@pytest.mark.parametrize("broken, message", [
    ({"spec": "n;o", "status": "ok"}, "no 'id' field"),
    ({"id": "a", "status": "ok"}, "no 'spec' field"),
    ({"id": "a", "spec": "n;o"}, "no 'status' field"),
    ({"id": "a", "spec": "n;o", "status": "done"}, "unknown status 'done'"),
])
def test_bad_records_name_the_line(broken, message):
    with pytest.raises(InputError, match=f"x.jsonl:2: .*{message}"):
        list(contrast_sets([(1, nli("a", "n;o")), (2, broken)], source="x.jsonl"))


def test_plain_text_records():
    records = [
        {"id": 1, "spec": "n", "status": "ok", "reason": None,
         "original": {"sentence": "The dog barks."}, "sentence": "The dog does not bark.",
         "chain": "n", "candidates": []},
        {"id": 1, "spec": "pa", "status": "skipped", "reason": "inapplicable: intransitive",
         "original": {"sentence": "The dog barks."}, "sentence": None, "chain": "pa"},
    ]
    (s,) = contrast_sets(records)
    assert s["id"] == 1 and s["original"] == {"sentence": "The dog barks."}
    assert s["items"] == [{"id": "1:n", "spec": "n", "sentence": "The dog does not bark.",
                           "perturbation": {"spec": "n", "chain": "n"}}]
    assert s["skipped"] == [{"spec": "pa", "status": "skipped",
                             "reason": "inapplicable: intransitive"}]


def test_perturbation_falls_back_to_the_spec(caplog):
    # without chains in the record, the spec language decides (shared terms on both sides)
    assert perturbation({"spec": "m;q"}) == {"spec": "m;q", "premise": "m", "hypothesis": "q"}
    assert perturbation({"spec": "n+f;p"}) == {"spec": "n+f;p", "premise": "n+f",
                                                "hypothesis": "n+p"}
    assert perturbation({"spec": "o;o"}) == {"spec": "o;o", "premise": None, "hypothesis": None}
    assert perturbation({"spec": "n"}) == {"spec": "n", "chain": "n"}
    assert perturbation({"spec": "o"}) == {"spec": "o", "chain": None}
    # not a valid spec: split naively, with a warning
    assert perturbation({"spec": "x(;y"}) == {"spec": "x(;y", "premise": "x(", "hypothesis": "y"}
    assert "cannot parse spec 'x(;y'" in caplog.text
