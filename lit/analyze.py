"""Describe a dataset's linguistic make-up: the analysis of the LIT paper (§5.2).

For every sentence the grammar parses, the phenomena lit's rules
manipulate are read off the MRS of one reading (the ``selected`` reading of
``lit parse`` output, else the first):

* **tense**: TENSE of the INDEX event: past, present (``pres``), future
  (``fut``), untensed (``untensed`` or unset); any other value is counted
  under its own name;
* **aspect**: progressive / perfect: PROG / PERF ``+`` on the INDEX event
  or on the event of a verb the index EP embeds (a modal's or it-cleft's
  complement, e.g. "may be sleeping");
* **modality**: a modal EP (sense ``modal``, e.g. ``_may_v_modal``) as the
  index EP, scoping over it, or embedded by it;
* **negation**: a ``neg`` EP scoping over the index EP (or over the verb a
  modal/cleft index EP embeds);
* **passive**: a ``parg_d`` EP on the main verb (ERG 1214 convention) or an
  ICONS ``topic`` constraint on the main verb's event (ERG 2018 and later);
* **it-cleft**: an ``_be_v_itcleft`` EP (sense ``itcleft``) on the scope
  chain of the index EP;
* **question**: SF ``ques`` on the INDEX event.

The *index EP* is the non-quantifier EP whose ARG0 is the MRS INDEX (a
verbal one when several qualify). "Scoping over" follows handle arguments
upward, directly or through a ``qeq``. A sentence can show several
phenomena; shares are given relative to the parsed sentences, the share
without a parse relative to all sentences.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from delphin import predicate as _predicate
from delphin.codecs import simplemrs
from delphin.mrs import EP, MRS, MRSSyntaxError

from lit.errors import InputError
from lit.formats.jsonl import Skipped, read_lines
from lit.mrs import index_ep, outscoping_eps
from lit.transform import Semantics, is_cleft, is_modal, is_negated, is_passive, wrappers

if TYPE_CHECKING:  # pragma: no cover
    from rich.table import Table

__all__ = [
    "Features",
    "Analysis",
    "TENSES",
    "features",
    "analyze_parsed",
    "analyze_sentences",
    "read_input",
    "analysis_table",
    "plot_analysis",
]

logger = logging.getLogger(__name__)

#: tense categories in display order (other TENSE values are added after them)
TENSES = ("past", "present", "future", "untensed")
_TENSE_NAMES = {"past": "past", "pres": "present", "fut": "future", "untensed": "untensed"}

# the yes/no phenomena in display order: (Features attribute, row label)
_FLAGS = (
    ("progressive", "aspect: progressive"),
    ("perfect", "aspect: perfect"),
    ("modality", "modality"),
    ("negation", "negation"),
    ("passive", "passive"),
    ("cleft", "it-cleft"),
    ("question", "question"),
)


@dataclass(frozen=True, slots=True)
class Features:
    """The phenomena found in one MRS (see the module documentation)."""

    tense: str
    progressive: bool = False
    perfect: bool = False
    modality: bool = False
    negation: bool = False
    passive: bool = False
    cleft: bool = False
    question: bool = False
    index_predicate: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "tense": self.tense,
            "progressive": self.progressive,
            "perfect": self.perfect,
            "modality": self.modality,
            "negation": self.negation,
            "passive": self.passive,
            "cleft": self.cleft,
            "question": self.question,
            "index_predicate": self.index_predicate,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Features:
        return cls(**{k: d[k] for k in cls.__slots__ if k in d})


def _sense(ep: EP) -> str | None:
    return _predicate.split(ep.predicate)[2]


def _is_var(value: Any, sort: str) -> bool:
    return isinstance(value, str) and value[:1] == sort and value[1:].isdigit()


def _yes(props: Mapping[str, str], name: str) -> bool:
    return props.get(name, "").strip() == "+"


def features(m: MRS, semantics: Any = None) -> Features:
    """Read the phenomena of :mod:`lit.analyze` off *m*.

    The clause structure (wrappers, target verb, passive, negation) is
    read with the same definitions the rules use (:mod:`lit.transform`).

    Args:
        m: an MRS
        semantics: the grammar's conventions: a
            :class:`~lit.transform.Semantics`, a grammar profile, or its
            ``[semantics]`` mapping (default: ERG 1214's)
    Returns:
        the :class:`Features` of *m*

    Example:
        >>> m = simplemrs.decode(
        ...     '[ TOP: h0 INDEX: e2 [ e SF: ques TENSE: past PROG: + PERF: - ] '
        ...     'RELS: < [ neg LBL: h1 ARG0: e5 ARG1: h6 ] '
        ...     '[ _bark_v_1 LBL: h7 ARG0: e2 ARG1: x3 ] '
        ...     '[ udef_q LBL: h4 ARG0: x3 RSTR: h8 BODY: h9 ] [ _dog_n_1 LBL: h10 ARG0: x3 ] > '
        ...     'HCONS: < h0 qeq h1 h6 qeq h7 h8 qeq h10 > ]')
        >>> f = features(m)
        >>> f.tense, f.progressive, f.negation, f.question, f.passive
        ('past', True, True, True, False)
    """
    sem = Semantics() if semantics is None else Semantics.from_profile(semantics)
    props = m.variables.get(m.index, {}) if m.index else {}
    raw = props.get("TENSE", "untensed").strip().lower() or "untensed"
    tense = _TENSE_NAMES.get(raw, raw)
    question = props.get("SF", "").strip().lower() == "ques"
    ep = index_ep(m)
    if ep is None:
        return Features(tense=tense, question=question,
                        progressive=_yes(props, "PROG"), perfect=_yes(props, "PERF"))
    path, target = wrappers(m, sem)
    main = target if target is not None else ep
    chain = [*path, main] if main not in path else path
    context = list(chain)
    for e in chain:
        context.extend(x for x in outscoping_eps(m, e.label) if x not in context)
    events = [props] + [m.variables.get(e.iv, {}) for e in chain if _is_var(e.iv, "e")]
    return Features(
        tense=tense,
        progressive=any(_yes(ev, "PROG") for ev in events),
        perfect=any(_yes(ev, "PERF") for ev in events),
        modality=any(is_modal(e, sem) for e in context),
        negation=is_negated(m, sem) or any(e.predicate == sem.negation for e in context),
        passive=is_passive(m, main, sem),
        cleft=any(is_cleft(e, sem) for e in context),
        question=question,
        index_predicate=ep.predicate,
    )


@dataclass(frozen=True, slots=True)
class Analysis:
    """Counts of phenomena over a dataset (see :func:`analyze_parsed`).

    Attributes:
        sentences: sentences analysed (after removing duplicates, if asked)
        parsed: sentences with at least one usable reading
        not_parsed: sentences without a reading, by reason
            (``no-parse``, ``skipped``, ``error``, ``bad-mrs``)
        tense: parsed sentences per tense
        flags: parsed sentences per yes/no phenomenon (``progressive``,
            ``perfect``, ``modality``, ``negation``, ``passive``, ``cleft``,
            ``question``)
        reading: how the analysed reading was chosen (``selected``/``first``)
        duplicates: repeated sentences not counted again
    """

    sentences: int
    parsed: int
    not_parsed: dict[str, int]
    tense: dict[str, int]
    flags: dict[str, int]
    reading: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0

    def rows(self) -> list[dict[str, Any]]:
        """Table rows ``{"group", "phenomenon", "count", "share"}`` (share of parsed)."""
        rows: list[dict[str, Any]] = []

        def share(n: int, d: int) -> float | None:
            return n / d if d else None

        for name, count in self.tense.items():
            rows.append({"group": "tense", "phenomenon": name, "count": count,
                         "share": share(count, self.parsed)})
        for attr, label in _FLAGS:
            group, _, name = label.partition(": ")
            rows.append({"group": group, "phenomenon": name or group,
                         "count": self.flags.get(attr, 0),
                         "share": share(self.flags.get(attr, 0), self.parsed)})
        not_parsed = sum(self.not_parsed.values())
        rows.append({"group": "parse", "phenomenon": "not parsed", "count": not_parsed,
                     "share_of_all": share(not_parsed, self.sentences),
                     "share": None})
        return rows

    def to_dict(self) -> dict[str, Any]:
        return {
            "sentences": self.sentences,
            "parsed": self.parsed,
            "not_parsed": {"total": sum(self.not_parsed.values()), **self.not_parsed},
            "not_parsed_share": (sum(self.not_parsed.values()) / self.sentences
                                 if self.sentences else None),
            "tense": self.tense,
            "phenomena": {attr: self.flags.get(attr, 0) for attr, _ in _FLAGS},
            "reading": self.reading,
            "duplicates": self.duplicates,
            "rows": self.rows(),
        }


class _Counter:
    __slots__ = ("sentences", "parsed", "not_parsed", "tense", "flags", "reading",
                 "duplicates", "seen", "dedupe")

    def __init__(self, dedupe: bool) -> None:
        self.sentences = 0
        self.parsed = 0
        self.not_parsed: Counter[str] = Counter()
        self.tense: Counter[str] = Counter({t: 0 for t in TENSES})
        self.flags: Counter[str] = Counter({attr: 0 for attr, _ in _FLAGS})
        self.reading: Counter[str] = Counter()
        self.duplicates = 0
        self.seen: set[str] = set()
        self.dedupe = dedupe

    def is_duplicate(self, sentence: str | None) -> bool:
        if not self.dedupe or sentence is None:
            return False
        if sentence in self.seen:
            self.duplicates += 1
            return True
        self.seen.add(sentence)
        return False

    def add(self, f: Features) -> None:
        self.parsed += 1
        self.tense[f.tense] += 1
        for attr, _ in _FLAGS:
            if getattr(f, attr):
                self.flags[attr] += 1

    def result(self) -> Analysis:
        extra = sorted(k for k in self.tense if k not in TENSES)
        return Analysis(
            sentences=self.sentences,
            parsed=self.parsed,
            not_parsed=dict(self.not_parsed),
            tense={k: self.tense[k] for k in (*TENSES, *extra)},
            flags=dict(self.flags),
            reading=dict(self.reading),
            duplicates=self.duplicates,
        )


def _reason(error: Any) -> str:
    text = str(error or "no parse").strip().lower()
    if text.startswith("skipped"):
        return "skipped"
    if text.startswith("no parse") or text.startswith("no-parse"):
        return "no-parse"
    return "error"


def _choose(record: Mapping[str, Any], where: str) -> tuple[str | None, str]:
    readings = record.get("readings") or []
    if not isinstance(readings, list):
        raise InputError(f"{where}: 'readings' must be a list")
    if not readings:
        return None, ""
    selected = record.get("selected")
    if selected is not None:
        if not isinstance(selected, int) or not 0 <= selected < len(readings):
            raise InputError(
                f"{where}: 'selected' is {selected!r} but there are {len(readings)} readings"
            )
        how, reading = "selected", readings[selected]
    else:
        how, reading = "first", readings[0]
    mrs = reading.get("mrs") if isinstance(reading, Mapping) else None
    if not isinstance(mrs, str):
        raise InputError(f"{where}: the reading has no 'mrs' string")
    return mrs, how


def analyze_parsed(
    records: Iterable[Mapping[str, Any] | tuple[int, Mapping[str, Any]]],
    *,
    dedupe: bool = True,
    semantics: Any = None,
) -> Analysis:
    """Count phenomena over ``lit parse`` records.

    Each record has ``sentence``, ``readings`` (``[{"mrs": ...}]``),
    ``selected`` (an index or ``null``) and ``error``. The selected reading
    is analysed, or the first one when none is selected. Records without
    readings count as not parsed, by reason: ``skipped`` (an error starting
    with "skipped"), ``no-parse``, or ``error``. A reading whose MRS cannot
    be decoded counts as ``bad-mrs`` (with a warning).

    Args:
        records: parse records, or ``(lineno, record)`` pairs
        dedupe: count each distinct ``sentence`` once
        semantics: the grammar's conventions (see :func:`features`)
    """
    c = _Counter(dedupe)
    for n, entry in enumerate(records, start=1):
        if isinstance(entry, tuple):
            lineno, record = entry
        else:
            lineno, record = n, entry
        if isinstance(record, Skipped):  # pragma: no cover - read with on_error="fail"
            continue
        sentence = record.get("sentence")
        if c.is_duplicate(sentence):
            continue
        c.sentences += 1
        where = f"record {lineno}"
        mrs, how = _choose(record, where)
        if mrs is None:
            c.not_parsed[_reason(record.get("error"))] += 1
            continue
        try:
            m = simplemrs.decode(mrs)
        except MRSSyntaxError as exc:
            logger.warning("%s: cannot decode the MRS (%s); counted as bad-mrs", where, exc)
            c.not_parsed["bad-mrs"] += 1
            continue
        c.reading[how] += 1
        c.add(features(m, semantics))
    return c.result()


def analyze_sentences(
    sentences: Iterable[str],
    parser: Any,
    *,
    dedupe: bool = True,
    semantics: Any = None,
    on_sentence: Callable[[], Any] | None = None,
) -> Analysis:
    """Parse *sentences* with *parser* and count phenomena in the first reading.

    *parser* is anything with ``parse(sentence) -> ParseResult`` (an
    :class:`lit.ace.AceParser`, or a cache in front of one); a result with
    an ``error`` and no readings counts as not parsed.
    """

    def records() -> Iterator[dict[str, Any]]:
        seen: set[str] = set()
        for sentence in sentences:
            if dedupe:
                if sentence in seen:
                    yield {"sentence": sentence, "duplicate": True}
                    continue
                seen.add(sentence)
            result = parser.parse(sentence)
            if on_sentence is not None:
                on_sentence()
            readings = [{"mrs": _mrs_text(r.mrs)} for r in result.readings]
            yield {"sentence": sentence, "readings": readings, "selected": None,
                   "error": result.error}

    return analyze_parsed(records(), dedupe=dedupe, semantics=semantics)


def _mrs_text(mrs: Any) -> str:
    return mrs if isinstance(mrs, str) else simplemrs.encode(mrs)


def read_input(
    source: str | os.PathLike[str] | IO[str] | IO[bytes] | None,
    *,
    fields: Sequence[str] = ("sentence1", "sentence2"),
) -> tuple[str, Iterator[Any]]:
    """Open an analysis input and tell what it is.

    Returns ``("parsed", records)`` for ``lit parse`` output (JSON objects
    with ``readings``; *records* are ``(lineno, record)`` pairs), and
    ``("sentences", strings)`` otherwise: the *fields* of a JSONL dataset
    (or its ``sentence`` field), or the lines of a text file (blank lines
    are not sentences). The kind is decided by the first non-blank line.

    Raises:
        InputError: a JSONL line is malformed or has none of the expected
            fields (the message names file and line)
    """
    name = "<stdin>" if source in (None, "-") else getattr(source, "name", None) or str(source)
    lines = read_lines(source)
    head: list[tuple[int, Any]] = []
    for lineno, line in lines:
        head.append((lineno, line))
        if isinstance(line, str) and line.strip():
            break
    else:
        return "sentences", iter(())
    everything = itertools.chain(head, lines)
    if not head[-1][1].lstrip().startswith("{"):
        return "sentences", (
            line.strip() for _, line in everything if isinstance(line, str) and line.strip()
        )
    objects = _objects(everything, name)
    first = next(objects)
    if "readings" in first[1]:
        return "parsed", itertools.chain([first], objects)

    def sentences() -> Iterator[str]:
        for lineno, obj in itertools.chain([first], objects):
            yield from _sentences_of(obj, fields, name, lineno)

    return "sentences", sentences()


def _objects(lines: Iterable[tuple[int, Any]], name: str) -> Iterator[tuple[int, dict[str, Any]]]:
    for lineno, line in lines:
        if not isinstance(line, str) or not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON: {exc.msg} (column {exc.colno})",
                             filename=name, lineno=lineno) from None
        if not isinstance(obj, dict):
            raise InputError(f"expected a JSON object, got {type(obj).__name__}",
                             filename=name, lineno=lineno)
        yield lineno, obj


def _sentences_of(
    obj: Any, fields: Sequence[str], name: str, lineno: int
) -> Iterator[str]:
    if not isinstance(obj, Mapping):  # pragma: no cover - on_error="fail"
        return
    if "readings" in obj:
        raise InputError("mixed input: parse records among dataset records",
                         filename=name, lineno=lineno)
    found = [f for f in fields if isinstance(obj.get(f), str)]
    if found:
        for f in found:
            yield obj[f]
    elif isinstance(obj.get("sentence"), str):
        yield obj["sentence"]
    else:
        raise InputError(
            f"no sentence field: expected {' or '.join(fields)} or 'sentence' "
            "(or `lit parse` output with 'readings'); choose fields with --fields",
            filename=name,
            lineno=lineno,
        )


# -- presentation -------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def analysis_table(a: Analysis) -> Table:
    """A :class:`rich.table.Table` of *a* (shares in % of parsed sentences)."""
    from rich.table import Table  # noqa: PLC0415

    table = Table(
        title="Phenomena in parsed sentences",
        caption=f"{a.parsed} of {a.sentences} sentences parsed; shares are % of parsed "
        "sentences, 'not parsed' is % of all",
    )
    table.add_column("group")
    table.add_column("phenomenon")
    table.add_column("count", justify="right")
    table.add_column("%", justify="right")
    rows = a.rows()
    for i, row in enumerate(rows):
        end = i + 1 < len(rows) and rows[i + 1]["group"] != row["group"]
        share = row["share"] if row["group"] != "parse" else row["share_of_all"]
        table.add_row(row["group"], row["phenomenon"], str(row["count"]), _pct(share),
                      end_section=end)
    return table


def plot_analysis(a: Analysis, path: str | os.PathLike[str]) -> None:
    """Write a horizontal bar chart of *a* (% of parsed sentences) to *path* as PNG."""
    from lit.evaluate import _figure, _save  # noqa: PLC0415

    rows = a.rows()
    labels = [
        f"{r['group']}: {r['phenomenon']}" if r["group"] != r["phenomenon"] else r["group"]
        for r in rows
    ]
    shares = [r["share"] if r["group"] != "parse" else r["share_of_all"] for r in rows]
    values = [0.0 if v is None else 100 * v for v in shares]
    colors = ["tab:gray" if r["group"] == "parse" else "tab:blue" for r in rows]
    fig = _figure(7.0, 0.35 * len(rows) + 1.5)
    ax = fig.subplots()
    ax.barh(range(len(rows)), values, color=colors)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of parsed sentences (not parsed: % of all)")
    ax.set_title(f"Phenomena in {a.parsed} parsed of {a.sentences} sentences")
    for y, v in enumerate(values):
        ax.text(v + 1, y, f"{v:.1f}", va="center", fontsize="small")
    fig.tight_layout()
    _save(fig, path)
