"""The mid-task benchmark: a mid-task scene becomes a task that starts in the executed state
and is planned from there, in both robot domains, and the benchmark runs end to end."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from camp_planner.config import with_test_seed
from camp_planner.eval.methods import bundled_camp_method
from camp_planner.workflow import Pipeline

pytestmark = [pytest.mark.pybullet, pytest.mark.fast_downward]


@pytest.mark.parametrize("domain", ["namo", "manip"])
def test_a_mid_task_scene_is_planned_from_where_the_robot_is(
    domain: str, tmp_path: Path, load_script: Callable[[str], ModuleType]
) -> None:
    bench = load_script("bench_midtask")
    pipe = Pipeline.create(domain, None, tmp_path)
    pipe.config = with_test_seed(pipe.config, 9000)
    task = pipe.tasks("test")[1]
    made = bench.mid_task(pipe, task, "tamp", 0.5, 0)
    assert made is not None
    start = pipe.domain.make_mdp(task, pipe.config).initial_state()
    mid = pipe.domain.make_mdp(made, pipe.config).initial_state()
    assert mid != start
    if domain == "namo":
        assert mid[0] == tuple(round(v, 4) for v in made.start)  # where the robot stands
    run = bundled_camp_method(pipe, "tamp").runtime(pipe, "tamp").run(made, 0)
    assert run.result.success
    assert run.result.states[0] == mid


def test_the_benchmark_pairs_camp_and_pure_on_starts_and_mid_task_states(
    tmp_path: Path, load_script: Callable[[str], ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mid.json"
    argv = ["--domain", "namo", "--tasks", "2", "--artifacts", str(tmp_path), "--json", str(out)]
    assert load_script("bench_midtask").main(argv) == 0
    record = json.loads(out.read_text())
    for which in ("start", "mid"):
        assert [s["task"] for s in record["scores"][which]["camp"]] == [0, 1]
        assert record["summary"][which]["paired"]["objective"]["pairs"] == 2
    assert "| mid | 2 | camp |" in capsys.readouterr().out


def test_a_fraction_outside_the_task_is_refused(
    tmp_path: Path, load_script: Callable[[str], ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--fraction", "1.0", "--artifacts", str(tmp_path)]
    assert load_script("bench_midtask").main(argv) == 2
    assert "--fraction" in capsys.readouterr().err
