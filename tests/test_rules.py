"""lit.rules: declarations, rule sets, chains, composition, plugins."""

from __future__ import annotations

import importlib.metadata
import io
import json
import textwrap

import pytest
from delphin.codecs import simplemrs

from lit.errors import InputError, RuleError, SpecError
from lit.formats.mrs import read_mrs_items
from lit.grammar import load_profile
from lit.mrs import index_ep
from lit.rules import (
    Applied,
    Rule,
    RuleSet,
    Step,
    apply_chain,
    apply_from_iterable,
    load_presets,
    load_rule_file,
    same_mrs,
)
from lit.transform import DOG_CHASED_CAT, DOGS_BARK

RECORDED_NAMES = ["past", "present", "future", "progressive", "perfect", "may", "negation",
                  "question", "itcleft_arg1", "itcleft_arg2", "passive", "swap"]
SHORT = {"o": "original", "p": "past", "pr": "present", "f": "future", "prog": "progressive",
         "perf": "perfect", "m": "may", "n": "negation", "q": "question", "i": "itcleft_arg1",
         "i2": "itcleft_arg2", "pa": "passive", "s": "swap", "-prog": "nonprogressive",
         "noprog": "nonprogressive", "-perf": "nonperfect", "n:no": "negation_no",
         "m:might": "might", "m:must": "must", "m:can": "can", "m:could": "could",
         "m:should": "should", "m:would": "would", "m:may": "may"}


@pytest.fixture(scope="module")
def rules() -> RuleSet:
    return RuleSet.load(plugins=False)


@pytest.fixture(scope="module")
def erg1214():
    return load_profile("erg-1214")


@pytest.fixture(scope="module")
def erg2018():
    return load_profile("erg-2018")


def chase():
    return simplemrs.decode(DOG_CHASED_CAT)


def test_builtin_names_and_aliases(rules):
    for name in RECORDED_NAMES:
        assert rules.get(name).name == name
    for alias, name in SHORT.items():
        assert rules.get(alias).name == name, alias
    for rule in rules:
        assert rule.phenomenon and rule.description, rule.name
        assert rule.source and rule.source.endswith(tuple(f":{i}" for i in range(1, 999)))


def test_unknown_rule(rules):
    with pytest.raises(SpecError, match="unknown rule 'zz'"):
        rules.get("zz")
    assert "p" in rules and "zz" not in rules


def test_parse_chain_points_at_the_bad_token(rules):
    assert [r.name for r in rules.parse_chain("f+i")] == ["future", "itcleft_arg1"]
    assert [r.name for r in rules.parse_chain(" m + n + q ")] == ["may", "negation", "question"]
    with pytest.raises(SpecError) as err:
        rules.parse_chain("f+zz+q")
    assert err.value.position == 2
    assert str(err.value).endswith("f+zz+q\n    ^")
    with pytest.raises(SpecError, match="empty rule name") as err:
        rules.parse_chain("f++q")
    assert err.value.position == 2


def test_parse_chains(rules):
    parsed = rules.parse_chains("p, f+i")
    assert [(text, [r.name for r in rs]) for text, rs in parsed] == [
        ("p", ["past"]), ("f+i", ["future", "itcleft_arg1"])]
    with pytest.raises(SpecError) as err:
        rules.parse_chains("p,f+bad")
    assert err.value.position == 4 and err.value.spec == "p,f+bad"


# --------------------------------------------------------------------------
# applying and composing


def test_compositions(rules, erg1214, erg2018):
    m = chase()
    out = apply_chain(m, rules.parse_chain("f+i"), erg1214)
    assert out.applicable and out.chain == "future+itcleft_arg1"
    assert index_ep(out.mrs).predicate == "_be_v_itcleft"
    assert out.mrs.variables["e2"]["TENSE"] == "fut"

    out = apply_chain(m, rules.parse_chain("p+pa"), erg1214)  # past already holds: a no-op
    assert out.applicable and out.noops == ("past: TENSE is already past",)
    assert "parg_d" in {ep.predicate for ep in out.mrs.rels}
    out = apply_chain(m, rules.parse_chain("f+pa"), erg2018)
    assert out.mrs.icons and out.mrs.variables["e2"]["TENSE"] == "fut"

    out = apply_chain(m, rules.parse_chain("m+n+q"), erg1214)
    preds = {ep.predicate for ep in out.mrs.rels}
    assert {"_may_v_modal", "neg"} <= preds
    assert out.mrs.variables[out.mrs.index]["SF"] == "ques"
    assert index_ep(out.mrs).predicate == "_may_v_modal"
    assert m == chase()  # the input is untouched by the chains


def test_chain_of_one_has_no_step_prefix(rules, erg1214):
    out = apply_chain(chase(), rules.parse_chain("p"), erg1214)
    assert out == Applied(None, "TENSE is already past", "past",
                          ("past: TENSE is already past",))
    assert not out.applicable


def test_unsupported_comes_first(rules, erg2018):
    out = apply_chain(chase(), rules.parse_chain("p+i"), erg2018)
    assert out.reason == "unsupported: erg-2018 does not generate it-clefts"


def test_constraints_as_chains(rules, erg1214):
    m = chase()
    refusals = {  # adding what is there already: refused
        "n+n": "step negation: already negated",
        "n+n:no": "step negation_no: already negated",
        "i+i2": "step itcleft_arg2: already an it-cleft",  # a cleft of another argument
        "m+m:might": "step might: already has a modal",
    }
    for chain, reason in refusals.items():
        assert apply_chain(m, rules.parse_chain(chain), erg1214).reason == reason, chain
    holds = {  # a target that holds: the second step is a no-op
        "i+i": "itcleft_arg1: already an it-cleft of ARG1",
        "i2+i2": "itcleft_arg2: already an it-cleft of ARG2",
        "pa+pa": "passive: already passive",
        "q+q": "question: sentence is already a question",
    }
    for chain, noop in holds.items():
        out = apply_chain(m, rules.parse_chain(chain), erg1214)
        single = apply_chain(m, rules.parse_chain(chain.split("+")[0]), erg1214)
        assert out.noops == (noop,) and out.mrs == single.mrs, chain
    # no tense change under a modal: the tense moves to the modal
    out = apply_chain(m, rules.parse_chain("m+f"), erg1214)
    assert out.mrs.variables[out.mrs.index]["TENSE"] == "fut"
    assert out.mrs.variables["e2"]["TENSE"] == "untensed"


def test_fragments_and_nonverbal_are_inapplicable(rules, erg1214):
    fragment = simplemrs.decode(DOGS_BARK.replace("_bark_v_1", "unknown"))
    for chain in ("p", "n", "q", "pa", "o"):
        out = apply_chain(fragment, rules.parse_chain(chain), erg1214)
        assert out.reason == "MRS contains an unknown EP (fragment analysis)", chain
    noun = simplemrs.decode(DOGS_BARK.replace("_bark_v_1", "_bark_n_1"))
    assert apply_chain(noun, rules.parse_chain("q"), erg1214).reason == "no verbal index EP"


# --------------------------------------------------------------------------
# chains as targets (issue 14): "The dog chased the cat." is past simple


@pytest.mark.parametrize("chain, reason, noops, props", [
    # a step whose target holds is a no-op ...
    ("p+prog", None, ("past",), {"TENSE": "past", "PROG": "+", "PERF": "-"}),
    ("p+prog+perf", None, ("past",), {"TENSE": "past", "PROG": "+", "PERF": "+"}),
    ("f+-prog", None, ("nonprogressive",), {"TENSE": "fut", "PROG": "-", "PERF": "-"}),
    ("pr+-prog+-perf", None, ("nonprogressive", "nonperfect"),
     {"TENSE": "pres", "PROG": "-", "PERF": "-"}),
    # ... and a chain that changes nothing is inapplicable, saying why
    ("p", "TENSE is already past", ("past",), None),
    ("-prog", "PROG is already -", ("nonprogressive",), None),
    ("p+-prog+-perf", "the chain changes nothing (past: TENSE is already past; "
     "nonprogressive: PROG is already -; nonperfect: PERF is already -)",
     ("past", "nonprogressive", "nonperfect"), None),
    ("prog+-prog", "the chain changes nothing", (), None),  # the steps undo each other
    ("s+s", "the chain changes nothing", (), None),
    # a step that cannot apply still refuses the chain
    ("p+n+n", "step negation: already negated", (), None),
])
def test_chains_name_targets(rules, erg1214, chain, reason, noops, props):
    out = apply_chain(chase(), rules.parse_chain(chain), erg1214)
    assert out.reason == reason
    assert tuple(n.split(":")[0] for n in out.noops) == noops
    if props is not None:
        v = out.mrs.variables["e2"]
        assert {k: v[k] for k in props} == props


def test_all_twelve_tense_aspect_combinations_are_targets(rules, erg1214):
    m = chase()
    changed = {}
    for t, tense in (("p", "past"), ("pr", "pres"), ("f", "fut")):
        for a, prog in (("prog", "+"), ("-prog", "-")):
            for b, perf in (("perf", "+"), ("-perf", "-")):
                out = apply_chain(m, rules.parse_chain(f"{t}+{a}+{b}"), erg1214)
                changed[(tense, prog, perf)] = out.applicable
                if out.applicable:
                    v = out.mrs.variables["e2"]
                    assert (v["TENSE"], v["PROG"], v["PERF"]) == (tense, prog, perf)
    assert [k for k, ok in changed.items() if not ok] == [("past", "-", "-")]  # what it is


def test_targets_after_a_modal_and_a_cleft(rules, erg1214):
    # tense under a modal is the modal's: "may" is pres, so pr after m is a no-op
    out = apply_chain(chase(), rules.parse_chain("m+pr+prog"), erg1214)
    assert out.applicable and out.noops == ("present: TENSE is already pres",)
    assert out.mrs.variables["e2"]["PROG"] == "+"
    out = apply_chain(chase(), rules.parse_chain("i+p+i"), erg1214)
    assert out.noops == ("past: TENSE is already past",
                         "itcleft_arg1: already an it-cleft of ARG1")


def test_identity_chains_may_change_nothing(rules, erg1214):
    out = apply_chain(chase(), rules.parse_chain("o"), erg1214)
    assert out.applicable and out.noops == ()
    assert apply_chain(chase(), rules.parse_chain("o+p"), erg1214).reason == (
        "the chain changes nothing (past: TENSE is already past)")


def test_same_mrs():
    m = chase()
    assert same_mrs(m, simplemrs.decode(DOG_CHASED_CAT.replace("x8", "x20")))
    assert same_mrs(m, simplemrs.decode(DOG_CHASED_CAT.replace("_chase_v_1 LBL",
                                                               "_chase_v_1<8:14> LBL")))
    assert not same_mrs(m, simplemrs.decode(DOG_CHASED_CAT.replace("past", "pres")))
    # isomorphism ignores INDEX: same_mrs does not
    moved = simplemrs.decode(DOG_CHASED_CAT.replace("INDEX: e2", "INDEX: x3"))
    assert not same_mrs(m, moved)


def test_applied_records_its_noops(rules, erg1214):
    d = apply_chain(chase(), rules.parse_chain("p+prog"), erg1214).to_dict()
    assert d["noops"] == ["past: TENSE is already past"] and d["reason"] is None


# --------------------------------------------------------------------------
# presets


def test_builtin_presets(rules):
    paper = rules.presets["lit-paper"]
    assert len(paper.chains) == 63 and len(set(paper.chains)) == 63 and not paper.pairs
    assert paper.source.rsplit(":", 1)[0].endswith("presets.toml")
    tense_aspect = [c for c in paper.chains if c.count("+") == 2]
    assert len(tense_aspect) == 12
    assert {"n", "m", "i", "i2", "pa", "s", "n+i", "m+i2", "i+pa", "s+pa",
            "p+prog+perf+pa", "f+-prog+-perf+i2"} <= set(paper.chains)
    assert "m+pa" not in paper.chains  # the original's modal blocks the passive
    nli = rules.presets["lit-paper-nli"]
    assert not nli.chains and "f;p+i" in nli.pairs
    parsed = rules.parse_chains("lit-paper, q")
    assert [text for text, _ in parsed][:2] == ["p+prog+perf", "p+prog+-perf"]
    assert parsed[-1][0] == "q" and len(parsed) == 64
    with pytest.raises(SpecError, match="has only pair specs") as err:
        rules.parse_chains("p,lit-paper-nli")
    assert err.value.position == 2


PRESETS = """[[preset]]
name = "tenses"
description = "every tense"
chains = ["p", "pr", "f"]
pairs = ["f;p", "p;f"]
"""


def test_presets_from_a_rule_file(tmp_path):
    (tmp_path / "mine.toml").write_text(NEW_RULE + "\n" + PRESETS)
    rs = RuleSet.load(paths=[tmp_path], plugins=False)
    assert "fq" in rs and rs.presets["tenses"].chains == ("p", "pr", "f")
    assert rs.presets["tenses"].source == f"{tmp_path / 'mine.toml'}:9"
    assert [p.name for p in load_presets(tmp_path / "mine.toml")] == ["tenses"]
    assert [r.name for r in load_rule_file(tmp_path / "mine.toml")] == ["future_question"]


@pytest.mark.parametrize("preset, message", [
    ('name = "p"\nchains = ["f"]', "preset 'p': the name is already used by rule 'past'"),
    ('name = "x"\nchains = ["zz"]', "preset 'x': unknown rule 'zz'"),
    ('name = "x"\nchains = ["f;p"]', "is a pair spec, but the input has single sentences"),
    ('name = "x"\npairs = ["f"]', "is a single-sentence spec"),
    ('name = "x"\nchains = ["p,f"]', "'p,f' is not one spec"),
    ('name = "x"\nchains = ["lit-paper"]', "'lit-paper' is not one spec"),
    ('name = "x"\nchains = ["p", "past"]', "duplicate spec 'past'"),
])
def test_bad_presets(tmp_path, preset, message):
    (tmp_path / "bad.toml").write_text(f"[[preset]]\n{preset}\n")
    with pytest.raises(RuleError) as err:
        RuleSet.load(paths=[tmp_path], plugins=False)
    assert message in str(err.value)
    assert (err.value.filename, err.value.lineno) == (str(tmp_path / 'bad.toml'), 1)


def test_rule_named_like_a_preset_is_an_error(tmp_path):
    (tmp_path / "clash.toml").write_text(
        '[[rule]]\nname = "lit-paper"\noperations = [{ op = "identity" }]\n')
    rs = RuleSet.load(plugins=False)
    with pytest.raises(RuleError, match="name 'lit-paper' is already used by preset"):
        rs.add(load_rule_file(tmp_path / "clash.toml")[0])


def test_identity(rules, erg1214):
    out = apply_chain(chase(), rules.parse_chain("o"), erg1214)
    assert out.mrs == chase() and out.mrs is not chase()


def test_applied_to_dict_drops_lnk(rules, erg1214):
    m = simplemrs.decode(DOG_CHASED_CAT.replace("_chase_v_1 LBL", "_chase_v_1<8:14> LBL"))
    d = rules.get("f").apply(m, erg1214).to_dict()
    assert d["chain"] == "future" and d["reason"] is None and "<8:14>" not in d["mrs"]


# --------------------------------------------------------------------------
# rules as data


NEW_RULE = """\
# a rule made of existing operations, declared in a file alone
[[rule]]
name = "future_question"
aliases = ["fq"]
phenomenon = "question"
description = "Will the dog chase the cat?"
operations = [{ op = "set_tense", value = "fut" }, { op = "set_sf", value = "ques" }]
"""


def test_a_rule_added_from_a_file_alone(tmp_path, erg1214):
    (tmp_path / "mine.toml").write_text(NEW_RULE)
    (tmp_path / "labels_mine.toml").write_text("not a rule file = [")  # label tables are skipped
    rs = RuleSet.load(paths=[tmp_path], plugins=False)
    rule = rs.get("fq")
    assert rule.name == "future_question" and rule.source == f"{tmp_path / 'mine.toml'}:2"
    out = apply_chain(chase(), rs.parse_chain("n+fq"), erg1214)
    v = out.mrs.variables[out.mrs.index]
    assert (v["TENSE"], v["SF"]) == ("fut", "ques")
    assert "neg" in {ep.predicate for ep in out.mrs.rels}
    # also a single file path
    assert "fq" in RuleSet.load(paths=[tmp_path / "mine.toml"], plugins=False)


def test_user_rule_replaces_builtin_of_same_name(tmp_path, erg1214):
    (tmp_path / "q.toml").write_text(textwrap.dedent("""\
        [[rule]]
        name = "question"
        aliases = ["q", "ask"]
        phenomenon = "question"
        description = "questions, differently"
        preconditions = []
        operations = [{ op = "set_sf", value = "ques" }]
        """))
    rs = RuleSet.load(paths=[tmp_path], plugins=False)
    assert rs.get("ask") is rs.get("q") and rs.get("question").preconditions == ()


@pytest.mark.parametrize("text,message,line", [
    ("[[rule]]\nname = \"x\"\noperations = [{ op = \"frobnicate\" }]\n",
     "unknown operation 'frobnicate'", 1),
    ("# c\n\n[[rule]]\nname = \"x\"\npreconditions = [\"nope\"]\n"
     "operations = [{ op = \"identity\" }]\n", "unknown precondition 'nope'", 3),
    ("[[rule]]\nname = \"x\"\nrequires = [\"teleport\"]\noperations = [{ op = \"identity\" }]\n",
     "unknown requirement 'teleport'", 1),
    ("[[rule]]\nname = \"x\"\n", "'operations' must be a non-empty list", 1),
    ("[[rule]]\nname = \"x\"\ncolour = 1\noperations = [{ op = \"identity\" }]\n",
     "unknown key(s) colour", 1),
    ("[[rule]]\nname = \"x\"\nname2 = = 3\n", "invalid TOML", 3),
    ("[rule]\nname = \"x\"\n", "only [[rule]] and [[preset]] tables", None),
    ("[[preset]]\nname = \"x\"\n", "give 'chains' or 'pairs'", 1),
    ("[[rule]]\nname = \"x\"\noperations = [{ op = \"identity\" }]\n[[preset]]\nname = 3\n",
     "a preset needs a 'name'", 4),
    ("[[preset]]\nname = \"x\"\nchains = \"p\"\n", "'chains' must be a list of strings", 1),
    ("[[preset]]\nname = \"x\"\nchains = [\"p\"]\nsize = 1\n", "unknown key(s) size", 1),
])
def test_bad_rule_files_name_file_and_line(tmp_path, text, message, line):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(RuleError) as err:
        load_rule_file(path)
    assert message in str(err.value)
    with pytest.raises(RuleError):
        load_presets(path)
    assert err.value.filename == str(path) and err.value.lineno == line


def test_alias_clash_is_an_error(tmp_path):
    (tmp_path / "clash.toml").write_text(
        '[[rule]]\nname = "pasta"\naliases = ["p"]\noperations = [{ op = "identity" }]\n')
    with pytest.raises(RuleError, match="name 'p' is already used by rule 'past'"):
        RuleSet.load(paths=[tmp_path], plugins=False)


def test_missing_rules_dir(tmp_path):
    with pytest.raises(RuleError, match="no such rule file or directory"):
        RuleSet.load(paths=[tmp_path / "nope"], plugins=False)


def test_rule_dict_round_trip(rules):
    for rule in rules:
        again = Rule.from_dict({k: v for k, v in rule.to_dict().items() if k != "source"})
        assert again == rule
    assert Step.from_dict({"op": "set_tense", "value": "past"}).to_dict() == {
        "op": "set_tense", "value": "past"}


# --------------------------------------------------------------------------
# plugins (entry point group "lit.rules"), simulated by monkeypatching


PLUGIN = '''
from lit.rules import Rule
from lit.transform import Inapplicable
from lit.mrs import set_property

def _shout(m, sem):
    if m.variables[m.index].get("SF") == "comm":
        return "already a command"
    return set_property(m, m.index, "SF", "comm")

def _whisper(m, sem):
    from lit.transform import AlreadyHolds
    if m.variables[m.index].get("SF") == "prop":
        raise AlreadyHolds("SF is already prop")
    return set_property(m, m.index, "SF", "prop")

WHISPER = Rule(name="whisper", phenomenon="mood", description="x", function=_whisper)

SHOUT = Rule(name="command", aliases=["c"], phenomenon="mood",
             description="Imperative-like force", function=_shout)

def more_rules():
    return [Rule(name="noop", aliases=["nop"], phenomenon="identity", description="x",
                 preconditions=(), function=lambda m, sem: m)]

RULES_DIR = {rules_dir!r}
BAD = 42
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    rules_dir = tmp_path / "plugin_rules"
    rules_dir.mkdir()
    (rules_dir / "fq.toml").write_text(NEW_RULE + "\n" + PRESETS)
    (tmp_path / "lit_test_plugin.py").write_text(PLUGIN.format(rules_dir=str(rules_dir)))
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = [
        importlib.metadata.EntryPoint("shout", "lit_test_plugin:SHOUT", "lit.rules"),
        importlib.metadata.EntryPoint("more", "lit_test_plugin:more_rules", "lit.rules"),
        importlib.metadata.EntryPoint("dir", "lit_test_plugin:RULES_DIR", "lit.rules"),
        importlib.metadata.EntryPoint("whisper", "lit_test_plugin:WHISPER", "lit.rules"),
    ]

    def entry_points(**kwargs):
        assert kwargs == {"group": "lit.rules"}
        return eps

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    return eps


def test_plugins(plugin, erg1214):
    rs = RuleSet.load()
    assert rs.get("c").source == "plugin shout (lit_test_plugin:SHOUT)"
    out = apply_chain(chase(), rs.parse_chain("c+nop+fq"), erg1214)
    assert out.applicable and out.mrs.variables["e2"]["SF"] == "ques"
    out = apply_chain(chase(), rs.parse_chain("c+c"), erg1214)
    assert out.reason == "step command: already a command"
    assert "c" not in RuleSet.load(plugins=False)
    # a Python rule raising AlreadyHolds is a no-op step
    out = apply_chain(chase(), rs.parse_chain("whisper+fq"), erg1214)
    assert out.applicable and out.noops == ("whisper: SF is already prop",)
    assert apply_chain(chase(), rs.parse_chain("whisper"), erg1214).reason == (
        "SF is already prop")
    # presets of a plugin's rule directory
    assert rs.presets["tenses"].pairs == ("f;p", "p;f")


def test_bad_plugin(plugin):
    plugin.append(importlib.metadata.EntryPoint("bad", "lit_test_plugin:BAD", "lit.rules"))
    with pytest.raises(RuleError, match="plugin bad .* gave int"):
        RuleSet.load()
    plugin[-1] = importlib.metadata.EntryPoint("gone", "lit_no_such_module:X", "lit.rules")
    with pytest.raises(RuleError, match="cannot load rule plugin gone"):
        RuleSet.load()


# --------------------------------------------------------------------------
# reading items for `lit rules apply`


def test_read_mrs_items_and_apply(rules, erg1214):
    parse_line = json.dumps({"id": "a", "sentence": "Dogs bark.", "selected": 1,
                             "readings": [{"mrs": DOG_CHASED_CAT}, {"mrs": DOGS_BARK}]})
    lines = "\n".join([DOG_CHASED_CAT, "", parse_line,
                       json.dumps({"id": "b", "readings": [{"mrs": DOGS_BARK}],
                                   "selected": None}),
                       json.dumps({"id": "c", "mrs": DOGS_BARK})]) + "\n"
    items = list(read_mrs_items(io.StringIO(lines)))
    assert [(i.id, i.error) for i in items] == [
        (1, None), ("a", None), ("b", "no selected reading"), ("c", None)]
    assert index_ep(items[1].mrs).predicate == "_bark_v_1"
    records = list(apply_from_iterable(items, rules.parse_chains("p,q"), erg1214))
    assert len(records) == 8
    assert records[0] == {"id": 1, "chain": "p", "mrs": None, "reason": "TENSE is already past"}
    assert records[2]["sentence"] == "Dogs bark." and records[2]["mrs"].startswith("[ TOP: h0")
    assert records[4] == {"id": "b", "chain": "p", "mrs": None, "reason": "no selected reading"}


def test_read_mrs_items_errors():
    bad = io.StringIO(DOGS_BARK + "\n[ TOP: h0 RELS: < [ _x LBL: h1 ARG0 ] > ]\n")
    expected = r"^<stream>:2: invalid SimpleMRS: .*expected.*character 31"
    with pytest.raises(InputError, match=expected):
        list(read_mrs_items(bad))
    bad.seek(0)
    items = list(read_mrs_items(bad, on_error="skip"))
    assert items[1].mrs is None and items[1].error.startswith("invalid-input: invalid SimpleMRS")
    with pytest.raises(InputError, match="'selected' is 3"):
        list(read_mrs_items(io.StringIO('{"readings": [{"mrs": "x"}], "selected": 3}\n')))
    with pytest.raises(InputError, match="malformed JSON"):
        list(read_mrs_items(io.StringIO('{"id": \n')))
