"""The CLI root: error mapping, exit codes, -q, --version, closed pipes."""

from __future__ import annotations

import subprocess
import sys

from conftest import recorded
from typer.testing import CliRunner

from lit import __version__
from lit.cli import app
from lit.cli._common import is_quiet

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a tool killed by SIGPIPE

runner = CliRunner()

LIT = [sys.executable, "-c", "from lit.cli import main; main()"]


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"lit {__version__}"


def test_lit_error_is_one_line_and_exit_1():
    result = runner.invoke(app, ["rules", "show", "no-such-rule"])
    assert result.exit_code == 1
    assert result.stderr.startswith("lit: error: unknown rule 'no-such-rule'")
    assert "Traceback" not in result.stderr


def test_usage_error_is_exit_2():
    result = runner.invoke(app, ["rules", "apply", "--no-such-option"])
    assert result.exit_code == 2


def test_quiet_reaches_subcommands():
    seen = []

    @app.command("zz-test-quiet", hidden=True)
    def _probe() -> None:
        seen.append(is_quiet())

    try:
        assert runner.invoke(app, ["-q", "zz-test-quiet"]).exit_code == 0
        assert runner.invoke(app, ["zz-test-quiet"]).exit_code == 0
    finally:
        app.registered_commands[:] = [
            c for c in app.registered_commands if c.name != "zz-test-quiet"
        ]
    assert seen == [True, False]


def test_closed_output_pipe_ends_quietly(tmp_path):
    # `lit rules apply ... | head -1`: the reader goes away after one line while
    # lit still has megabytes to write (far more than a pipe buffer holds)
    mrs_file = tmp_path / "mrs.txt"
    rows = recorded("erg-1214", "transforms")
    mrs_file.write_text("".join(r["input_mrs"] + "\n" for r in rows[:400]), encoding="utf-8")
    for _ in range(2):
        proc = subprocess.Popen(
            [*LIT, "-q", "rules", "apply", "--rules", "p,f,n", "--grammar", "erg-1214",
             str(mrs_file)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
        )
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=60)
        assert code == EXIT_BROKEN_PIPE, err
        assert err == ""
