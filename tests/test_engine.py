"""Tests for lit.engine: real worker processes, real crashes, real signals."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lit.engine import EngineError, Outcome, describe_exit, ordered_map

# --- functions run in workers (module level: they are pickled by reference) ----


class _State:
    """Per-process state that leaves a marker file when it is torn down."""

    def __init__(self, marker_dir: str | None) -> None:
        self.marker_dir = marker_dir
        self.pid = os.getpid()
        self.calls = 0

    def __enter__(self) -> _State:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.marker_dir is not None:
            Path(self.marker_dir, f"exit-{self.pid}").write_text(str(self.calls))


def _init(marker_dir: str | None = None) -> _State:
    return _State(marker_dir)


def _work(state: _State, x: int) -> tuple[int, int]:
    state.calls += 1
    if x == -1:
        raise ValueError("negative input")
    if x == -9:
        os.kill(os.getpid(), signal.SIGKILL)
    if x == -60:
        time.sleep(60)
    return x * x, os.getpid()


def _square(state: None, x: int) -> int:
    return x * x


def _failing_init() -> None:
    raise RuntimeError("no grammar image here")


def _unpicklable(state: None, x: int) -> object:
    return lambda: x


# --- tests -----------------------------------------------------------------------


def test_results_in_input_order_with_state():
    items = list(range(200))
    outcomes = list(ordered_map(_work, items, workers=2, init=_init))
    assert [o.index for o in outcomes] == items
    assert [o.item for o in outcomes] == items
    assert [o.value[0] for o in outcomes] == [x * x for x in items]
    assert all(o.ok for o in outcomes)
    assert os.getpid() not in {o.value[1] for o in outcomes}


def test_inline_with_one_worker():
    outcomes = list(ordered_map(_work, [3, -1, 4], workers=1, init=_init))
    assert [o.value for o in outcomes] == [(9, os.getpid()), None, (16, os.getpid())]
    assert outcomes[1].error == "ValueError: negative input"


def test_item_exception_is_a_failed_outcome():
    outcomes = list(ordered_map(_work, [1, -1, 2, -1, 3], workers=2, init=_init))
    assert [o.ok for o in outcomes] == [True, False, True, False, True]
    assert outcomes[1] == Outcome(1, -1, None, "ValueError: negative input")
    assert outcomes[4].value[0] == 9


def test_input_is_consumed_lazily():
    taken = 0

    def huge():
        nonlocal taken
        for i in range(10**6):
            taken += 1
            yield i

    stream = ordered_map(_square, huge(), workers=2, max_pending=8)
    first = next(stream)
    assert first.value == 0
    assert taken <= 8  # bounded: not the million items
    seen = [first.value] + [next(stream).value for _ in range(99)]
    assert seen == [i * i for i in range(100)]
    assert taken <= 100 + 8
    stream.close()


def test_inline_input_is_consumed_lazily():
    taken = 0

    def huge():
        nonlocal taken
        for i in range(10**6):
            taken += 1
            yield i

    stream = ordered_map(_square, huge(), workers=1, prefetch=2)
    assert next(stream).value == 0
    assert taken <= 3  # the item and the prefetched ones
    stream.close()


def test_worker_crash_fails_only_that_item(tmp_path):
    items = [1, 2, 3, -9, 4, 5, 6, -9, 7, 8]
    outcomes = list(ordered_map(_work, items, workers=2, init=_init,
                                initargs=(str(tmp_path),)))
    assert [o.item for o in outcomes] == items
    for o in outcomes:
        if o.item == -9:
            assert not o.ok
            assert o.error == "worker process died (killed by SIGKILL)"
        else:
            assert o.value[0] == o.item * o.item
    # two workers were killed and replaced; the two alive at the end were torn down
    pids = {o.value[1] for o in outcomes if o.ok}
    markers = {int(p.name.split("-")[1]) for p in tmp_path.glob("exit-*")}
    assert len(markers) == 2
    assert len(pids | markers) <= 4


def test_hung_item_times_out():
    outcomes = list(ordered_map(_work, [1, -60, 2, 3], workers=2, init=_init, timeout=1.0))
    assert [o.ok for o in outcomes] == [True, False, True, True]
    assert outcomes[1].error.startswith("timed out after 1 s")


def test_unpicklable_result_is_a_failed_outcome():
    outcomes = list(ordered_map(_unpicklable, [1, 2], workers=2))
    assert [o.ok for o in outcomes] == [False, False]
    assert "cannot be sent back" in outcomes[0].error


def test_init_failure_is_an_engine_error():
    with pytest.raises(EngineError, match="no grammar image here"):
        list(ordered_map(_square, [1, 2, 3], workers=2, init=_failing_init))
    with pytest.raises(RuntimeError, match="no grammar image here"):
        list(ordered_map(_square, [1, 2, 3], workers=1, init=_failing_init))


def _ace_failing_init():
    from lit.errors import ACEError

    raise ACEError("ACE exited at start (exit code 1) with image /x.dat")


def test_lit_error_in_init_is_raised_as_itself():
    # the main process reports a worker's ACEError exactly as it would without workers
    from lit.errors import ACEError

    for workers in (1, 2):
        with pytest.raises(ACEError) as info:
            list(ordered_map(_square, [1, 2, 3], workers=workers, init=_ace_failing_init))
        assert str(info.value) == "ACE exited at start (exit code 1) with image /x.dat"


_WARN_SCRIPT = """
import logging, sys
from lit.engine import ordered_map

def warn(state, x):
    logging.getLogger("lit.ace").warning("ACE is slow on item %d", x)
    return x

if __name__ == "__main__":
    logging.getLogger("lit").setLevel(int(sys.argv[1]))
    print([o.value for o in ordered_map(warn, [7], workers=2)])
"""


def test_worker_log_records_are_marked_and_levelled(tmp_path):
    # a real process: workers inherit its stderr (pytest's capture would not see them)
    script = tmp_path / "warn.py"
    script.write_text(_WARN_SCRIPT, encoding="utf-8")
    for level, shown in ((30, True), (40, False)):  # WARNING; ERROR as with -q
        proc = subprocess.run([sys.executable, str(script), str(level)], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "[7]"
        found = re.search(r"^lit: worker \d+: WARNING: ACE is slow on item 7$", proc.stderr,
                          re.M)
        assert bool(found) is shown, proc.stderr


def test_invalid_worker_count():
    with pytest.raises(EngineError, match="at least 1"):
        list(ordered_map(_square, [1], workers=0))


def test_early_close_tears_down_workers(tmp_path):
    stream = ordered_map(_work, iter(range(10**6)), workers=2, init=_init,
                         initargs=(str(tmp_path),))
    pids = {next(stream).value[1] for _ in range(20)}
    stream.close()
    markers = {int(p.name.split("-")[1]) for p in tmp_path.glob("exit-*")}
    assert pids <= markers
    for pid in markers:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_describe_exit():
    assert describe_exit(-signal.SIGSEGV) == "killed by SIGSEGV"
    assert describe_exit(0) == "exit code 0"


_CTRL_C_SCRIPT = """
import os, sys, time
sys.path.insert(0, {tests!r})
from lit.engine import ordered_map
from test_engine import _init, _work

def items():
    for i in range(10**6):
        time.sleep(0.01)
        yield i

if __name__ == "__main__":
    try:
        for o in ordered_map(_work, items(), workers=2, init=_init, initargs=({markers!r},)):
            sys.stdout.write(f"{{o.value[1]}}\\n")  # one write: Ctrl-C cannot split the line
            sys.stdout.flush()
    except KeyboardInterrupt:
        print("\\ninterrupted", flush=True)
        sys.exit(130)
"""


def test_ctrl_c_tears_down_workers(tmp_path):
    script = tmp_path / "run.py"
    markers = tmp_path / "markers"
    markers.mkdir()
    script.write_text(_CTRL_C_SCRIPT.format(tests=str(Path(__file__).parent),
                                            markers=str(markers)))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    pids = set()
    assert proc.stdout is not None
    for line in proc.stdout:
        pids.add(int(line))
        if len(pids) == 2:
            break
    os.killpg(proc.pid, signal.SIGINT)  # what the terminal does: the whole group
    rest, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert rest.strip().splitlines()[-1] == "interrupted"
    assert {int(p.name.split("-")[1]) for p in markers.glob("exit-*")} >= pids
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie is gone too (its parent, the killed main process, cannot reap it)
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1].startswith("Z")
    except OSError:
        return True


def test_killed_main_process_leaves_no_orphaned_workers(tmp_path):
    script = tmp_path / "run.py"
    markers = tmp_path / "markers"
    markers.mkdir()
    script.write_text(_CTRL_C_SCRIPT.format(tests=str(Path(__file__).parent),
                                            markers=str(markers)))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            stderr=subprocess.PIPE)
    pids = set()
    assert proc.stdout is not None
    for line in proc.stdout:
        pids.add(int(line))
        if len(pids) == 2:
            break
    proc.kill()  # SIGKILL: no chance to stop the workers
    proc.wait(30)
    deadline = time.monotonic() + 60  # a bound for a hang, not a timing assertion
    while not all(_gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_gone(pid) for pid in pids)
    # they stopped on their own, tearing their state down
    assert {int(p.name.split("-")[1]) for p in markers.glob("exit-*")} >= pids
    assert "Traceback" not in proc.stderr.read()


@pytest.mark.parametrize("max_pending", [1, 2, 3])
def test_full_window_all_finished_does_not_hang(max_pending):
    # regression (found by the fault matrix): once every item taken under a full
    # window had been yielded, map() waited for results with nothing in flight
    outcomes = list(ordered_map(_square, range(40), workers=2, max_pending=max_pending))
    assert [o.value for o in outcomes] == [x * x for x in range(40)]


# --- `lit transform` with worker processes (fake-ace stands in for ACE) ----------

_LIT = [sys.executable, "-c", "from lit.cli import main; main()"]


def test_lit_transform_same_output_with_and_without_workers(tmp_path):
    from conftest import snli_sample_path
    from fake_ace_support import fake_ace_env

    source = tmp_path / "in.jsonl"
    with open(snli_sample_path(), encoding="utf-8") as f:
        source.write_text("".join(next(f) for _ in range(40)), encoding="utf-8")
    env = dict(os.environ)
    env.update(fake_ace_env(tmp_path / "fake"))
    env["LIT_HOME"] = str(tmp_path / "home")
    outputs = []
    for workers in ("1", "2", "3"):
        proc = subprocess.run([*_LIT, "-q", "transform",
                               "--select", "roundtrip", "-r", "f;p,m;o,pa;pa", "--lm", "none",
                               "-k", "3", "--keep-mrs", "-j", workers, "--no-cache",
                               str(source)], env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    assert outputs[0].count("\n") == 120
    assert outputs[1] == outputs[0] and outputs[2] == outputs[0]  # byte for byte, in order


def test_pipeline_with_workers_reads_input_lazily(tmp_path):
    """A 10**6-item input is not materialized: memory stays flat on long inputs."""
    import functools
    import itertools
    import json as _json

    from conftest import snli_sample_path
    from fake_ace_support import fake_ace_env

    from lit.pipeline import Transformer
    from lit.workers import open_worker, run_unit

    with open(snli_sample_path(), encoding="utf-8") as f:
        rows = [_json.loads(next(f)) for _ in range(30)]
    taken = 0

    def huge():
        nonlocal taken
        for i, row in enumerate(itertools.islice(itertools.cycle(rows), 10**6)):
            taken += 1
            yield dict(row, pairID=f"p{i}")

    env = dict(os.environ)
    env.update(fake_ace_env(tmp_path / "fake"))
    options = {"grammar": "erg-1214", "env": env, "home": str(tmp_path / "home"),
               "chunk_size": 16}
    prepare_map = functools.partial(ordered_map, run_unit, workers=2, init=open_worker,
                                    initargs=(options,))
    with Transformer(**options, prepare_map=prepare_map) as t:
        records = t.transform_pairs(huge(), "f;p,m;o")
        first = [next(records) for _ in range(40)]  # the first 20 items
        records.close()
    assert [r["id"] for r in first[::2]] == [f"p{i}" for i in range(20)]
    assert taken <= 4 * 16  # a few chunks ahead, not the million


def test_main_process_starts_no_idle_ace_with_workers(tmp_path):
    # with -j 2 the workers parse and generate; the main process only ranks and
    # labels, so exactly 2 parsers + 2 x 2 generators run (each transformer has one
    # for the round trips of reading selection; fake-ace stands in for ACE)
    from conftest import snli_sample_path
    from fake_ace_support import fake_ace_env, peak_processes

    source = tmp_path / "in.jsonl"
    with open(snli_sample_path(), encoding="utf-8") as f:
        source.write_text("".join(next(f) for _ in range(6)), encoding="utf-8")
    starts = {}
    for workers in ("1", "2"):
        env = dict(os.environ, **fake_ace_env(tmp_path / "fake"))
        env["LIT_HOME"] = str(tmp_path / "home")
        env["FAKE_ACE_LOG"] = log = str(tmp_path / f"ace-{workers}.log")
        proc = subprocess.run(
            [sys.executable, "-c", "from lit.cli import main; main()", "-q", "transform",
             "-r", "f;p", "--lm", "none", "--no-cache", "-j", workers, str(source)],
            env=env, capture_output=True, text=True, timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        # (a parser is a fresh ACE process per sentence: count those alive at once)
        starts[workers] = peak_processes(log)
    assert starts["1"] == {"generate": 2, "parse": 1}
    assert starts["2"] == {"generate": 4, "parse": 2}


@pytest.mark.parametrize("workers", [1, 2])
def test_input_may_wait_for_its_own_outcomes(workers):
    """An input whose later items depend on earlier outcomes yields WAIT until
    they are in; the map then passes WAIT on when nothing is in flight."""
    from lit.engine import WAIT

    seen: list[int] = []

    def items():
        yield from range(3)
        while len(seen) < 3:  # the next items are known only from the results
            yield WAIT
        yield from (10 * x for x in seen)

    values = []
    for outcome in ordered_map(_square, items(), workers=workers):
        if outcome is WAIT:
            continue
        values.append(outcome.value)
        if len(seen) < 3:
            seen.append(outcome.value)
    assert values == [0, 1, 4, 0, 100, 1600]


def _nap(state: None, x: float) -> float:
    time.sleep(x)
    return x


def test_unordered_outcomes_come_as_they_finish():
    """``ordered=False``: a long item holds back only itself."""
    outcomes = list(ordered_map(_nap, [3.0, 0, 0, 0, 0, 0], workers=2, prefetch=1,
                                ordered=False))
    assert sorted(o.index for o in outcomes) == list(range(6))
    assert outcomes[-1].index == 0  # the others finished on the second worker meanwhile
    assert all(o.ok and o.value == o.item for o in outcomes)


def test_worker_schedule_keeps_order_with_chunks_that_need_no_ace(tmp_path):
    """Chunks without any ACE work (empty sentences, sentences done before)
    come out in their place; each distinct MRS is realized once."""
    import functools

    from fake_ace_support import fake_ace_env

    from lit.pipeline import Transformer
    from lit.workers import worker_map

    env = dict(os.environ, **fake_ace_env(tmp_path / "fake"))
    options = {"grammar": "erg-1214", "env": env, "home": str(tmp_path / "home"),
               "select": "roundtrip", "chunk_size": 2}
    sentence = "Two women are embracing while holding to go packages."
    items = ["", " ", sentence, "", sentence, sentence, "", ""]
    inline = Transformer(**options)
    with inline:
        expected = list(inline.transform_sentences(items, "p,p+-perf,f"))
    prepare_map = worker_map(options, workers=2)
    assert isinstance(prepare_map, functools.partial)
    with Transformer(**options, prepare_map=prepare_map) as t:
        got = list(t.transform_sentences(items, "p,p+-perf,f"))
        requests = dict(t.requests)
    assert got == expected
    assert [r["id"] for r in got] == [i for i in range(1, 9) for _ in range(3)]
    assert requests["parse"] == 1 and requests["generate"] == 2  # p and p+-perf share one
