"""The Ray engine gives the same outcomes as the local engine (one local Ray start)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from lit import engine

ray = pytest.importorskip("ray", reason="ray is not installed: pip install 'lit-mrs[ray]'")

from lit import ray_engine  # noqa: E402

pytestmark = pytest.mark.ray

TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One local Ray instance for the whole module (start-up takes seconds)."""
    path = os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": path}})
    yield
    ray.shutdown()


class _State:
    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.calls = 0


def _init(tag: str = "s") -> _State:
    return _State(tag)


def _work(state: _State, x: int) -> str:
    state.calls += 1
    if x % 7 == 3:
        raise ValueError(f"bad item {x}")
    if x == -9:
        os.kill(os.getpid(), signal.SIGKILL)
    return f"{state.tag}:{x * x}"


def _failing_init() -> None:
    raise RuntimeError("no grammar image here")


def _outcomes(outcomes):
    return [(o.index, o.item, o.value, o.error) for o in outcomes]


def test_same_outcomes_as_local_engine():
    items = list(range(50))
    local = _outcomes(engine.ordered_map(_work, items, workers=2, init=_init, initargs=("t",)))
    remote = _outcomes(ray_engine.ordered_map(_work, items, workers=2, init=_init,
                                              initargs=("t",)))
    assert remote == local
    assert [o[0] for o in remote] == items
    assert remote[3][3] == "ValueError: bad item 3"


def test_lazy_and_bounded():
    taken = 0

    def huge():
        nonlocal taken
        for i in range(10**6):
            taken += 1
            yield i

    stream = ray_engine.ordered_map(_work, huge(), workers=2, init=_init, max_pending=6)
    assert next(stream).value == "s:0"
    assert taken <= 6
    stream.close()


def test_actor_crash_fails_only_that_item():
    items = [1, 2, -9, 4, 5, 6]
    outcomes = list(ray_engine.ordered_map(_work, items, workers=2, init=_init))
    assert [o.item for o in outcomes] == items
    assert outcomes[2].error == "worker process died (Ray actor died)"
    assert [o.value for i, o in enumerate(outcomes) if i != 2] == \
        ["s:1", "s:4", "s:16", "s:25", "s:36"]


def test_init_failure_is_an_engine_error():
    with pytest.raises(engine.EngineError, match="no grammar image here"):
        list(ray_engine.ordered_map(_work, [1, 2], workers=2, init=_failing_init))


def test_full_window_all_finished_does_not_hang():
    # regression: with a full window whose items were all yielded, map() waited forever
    outcomes = list(ray_engine.ordered_map(_work, [1, 2, 4, 5, 6], workers=2, init=_init,
                                           max_pending=1))
    assert [o.value for o in outcomes] == ["s:1", "s:4", "s:16", "s:25", "s:36"]


def test_lit_transform_engine_ray_same_as_local(tmp_path, lit_home):
    """`lit transform --engine ray` on this module's local Ray = the local engine's output."""
    import sys

    from typer.testing import CliRunner

    sys.path.insert(0, str(TESTS))
    from conftest import snli_sample_path
    from fake_ace_support import fake_ace_env

    from lit.cli import app

    source = tmp_path / "in.jsonl"
    with open(snli_sample_path(), encoding="utf-8") as f:
        source.write_text("".join(next(f) for _ in range(30)), encoding="utf-8")
    env = {**fake_ace_env(tmp_path / "fake"), "LIT_HOME": str(lit_home)}
    args = ["-q", "transform", "--select", "roundtrip",
            "-r", "f;p,m;o,n;n", "--lm", "none", "-k", "2", "--no-cache"]
    runner = CliRunner()
    local = runner.invoke(app, [*args, "-j", "1", str(source)], env=env, catch_exceptions=False)
    remote = runner.invoke(app, [*args, "--engine", "ray", "-j", "2", str(source)], env=env,
                           catch_exceptions=False)
    assert local.exit_code == 0 and remote.exit_code == 0, remote.output
    assert local.stdout.count("\n") == 90
    assert remote.stdout == local.stdout
