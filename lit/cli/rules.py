"""`lit rules`: list, show and apply transformation rules; `lit transform-sentence`.

Argument translation only: the work is done by :mod:`lit.rules` and
:mod:`lit.transform` (and, for ``transform-sentence``, :mod:`lit.ace`).
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Optional

import click
import typer
from rich.console import Console
from rich.table import Table

from lit.cli._app import app
from lit.cli._common import echo_summary, progress

rules_app = typer.Typer(
    name="rules",
    help="Transformation rules: list them, show one, apply chains of them to MRSs.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(rules_app, name="rules")

_RulesDirOpt = Annotated[
    Optional[list[Path]],  # noqa: UP007 - evaluated by typer at runtime, also on Python 3.10
    typer.Option("--rules-dir", help="More rule files or directories of *.toml (repeatable)."),
]
_ChainsOpt = Annotated[
    str,
    typer.Option("--rules", "-r",
                 help="Rule chains, comma-separated; '+' composes: 'p,f+i,m+n+q'; a preset "
                      "stands for its chains: 'lit-paper'."),
]
_GrammarOpt = Annotated[
    Optional[str],  # noqa: UP007
    typer.Option("--grammar", "-g",
                 help="Grammar profile whose semantics the rules follow (default: the "
                      "default grammar, see `lit grammar list`)."),
]
_NoPluginsOpt = Annotated[
    bool, typer.Option("--no-plugins", help="Ignore rules registered by installed plugins.")
]


def _home() -> Path:
    from lit.grammar import lit_home

    return lit_home(dict(os.environ))


def _ruleset(rules_dir: list[Path] | None, no_plugins: bool = False) -> Any:
    from lit.rules import RuleSet

    return RuleSet.load(rules_dir or (), plugins=not no_plugins)


def _profile(name: str | None) -> Any:
    from lit.grammar import default_grammar, load_profile

    home = _home()
    return load_profile(name or default_grammar(home=home), home=home)


def _stdout_console() -> Console:
    return Console(file=sys.stdout, width=None if sys.stdout.isatty() else 160)


def _support(rule: Any, profiles: list[Any]) -> tuple[list[str], dict[str, str]]:
    ok, why = [], {}
    for p in profiles:
        reason = rule.unsupported(p)
        if reason is None:
            ok.append(p.name)
        else:
            why[p.name] = reason
    return ok, why


_PHENOMENA = ("identity", "tense", "aspect", "modality", "negation", "question", "cleft",
              "voice", "argument")


def _ordered(rs: Any) -> list[Any]:
    """Rules by phenomenon (the paper's order; others after), then as loaded."""
    rules = list(rs)
    rank = {p: i for i, p in enumerate(_PHENOMENA)}
    return sorted(rules, key=lambda r: rank.get(r.phenomenon, len(rank)))


@rules_app.command("list")
def list_rules(
    rules_dir: _RulesDirOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per rule.")] = False,
    no_plugins: _NoPluginsOpt = False,
) -> None:
    """List the rules: name, aliases, phenomenon, description, grammars.

    Example: lit rules list --rules-dir my_rules/
    """
    from lit.grammar import list_profiles

    rs = _ruleset(rules_dir, no_plugins)
    profiles = list_profiles(home=_home())
    if as_json:
        for rule in _ordered(rs):
            ok, why = _support(rule, profiles)
            d = rule.to_dict()
            d.update(grammars=ok, unsupported=why)
            click.echo(json.dumps(d, ensure_ascii=False))
        return
    table = Table("name", "aliases", "phenomenon", "description", "grammars")
    for rule in _ordered(rs):
        ok, _ = _support(rule, profiles)
        grammars = "all" if len(ok) == len(profiles) else ", ".join(ok) or "none"
        table.add_row(rule.name, ", ".join(rule.aliases), rule.phenomenon, rule.description,
                      grammars)
    console = _stdout_console()
    console.print(table)
    if rs.presets:
        presets = Table("preset", "description", "chains", "pairs",
                        title="presets (one word for many specs: --rules lit-paper,n:no; "
                              "`lit rules show NAME` lists them)")
        for preset in rs.presets.values():
            presets.add_row(preset.name, preset.description, str(len(preset.chains)),
                            str(len(preset.pairs)))
        console.print(presets)


@rules_app.command("show")
def show_rule(
    name: Annotated[str, typer.Argument(help="Rule name or alias, or preset name (see "
                                          "`lit rules list`).")],
    rules_dir: _RulesDirOpt = None,
    no_plugins: _NoPluginsOpt = False,
) -> None:
    """Show one rule: its declaration, and which grammars support it (or why not);
    or a preset: its specs.

    Example: lit rules show i2
    """
    from lit.grammar import list_profiles

    rs = _ruleset(rules_dir, no_plugins)
    preset = rs.presets.get(name)
    if preset is not None:
        click.echo(json.dumps(preset.to_dict(), ensure_ascii=False, indent=2))
        return
    rule = rs.get(name)
    ok, why = _support(rule, list_profiles(home=_home()))
    d = rule.to_dict()
    d.update(grammars=ok, unsupported=why)
    click.echo(json.dumps(d, ensure_ascii=False, indent=2))


@rules_app.command("apply")
def apply_rules(
    chains: _ChainsOpt,
    input: Annotated[
        Optional[str],  # noqa: UP007
        typer.Argument(help="SimpleMRS (one per line) or `lit parse` JSONL; '-' or none: stdin."),
    ] = None,
    grammar: _GrammarOpt = None,
    rules_dir: _RulesDirOpt = None,
    on_error: Annotated[
        str,
        typer.Option("--on-error", help="'fail' on a malformed line, or 'skip' it with a reason "
                     "record."),
    ] = "fail",
    no_plugins: _NoPluginsOpt = False,
) -> None:
    """Apply rule chains to MRSs (no ACE needed); write JSONL to stdout.

    One line per (item, chain): {"id", "sentence"?, "chain", "mrs", "reason"}.

    Example: lit parse -g erg-1214 < sents.txt | lit rules apply -r p,f+i -g erg-1214
    """
    from lit.formats.jsonl import JsonlWriter
    from lit.formats.mrs import read_mrs_items
    from lit.rules import apply_from_iterable

    if on_error not in ("fail", "skip"):
        raise typer.BadParameter("must be 'fail' or 'skip'", param_hint="--on-error")
    rs = _ruleset(rules_dir, no_plugins)
    parsed = rs.parse_chains(chains)
    profile = _profile(grammar)
    counts: Counter[str] = Counter()
    writer = JsonlWriter(sys.stdout)
    with progress("applying rules") as bar:
        for item in read_mrs_items(input, on_error=on_error):
            if item.mrs is None:
                key = "invalid" if (item.error or "").startswith("invalid-input") else "no-mrs"
            for record in apply_from_iterable((item,), parsed, profile):
                writer.write(record)
                if item.mrs is not None:
                    key = "applied" if record["mrs"] is not None else "inapplicable"
                counts[key] += 1
            bar.advance()
    echo_summary(counts, ["applied", "inapplicable", "no-mrs", "invalid"])


@app.command("transform-sentence")
def transform_sentence(
    sentence: Annotated[str, typer.Argument(help="The sentence to transform.")],
    chains: _ChainsOpt,
    grammar: _GrammarOpt = None,
    rules_dir: _RulesDirOpt = None,
    reading: Annotated[
        Optional[int],  # noqa: UP007
        typer.Option("--reading", help="Use this reading (0-based) instead of selecting one."),
    ] = None,
    select: Annotated[
        str,
        typer.Option("--select", help="Reading selection: ranked (the best-structured "
                     "full-clause reading that regenerates the sentence), roundtrip (the "
                     "first such reading) or first."),
    ] = "ranked",
    max_readings: Annotated[
        int, typer.Option("--max-readings", help="Ask ACE for at most this many readings.")
    ] = 10,
    no_plugins: _NoPluginsOpt = False,
) -> None:
    """Parse a sentence, apply rule chains, and print the ranked candidates (needs ACE).

    One JSON line per chain: {"sentence", "chain", "status", "reason",
    "reading", "selection", "sentence_out", "candidates", "mrs"}, as the
    records of `lit transform` on plain text.

    Example: lit transform-sentence "The dog chased the cat." --rules p,f+i -g erg-1214
    """
    from lit.parse import SELECT_METHODS
    from lit.pipeline import Transformer

    if select not in SELECT_METHODS:
        raise typer.BadParameter(f"must be one of {', '.join(SELECT_METHODS)}",
                                 param_hint="--select")
    rs = _ruleset(rules_dir, no_plugins)
    parsed = rs.parse_chains(chains)
    with Transformer(grammar, rules=rs, select=select, n=max_readings,
                     env=dict(os.environ)) as t:
        for text, _ in parsed:
            res = t.transform_sentence(sentence, text, reading=reading)
            click.echo(json.dumps({
                "sentence": sentence, "chain": text, "status": res.status,
                "reason": res.reason, "reading": res.reading, "selection": res.selection,
                "sentence_out": res.sentence,
                "candidates": [c.sentence for c in res.candidates], "mrs": res.mrs,
            }, ensure_ascii=False))
