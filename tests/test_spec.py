"""lit.spec: the spec language ``f;p+i,m;o``."""

from __future__ import annotations

import re

import pytest

from lit.errors import SpecError
from lit.rules import RuleSet
from lit.spec import parse_spec, parse_specs


@pytest.fixture(scope="module")
def rules() -> RuleSet:
    return RuleSet.load(plugins=False)


@pytest.mark.parametrize(
    "text, premise, hypothesis",
    [
        ("f;p", "f", "p"),
        ("f;p+i", "f+i", "p+i"),  # paper, Table 1
        ("a;b+c+d", "a+c+d", "b+c+d"),
        ("n+f;p", "n+f", "n+p"),
        ("m;o", "m", None),
        ("o;n+i", None, "n+i"),
        ("o;o", None, None),
        ("m:might;o", "m:might", None),
    ],
)
def test_pair_specs(text, premise, hypothesis):
    spec = parse_spec(text)
    assert spec.is_pair
    assert (spec.premise_chain, spec.hypothesis_chain) == (premise, hypothesis)
    assert spec.chains() == (premise, hypothesis)


def test_single_sentence_specs():
    spec = parse_spec("p+i")
    assert not spec.is_pair and spec.chain == "p+i" and spec.hypothesis is None
    assert parse_spec("o").chain is None


def test_spec_list_with_spaces():
    specs = parse_specs(" f;p+i , m;o,pa;pa ,i;i,p;f")
    assert [s.text for s in specs] == ["f;p+i", "m;o", "pa;pa", "i;i", "p;f"]


def test_canonical_names_from_rules(rules):
    spec = parse_spec("future;p+i", rules)
    assert spec.premise_chain == "future+i"  # as written
    assert spec.key == (("future", "itcleft_arg1"), ("past", "itcleft_arg1"))
    assert spec.base == ("future", "past") and spec.shared == ("itcleft_arg1",)
    assert parse_spec("m:might;o", rules).key == (("might",), None)


def _caret(exc: SpecError) -> int:
    lines = str(exc).splitlines()
    return lines[2].index("^") - 2


@pytest.mark.parametrize(
    "text, position, message",
    [
        ("", 0, "empty spec"),
        ("f;p,,m;o", 4, "empty spec before ','"),
        ("f;p,", 3, "empty spec after ','"),
        ("f;p;i", 3, "only one ';'"),
        ("f;p+i;o", 5, "only one ';'"),
        ("f+", 2, "expected a rule name after '+'"),
        ("f;", 2, "expected a rule name after ';'"),
        ("+f", 0, "cannot start"),
        ("f p", 2, "expected '+', ';' or ','"),
        ("f;p#", 3, "unexpected character '#'"),
        ("o+i", 0, "'o' (untouched)"),
        ("i+o;n", 2, None),  # valid, see below
        ("o;o+i", 4, "applies to no side"),
        ("f+f", 2, "appears twice"),
        ("f;p+p", 4, "appears twice"),
        ("f;p,f;p", 4, "duplicate spec"),
    ],
)
def test_invalid_specs_point_at_token(text, position, message):
    if message is None:  # 'i+o;n': the 'o' side stays untouched; 'i' goes to the other
        assert parse_spec(text).chains() == (None, "i+n")
        return
    with pytest.raises(SpecError, match=re.escape(message)) as info:
        parse_specs(text)
    assert info.value.position == position
    assert info.value.spec == text
    assert _caret(info.value) == position


def test_unknown_rule_points_into_spec(rules):
    with pytest.raises(SpecError, match="unknown rule 'x'") as info:
        parse_specs("f;p,m;x+i", rules)
    assert info.value.position == 6 and _caret(info.value) == 6


def test_pair_and_single_requirements():
    with pytest.raises(SpecError, match="single-sentence spec") as info:
        parse_specs("f;p,p+i", pair=True)
    assert info.value.position == 4
    with pytest.raises(SpecError, match="pair spec"):
        parse_specs("p+i,f;p", pair=False)
    assert len(parse_specs("p+i,n", pair=False)) == 2


def test_parse_spec_rejects_lists():
    with pytest.raises(SpecError, match="expected one spec"):
        parse_spec("f;p,m;o")


def test_to_dict():
    assert parse_spec("f;p+i").to_dict() == {
        "spec": "f;p+i", "premise": "f+i", "hypothesis": "p+i", "pair": True}


def test_misreading_of_precedence_gets_a_hint():
    with pytest.raises(SpecError, match="binds tighter") as info:
        parse_specs("f+i;p+i")
    assert info.value.position == 6


# --------------------------------------------------------------------------
# presets (rules/presets.toml): one word for a list of specs


def test_preset_expands_to_its_chains(rules):
    specs = parse_specs("lit-paper", rules)
    assert len(specs) == 63 and not any(s.is_pair for s in specs)
    assert specs[0].text == "p+prog+perf" and specs[0].key[0] == (
        "past", "progressive", "perfect")
    assert [s.text for s in specs[12:18]] == ["n", "m", "i", "i2", "pa", "s"]
    assert parse_specs("lit-paper", rules, pair=False) == specs


def test_preset_combines_by_comma(rules):
    specs = parse_specs("q, lit-paper ,n:no", rules)
    assert [s.text for s in specs][:2] == ["q", "p+prog+perf"]
    assert specs[-1].text == "n:no" and len(specs) == 65


def test_pair_preset(rules):
    specs = parse_specs("lit-paper-nli", rules, pair=True)
    assert [s.text for s in specs] == ["p;f", "f;p", "m;o", "pa;pa", "i;i", "p;f+i", "f;p+i",
                                       "p;f+pa", "f;p+pa"]
    assert specs[5].premise_chain == "p+i" and specs[5].base == ("past", "future")
    assert parse_specs("lit-paper-nli", rules) == specs  # pair=None: the kind it has


@pytest.mark.parametrize("text, kw, position, message", [
    ("f;p,lit-paper", {"pair": True}, 4,
     "preset 'lit-paper' has only single-sentence chains, but the input has sentence pairs; "
     "presets for that: lit-paper-nli"),
    ("lit-paper-nli", {"pair": False}, 0, "has only pair specs"),
    ("lit-paper+i", {}, 0, "'lit-paper' is a preset (a list of specs): it stands alone"),
    ("f;lit-paper", {}, 2, "is a preset"),
    ("lit-paper,n", {}, 10, "duplicate spec 'n' (from preset 'lit-paper')"),
    ("n,lit-paper", {}, 2, "duplicate spec 'n' (from preset 'lit-paper')"),
    ("lit-paper,lit-paper", {}, 10, "(from preset 'lit-paper' and preset 'lit-paper')"),
])
def test_preset_errors_point_at_the_preset(rules, text, kw, position, message):
    with pytest.raises(SpecError) as err:
        parse_specs(text, rules, **kw)
    assert message in err.value.message
    assert err.value.position == position


def test_presets_need_a_rule_set():
    # without rules a preset name is only a token, as any unknown rule name would be
    assert parse_specs("lit-paper")[0].chain == "lit-paper"
