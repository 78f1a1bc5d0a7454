"""lit.nli: the label tables reproduce the LIT paper; extensions; bad tables."""

from __future__ import annotations

import pytest

from lit.errors import LabelError
from lit.nli import NLI_LABELS, LabelTable, default_table_path
from lit.rules import RuleSet
from lit.spec import parse_spec

E, N, C = "entailment", "neutral", "contradiction"
SAME = {E: E, N: N, C: C}
ALL_NEUTRAL = {E: N, N: N, C: N}


@pytest.fixture(scope="module")
def rules() -> RuleSet:
    return RuleSet.load(plugins=False)


@pytest.fixture(scope="module")
def table(rules) -> LabelTable:
    return LabelTable.load(rules=rules)


def label(table, rules, spec, gold):
    return table.label(parse_spec(spec, rules), gold)


# every row of the paper (LIT, Table 1), and compositions following their base
PAPER = [
    ("o;o", SAME, "o;o"),
    ("i;i", SAME, "i;i"),
    ("pa;pa", SAME, "pa;pa"),
    ("f;p", ALL_NEUTRAL, "f;p"),
    ("p;f", ALL_NEUTRAL, "p;f"),
    ("m;o", ALL_NEUTRAL, "m;o"),
    ("f;p+i", ALL_NEUTRAL, "f;p"),
    ("p;f+i", ALL_NEUTRAL, "p;f"),
    ("f;p+pa", ALL_NEUTRAL, "f;p"),
    ("m;o+i", ALL_NEUTRAL, "m;o"),
    ("i;i+pa", SAME, "i;i"),
]


@pytest.mark.parametrize("spec, mapping, row", PAPER)
def test_paper_rows(table, rules, spec, mapping, row):
    for gold, new in mapping.items():
        result = label(table, rules, spec, gold)
        assert (result.label, result.row, result.source) == (new, row, "paper")
        assert result.original == gold
        assert result.to_dict()["from"] == gold
        assert (result.via is None) == (spec == row)


EXTENSIONS = [
    ("o;i", SAME),
    ("i;o", SAME),
    ("o;pa", SAME),
    ("pa;o", SAME),
    ("o;n", {E: C, N: N, C: None}),
    ("p;p", {E: E, N: N, C: None}),
    ("f;f", {E: E, N: N, C: None}),
    ("m:might;o", ALL_NEUTRAL),
]


@pytest.mark.parametrize("spec, mapping", EXTENSIONS)
def test_extension_rows(table, rules, spec, mapping):
    for gold, new in mapping.items():
        result = label(table, rules, spec, gold)
        assert result.row == spec and result.source == "extension"
        assert result.label == new
        if new is None:
            assert "derives no label" in result.reason


def test_every_row_is_tested(table):
    tested = {s for s, _, _ in PAPER} | {s for s, _ in EXTENSIONS}
    assert {row.spec for row in table.rows} <= tested
    assert all(row.rationale and row.source in ("paper", "extension") for row in table.rows)


def test_aliases_match_rows(table, rules):
    result = label(table, rules, "future;past+itcleft_arg1", E)
    assert (result.label, result.row, result.via) == (N, "f;p", "+itcleft_arg1")


@pytest.mark.parametrize("spec", ["o;q", "q;q", "q;o", "q;q+i", "f;p+q"])
def test_questions_are_never_labelled(table, rules, spec):
    for gold in NLI_LABELS:
        result = label(table, rules, spec, gold)
        assert result.label is None and "non-proposition" in result.reason


@pytest.mark.parametrize("spec", ["s;s", "n;n", "o;p", "f;p+n", "m;m", "o;m"])
def test_no_row_is_unlabeled_not_guessed(table, rules, spec):
    result = label(table, rules, spec, E)
    assert result.label is None and result.reason


def test_non_transparent_shared_term_does_not_follow_base(table, rules):
    # '+n' changes truth conditions, so f;p+n is not f;p
    assert label(table, rules, "f;p+n", E).label is None


def test_single_sentence_spec_has_no_label(table, rules):
    assert table.label(parse_spec("p", rules), E).label is None


def test_default_path_and_default_rules():
    assert default_table_path().name == "labels.toml"
    assert LabelTable.load().label(parse_spec("f;p+i", RuleSet.load()), E).label == N


GOOD_ROW = '''
[[row]]
spec = "f;p"
source = "paper"
rationale = "x"
map = "unchanged"
'''


def test_user_table(tmp_path, rules):
    path = tmp_path / "mine.toml"
    path.write_text('labels = ["yes", "no"]\n' + GOOD_ROW.replace('"unchanged"',
                    '{ yes = "no" }'))
    table = LabelTable.load(path, rules=rules)
    result = table.label(parse_spec("f;p", rules), "yes")
    assert result.label == "no" and result.table == str(path)
    assert table.label(parse_spec("f;p", rules), "no").label is None


@pytest.mark.parametrize(
    "text, lineno, message",
    [
        ("labels = [\n", 2, "invalid TOML"),
        ("colour = 1\n", 1, "unknown key 'colour'"),
        ("labels = []\n", 1, "'labels' must be"),
        ("transparent = [\"zz\"]\n", 1, "unknown rule 'zz'"),
        ("transparent = [\"f;p\"]\n", 1, "not a single rule"),
        ("\n" + GOOD_ROW.replace('"f;p"', '"f;zz"'), 3, "bad spec"),
        ("\n" + GOOD_ROW.replace('"f;p"', '"f"'), 3, "must be a pair"),
        ("\n" + GOOD_ROW.replace('"paper"', '"blog"'), 3, "'source' must be"),
        ("\n" + GOOD_ROW.replace('rationale = "x"', 'rationale = ""'), 3, "'rationale'"),
        ("\n" + GOOD_ROW.replace('"unchanged"', '{ entails = "neutral" }'), 3,
         "unknown original label 'entails'"),
        ("\n" + GOOD_ROW.replace('"unchanged"', '{ entailment = "maybe" }'), 3,
         "unknown new label 'maybe'"),
        ("\n" + GOOD_ROW.replace('"unchanged"', '"same"'), 3, "'map' must be"),
        ("\n" + GOOD_ROW.replace('map = "unchanged"\n', ''), 3, "missing 'map'"),
        ("\n" + GOOD_ROW.replace('map =', 'mapx = 1\nmap ='), 3, "unknown key 'mapx'"),
        (GOOD_ROW + GOOD_ROW.replace('"f;p"', '"future;past"'), 8, "repeats the row at line 2"),
    ],
)
def test_bad_tables_name_file_and_line(tmp_path, rules, text, lineno, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(LabelError, match=message) as info:
        LabelTable.load(path, rules=rules)
    assert info.value.filename == str(path)
    assert info.value.lineno == lineno
    assert str(info.value).startswith(f"{path}:{lineno}: ")


def test_missing_table(tmp_path):
    with pytest.raises(LabelError, match="not found"):
        LabelTable.load(tmp_path / "nope.toml")
