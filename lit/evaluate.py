"""Measure a model on contrast sets: Acc@Ori, Acc@Ctr, consistency, contrast consistency.

The input is what ``lit transform`` wrote (one record per original item and
spec) and a model's predicted labels for the originals and the transformed
items. Predictions are keyed by id: an original by its own id, a contrast
item by ``<orig id>:<spec>`` (:func:`lit.contrast.item_id`).

Definitions (Gardner et al. 2020, *Evaluating Models' Local Decision
Boundaries via Contrast Sets*; Li et al. 2020, *Linguistically-Informed
Transformations (LIT)*). Fix a *group* of contrast items: one spec, one
phenomenon, or all items (*overall*). For every original *o*, its contrast
set in the group is *o* together with its contrast items in the group (its
``status == "ok"`` records whose spec belongs to the group). Only sets with
at least one contrast item are *evaluated*; an original with no contrast
item in the group (a set of size one) is counted but not scored. Then, over
the evaluated sets of the group:

* **Acc@Ori** = originals predicted correctly / evaluated sets;
* **Acc@Ctr** = contrast items predicted correctly / contrast items;
* **consistency** = contrast items whose prediction equals the prediction
  on their original (right or wrong) / contrast items;
* **contrast consistency** = sets in which the original *and* every
  contrast item are predicted correctly / evaluated sets.

Per spec, a set holds the original and its one item for that spec. Per
phenomenon, it holds the items whose spec uses a rule of that phenomenon in
either chain (``f;p+i`` counts for tense and cleft), so one item can count
under several phenomena. Overall, it holds all of the original's items.

Labels are compared after ``str(label).strip().lower()``. An original whose
gold label is missing or ``"-"`` cannot be scored: its set is left out and
counted as *unlabeled*; so is a contrast item without a gold label.

Missing predictions are counted and reported (with a sample of ids), never
silently scored. With ``missing="exclude"`` (the default) a contrast item
without a prediction is removed from its set, and a set whose original has
no prediction (or that has no item left) is not evaluated. With
``missing="wrong"`` a missing prediction counts as an incorrect prediction
that agrees with no other prediction.

Why this module is long: evaluation metrics per phenomenon, reading predictions and
the result table/plot belong together; each part is a few small functions.
"""

from __future__ import annotations

import logging
import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Literal

from lit.contrast import contrast_sets, item_id
from lit.errors import InputError, LitError
from lit.formats.jsonl import Skipped, read_jsonl

if TYPE_CHECKING:  # pragma: no cover
    from rich.table import Table

__all__ = [
    "Metrics",
    "Evaluation",
    "MissingPolicy",
    "PHENOMENA",
    "evaluate",
    "evaluate_records",
    "read_predictions",
    "phenomenon_resolver",
    "evaluation_table",
    "plot_evaluation",
]

logger = logging.getLogger(__name__)

MissingPolicy = Literal["exclude", "wrong"]

#: the phenomena of lit's built-in rules, in display order
PHENOMENA = ("tense", "aspect", "modality", "negation", "question", "cleft", "passive", "swap")

# phenomenon names of the rules registry -> the names lit reports
_RENAME = {"voice": "passive", "argument": "swap", "it-cleft": "cleft", "itcleft": "cleft",
           "modal": "modality"}

_IDENTITY = "identity"
_SAMPLE = 10

# the keys of Evaluation.counts, always present
_COUNTS = ("originals", "with_contrast_items", "without_contrast_items", "unlabeled_originals",
           "unlabeled_items", "not_evaluated_missing", "evaluated_sets", "missing_originals",
           "missing_items")


def _norm(label: Any) -> str | None:
    if label is None:
        return None
    text = str(label).strip().lower()
    return text or None


def _has_gold(label: str | None) -> bool:
    return label is not None and label != "-"


@dataclass(frozen=True, slots=True)
class Metrics:
    """Counts of one group of contrast sets and the four metrics derived from them.

    *sets* is the number of evaluated contrast sets, *items* the number of
    contrast items in them; *ori_correct*, *ctr_correct*, *consistent* and
    *all_correct* are the numerators of Acc@Ori, Acc@Ctr, consistency and
    contrast consistency. A metric is ``None`` when its denominator is 0.
    """

    sets: int = 0
    items: int = 0
    ori_correct: int = 0
    ctr_correct: int = 0
    consistent: int = 0
    all_correct: int = 0

    @property
    def acc_ori(self) -> float | None:
        return self.ori_correct / self.sets if self.sets else None

    @property
    def acc_ctr(self) -> float | None:
        return self.ctr_correct / self.items if self.items else None

    @property
    def consistency(self) -> float | None:
        return self.consistent / self.items if self.items else None

    @property
    def contrast_consistency(self) -> float | None:
        return self.all_correct / self.sets if self.sets else None

    def add(self, other: Metrics) -> Metrics:
        return Metrics(
            self.sets + other.sets,
            self.items + other.items,
            self.ori_correct + other.ori_correct,
            self.ctr_correct + other.ctr_correct,
            self.consistent + other.consistent,
            self.all_correct + other.all_correct,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "sets": self.sets,
            "items": self.items,
            "acc_ori": self.acc_ori,
            "acc_ctr": self.acc_ctr,
            "consistency": self.consistency,
            "contrast_consistency": self.contrast_consistency,
            "ori_correct": self.ori_correct,
            "ctr_correct": self.ctr_correct,
            "consistent": self.consistent,
            "all_correct": self.all_correct,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Metrics:
        return cls(
            d["sets"], d["items"], d["ori_correct"], d["ctr_correct"], d["consistent"],
            d["all_correct"],
        )


@dataclass(frozen=True, slots=True)
class Evaluation:
    """The result of :func:`evaluate`.

    Attributes:
        overall: metrics over all contrast items
        by_spec: metrics per spec, in order of first appearance
        by_phenomenon: metrics per phenomenon (:data:`PHENOMENA` order first)
        status: per spec, how many transform records had each status
        counts: ``originals``; ``with_contrast_items`` and
            ``without_contrast_items`` (sets of size one);
            ``unlabeled_originals`` (gold missing or ``-``: set left out) and
            ``unlabeled_items``; ``not_evaluated_missing`` (sets left out
            for missing predictions); ``evaluated_sets``;
            ``missing_originals`` and ``missing_items`` (ids without a
            prediction)
        missing: ids without a prediction (``originals``/``items``: count
            and a sample of ids)
        missing_policy: ``"exclude"`` or ``"wrong"``
        unused_predictions: predictions whose id is not a scored original
            or contrast item (unknown ids, sets of size one, unlabeled)
    """

    overall: Metrics
    by_spec: dict[str, Metrics]
    by_phenomenon: dict[str, Metrics]
    status: dict[str, dict[str, int]]
    counts: dict[str, int]
    missing: dict[str, dict[str, Any]]
    missing_policy: str
    unused_predictions: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "overall": self.overall.to_dict(),
            "by_spec": {k: v.to_dict() for k, v in self.by_spec.items()},
            "by_phenomenon": {k: v.to_dict() for k, v in self.by_phenomenon.items()},
            "status": self.status,
            "counts": self.counts,
            "missing": self.missing,
            "missing_policy": self.missing_policy,
            "unused_predictions": self.unused_predictions,
        }


def read_predictions(
    source: str | os.PathLike[str] | IO[str] | IO[bytes] | None,
    *,
    label_field: str = "label",
) -> dict[str, str]:
    """Read a predictions file: JSONL objects ``{"id": ..., "label": ...}``.

    Ids are compared as text, so ``1`` and ``"1"`` are the same id. A
    repeated id with the same label is accepted; with a different label it
    is an error.

    Raises:
        InputError: a line is not an object with ``id`` and *label_field*,
            or an id is predicted twice with different labels
    """
    name = "<stdin>" if source in (None, "-") else getattr(source, "name", None) or str(source)
    out: dict[str, str] = {}
    seen: dict[str, int] = {}
    for lineno, rec in read_jsonl(source):
        if isinstance(rec, Skipped):  # pragma: no cover - on_error="fail"
            continue
        if "id" not in rec or label_field not in rec:
            raise InputError(
                f"a prediction needs 'id' and {label_field!r} fields, got {sorted(rec)}",
                filename=name,
                lineno=lineno,
            )
        key = str(rec["id"])
        label = _norm(rec[label_field])
        if label is None:
            raise InputError(f"empty label for id {key!r}", filename=name, lineno=lineno)
        if key in out and out[key] != label:
            raise InputError(
                f"id {key!r} predicted twice with different labels "
                f"({out[key]!r} on line {seen[key]}, {label!r} here)",
                filename=name,
                lineno=lineno,
            )
        out[key] = label
        seen.setdefault(key, lineno)
    return out


def phenomenon_resolver(rules: Any = None) -> Callable[[str], str | None]:
    """Return a function mapping a rule name or alias to its phenomenon.

    Phenomena come from the rules registry (*rules*, default
    :meth:`lit.rules.RuleSet.load`), the one place rule metadata lives. The
    registry's phenomenon names ``voice``, ``argument`` and ``it-cleft`` are
    reported as ``passive``, ``swap`` and ``cleft`` (:data:`PHENOMENA`). The
    identity (``o``) maps to ``None``; a token the registry does not know
    (also ``m:can`` style variants, looked up by their base ``m``) maps to
    ``"other"``, with a warning.

    Example:
        >>> resolve = phenomenon_resolver()
        >>> [resolve(t) for t in ("f", "prog", "i2", "o")]
        ['tense', 'aspect', 'cleft', None]
    """
    if rules is None:
        from lit.rules import RuleSet  # noqa: PLC0415

        rules = RuleSet.load()
    cache: dict[str, str | None] = {}
    warned: set[str] = set()

    def lookup(token: str) -> tuple[bool, str | None]:
        try:
            rule = rules.get(token)
        except (LitError, KeyError, LookupError):
            return False, None
        ph = str(rule.phenomenon).lower() if rule.phenomenon else None
        if ph in (_IDENTITY, "original", "none", None):
            return True, None
        return True, _RENAME.get(ph, ph)

    def resolve(token: str) -> str | None:
        token = token.strip()
        if token not in cache:
            found, value = lookup(token)
            if not found:
                found, value = lookup(token.split(":", 1)[0])  # m:can -> m
            if not found:
                if token not in warned:
                    logger.warning("unknown rule %r: counted under phenomenon 'other'", token)
                    warned.add(token)
                value = "other"
            cache[token] = value
        return cache[token]

    return resolve


def _phenomena(pert: Mapping[str, Any], resolve: Callable[[str], str | None]) -> list[str]:
    chains = [pert.get("premise"), pert.get("hypothesis"), pert.get("chain")]
    out: list[str] = []
    for chain in chains:
        if not chain:
            continue
        for token in str(chain).split("+"):
            if not token.strip():
                continue
            ph = resolve(token)
            if ph is not None and ph not in out:
                out.append(ph)
    return out or [_IDENTITY]


class _Accumulator:
    __slots__ = ("metrics", "excluded")

    def __init__(self) -> None:
        self.metrics = Metrics()
        self.excluded = 0


def _score(
    orig: tuple[str | None, str | None],
    items: list[tuple[str, str | None]],
    policy: MissingPolicy,
) -> Metrics | None:
    """Metrics of one contrast set (gold, pred) pairs, or None if not evaluated."""
    gold_o, pred_o = orig
    if policy == "exclude":
        if pred_o is None:
            return None
        items = [(g, p) for g, p in items if p is not None]
    if not items:
        return None
    ori_ok = pred_o is not None and pred_o == gold_o
    ctr_ok = [p is not None and p == g for g, p in items]
    consistent = sum(1 for _, p in items if p is not None and pred_o is not None and p == pred_o)
    return Metrics(
        sets=1,
        items=len(items),
        ori_correct=int(ori_ok),
        ctr_correct=sum(ctr_ok),
        consistent=consistent,
        all_correct=int(ori_ok and all(ctr_ok)),
    )


def evaluate(
    sets: Iterable[Mapping[str, Any]],
    predictions: Mapping[str, str],
    *,
    missing: MissingPolicy = "exclude",
    resolve: Callable[[str], str | None] | None = None,
    status: Mapping[str, Mapping[str, int]] | None = None,
) -> Evaluation:
    """Compute the four metrics per spec, per phenomenon and overall.

    Args:
        sets: contrast sets from :func:`lit.contrast.contrast_sets`
        predictions: predicted label per id (original id or
            ``<orig id>:<spec>``)
        missing: ``"exclude"`` (default) or ``"wrong"``; see the module
            documentation
        resolve: rule token -> phenomenon (default:
            :func:`phenomenon_resolver`)
        status: record counts per spec and status, to report (computed
            from the sets' items and skipped lists when omitted)
    Returns:
        an :class:`Evaluation`
    Raises:
        InputError: no contrast item has a gold label (not NLI output?), or
            two sets have the same id

    Example:
        >>> sets = [{"id": "a", "original": {"gold_label": "neutral"}, "skipped": [],
        ...          "items": [{"id": "a:n;o", "spec": "n;o", "gold_label": "contradiction",
        ...                     "perturbation": {"premise": "n", "hypothesis": "o"}}]}]
        >>> ev = evaluate(sets, {"a": "neutral", "a:n;o": "neutral"},
        ...               resolve=phenomenon_resolver())
        >>> ev.overall.acc_ori, ev.overall.acc_ctr, ev.overall.consistency
        (1.0, 0.0, 1.0)
    """
    if missing not in ("exclude", "wrong"):
        raise ValueError(f"missing must be 'exclude' or 'wrong', not {missing!r}")
    resolve = resolve or phenomenon_resolver()
    preds = {str(k): _norm(v) for k, v in predictions.items()}
    by_spec: dict[str, _Accumulator] = {}
    by_ph: dict[str, _Accumulator] = {}
    overall = _Accumulator()
    counted_status: dict[str, Counter[str]] = {}
    counts: Counter[str] = Counter({key: 0 for key in _COUNTS})
    miss_orig: list[str] = []
    miss_items: list[str] = []
    n_miss_orig = n_miss_items = 0
    used: set[str] = set()
    any_gold = False

    seen_ids: set[str] = set()
    for s in sets:
        counts["originals"] += 1
        oid = str(s["id"])
        if oid in seen_ids:
            raise InputError(
                f"id {s['id']!r} belongs to two contrast sets; predictions are keyed by id, "
                "so the originals need unique ids (e.g. lit transform --id-field)"
            )
        seen_ids.add(oid)
        for item in s.get("items", ()):
            counted_status.setdefault(item["spec"], Counter())["ok"] += 1
        for sk in s.get("skipped", ()):
            counted_status.setdefault(sk["spec"], Counter())[sk.get("status", "skipped")] += 1
        items = list(s.get("items", ()))
        if not items:
            counts["without_contrast_items"] += 1
            continue
        counts["with_contrast_items"] += 1
        original = s.get("original") or {}
        gold_o = _norm(original.get("gold_label") if isinstance(original, Mapping) else None)
        if not _has_gold(gold_o):
            counts["unlabeled_originals"] += 1
            continue
        pred_o = preds.get(oid)
        if pred_o is None:
            n_miss_orig += 1
            if len(miss_orig) < _SAMPLE:
                miss_orig.append(oid)
        else:
            used.add(oid)
        scored: list[tuple[str, str, str | None, list[str]]] = []
        for item in items:
            gold = _norm(item.get("gold_label"))
            iid = str(item["id"])
            if not _has_gold(gold):
                counts["unlabeled_items"] += 1
                continue
            any_gold = True
            pred = preds.get(iid)
            if pred is None:
                n_miss_items += 1
                if len(miss_items) < _SAMPLE:
                    miss_items.append(iid)
            else:
                used.add(iid)
            phs = _phenomena(item.get("perturbation") or {}, resolve)
            scored.append((item["spec"], gold, pred, phs))  # type: ignore[arg-type]
        if not scored:
            continue
        orig = (gold_o, pred_o)
        groups: dict[tuple[str, str], list[tuple[str, str | None]]] = {}
        for spec, gold, pred, phs in scored:
            groups.setdefault(("spec", spec), []).append((gold, pred))
            for ph in phs:
                groups.setdefault(("ph", ph), []).append((gold, pred))
        for (kind, name), pairs in groups.items():
            table = by_spec if kind == "spec" else by_ph
            acc = table.get(name) or table.setdefault(name, _Accumulator())
            m = _score(orig, pairs, missing)
            if m is None:
                acc.excluded += 1
            else:
                acc.metrics = acc.metrics.add(m)
        m = _score(orig, [(g, p) for _, g, p, _ in scored], missing)
        if m is None:
            overall.excluded += 1
            counts["not_evaluated_missing"] += 1
        else:
            overall.metrics = overall.metrics.add(m)

    if counts["with_contrast_items"] and not any_gold:
        raise InputError(
            "no contrast set has gold labels on both the original and an item; lit evaluate "
            "needs NLI transform output (records with sentence1, sentence2 and gold_label)"
        )
    counts["evaluated_sets"] = overall.metrics.sets
    counts["missing_originals"] = n_miss_orig
    counts["missing_items"] = n_miss_items
    order = {name: i for i, name in enumerate(PHENOMENA)}
    ph_sorted = sorted(by_ph, key=lambda k: (order.get(k, len(order)), k))
    final_status = dict(status) if status is not None else counted_status
    return Evaluation(
        overall=overall.metrics,
        # every spec seen, also those without a single ok record (metrics None)
        by_spec={k: (by_spec[k].metrics if k in by_spec else Metrics())
                 for k in dict.fromkeys([*counted_status, *by_spec])},
        by_phenomenon={k: by_ph[k].metrics for k in ph_sorted},
        status={k: dict(v) for k, v in final_status.items()},
        counts=dict(counts),
        missing={
            "originals": {"count": n_miss_orig, "sample": miss_orig},
            "items": {"count": n_miss_items, "sample": miss_items},
        },
        missing_policy=missing,
        unused_predictions=len(set(preds) - used),
    )


def _field_predictions(
    records: Iterable[Any], pred_field: str, preds: dict[str, str], source: str | None
) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """Pass *records* through, collecting predictions from column *pred_field*."""
    for n, entry in enumerate(records, start=1):
        if isinstance(entry, tuple):
            lineno, rec = entry
        else:
            lineno, rec = n, entry
        if isinstance(rec, Mapping):
            pairs = []
            original = rec.get("original")
            if isinstance(original, Mapping) and original.get(pred_field) is not None:
                pairs.append((str(rec.get("id")), original[pred_field]))
            if rec.get("status") == "ok" and rec.get(pred_field) is not None:
                pairs.append((item_id(rec.get("id"), str(rec.get("spec"))), rec[pred_field]))
            for key, value in pairs:
                label = _norm(value)
                if label is None:
                    continue
                if key in preds and preds[key] != label:
                    raise InputError(
                        f"conflicting predictions in field {pred_field!r} for id {key!r} "
                        f"({preds[key]!r} and {label!r})",
                        filename=source,
                        lineno=lineno,
                    )
                preds[key] = label
        yield lineno, rec


def evaluate_records(
    records: Iterable[Mapping[str, Any] | tuple[int, Mapping[str, Any]]],
    predictions: Mapping[str, str] | None = None,
    *,
    pred_field: str | None = None,
    missing: MissingPolicy = "exclude",
    adjacent: bool = False,
    resolve: Callable[[str], str | None] | None = None,
    source: str | None = None,
) -> Evaluation:
    """Evaluate predictions on ``lit transform`` *records* (see :func:`evaluate`).

    Predictions come from *predictions* (id -> label), or from the column
    *pred_field* of the records: ``record[pred_field]`` is the prediction
    on the transformed pair, ``record["original"][pred_field]`` the one on
    the original. With both, the mapping wins where both give a label.

    Records are grouped in memory unless *adjacent* is true (see
    :func:`lit.contrast.contrast_sets`).
    """
    if predictions is None and pred_field is None:
        raise ValueError("give predictions or pred_field")
    preds: dict[str, str] = {}
    stream: Iterable[Any] = records
    if pred_field is not None:
        stream = _field_predictions(records, pred_field, preds, source)
    sets = list(contrast_sets(stream, adjacent=adjacent, source=source))
    if predictions is not None:
        preds.update({str(k): v for k, v in predictions.items()})
    return evaluate(sets, preds, missing=missing, resolve=resolve)


def read_transform(
    source: str | os.PathLike[str] | IO[str] | IO[bytes] | None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(lineno, record)`` from a ``lit transform`` output file."""
    for lineno, rec in read_jsonl(source):
        if isinstance(rec, Skipped):  # pragma: no cover - on_error="fail"
            continue
        yield lineno, rec


# -- presentation -------------------------------------------------------------

_METRICS = (
    ("acc_ori", "Acc@Ori"),
    ("acc_ctr", "Acc@Ctr"),
    ("consistency", "Consistency"),
    ("contrast_consistency", "Contrast consistency"),
)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def evaluation_table(ev: Evaluation) -> Table:
    """A :class:`rich.table.Table` of *ev*: one row per spec, phenomenon and overall."""
    from rich.table import Table  # noqa: PLC0415

    table = Table(
        title="Contrast-set evaluation (%)",
        caption=f"missing predictions: {ev.missing_policy}; skipped: records not ok",
    )
    headers = {"acc_ori": "Acc@Ori", "acc_ctr": "Acc@Ctr", "consistency": "Cons.",
               "contrast_consistency": "C.Cons."}
    table.add_column("group")
    table.add_column("sets", justify="right")
    table.add_column("items", justify="right")
    for key, _ in _METRICS:
        table.add_column(headers[key], justify="right")
    table.add_column("skipped", justify="right")

    def row(label: str, m: Metrics, skipped: str = "", end: bool = False) -> None:
        table.add_row(
            label, str(m.sets), str(m.items), *(_pct(getattr(m, k)) for k, _ in _METRICS),
            skipped, end_section=end,
        )

    specs = list(ev.by_spec)
    for i, spec in enumerate(specs):
        st = ev.status.get(spec, {})
        not_ok = sum(v for k, v in st.items() if k != "ok")
        row(f"spec {spec}", ev.by_spec[spec], str(not_ok), end=i == len(specs) - 1)
    phs = list(ev.by_phenomenon)
    for i, ph in enumerate(phs):
        row(ph, ev.by_phenomenon[ph], end=i == len(phs) - 1)
    row("overall", ev.overall)
    return table


def _figure(width: float, height: float) -> Any:
    """A matplotlib figure drawn by the Agg backend, or a LitError naming the extra.

    The figure is created without pyplot, so no global backend or figure
    state changes (an interactive session keeps its own backend).
    """
    try:
        import matplotlib  # noqa: F401, PLC0415
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415
        from matplotlib.figure import Figure  # noqa: PLC0415
    except ImportError as exc:
        raise LitError(
            "--plot needs matplotlib, which is not installed; "
            "install it with: pip install lit-mrs[plot]"
        ) from exc
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, path: str | os.PathLike[str]) -> None:
    try:
        fig.savefig(os.fspath(path), format="png")
    except OSError as exc:
        raise LitError(f"cannot write plot {os.fspath(path)}: {exc.strerror or exc}") from exc


def plot_evaluation(ev: Evaluation, path: str | os.PathLike[str]) -> None:
    """Write a grouped bar chart of *ev* (per spec and per phenomenon) to *path* as PNG."""
    panels = [
        ("per spec", {"overall": ev.overall, **ev.by_spec}),
        ("per phenomenon", dict(ev.by_phenomenon)),
    ]
    panels = [(t, g) for t, g in panels if g]
    widest = max(len(g) for _, g in panels)
    fig = _figure(max(6.0, 1.2 * widest + 2), 3.6 * len(panels))
    axes = fig.subplots(len(panels), 1, squeeze=False)
    width = 0.8 / len(_METRICS)
    for ax, (title, groups) in zip(axes[:, 0], panels, strict=True):
        names = list(groups)
        for j, (key, label) in enumerate(_METRICS):
            values = [getattr(groups[n], key) for n in names]
            heights = [math.nan if v is None else 100 * v for v in values]
            xs = [i + (j - (len(_METRICS) - 1) / 2) * width for i in range(len(names))]
            ax.bar(xs, heights, width, label=label)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=30, ha="right")
        ax.set_ylim(0, 100)
        ax.set_ylabel("%")
        ax.set_title(f"Contrast-set metrics {title}")
        ax.legend(fontsize="small", ncol=len(_METRICS), loc="upper center",
                  bbox_to_anchor=(0.5, -0.35))
    fig.tight_layout()
    _save(fig, path)
