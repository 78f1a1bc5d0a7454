"""Tests for lit.resume, including a real run killed with SIGKILL mid-write."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lit.errors import InputError
from lit.resume import ResumeState, open_output, pending, scan_output

KEY = lambda record: record["id"]  # noqa: E731


def test_missing_and_empty_files(tmp_path):
    assert scan_output(tmp_path / "nope.jsonl", KEY) == ResumeState(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    assert scan_output(tmp_path / "empty.jsonl", KEY).records == 0


def test_partial_last_line_is_truncated(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b"}\n{"id": "c", "senten', encoding="utf-8")
    state = scan_output(path, KEY)
    assert state.done == {"a", "b"}
    assert (state.records, state.truncated) == (2, len('{"id": "c", "senten'))
    assert path.read_text() == '{"id": "a"}\n{"id": "b"}\n'
    # idempotent
    assert scan_output(path, KEY).truncated == 0


def test_only_a_partial_line(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_bytes(b'{"id": "\xc3')  # cut inside a UTF-8 sequence, too
    state = scan_output(path, KEY)
    assert state.records == 0 and state.truncated == 9
    assert path.read_bytes() == b""


def test_long_partial_line_beyond_one_chunk(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_text('{"id": "a"}\n' + '{"id": "b", "x": "' + "y" * 200_000)
    state = scan_output(path, KEY)
    assert state.done == {"a"}
    assert path.read_text() == '{"id": "a"}\n'


def test_corrupt_complete_line_is_an_error(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_text('{"id": "a"}\nnot json\n{"id": "b"}\n')
    with pytest.raises(InputError) as info:
        scan_output(path, KEY)
    assert info.value.lineno == 2 and str(path) in str(info.value)
    path.write_text('{"id": "a"}\n{"other": 1}\n')
    with pytest.raises(InputError, match="no usable key"):
        scan_output(path, KEY)


def test_duplicates_are_counted(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_text('{"id": "a"}\n{"id": "a"}\n')
    assert scan_output(path, KEY).duplicates == 1


def test_pending_and_open_output(tmp_path):
    path = tmp_path / "new" / "out.jsonl"
    stream, state = open_output(path)
    stream.write('{"id": 1}\n{"id": 2}\n{"id": 3')
    stream.close()
    stream, state = open_output(path, resume=True, key=KEY)
    assert list(pending(range(6), state, key=lambda x: x)) == [0, 3, 4, 5]
    stream.write('{"id": 4}\n')
    stream.close()
    assert path.read_text() == '{"id": 1}\n{"id": 2}\n{"id": 4}\n'
    stream, state = open_output(path)  # no resume: start over
    stream.close()
    assert path.read_text() == ""


# --- a real run, killed with SIGKILL in the middle of writing a line ----------

_WRITER = r'''
"""Copy input records to output slowly, resuming if asked (a test program)."""
import sys, time
from lit.formats.jsonl import JsonlWriter, read_jsonl
from lit.resume import open_output, pending


class SlowStream:
    """Writes each line in two halves with a pause, like a slow disk or pipe."""

    def __init__(self, f):
        self.f = f

    def write(self, text):
        half = len(text) // 2
        self.f.write(text[:half])
        self.f.flush()
        time.sleep(0.01)
        self.f.write(text[half:])

    def flush(self):
        self.f.flush()


if __name__ == "__main__":
    source, target, resume = sys.argv[1], sys.argv[2], sys.argv[3] == "resume"
    stream, state = open_output(target, resume=resume, key=lambda r: r["id"])
    writer = JsonlWriter(SlowStream(stream))
    items = (record for _, record in read_jsonl(source))
    for record in pending(items, state, key=lambda r: r["id"]):
        writer.write({"id": record["id"], "sentence": record["sentence"].upper()})
    stream.close()
'''


def _kill_mid_line(proc: subprocess.Popen, out: Path, min_lines: int) -> None:
    """SIGKILL *proc* once *out* has *min_lines* lines and ends inside a line."""
    while proc.poll() is None:
        data = out.read_bytes() if out.exists() else b""
        if data.count(b"\n") >= min_lines and data and not data.endswith(b"\n"):
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.001)
    proc.wait(30)


def test_killed_run_resumes_without_loss_or_duplicates(tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    source = tmp_path / "in.jsonl"
    ids = [f"pair-{i}" for i in range(60)]
    source.write_text("".join(json.dumps({"id": i, "sentence": f"Sentence {i}."}) + "\n"
                              for i in ids))
    out = tmp_path / "out.jsonl"
    killed_partial = 0
    for round_, mode in enumerate(["fresh", "resume", "resume"]):
        proc = subprocess.Popen([sys.executable, str(script), str(source), str(out), mode])
        _kill_mid_line(proc, out, min_lines=10 * (round_ + 1))
        assert proc.returncode == -signal.SIGKILL, "the writer finished before it was killed"
        if not out.read_bytes().endswith(b"\n"):
            killed_partial += 1
    assert killed_partial == 3  # every kill left a partial line behind
    done = subprocess.run([sys.executable, str(script), str(source), str(out), "resume"],
                          timeout=120)
    assert done.returncode == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]  # valid JSONL throughout
    assert sorted(r["id"] for r in records) == sorted(ids)  # each exactly once
    assert len(records) == len(ids)
    assert all(r["sentence"] == f"Sentence {r['id']}.".upper() for r in records)


# --- `lit transform --resume` after SIGKILL of a real run -----------------------

_LIT = [sys.executable, "-c", "from lit.cli import main; main()"]


def test_lit_transform_killed_and_resumed(tmp_path):
    from conftest import snli_sample_path
    from fake_ace_support import fake_ace_env

    source = tmp_path / "in.jsonl"
    with open(snli_sample_path(), encoding="utf-8") as f:
        source.write_text("".join(next(f) for _ in range(100)), encoding="utf-8")
    env = dict(os.environ)
    env.update(fake_ace_env(tmp_path / "fake"))
    env["LIT_HOME"] = str(tmp_path / "home")
    args = ["-q", "transform", "-r", "f;p,m;o", "--lm", "none", "-j", "2", "--no-cache"]

    reference = subprocess.run([*_LIT, *args, str(source)], env=env, capture_output=True,
                               text=True, timeout=600)
    assert reference.returncode == 0, reference.stderr
    expected = [json.loads(line) for line in reference.stdout.splitlines()]
    assert len(expected) == 200

    out = tmp_path / "out.jsonl"
    slow = dict(env, FAKE_ACE_DELAY="0.02")  # so that the kill lands mid-run
    proc = subprocess.Popen([*_LIT, *args, "-o", str(out), str(source)], env=slow,
                            stderr=subprocess.DEVNULL)
    while proc.poll() is None and (not out.exists() or out.stat().st_size == 0):
        time.sleep(0.01)
    proc.kill()  # SIGKILL: no clean-up in the main process; the workers stop by themselves
    proc.wait(60)
    assert proc.returncode == -signal.SIGKILL, "the run finished before it was killed"
    partial = out.read_text(encoding="utf-8").count("\n")
    assert 0 < partial < 200

    resumed = subprocess.run([*_LIT, *args, "-o", str(out), "--resume", str(source)], env=env,
                             capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    key = lambda r: (json.dumps(r["id"]), r["spec"])  # noqa: E731
    assert len(records) == 200 and len({key(r) for r in records}) == 200  # none lost or doubled
    assert sorted(records, key=key) == sorted(expected, key=key)  # and the same records

    # resuming a finished file adds nothing; --resume needs --output
    again = subprocess.run([*_LIT, *args, "-o", str(out), "--resume", str(source)], env=env,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and out.read_text(encoding="utf-8").count("\n") == 200
    usage = subprocess.run([*_LIT, *args, "--resume", str(source)], env=env,
                           capture_output=True, text=True, timeout=600)
    assert usage.returncode == 2 and "--output" in usage.stderr
