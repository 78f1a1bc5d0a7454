"""`lit grammar`: list, install, add, compile and show grammars.

Argument translation only: the work is done by :mod:`lit.grammar` and
:mod:`lit.install`. This is the layer that reads the environment
(``LIT_HOME``, ``LIT_ACE``, ``LIT_GRAMMAR_<NAME>``) and passes it down.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Optional

import click
import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.table import Table
from rich.text import Text

from lit.cli._app import app
from lit.cli._common import is_quiet, stderr_console
from lit.errors import ACEError, GrammarError, LitError

grammar_app = typer.Typer(
    name="grammar",
    help="Manage grammars: list, install (download), add by hand, compile, show.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(grammar_app, name="grammar")


# command-line parameters (typer reads help and names from these annotations)
_NameArg = Annotated[
    str, typer.Argument(help="Grammar name; it needs a profile (see `lit grammar list`).")
]
_NamesArg = Annotated[
    list[str],
    typer.Argument(help="Grammar names, e.g. erg-1214 (see `lit grammar list`).",
                   metavar="NAME..."),
]
_JsonOpt = Annotated[
    bool, typer.Option("--json", help="Write one JSON object per grammar (JSONL), not a table.")
]
_ShowJsonOpt = Annotated[
    bool, typer.Option("--json", help="Write the profile and install state as one JSON object.")
]
_ForceOpt = Annotated[
    bool, typer.Option("--force", help="Download again even if the grammar is already installed.")
]
_PlatformOpt = Annotated[
    Optional[str],  # noqa: UP007 - evaluated by typer at runtime, also on Python 3.10
    typer.Option("--platform",
                 help="Download for this platform (e.g. linux-x86_64) instead of this machine's."),
]
_ImageOpt = Annotated[
    Path, typer.Option("--image", help="The compiled grammar image (.dat) on disk.")
]
_AddAceOpt = Annotated[
    Optional[Path],  # noqa: UP007
    typer.Option("--ace",
                 help="The ACE binary the image was compiled with (default: ace on PATH)."),
]
_SourceOpt = Annotated[
    Path,
    typer.Option("--source",
                 help="Grammar source checkout (the directory containing ace/config.tdl)."),
]
_CompileAceOpt = Annotated[
    Optional[Path],  # noqa: UP007
    typer.Option("--ace", help="ACE binary to compile with (default: LIT_ACE, an ACE installed "
                 "by lit, or ace on PATH)."),
]


def _env() -> dict[str, str]:
    return dict(os.environ)


def _home() -> Path:
    from lit.grammar import lit_home

    return lit_home(_env())


def _info(message: str) -> None:
    if not is_quiet():
        click.echo(message, err=True)


def _stdout_console() -> Console:
    # wide when not a terminal, so piped/captured tables keep whole paths
    width = None if sys.stdout.isatty() else 500
    return Console(file=sys.stdout, width=width)


# --------------------------------------------------------------------------
# list


def _status(
    profile: Any, home: Path, env: dict[str, str], default: str | None = None
) -> dict[str, Any]:
    """One row of `lit grammar list`: what is installed for *profile*."""
    from lit.ace import probe_version as probe_ace_version
    from lit.grammar import resolve_grammar

    row: dict[str, Any] = {
        "name": profile.name,
        "erg_version": profile.erg_version,
        "default": profile.name == default if default is not None else profile.default,
        "installed": False,
        "image": None,
        "ace": None,
        "ace_version": None,
        "source": None,
        "ace_source": None,
        "error": None,
    }
    try:
        g = resolve_grammar(profile.name, home=home, env=env, verify=False)
    except GrammarError as exc:
        message = str(exc)
        if " is not installed" not in message:
            row["error"] = message
        return row
    ace_version = g.ace_version
    if g.ace_source == "env" and g.ace is not None:
        try:
            ace_version = probe_ace_version(g.ace)
        except ACEError as exc:
            row["error"] = str(exc)
    row.update(
        installed=True,
        image=str(g.image),
        ace=None if g.ace is None else str(g.ace),
        ace_version=ace_version,
        source=g.source,
        ace_source=g.ace_source,
    )
    return row


@grammar_app.command(
    "list",
    epilog="Example: lit grammar list --json | grep '\"installed\": true'",
)
def list_command(
    as_json: _JsonOpt = False,
) -> None:
    """List known grammars and what is installed for each.

    Shows every grammar profile (shipped with lit or in $LIT_HOME/grammars),
    whether it is installed, its image and ACE binary, and where they come
    from: downloaded, added (by hand), compiled, or env (LIT_GRAMMAR_<NAME>,
    LIT_ACE).
    """
    from lit.grammar import default_grammar, list_profiles, read_registry

    env = _env()
    home = _home()
    try:
        default: str | None = default_grammar(home=home)
    except GrammarError:
        default = None
    profiles = list_profiles(home=home)
    rows = [_status(p, home, env, default) for p in profiles]
    # registered grammars whose profile is gone are listed, not dropped
    known = {p.name for p in profiles}
    for name, entry in sorted(read_registry(home).items()):
        if name not in known:
            rows.append({
                "name": name, "erg_version": None, "default": False, "installed": False,
                "image": str(entry.image), "ace": None if entry.ace is None else str(entry.ace),
                "ace_version": entry.ace_version, "source": entry.source, "ace_source": None,
                "error": f"registered in {home / 'registry.json'}, but it has no grammar "
                         f"profile {name}.toml",
            })
    if as_json:
        for row in rows:
            click.echo(json.dumps(row, ensure_ascii=False))
        return
    table = Table(title=f"grammars in {home}", title_justify="left")
    for column in ("name", "installed", "image", "ACE", "source"):
        table.add_column(column, overflow="fold")
    for row in rows:
        name = row["name"] + (" (default)" if row["default"] else "")
        if row["installed"]:
            installed = "yes"
        elif row["error"]:
            installed = "broken"
        else:
            installed = "no"
        ace = row["ace"] or ("ace on PATH" if row["installed"] else "")
        if row["ace_version"]:
            ace += f" ({row['ace_version']})"
        if row["ace_source"] == "env":
            ace += " [env]"
        image = row["error"] or row["image"] or ""
        cells = (name, installed, image, ace, row["source"] or "")
        table.add_row(*(Text(c) for c in cells))  # plain text: no rich markup in paths
    _stdout_console().print(table)


# --------------------------------------------------------------------------
# install


@contextmanager
def _download_progress() -> Iterator[Any]:
    """A byte-counting progress bar on stderr, or ``None`` when quiet/non-TTY."""
    if is_quiet() or not sys.stderr.isatty():
        yield None
        return
    columns = [
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    ]
    with Progress(*columns, console=stderr_console(), transient=True) as bar:
        tasks: dict[str, Any] = {}

        def update(label: str, done: int, total: int | None) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=total)
            bar.update(tasks[label], completed=done, total=total)

        yield update


@grammar_app.command(
    "install",
    epilog="Example: lit grammar install erg-1214 erg-2018",
)
def install_command(
    names: _NamesArg,
    force: _ForceOpt = False,
    platform: _PlatformOpt = None,
) -> None:
    """Download and register grammars (ACE binary and grammar image).

    Needs network access to the grammar sites (sweaglesw.org, github.com).
    Files go to $LIT_HOME (or the per-user data directory); they are
    checked against the profile's sha256 when it has one, otherwise their
    sha256 is recorded and verified on every later use. Without network
    access, use `lit grammar add` or `lit grammar compile`.
    """
    from lit.grammar import PLATFORMS, load_profile
    from lit.install import install_grammar

    if platform is not None and platform not in PLATFORMS:
        raise typer.BadParameter(
            f"{platform!r} is not one of {', '.join(sorted(PLATFORMS))}", param_hint="--platform"
        )
    home = _home()
    profiles = [load_profile(name, home=home) for name in names]  # fail early on typos
    for profile in profiles:
        with _download_progress() as progress:
            entry = install_grammar(
                profile, home=home, platform=platform, progress=progress, force=force
            )
        ace = f"{entry.ace} ({entry.ace_version})" if entry.ace else "none (set LIT_ACE)"
        _info(f"{profile.name}: image {entry.image}; ACE {ace}; {entry.source} {entry.installed}")


# --------------------------------------------------------------------------
# add / compile


@grammar_app.command(
    "add",
    epilog="Example: lit grammar add erg-1214 --image ~/erg-1214-x86-64-0.9.34.dat "
    "--ace ~/ace-0.9.34/ace",
)
def add_command(
    name: _NameArg,
    image: _ImageOpt,
    ace: _AddAceOpt = None,
) -> None:
    """Register a grammar image (and ACE binary) already on disk.

    For air-gapped machines and machines without access to the grammar
    sites: copy the files there by other means, then register them. The
    files stay where they are; their sha256 is recorded and verified on
    every later use.
    """
    from lit.install import add_grammar

    entry = add_grammar(name, image, ace, home=_home())
    ace_text = f"{entry.ace} ({entry.ace_version})" if entry.ace else "ace on PATH or LIT_ACE"
    _info(f"{name}: registered image {entry.image}; ACE {ace_text}")


def _default_ace(name: str, home: Path, env: dict[str, str]) -> Path:
    """ACE for compiling: LIT_ACE, else one installed by lit, else ace on PATH."""
    from lit.grammar import load_profile, read_registry

    if env.get("LIT_ACE"):
        return Path(env["LIT_ACE"])
    wanted = load_profile(name, home=home).ace_version
    for entry in read_registry(home).values():
        if entry.ace is not None and entry.ace_version == wanted and entry.ace.is_file():
            return entry.ace
    found = shutil.which("ace", path=env.get("PATH"))
    if found is None:
        raise LitError(
            "no ACE binary to compile with: pass --ace PATH, set LIT_ACE, or install one "
            "with a downloadable grammar (e.g. `lit grammar install erg-1214`)"
        )
    return Path(found)


@grammar_app.command(
    "compile",
    epilog="Example: lit grammar compile erg-2020 --source ~/src/erg-2020 --ace ~/ace-0.9.34/ace",
)
def compile_command(
    name: _NameArg,
    source: _SourceOpt,
    ace: _CompileAceOpt = None,
) -> None:
    """Compile a grammar from source with ACE and register the image.

    Runs `ace -g SOURCE/ace/config.tdl -G IMAGE`, for ERG versions without a
    published image (e.g. erg-2020, erg-2023). The image goes to
    $LIT_HOME/grammars/NAME/ and is registered with the ACE that built it.
    """
    from lit.install import compile_grammar

    env = _env()
    home = _home()
    binary = ace if ace is not None else _default_ace(name, home, env)
    _info(f"{name}: compiling {source} with {binary} (this takes a few minutes)")
    entry = compile_grammar(name, source, ace=binary, home=home)
    _info(f"{name}: compiled image {entry.image}; ACE {entry.ace} ({entry.ace_version})")


# --------------------------------------------------------------------------
# show


@grammar_app.command("show", epilog="Example: lit grammar show erg-2018")
def show_command(
    name: _NameArg,
    as_json: _ShowJsonOpt = False,
) -> None:
    """Show a grammar's profile: versions, downloads, semantics, install state."""
    from lit.grammar import load_profile

    env = _env()
    home = _home()
    profile = load_profile(name, home=home)
    status = _status(profile, home, env)
    if as_json:
        click.echo(json.dumps({"profile": profile.to_dict(), "status": status},
                              ensure_ascii=False))
        return
    console = _stdout_console()
    info = Table.grid(padding=(0, 2))
    info.add_column(style="bold")
    info.add_column(overflow="fold")
    info.add_row("name", profile.name + (" (default)" if profile.default else ""))
    info.add_row("description", profile.description)
    info.add_row("ERG version", profile.erg_version)
    info.add_row("ACE version", profile.ace_version)
    info.add_row("profile file", Text(str(profile.path)))
    info.add_row("environment", f"{profile.env_var} (image), LIT_ACE (binary)")
    if profile.source:
        info.add_row("source", Text(profile.source))
    for kind, downloads in (("ACE", profile.ace), ("image", profile.image)):
        if not downloads:
            info.add_row(f"{kind} download", "none published")
        for plat, dl in sorted(downloads.items()):
            text = dl.url + (f" [{dl.member}]" if dl.member else "")
            text += f" sha256 {dl.sha256}" if dl.sha256 else " (no published sha256)"
            info.add_row(f"{kind} {plat}", Text(text))
    if status["installed"]:
        ace = status["ace"] or "ace on PATH"
        if status["ace_version"]:
            ace += f" ({status['ace_version']})"
        info.add_row("installed", f"yes ({status['source']})")
        info.add_row("image", Text(status["image"]))
        info.add_row("ACE", Text(ace))
    else:
        info.add_row("installed", Text("no" + (f": {status['error']}" if status["error"] else "")))
    console.print(info)
    sem = Table(title="semantics", title_justify="left")
    sem.add_column("key")
    sem.add_column("value", overflow="fold")
    for key, value in profile.semantics.items():
        if isinstance(value, dict):
            if not value:
                sem.add_row(key, "(none)")
            for k, v in value.items():
                sem.add_row(f"{key}.{k}", Text(repr(v)))
        else:
            sem.add_row(key, Text(repr(value)))
    console.print(sem)
