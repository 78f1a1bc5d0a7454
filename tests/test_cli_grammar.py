"""`lit grammar ...` through typer's CliRunner: exit codes, stdout, stderr."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lit.cli import app

# A test double for the ACE binary (ACE cannot be obtained on this machine):
# answers `-V` like ACE 0.9.34 and "compiles" by copying the config file.
FAKE_ACE = """#!/bin/sh
# test double for ACE (not available here)
if [ "$1" = "-V" ]; then echo "ACE version 0.9.34"; exit 0; fi
cfg=""; out=""
while [ $# -gt 0 ]; do
  case "$1" in -g) cfg="$2"; shift ;; -G) out="$2"; shift ;; esac
  shift
done
[ -n "$out" ] && cat "$cfg" > "$out"
"""


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def fake_ace(tmp_path) -> Path:
    path = tmp_path / "ace"
    path.write_text(FAKE_ACE)
    path.chmod(0o755)
    return path


@pytest.fixture
def image(tmp_path) -> Path:
    path = tmp_path / "erg-1214.dat"
    path.write_bytes(b"stand-in grammar image")
    return path


def invoke(runner: CliRunner, *args: str, env: dict[str, str] | None = None):
    # the lit_home fixture puts LIT_HOME in os.environ; CliRunner adds *env*
    return runner.invoke(app, list(args), env=env, catch_exceptions=False)


def rows(output: str) -> dict[str, dict]:
    return {r["name"]: r for r in map(json.loads, output.splitlines())}


def test_list_empty(lit_home, runner):
    result = invoke(runner, "grammar", "list")
    assert result.exit_code == 0, result.stderr
    for name in ("erg-1214 (default)", "erg-2018", "erg-2020", "erg-2023", "erg-2025"):
        assert name in result.stdout
    assert str(lit_home) in result.stdout
    result = invoke(runner, "grammar", "list", "--json")
    assert result.exit_code == 0
    listed = rows(result.stdout)
    assert list(listed) == ["erg-1214", "erg-2018", "erg-2020", "erg-2023", "erg-2025"]
    assert not any(r["installed"] for r in listed.values())
    assert listed["erg-1214"]["default"] is True


def test_add_list_round_trip(lit_home, runner, image, fake_ace):
    result = invoke(runner, "grammar", "add", "erg-1214", "--image", str(image),
                    "--ace", str(fake_ace))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert f"erg-1214: registered image {image}" in result.stderr

    result = invoke(runner, "grammar", "list", "--json")
    assert result.exit_code == 0
    row = rows(result.stdout)["erg-1214"]
    assert row["installed"] is True
    assert (row["image"], row["ace"], row["ace_version"], row["source"]) == (
        str(image), str(fake_ace), "0.9.34", "added")
    assert rows(result.stdout)["erg-2018"]["installed"] is False

    result = invoke(runner, "grammar", "list")
    line = next(ln for ln in result.stdout.splitlines() if "erg-1214" in ln)
    assert "yes" in line and "added" in line and str(image) in line and "0.9.34" in line

    result = invoke(runner, "grammar", "show", "erg-1214")
    assert result.exit_code == 0
    assert "parg_d" in result.stdout and "yes (added)" in result.stdout


def test_add_errors(lit_home, runner, image, tmp_path):
    result = invoke(runner, "grammar", "add", "erg-9", "--image", str(image))
    assert result.exit_code == 1
    assert result.stderr.startswith("lit: error: unknown grammar 'erg-9'")
    result = invoke(runner, "grammar", "add", "erg-1214", "--image", str(tmp_path / "no.dat"))
    assert result.exit_code == 1
    assert "lit: error: grammar image not found" in result.stderr
    result = invoke(runner, "grammar", "add", "erg-1214")
    assert result.exit_code == 2  # usage error: --image is required


def test_changed_image_is_reported_by_list(lit_home, runner, image):
    assert invoke(runner, "grammar", "add", "erg-1214", "--image", str(image)).exit_code == 0
    image.unlink()
    result = invoke(runner, "grammar", "list", "--json")
    assert result.exit_code == 0
    row = rows(result.stdout)["erg-1214"]
    assert row["installed"] is False and "is missing" in row["error"]
    assert "broken" in invoke(runner, "grammar", "list").stdout


def test_env_overrides_show_as_env(lit_home, runner, image, fake_ace):
    env = {"LIT_GRAMMAR_ERG_1214": str(image), "LIT_ACE": str(fake_ace)}
    result = invoke(runner, "grammar", "list", "--json", env=env)
    assert result.exit_code == 0, result.stderr
    row = rows(result.stdout)["erg-1214"]
    assert (row["installed"], row["source"], row["ace_source"]) == (True, "env", "env")
    assert (row["image"], row["ace"], row["ace_version"]) == (str(image), str(fake_ace), "0.9.34")
    table = invoke(runner, "grammar", "list", env=env).stdout
    line = next(ln for ln in table.splitlines() if "erg-1214" in ln)
    assert "env" in line and "[env]" in line


def test_install_server_down(lit_home, runner):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    from lit.grammar import current_platform

    plat = current_platform()
    url = f"http://127.0.0.1:{port}/erg-1214.dat.bz2"
    # a user profile of the same name replaces the shipped one
    shipped = (Path(__file__).resolve().parent.parent / "grammars" / "erg-1214.toml").read_text()
    semantics = shipped[shipped.index("[semantics]"):]
    (lit_home / "grammars").mkdir()
    (lit_home / "grammars" / "erg-1214.toml").write_text(
        'name = "erg-1214"\nerg_version = "1214"\nace_version = "0.9.34"\n'
        f'description = "served from a closed port"\n\n[image.{plat}]\nurl = "{url}"\n\n'
        f'[ace.{plat}]\nurl = "http://127.0.0.1:{port}/ace.tar.gz"\nmember = "ace/ace"\n\n'
        + semantics
    )

    result = invoke(runner, "grammar", "install", "erg-1214")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"lit: error: cannot download {url}")
    assert "lit grammar add erg-1214 --image PATH --ace PATH" in result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in lit_home.iterdir()) == ["grammars"]


def test_install_usage_errors(lit_home, runner):
    result = invoke(runner, "grammar", "install", "erg-1214", "--platform", "sparc")
    assert result.exit_code == 2
    result = invoke(runner, "grammar", "install", "erg-0")
    assert result.exit_code == 1
    assert "unknown grammar 'erg-0'" in result.stderr
    result = invoke(runner, "grammar", "install", "erg-2023")
    assert result.exit_code == 1
    assert "lit grammar compile erg-2023 --source DIR" in result.stderr


def test_compile(lit_home, runner, tmp_path, fake_ace):
    source = tmp_path / "erg"
    (source / "ace").mkdir(parents=True)
    (source / "ace" / "config.tdl").write_text("stand-in config\n")
    result = invoke(runner, "grammar", "compile", "erg-2020", "--source", str(source),
                    "--ace", str(fake_ace))
    assert result.exit_code == 0, result.stderr
    row = rows(invoke(runner, "grammar", "list", "--json").stdout)["erg-2020"]
    assert row["source"] == "compiled"
    assert row["image"] == str(lit_home / "grammars" / "erg-2020" / "erg-2020.dat")
    # the ACE to compile with can come from LIT_ACE
    result = invoke(runner, "grammar", "compile", "erg-2023", "--source", str(source),
                    env={"LIT_ACE": str(fake_ace)})
    assert result.exit_code == 0, result.stderr


def test_show(lit_home, runner):
    result = invoke(runner, "grammar", "show", "erg-2018")
    assert result.exit_code == 0
    assert "icons:topic" in result.stdout
    assert "erg-2018 does not generate it-clefts" in result.stdout
    assert "LIT_GRAMMAR_ERG_2018" in result.stdout
    result = invoke(runner, "grammar", "show", "erg-2020", "--json")
    data = json.loads(result.stdout)
    assert data["profile"]["semantics"]["modals"]["may"] == "_may_v_modal"
    assert data["profile"]["image"] == {}
    assert data["status"]["installed"] is False


@pytest.mark.parametrize("command", ["list", "install", "add", "compile", "show"])
def test_help(runner, command):
    result = invoke(runner, "grammar", command, "--help")
    assert result.exit_code == 0
    assert "Example: lit grammar" in result.stdout


def test_environment_is_read_by_cli_only(lit_home, monkeypatch):
    # library calls without env see no overrides even when the process has them
    from lit.errors import GrammarError
    from lit.grammar import resolve_grammar

    monkeypatch.setenv("LIT_GRAMMAR_ERG_1214", "/nonexistent")
    with pytest.raises(GrammarError, match="not installed"):
        resolve_grammar("erg-1214", home=lit_home)


def test_registered_grammar_without_profile_is_listed(lit_home, runner, image):
    from lit.grammar import Installation, file_sha256, register

    register(Installation(name="gone-erg", image=image, source="added",
                          image_sha256=file_sha256(image), installed="2026-01-01T00:00:00"),
             home=lit_home)
    result = invoke(runner, "grammar", "list", "--json")
    assert result.exit_code == 0
    row = rows(result.stdout)["gone-erg"]
    assert row["installed"] is False and "no grammar profile gone-erg.toml" in row["error"]
    assert "gone-erg" in invoke(runner, "grammar", "list").stdout
