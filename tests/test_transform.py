"""lit.transform: the MRS editing core and each operation, on tiny real MRSs."""

from __future__ import annotations

import copy

import pytest
from delphin.codecs import simplemrs
from delphin.mrs import EP, MRS

from lit import mrs as lm
from lit import transform as t
from lit.transform import (
    DOG_CHASED_CAT,
    DOGS_BARK,
    Inapplicable,
    Semantics,
)

ERG1214 = Semantics()  # the defaults are ERG 1214's conventions
ERG2018 = Semantics(
    grammar="erg-2018",
    passive="icons:topic",
    itcleft="",
    itcleft_unsupported="erg-2018 does not generate it-clefts",
    modal_aspect="inherit",
    modals={"may": "_may_v_modal", "might": "_might_v_modal", "shall": ""},
    modals_unsupported={"shall": "not in this test grammar"},
)

# "The dog." as a fragment-like analysis: the INDEX is the noun's variable
THE_DOG = (
    "[ TOP: h0 INDEX: x3 [ x PERS: 3 NUM: sg IND: + ] RELS: < "
    "[ _the_q LBL: h4 ARG0: x3 RSTR: h5 BODY: h6 ] [ _dog_n_1 LBL: h7 ARG0: x3 ] > "
    "HCONS: < h5 qeq h7 > ]"
)
# an unknown-EP (fragment) analysis
FRAGMENT = (
    "[ TOP: h0 INDEX: e2 [ e SF: prop ] RELS: < [ unknown LBL: h1 ARG0: e2 ARG: x3 ] "
    "[ udef_q LBL: h4 ARG0: x3 RSTR: h5 BODY: h6 ] [ _dog_n_1 LBL: h7 ARG0: x3 ] > "
    "HCONS: < h0 qeq h1 h5 qeq h7 > ]"
)
# "Nobody barks."
NOBODY_BARKS = (
    "[ TOP: h0 INDEX: e2 [ e SF: prop TENSE: pres MOOD: indicative PROG: - PERF: - ] RELS: < "
    "[ _no_q LBL: h4 ARG0: x3 [ x PERS: 3 NUM: sg ] RSTR: h5 BODY: h6 ] "
    "[ person LBL: h7 ARG0: x3 ] [ _bark_v_1 LBL: h1 ARG0: e2 ARG1: x3 ] > "
    "HCONS: < h0 qeq h1 h5 qeq h7 > ]"
)
# "Two dogs bark."
TWO_DOGS_BARK = (
    "[ TOP: h0 INDEX: e2 [ e SF: prop TENSE: pres MOOD: indicative PROG: - PERF: - ] RELS: < "
    "[ udef_q LBL: h4 ARG0: x3 [ x PERS: 3 NUM: pl IND: + ] RSTR: h5 BODY: h6 ] "
    "[ card LBL: h7 ARG0: e8 [ e SF: prop TENSE: untensed ] ARG1: x3 CARG: \"2\" ] "
    "[ _dog_n_1 LBL: h7 ARG0: x3 ] [ _bark_v_1 LBL: h1 ARG0: e2 ARG1: x3 ] > "
    "HCONS: < h0 qeq h1 h5 qeq h7 > ]"
)
# "The dog quickly chased the cat.": a modifier shares the verb's label
QUICKLY = DOG_CHASED_CAT.replace(
    "[ _the_q LBL: h9",
    "[ _quick_a_1 LBL: h1 ARG0: e13 [ e SF: prop TENSE: untensed ] ARG1: e2 ] [ _the_q LBL: h9",
)


def dec(s: str) -> MRS:
    return simplemrs.decode(s)


def preds(m: MRS) -> list[str]:
    return [ep.predicate for ep in m.rels]


def ep_of(m: MRS, predicate: str) -> EP:
    return next(ep for ep in m.rels if ep.predicate == predicate)


def props(m: MRS, var: str) -> dict[str, str]:
    return m.variables[var]


@pytest.fixture
def chase() -> MRS:
    return dec(DOG_CHASED_CAT)


@pytest.fixture
def bark() -> MRS:
    return dec(DOGS_BARK)


# --------------------------------------------------------------------------
# core helpers


def test_index_and_target(chase):
    assert lm.index_ep(chase).predicate == "_chase_v_1"
    assert t.target_ep(chase).predicate == "_chase_v_1"
    assert lm.is_verbal(lm.index_ep(chase))
    assert lm.index_ep(dec(THE_DOG)).predicate == "_dog_n_1"
    assert t.target_ep(dec(THE_DOG)) is None


def test_head_ep_skips_modifiers():
    m = dec(QUICKLY)
    assert lm.head_ep(m, "h1").predicate == "_chase_v_1"
    out = t.add_modal(m, ERG1214)
    assert t.target_ep(out).predicate == "_chase_v_1"


def test_scope_target_and_outscoping(chase):
    # negation goes over the clause head, which after `may` is the modal
    out = t.negate(t.add_modal(chase, ERG1214))
    modal = ep_of(out, "_may_v_modal")
    neg = ep_of(out, "neg")
    assert lm.scope_target(out, neg.args["ARG1"]) == modal.label
    assert lm.scope_target(out, modal.args["ARG1"]) == "h1"
    assert [ep.predicate for ep in lm.outscoping_eps(out, "h1")] == ["_may_v_modal", "neg"]
    path, verb = t.wrappers(out)
    assert [ep.predicate for ep in path] == ["_may_v_modal"]
    assert verb.predicate == "_chase_v_1"
    # the other order builds the same scopes: neg > may > verb
    from delphin.mrs import is_isomorphic

    assert is_isomorphic(out, t.add_modal(t.negate(chase), ERG1214))


def test_fresh_variables_above_every_id(chase):
    assert lm.max_variable_id(chase) == 12
    assert lm.fresh_variables(chase, "hhe") == ["h13", "h14", "e15"]
    # ids only in HCONS or ICONS count too
    m = dec(DOG_CHASED_CAT.replace("h10 qeq h12", "h10 qeq h12 h40 qeq h12"))
    assert lm.fresh_variables(m, "e") == ["e41"]


def test_new_variables_never_collide(chase):
    out = t.negate(t.add_modal(t.passivize(chase, ERG1214), ERG1214))
    names = [v for v in out.variables]
    assert len(names) == len(set(names))
    new = set(out.variables) - set(chase.variables)
    assert new and all(int(v[1:]) > lm.max_variable_id(chase) for v in new)


def test_repoint_label_and_set_property(chase):
    out = lm.repoint_label(chase, "h1", "h99")
    assert out.hcons[0].lo == "h99" and chase.hcons[0].lo == "h1"
    out = lm.set_property(chase, "e2", "TENSE", "fut")
    assert props(out, "e2")["TENSE"] == "fut" and props(chase, "e2")["TENSE"] == "past"


def test_copy_mrs_is_deep_enough(chase):
    out = lm.copy_mrs(chase)
    assert out == chase
    out.rels[0].args["ARG0"] = "x99"
    out.variables["e2"]["TENSE"] = "fut"
    assert chase.rels[0].args["ARG0"] == "x3"
    assert props(chase, "e2")["TENSE"] == "past"


# --------------------------------------------------------------------------
# no operation mutates its input


OPS = [
    (t.identity, {}),
    (t.set_tense, {"value": "fut"}),
    (t.set_aspect, {"prop": "PROG", "value": "+"}),
    (t.set_sf, {"value": "ques"}),
    (t.negate, {}),
    (t.add_modal, {"modal": "may"}),
    (t.cleft, {"role": "ARG1"}),
    (t.passivize, {}),
    (t.swap_roles, {}),
]


def _snapshot(m: MRS) -> tuple:
    return (
        m.top, m.index,
        [(ep.predicate, ep.label, copy.copy(ep.args), ep.id) for ep in m.rels],
        list(m.hcons), list(m.icons), copy.deepcopy(m.variables),
    )


@pytest.mark.parametrize("sem", [ERG1214, ERG2018], ids=["erg-1214", "erg-2018"])
@pytest.mark.parametrize("op,params", OPS, ids=[op.__name__ for op, _ in OPS])
def test_operations_do_not_mutate_their_input(op, params, sem, chase):
    before = simplemrs.encode(chase)
    snapshot = _snapshot(chase)
    try:
        out = op(chase, sem, **params)
    except Inapplicable:
        out = None
    assert simplemrs.encode(chase) == before
    assert _snapshot(chase) == snapshot
    if out is not None:
        assert out is not chase
        assert all(a is not b for a, b in zip(out.rels, chase.rels, strict=False))


def test_every_operation_is_registered():
    assert {"identity", "set_tense", "set_aspect", "set_sf", "negate", "add_modal", "cleft",
            "passivize", "swap_roles", "requantify"} <= set(t.OPERATIONS)


# --------------------------------------------------------------------------
# operations


def test_set_tense(chase, bark):
    out = t.set_tense(bark, value="past")
    assert props(out, out.index)["TENSE"] == "past"
    with pytest.raises(t.AlreadyHolds, match="^TENSE is already past$"):
        t.set_tense(chase, value="past")


def test_tense_under_a_modal_goes_to_the_modal(chase):
    m = t.add_modal(chase, ERG1214)
    out = t.set_tense(m, ERG1214, value="past")
    modal = ep_of(out, "_may_v_modal")
    assert props(out, modal.iv)["TENSE"] == "past"
    assert props(out, "e2")["TENSE"] == "untensed"  # the verb stays untensed


def test_set_aspect(bark):
    out = t.set_aspect(bark, prop="PROG", value="+")
    assert props(out, "e2")["PROG"] == "+"
    with pytest.raises(t.AlreadyHolds, match=r"^PROG is already \+$"):
        t.set_aspect(out, prop="PROG", value="+")
    back = t.set_aspect(out, prop="PROG", value="-")
    assert props(back, "e2")["PROG"] == "-"


def test_aspect_under_modal_follows_the_grammar(chase):
    for sem, expected in ((ERG1214, "-"), (ERG2018, "+")):
        m = t.add_modal(chase, sem)
        out = t.set_aspect(m, sem, prop="PERF", value="+")
        assert props(out, "e2")["PERF"] == "+"
        assert props(out, out.index)["PERF"] == expected


def test_question(bark):
    out = t.set_sf(bark, value="ques")
    assert props(out, out.index)["SF"] == "ques"
    with pytest.raises(t.AlreadyHolds, match="^sentence is already a question$"):
        t.set_sf(out, value="ques")


def test_negate(chase):
    out = t.negate(chase)
    neg = ep_of(out, "neg")
    assert (neg.label, neg.args["ARG1"], neg.iv) == ("h13", "h14", "e15")
    assert props(out, "e15") == dict(t.UNTENSED_EVENT)
    assert [(hc.hi, hc.lo) for hc in out.hcons] == [
        ("h0", "h13"), ("h5", "h7"), ("h10", "h12"), ("h14", "h1")]
    assert out.index == "e2"  # negation does not move the INDEX


def test_no_double_negation(chase):
    with pytest.raises(Inapplicable, match="^already negated$"):
        t.negate(t.negate(chase))
    # also under a modal added later, and for a negative subject
    with pytest.raises(Inapplicable, match="^already negated$"):
        t.negate(t.add_modal(t.negate(chase), ERG1214))
    with pytest.raises(Inapplicable, match=r"^already negated \(_no_q on ARG1\)$"):
        t.negate(dec(NOBODY_BARKS))


def test_adding_operations_refuse_rather_than_hold(chase):
    """Negation and modals *change* the sentence (their label rows, o;n and m;o,
    assume the change): a second one is a refusal, not a target that holds."""
    for op, m in ((t.negate, t.negate(chase)), (t.add_modal, t.add_modal(chase, ERG1214))):
        with pytest.raises(Inapplicable) as err:
            op(m, ERG1214)
        assert not isinstance(err.value, t.AlreadyHolds), err.value.reason


def test_add_modal_1214(chase):
    out = t.add_modal(chase, ERG1214)
    modal = ep_of(out, "_may_v_modal")
    assert out.index == modal.iv == "e15"
    assert props(out, "e15") == {"SF": "prop", "TENSE": "pres", "MOOD": "indicative",
                                 "PROG": "-", "PERF": "-"}
    assert props(out, "e2")["TENSE"] == "untensed"
    assert out.hcons[0].lo == modal.label and out.hcons[-1].lo == "h1"


def test_add_modal_2018_inherits_aspect(chase):
    prog = t.set_aspect(chase, ERG2018, prop="PROG", value="+")
    out = t.add_modal(prog, ERG2018)
    assert props(out, out.index)["PROG"] == "+"


def test_modal_variants_and_unsupported(chase):
    out = t.add_modal(chase, ERG2018, modal="might")
    assert lm.index_ep(out).predicate == "_might_v_modal"
    with pytest.raises(Inapplicable, match="^unsupported: not in this test grammar$"):
        t.add_modal(chase, ERG2018, modal="shall")
    with pytest.raises(Inapplicable, match="^already has a modal$"):
        t.add_modal(out, ERG2018, modal="may")


def test_question_after_modal_is_on_the_modal(chase):
    out = t.set_sf(t.add_modal(chase, ERG1214), value="ques")
    assert props(out, out.index)["SF"] == "ques"
    # and a question keeps its force when a modal comes after it
    out = t.add_modal(t.set_sf(chase, value="ques"), ERG1214)
    assert props(out, out.index)["SF"] == "ques" and props(out, "e2")["SF"] == "prop"


def test_cleft(chase):
    out = t.cleft(chase, ERG1214)
    c = ep_of(out, "_be_v_itcleft")
    assert c.args == {"ARG0": "e14", "ARG1": "x3", "ARG2": "h1"} and c.label == "h13"
    assert out.index == "e14" and props(out, "e14")["TENSE"] == "pres"
    assert out.hcons[0].lo == "h13"
    # the same cleft again: its target holds; a cleft of another argument: refused
    with pytest.raises(t.AlreadyHolds, match="^already an it-cleft of ARG1$"):
        t.cleft(out, ERG1214)
    with pytest.raises(Inapplicable, match="^already an it-cleft$") as err:
        t.cleft(out, ERG1214, role="ARG2")
    assert not isinstance(err.value, t.AlreadyHolds)
    with pytest.raises(Inapplicable, match="^unsupported: erg-2018 does not generate it-clefts$"):
        t.cleft(chase, ERG2018)


def test_negation_scopes_over_a_later_cleft(chase):
    out = t.cleft(t.negate(chase), ERG1214)
    neg, c = ep_of(out, "neg"), ep_of(out, "_be_v_itcleft")
    assert lm.scope_target(out, neg.args["ARG1"]) == c.label
    assert c.args["ARG2"] == "h1"  # the verb's label, directly
    # the other order gives the same structure
    from delphin.mrs import is_isomorphic

    assert is_isomorphic(out, t.negate(t.cleft(chase, ERG1214)))


def test_cleft_over_modal(chase):
    out = t.cleft(t.add_modal(chase, ERG1214), ERG1214)
    modal, c = ep_of(out, "_may_v_modal"), ep_of(out, "_be_v_itcleft")
    assert c.args["ARG2"] == modal.label and out.index == c.iv


def test_passivize_parg_d(chase):
    out = t.passivize(chase, ERG1214)
    p = ep_of(out, "parg_d")
    assert p.label == "h1" and p.args == {"ARG0": "e13", "ARG1": "e2", "ARG2": "x8"}
    assert t.is_passive(out, t.target_ep(out))
    with pytest.raises(t.AlreadyHolds, match="^already passive$"):
        t.passivize(out, ERG1214)
    assert preds(t.passivize(out, ERG1214, if_passive="keep")) == preds(out)


def test_passivize_icons(chase):
    out = t.passivize(chase, ERG2018)
    assert [(ic.left, str(ic.relation), ic.right) for ic in out.icons] == [("e2", "topic", "x8")]
    assert "parg_d" not in preds(out)
    with pytest.raises(t.AlreadyHolds, match="^already passive$"):
        t.passivize(out, ERG2018)


def test_passive_after_modal_attaches_to_the_verb(chase):
    out = t.passivize(t.add_modal(chase, ERG1214), ERG1214)
    assert ep_of(out, "parg_d").args["ARG1"] == "e2"
    out = t.passivize(t.add_modal(chase, ERG2018), ERG2018)
    assert out.icons[0].left == "e2"


def test_intransitive_has_no_passive(bark):
    with pytest.raises(Inapplicable, match="^ARG2 of _bark_v_1 is not an x variable$"):
        t.passivize(bark)
    with pytest.raises(Inapplicable, match="^ARG2 of _bark_v_1 is not an x variable$"):
        t.swap_roles(bark)


def test_swap(chase):
    out = t.swap_roles(chase)
    v = t.target_ep(out)
    assert (v.args["ARG1"], v.args["ARG2"]) == ("x8", "x3")


@pytest.mark.parametrize("sem", [ERG1214, ERG2018], ids=["parg_d", "icons"])
def test_swap_keeps_a_passive_passive(chase, sem):
    out = t.swap_roles(t.passivize(chase, sem), sem)
    v = t.target_ep(out)
    assert v.args["ARG2"] == "x3" and t.is_passive(out, v)
    promoted = ep_of(out, "parg_d").args["ARG2"] if sem.passive == "parg_d" else out.icons[0].right
    assert promoted == "x3"


def test_swap_leaves_focus_alone(chase):
    from delphin.mrs import ICons

    focused = lm.copy_mrs(chase, icons=[ICons("e2", "focus", "x8")])
    out = t.swap_roles(focused)
    assert [tuple(ic) for ic in out.icons] == [("e2", "focus", "x8")]


def test_requantify_no(bark):
    out = t.requantify(bark)
    assert preds(out)[0] == "_no_q" and preds(bark)[0] == "udef_q"
    with pytest.raises(Inapplicable, match="already quantified by _no_q"):
        t.requantify(out)
    with pytest.raises(Inapplicable, match="_the_q is not one of"):
        t.requantify(dec(DOG_CHASED_CAT))
    with pytest.raises(Inapplicable, match=r"numbered noun phrase \(card\)"):
        t.requantify(dec(TWO_DOGS_BARK))
    with pytest.raises(Inapplicable, match="^already negated$"):
        t.requantify(t.negate(bark))


# --------------------------------------------------------------------------
# preconditions


def test_preconditions(chase):
    assert t.check(chase, ["no_unknown", "verb", "x:ARG1", "x:ARG2"]) is None
    assert t.check(dec(FRAGMENT), ["no_unknown"]) == (
        "MRS contains an unknown EP (fragment analysis)")
    assert t.check(dec(THE_DOG), ["verb"]) == "no verbal index EP"
    assert t.check(dec(DOGS_BARK), ["x:ARG2"]) == "ARG2 of _bark_v_1 is not an x variable"
    assert t.check(t.set_sf(chase, value="ques"), ["not_question"]) == "sentence is a question"


def test_operations_on_a_non_verbal_index():
    # (set_sf needs no verb: rules guard it with the "verb" precondition)
    for op, params in OPS[1:]:
        if op is t.set_sf:
            continue
        with pytest.raises(Inapplicable, match="no verbal index EP|not an x variable"):
            op(dec(THE_DOG), ERG1214, **params)


def test_semantics_from_profile():
    from lit.grammar import load_profile

    sem = Semantics.from_profile(load_profile("erg-2018"))
    assert sem.grammar == "erg-2018" and sem.passive == "icons:topic"
    assert sem.unsupported("itcleft") == "erg-2018 does not generate it-clefts"
    assert sem.unsupported("modals.may") is None
    assert Semantics.from_profile(sem) is sem
    assert Semantics.from_profile({"name": "g", "itcleft": ""}).unsupported("itcleft") == (
        "g does not support itcleft")
    with pytest.raises(KeyError):
        sem.unsupported("nonsense")
