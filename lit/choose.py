"""Choosing the sentence: which realization of a transformed MRS lit writes.

A transformed MRS usually has several realizations. Without guidance a
language model alone picks fluent sentences that are not minimal edits (an
added "Both", a fronted predicate, a passive nobody asked for), so lit ranks
and filters them in this order:

1. **faithfulness**: the word-level edit distance to the original sentence
   (:func:`lit.generate.distance`; case counts, except a sentence-initial
   capital) comes first: the realization that keeps the original's words,
   order and case wherever the rule does not change them wins; among equally
   distant ones, the one that breaks fewer of the original's word pairs
   (:func:`broken_pairs`): a passive moves "an old bearded man" as a whole
   and keeps it "an old bearded man", not "a bearded old man";
2. **fluency**: among equally faithful realizations, the lower LM
   perplexity wins (without an LM, text order);
3. **guards** drop candidates outright, with a reason:

   * the *order guard* (always on): a realization must keep every
     capitalized non-initial word of the original with its case ("TV" must
     not become "tv"), and, unless the chain contains a rule that reorders
     arguments (passive, swap, it-cleft), the words it shares with the
     original must stay in the original's order ("Swimming, there will be
     a child." from "There is a child swimming." is dropped); numbers must
     stay written as the original writes them ("two" must not become "2",
     nor "2" "two");
   * the *fluency guard* (with an LM): a realization whose perplexity is more
     than :data:`FLUENCY_FACTOR` times the original's is dropped (Polyjuice
     filters perturbations the same way).

Example:
    >>> c = choose("The dog chased the cat.", ["The dog didn't chase the cat.",
    ...            "The dog did not chase the cat.", "The cat, the dog didn't chase."])
    >>> [x.sentence for x in c.candidates]
    ["The dog didn't chase the cat.", 'The dog did not chase the cat.']
    >>> c.rejected[0][1]
    'moves words: 2 of the 5 words it shares with the original'
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lit.generate import Candidate, distance, tokens

__all__ = ["FLUENCY_FACTOR", "NUMBER_SPELLINGS", "REORDERING_PHENOMENA", "Choice", "choose",
           "order_guard", "fluency_guard", "broken_pairs"]

FLUENCY_FACTOR = 2.0
"""A realization whose perplexity exceeds the original's by more than this
factor is dropped (with an LM). Measured with SmolLM2-135M on SNLI dev pairs
and ERG 1214 (issue 12): good tense, modal and cleft changes stayed below
1.8 times the original's perplexity; the realizations of misread sentences
("A light may color dog splashes through the water.", "... on will step at
their job.") were above 2."""

_NUMBERS = ("zero one two three four five six seven eight nine ten eleven twelve "
            "thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty").split()
#: a number written as a word and as digits: each maps to the other
NUMBER_SPELLINGS: Mapping[str, str] = {
    **{w: str(i) for i, w in enumerate(_NUMBERS)},
    **{str(i): w for i, w in enumerate(_NUMBERS)},
}

#: phenomena (of the rules registry) whose rules reorder a clause's arguments
REORDERING_PHENOMENA = frozenset({"voice", "argument", "cleft"})


@dataclass(frozen=True, slots=True)
class Choice:
    """The ranked candidates that passed the guards, and those that did not.

    Attributes:
        candidates: best first
        rejected: ``(sentence, reason)`` for each dropped candidate
    """

    candidates: tuple[Candidate, ...]
    rejected: tuple[tuple[str, str], ...] = ()

    @property
    def reason(self) -> str:
        """Why nothing passed (for a ``no-realization`` record)."""
        reasons = Counter(r.split(":", 1)[0] for _, r in self.rejected)
        what = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
        return f"all {len(self.rejected)} candidates failed the guards ({what})"


def order_guard(candidate: str, original: str, *, reorders: bool = False) -> str | None:
    """Why *candidate* departs from *original* more than a rule implies, or ``None``.

    Example:
        >>> order_guard("A man watches tv.", "A man watches TV.")
        'changes the case of TV'
        >>> order_guard("A girl in a Pink coat runs.", "A girl in a pink coat ran.")
        'changes the case of pink'
        >>> order_guard("It is a man who watches TV.", "A man watches TV.") is None
        True
        >>> order_guard("2 women will dance.", "Two women dance.")
        'writes the number two as 2'
    """
    orig, cand = tokens(original), tokens(candidate)
    lowered = {c.lower() for c in cand}
    for word in orig:
        other = NUMBER_SPELLINGS.get(word.lower())
        if other is not None and word.lower() not in lowered and other in lowered:
            return f"writes the number {word.lower()} as {other}"
    for word in orig[1:]:
        if any(ch.isupper() for ch in word) and word not in cand:
            if word.lower() in (c.lower() for c in cand):
                return f"changes the case of {word}"
    lower = {w for w in orig if w.islower()}
    for word in cand[1:]:  # "a Pink jacket", "It is A man": a common word as a name
        if word[:1].isupper() and word not in orig and word.lower() in lower:
            return f"changes the case of {word.lower()}"
    if reorders:
        return None
    shared = sum((Counter(orig) & Counter(cand)).values())
    kept = _lcs(orig, cand)
    if kept < shared:
        return f"moves words: {shared - kept} of the {shared} words it shares with the original"
    return None


def broken_pairs(candidate: str, original: str) -> int:
    """How many adjacent word pairs of *original* are not adjacent in *candidate*.

    Example:
        >>> original = "An old bearded man plays a flute."
        >>> broken_pairs("A flute is played by an old bearded man.", original)
        3
        >>> broken_pairs("A flute is played by a bearded old man.", original)
        6
    """
    orig, cand = tokens(original), tokens(candidate)
    pairs = Counter(zip(cand, cand[1:], strict=False))
    return sum((Counter(zip(orig, orig[1:], strict=False)) - pairs).values())


def _lcs(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of *a* and *b*."""
    row = [0] * (len(b) + 1)
    for x in a:
        prev = 0
        for j, y in enumerate(b, start=1):
            cur = row[j]
            row[j] = prev + 1 if x == y else max(row[j], row[j - 1])
            prev = cur
    return row[-1]


def fluency_guard(score: float | None, original_score: float | None,
                  factor: float = FLUENCY_FACTOR) -> str | None:
    """Why a candidate with perplexity *score* is too disfluent, or ``None``.

    Example:
        >>> print(fluency_guard(900.0, 100.0))
        perplexity 900 > 2 x the original's 100
    """
    if score is None or original_score is None or score <= factor * original_score:
        return None
    return f"perplexity {score:.0f} > {factor:g} x the original's {original_score:.0f}"


def choose(
    original: str,
    candidates: Sequence[str],
    *,
    scores: Mapping[str, float] | None = None,
    reorders: bool = False,
    factor: float = FLUENCY_FACTOR,
) -> Choice:
    """Rank *candidates* (realizations of a transformation of *original*) and
    apply the guards (see the module notes).

    Args:
        original: the sentence that was transformed
        candidates: its realizations, distinct
        scores: LM perplexities of the candidates and of *original* (``None``:
            no LM)
        reorders: the chain contains a rule that reorders arguments
        factor: the fluency guard's factor
    """
    original_score = None if scores is None else scores.get(original)
    kept: list[tuple[tuple[int, int, float, str], Candidate]] = []
    rejected: list[tuple[str, str]] = []
    for text in candidates:
        score = None if scores is None else scores.get(text)
        why = order_guard(text, original, reorders=reorders) or fluency_guard(
            score, original_score, factor)
        if why is not None:
            rejected.append((text, why))
            continue
        key = (distance(text, original), broken_pairs(text, original),
               score if score is not None else 0.0, text)
        kept.append((key, Candidate(text, score)))
    kept.sort(key=lambda entry: entry[0])
    return Choice(tuple(c for _, c in kept), tuple(rejected))
