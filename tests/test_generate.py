"""lit.generate: normalisation, deduplication, blemishes, --verify expectations."""

from __future__ import annotations

import pytest
from conftest import recorded
from delphin.codecs import simplemrs

from lit.generate import (
    Expectation,
    blemish,
    clean_realizations,
    generate_candidates,
    normalize_surface,
    respell,
    respellings,
)
from lit.interface import GenerationResult


def test_normalize_whitespace_underscore_and_punctuation():
    assert normalize_surface("  A woman drank  her coffee in  a small cafe. ") == (
        "A woman drank her coffee in a small cafe.")
    assert normalize_surface("A man holds _a cup.") == "A man holds a cup."
    assert normalize_surface("_A man sleeps .") == "A man sleeps."
    assert normalize_surface("The snake_case stays") == "The snake_case stays"


def test_a_lower_case_first_word_gets_its_capital():
    # ERG 2018 realizes "A woman is taking care of her laundry." with f as both
    # "A woman will be ..." and "a woman will be ..." (issue 12: the LM chose the latter)
    surfaces = ["a woman will be taking care of her laundry.",
                "A woman will be taking care of her laundry."]
    out = clean_realizations(surfaces, "A woman is taking care of her laundry.")
    assert out.candidates == ("A woman will be taking care of her laundry.",)
    assert normalize_surface("iPhones are sold.") == "iPhones are sold."
    assert normalize_surface("_a man sleeps .") == "A man sleeps."


def test_blemishes():
    assert blemish("A. man was looking to order a sandwich.") is not None
    assert blemish("The man is playing out. in the yard.") is None  # not a single letter
    assert blemish("Kids rode viz. an amusement ride.") is None  # a real word
    assert blemish("A _dog_n_1 barks") == "underscore in a word"
    assert blemish("") == "empty"
    assert blemish("Two women are embracing.") is None


def test_duplicates_and_comma_variants_keep_grammar_order():
    out = clean_realizations([
        "It is 2 women which, will be embracing.",
        "It is two women that will be embracing.",
        "It is 2 women which will be embracing.",
        "It is  two women that will be embracing.",
        "Two boys played football, while, wearing helmets.",
        "Two boys played football, while wearing helmets.",
        "A. man sleeps.",
    ])
    assert out.candidates == (
        "It is 2 women which will be embracing.",  # fewest commas, first group position
        "It is two women that will be embracing.",
        "Two boys played football, while wearing helmets.",
    )
    assert out.total == 7
    reasons = sorted(r for _, r in out.dropped)
    assert reasons == ["comma variant", "comma variant", "duplicate",
                       "stray period after a single letter"]


def test_comma_group_keeps_the_variant_closest_to_the_original():
    variants = ["Yes a, dog barks.", "Yes, a dog barks."]
    out = clean_realizations(variants, original="Yes, a dog barked.")
    assert out.candidates == ("Yes, a dog barks.",)
    # the result does not depend on the order ACE returned the strings in
    assert clean_realizations(variants[::-1], original="Yes, a dog barked.") == out
    # without the original: a canonical choice (text order) all the same
    assert clean_realizations(variants).candidates == clean_realizations(
        variants[::-1]).candidates


def test_empty_and_all_blemished():
    assert clean_realizations([]).candidates == ()
    out = clean_realizations(["A. man sleeps.", "A.  man sleeps."])
    assert out.candidates == () and out.total == 2 and len(out.dropped) == 2


def test_recorded_generations_never_keep_blemishes():
    """On every recorded generation (ERG 1214 and 2018): clean, distinct, non-empty."""
    for grammar in ("erg-1214", "erg-2018"):
        for row in recorded(grammar, "transforms"):
            if not row["generated"]:
                continue
            out = clean_realizations(row["generated"])
            assert out.candidates, row["generated"]
            assert len(set(out.candidates)) == len(out.candidates)
            keys = {" ".join(c.replace(",", " ").split()) for c in out.candidates}
            assert len(keys) == len(out.candidates)
            for c in out.candidates:
                assert "  " not in c and "_" not in c and blemish(c) is None
            assert len(out.candidates) + len(out.dropped) == len(row["generated"])


class _Gen:
    def __init__(self, result):
        self.result = result

    def generate(self, m):
        return self.result


def test_generate_candidates_passes_errors():
    cleaned, error = generate_candidates(_Gen(GenerationResult("m", ("A dog  barks.",), None)),
                                         "m")
    assert cleaned.candidates == ("A dog barks.",) and error is None
    cleaned, error = generate_candidates(_Gen(GenerationResult("m", (), "timeout")), "m")
    assert cleaned.candidates == () and error == "timeout"


def _transform(rule: str, index_pred: str | None = None) -> dict:
    for row in recorded("erg-1214", "transforms"):
        if row["rule"] == rule and row["output_mrs"] and (
                index_pred is None or index_pred in row["input_mrs"]):
            return row
    raise AssertionError(rule)


def _expect(rule: str) -> tuple[Expectation, object, object]:
    row = _transform(rule)
    before, after = simplemrs.decode(row["input_mrs"]), simplemrs.decode(row["output_mrs"])
    return Expectation.derive(before, after), before, after


def test_expectations_per_rule():
    exp, before, after = _expect("future")
    assert ("TENSE", "fut") in exp.index and exp.check(after) and not exp.check(before)
    exp, before, after = _expect("question")
    assert ("SF", "ques") in exp.index and exp.check(after) and not exp.check(before)
    exp, before, after = _expect("negation")
    assert "neg" in exp.predicates and exp.check(after) and not exp.check(before)
    exp, before, after = _expect("may")
    assert "_may_v_modal" in exp.predicates and exp.check(after) and not exp.check(before)
    exp, before, after = _expect("passive")
    assert "parg_d" in exp.predicates and exp.check(after) and not exp.check(before)
    exp, before, after = _expect("itcleft_arg1")
    assert "_be_v_itcleft" in exp.predicates and exp.check(after) and not exp.check(before)
    exp, before, after = _expect("swap")
    assert exp.triples and exp.check(after) and not exp.check(before)
    assert "expected" in exp.describe()


def test_expectation_icons_topic_erg_2018():
    for row in recorded("erg-2018", "transforms"):
        if row["rule"] == "passive" and row["output_mrs"]:
            before = simplemrs.decode(row["input_mrs"])
            after = simplemrs.decode(row["output_mrs"])
            exp = Expectation.derive(before, after)
            assert exp.icons == ("topic",)
            assert exp.check(after) and not exp.check(before)
            return
    raise AssertionError("no ERG 2018 passive recorded")


# "A little girl in a pink jacket is walking.", its only reading with ACE 0.9.30 and
# an ERG 1214 image built from source (reduced lexicon: "pink" is read as a name),
# spans removed; and what ACE realizes from it.
PINK_JACKET = (
    "[ TOP: h0 INDEX: e2 [ e SF: prop TENSE: pres MOOD: indicative PROG: + PERF: - ] RELS: < "
    "[ _a_q LBL: h4 ARG0: x3 [ x PERS: 3 NUM: sg IND: + ] RSTR: h5 BODY: h6 ] [ _little_a_1 "
    "LBL: h7 ARG0: e8 [ e SF: prop TENSE: untensed MOOD: indicative PROG: - PERF: - ] ARG1: x3 ] "
    "[ _girl_n_1 LBL: h7 ARG0: x3 ] [ _in_p LBL: h7 ARG0: e9 [ e SF: prop TENSE: untensed MOOD: "
    "indicative PROG: - PERF: - ] ARG1: x3 ARG2: x10 [ x PERS: 3 NUM: sg IND: + ] ] [ _a_q LBL: "
    "h11 ARG0: x10 RSTR: h12 BODY: h13 ] [ compound LBL: h14 ARG0: e15 [ e SF: prop TENSE: "
    "untensed MOOD: indicative PROG: - PERF: - ] ARG1: x10 ARG2: x16 [ x IND: + ] ] [ proper_q "
    "LBL: h17 ARG0: x16 RSTR: h18 BODY: h19 ] [ named LBL: h20 ARG0: x16 CARG: \"Pink\" ] "
    "[ _jacket_n_1 LBL: h14 ARG0: x10 ] [ _walk_v_1 LBL: h1 ARG0: e2 ARG1: x3 ] > "
    "HCONS: < h0 qeq h1 h5 qeq h7 h12 qeq h14 h18 qeq h20 > ]"
)
PINK_JACKET_REALIZED = ("A little girl in  a Pink jacket is walking.",
                        "A little girl in a Pink jacket is walking.")


def test_words_the_lexicon_lacks_keep_the_originals_spelling():
    # issue 12: a reduced lexicon reads "pink" as the name "Pink"; ACE writes it
    # capitalized. Case is spelling here: the realization is written as the original.
    from lit.generate import respell, respellings

    sentence = "A little girl in a pink jacket is walking."
    spellings = respellings(simplemrs.decode(PINK_JACKET), sentence)
    assert spellings == {"Pink": "pink"}
    assert clean_realizations(PINK_JACKET_REALIZED, sentence,
                              spellings=spellings).candidates == (sentence,)
    assert clean_realizations(PINK_JACKET_REALIZED, sentence).candidates == (
        "A little girl in a Pink jacket is walking.",)
    assert respell("Pink jackets are worn.", spellings) == "Pink jackets are worn."
    # a name the original writes capitalized, or its first word, stays as it is
    assert respellings(simplemrs.decode(PINK_JACKET), "Pink walks in a pink coat.") == {}
    a_name = simplemrs.decode('[ TOP: h0 RELS: < [ named LBL: h1 ARG0: x2 CARG: "A" ] > ]')
    assert respellings(a_name, "A light colored dog splashes through a pond.") == {}


def test_recorded_transforms_are_respelled_where_the_lexicon_made_names():
    # the recordings hold realizations like "A White dog with Long hair was swimming"
    from lit.generate import respellings

    seen = 0
    for row in recorded("erg-1214", "transforms"):
        if not row.get("output_mrs") or not row.get("generated"):
            continue
        spellings = respellings(simplemrs.decode(row["output_mrs"]), row["sentence"])
        if not spellings:
            continue
        seen += 1
        for s in clean_realizations(row["generated"], row["sentence"],
                                    spellings=spellings).candidates:
            assert not any(f" {name}" in s for name in spellings), (row["sentence"], s)
    assert seen > 50


def test_distance_is_nltk_edit_distance_over_tokens():
    """Trimming the shared prefix and suffix (done for speed) never changes the distance."""
    import random

    from nltk.metrics.distance import edit_distance

    from lit.generate import distance, tokens

    rng = random.Random(14)
    words = "The the a dog cat will chased chase is was not n't , . It who TV".split()
    for _ in range(3000):
        a = " ".join(rng.choice(words) for _ in range(rng.randint(0, 9)))
        b = " ".join(rng.choice(words) for _ in range(rng.randint(0, 9)))
        assert distance(a, b) == edit_distance(tokens(a), tokens(b)), (a, b)
    assert distance("A dog barks.", "A dog barks.") == 0
    assert distance("It is a dog that barks.", "A dog barks.") == 3


def test_preload_imports_nltk_in_the_background_and_distance_waits_for_it():
    import subprocess
    import sys

    code = ("import sys\nfrom lit.generate import distance, preload\n"
            "assert 'nltk' not in sys.modules\nthread = preload()\n"
            "print(distance('The dog will chase the cat.', 'The dog chased the cat.'))\n"
            "thread.join()\nprint('nltk.metrics.distance' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.split() == ["2", "True"]
# Two little girls ride an inflatable dinghy down a purple water slide. (ACE 0.9.30, ERG
# 1214 built from source with a reduced lexicon: "inflatable", "dinghy" and "purple"
# are unknown words; the reading `ranked` selects, spans removed)
DINGHY = (
    "[ TOP: h0 INDEX: e2 [ e SF: prop TENSE: pres MOOD: indicative PROG: - PERF: - ] RELS: < "
    "[ udef_q LBL: h4 ARG0: x3 [ x PERS: 3 NUM: pl IND: + ] RSTR: h5 BODY: h6 ] [ card LBL: h7 "
    "ARG0: e9 [ e SF: prop TENSE: untensed MOOD: indicative PROG: - PERF: - ] ARG1: x3 CARG: "
    "\"2\" ] [ _little_a_1 LBL: h7 ARG0: e10 [ e SF: prop TENSE: untensed MOOD: indicative "
    "PROG: - PERF: - ] ARG1: x3 ] [ _girl_n_1 LBL: h7 ARG0: x3 ] [ _ride_v_1 LBL: h1 ARG0: e2 "
    "ARG1: x3 ARG2: x11 [ x PERS: 3 NUM: sg ] ] [ _a_q LBL: h12 ARG0: x11 RSTR: h13 BODY: h14 ] "
    "[ _inflatable/jj_u_unknown LBL: h15 ARG0: e16 [ e SF: prop TENSE: untensed MOOD: "
    "indicative PROG: - PERF: - ] ARG1: x11 ] [ _dinghy/nn_u_unknown LBL: h15 ARG0: x11 ] "
    "[ _down_p LBL: h15 ARG0: e17 [ e SF: prop TENSE: untensed MOOD: indicative PROG: - "
    "PERF: - ] ARG1: x11 ARG2: x18 [ x PERS: 3 NUM: sg IND: + ] ] [ _a_q LBL: h19 ARG0: x18 "
    "RSTR: h20 BODY: h21 ] [ _purple/jj_u_unknown LBL: h22 ARG0: e23 [ e SF: prop TENSE: "
    "untensed MOOD: indicative PROG: - PERF: - ] ARG1: x18 ] [ compound LBL: h22 ARG0: e24 "
    "[ e SF: prop TENSE: untensed MOOD: indicative PROG: - PERF: - ] ARG1: x18 ARG2: x25 ] "
    "[ udef_q LBL: h26 ARG0: x25 RSTR: h27 BODY: h28 ] [ _water_n_1 LBL: h29 ARG0: x25 ] "
    "[ _slide_n_1 LBL: h22 ARG0: x18 ] > HCONS: < h0 qeq h1 h5 qeq h7 h13 qeq h15 h20 qeq "
    "h22 h27 qeq h29 > ]"
)
DINGHY_SENTENCE = "Two little girls ride an inflatable dinghy down a purple water slide."


def test_unknown_nouns_and_adjectives_are_generated_through_stand_ins():
    # ACE generates nothing from _dinghy/nn_u_unknown ("input EP not in index"); a known
    # word of the same kind stands in for it, and the realization gets the word back
    from lit.mrs import mrs_for_generation
    from lit.parse import why_not_candidate

    m = simplemrs.decode(DINGHY)
    line = mrs_for_generation(m)
    assert "_u_unknown" not in line
    assert {"_tall_a_1", "_cat_n_1", "_soft_a_1"} <= set(line.split())
    assert why_not_candidate(m) is None  # a round-trip candidate now
    spellings = respellings(m, DINGHY_SENTENCE)
    realized = "Two little girls ride  a tall cat down  a soft water slide."
    assert clean_realizations([realized], DINGHY_SENTENCE,
                              spellings=spellings).candidates == (DINGHY_SENTENCE,)
    assert respell("A tall cat is ridden by two little girls.", spellings) == (
        "An inflatable dinghy is ridden by two little girls.")  # the original's article
    assert respell("Two little girls ride tall cats.", spellings) == (
        "Two little girls ride inflatable dinghy.")  # plural stand-in: the word as written


def test_stand_ins_are_words_the_mrs_does_not_have():
    from lit.mrs import unknown_words

    hat = DINGHY.replace("_girl_n_1", "_cat_n_1").replace("_little_a_1", "_tall_a_1")
    assert unknown_words(simplemrs.decode(hat)) == {
        "_inflatable/jj_u_unknown": ("inflatable", "soft"),
        "_dinghy/nn_u_unknown": ("dinghy", "hat"),
        "_purple/jj_u_unknown": ("purple", "calm"),
    }


@pytest.mark.ace
def test_real_ace_transforms_sentences_with_unknown_words(lit_home):
    from pathlib import Path

    from conftest import real_ace

    from lit.pipeline import Transformer

    ace, image = real_ace("erg-1214")
    env = {"LIT_ACE": str(ace), "LIT_GRAMMAR_ERG_1214": str(image)}
    with Transformer("erg-1214", home=Path(lit_home), env=env) as t:
        turtle = t.transform_sentence("A diver is swimming with a turtle.", "p")
        dinghy = t.transform_sentence(DINGHY_SENTENCE, "m")
    assert turtle.status == "ok" and turtle.sentence == "A diver was swimming with a turtle."
    assert dinghy.status == "ok" and dinghy.sentence == (
        "Two little girls may ride an inflatable dinghy down a purple water slide.")
