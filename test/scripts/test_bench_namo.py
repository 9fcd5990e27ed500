"""The NAMO benchmark: settings parse, and route contexts are the lightest routes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from camp_planner.core.context import Context, Term

CONFIG = Path(__file__).resolve().parents[2] / "config"
RESEARCH_CONFIG = Path(__file__).resolve().parents[2] / "research" / "config"


def test_settings_are_read_as_yaml_values() -> None:
    from camp_planner.config import parse_settings as parse

    assert parse(["motion_planner=rrtconnect", "motion_timeout_s=2", "relaxed=grid"]) == {
        "motion_planner": "rrtconnect",
        "motion_timeout_s": 2,
        "relaxed": "grid",
    }
    assert parse([]) == {}
    assert parse(["restart_s=null", "restart_growth=2"]) == {
        "restart_s": None,
        "restart_growth": 2,
    }
    for bad in (["relaxed"], ["=grid"], ["relaxed="], ["relaxed=[oops"]):
        with pytest.raises(ValueError, match="--set"):
            parse(bad)


def test_route_contexts_allow_exactly_the_rooms_of_the_lightest_route(
    tmp_path: Path, load_script: Callable[[str], ModuleType]
) -> None:
    from camp_planner.workflow import Pipeline

    bench = load_script("bench_namo")
    pipe = Pipeline.create("namo", CONFIG / "namo" / "grid4.yaml", tmp_path)
    for task in pipe.domain.make_tasks(pipe.config, "test")[:5]:
        ctx = bench.route_context(pipe, task)
        rooms = {int(str(v)) for v in ctx.allowed_values()["robot_room"]}
        graph = pipe.domain.region_graph(task)
        assert {0, 15} <= rooms and graph.can_reach_goal(ctx)
        # No room can go: each is needed to join start and goal (it is a route).
        for room in rooms - {0, 15}:
            smaller = Context("disjunction", tuple(Term("robot_room", r) for r in rooms - {room}))
            assert not graph.can_reach_goal(smaller)
        # And no route, found by trying every simple one, holds fewer boxes, or as few in
        # fewer rooms.
        per_room = {r: sum(1 for b in task.boxes if b.room == r) for r in range(16)}
        best = min(
            (sum(per_room[r] for r in route), len(route))
            for route in _simple_routes(graph.adjacency, 0, 15)
        )
        assert (sum(per_room[r] for r in rooms), len(rooms)) == best


def _simple_routes(adjacency: Any, start: int, goal: int) -> list[list[int]]:
    routes, stack = [], [[start]]
    while stack:
        route = stack.pop()
        if route[-1] == goal:
            routes.append(route)
            continue
        stack.extend([*route, nb] for nb in adjacency[route[-1]] if nb not in route)
    return routes


@pytest.mark.pybullet
def test_the_collision_check_rate_is_the_median_of_timed_rounds(
    tmp_path: Path, load_script: Callable[[str], ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    import math

    from camp_planner.workflow import Pipeline

    bench = load_script("bench_namo")
    pipe = Pipeline.create("namo", RESEARCH_CONFIG / "namo-grid3.yaml", tmp_path)
    task = pipe.domain.make_tasks(pipe.config, "test")[0]
    # A clock that makes round k take k + 1 seconds: the median round is the third.
    ticks = iter(float(t) for t in (0, 1, 10, 12, 20, 23, 30, 34, 40, 45))
    monkeypatch.setattr(bench.time, "perf_counter", lambda: next(ticks))
    assert bench.checks_per_second(pipe, task, n=50, rounds=5) == pytest.approx(10 / 3)
    monkeypatch.undo()
    for lazy in (False, True):
        rate = bench.checks_per_second(pipe, task, n=7, lazy=lazy, rounds=5)
        assert math.isfinite(rate) and rate > 0
    # And in a new process, as after the runs.
    rate = bench.fresh_checks_per_second(RESEARCH_CONFIG / "namo-grid3.yaml", tmp_path, "test")
    assert math.isfinite(rate) and rate > 0
    with pytest.raises(bench.CampError, match="new process"):
        bench.fresh_checks_per_second(tmp_path / "missing.yaml", tmp_path, "test")


def test_an_interrupted_run_resumes_without_measuring_its_finished_runs_again(
    tmp_path: Path, load_script: Callable[[str], ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = load_script("bench_namo")
    measured: list[tuple[int, int]] = []
    stop_at = [3]

    def fake_measure(
        pipe: Any, args: Any, overrides: Any, i: int, task: Any, ctx: Any, seed: int
    ) -> dict[str, Any]:
        if len(measured) == stop_at[0]:
            raise KeyboardInterrupt
        measured.append((i, seed))
        run = {"compute_time_s": 1.0 + i, "success": True, "outcome": "goal"}
        return {"task": i, "seed": seed, "context": ctx.name, "ratio": 1.0, "pure": run,
                "camp": run, "stilman": run}  # fmt: skip

    monkeypatch.setattr(bench, "_measure", fake_measure)
    monkeypatch.setattr(bench, "route_context", lambda pipe, task: Context.universal())
    monkeypatch.setattr(bench, "checks_per_second", lambda *a, **k: 1.0)
    monkeypatch.setattr(bench, "fresh_checks_per_second", lambda *a, **k: 1.0)
    out = tmp_path / "bench.json"
    argv = ["--tasks", "3", "--repeats", "2", "--context", "route", "--artifacts",
            str(tmp_path / "art"), "--json", str(out)]  # fmt: skip
    assert bench.main(argv) == 130
    assert measured == [(0, 0), (0, 1), (1, 0)] and not out.exists()
    (checkpoint,) = (tmp_path / "art" / "bench").iterdir()
    stop_at[0] = 99
    assert bench.main(argv) == 0
    # Only the three runs the first call did not finish were measured the second time.
    assert measured[3:] == [(1, 1), (2, 0), (2, 1)]
    summary = json.loads(out.read_text())["summary"]
    assert summary["runs_finished_earlier"] == 3 and summary["pure_median_s"] == 2.0
    assert summary["collision_checks_per_s_before_runs"] == summary["collision_checks_per_s"]
    assert not checkpoint.exists()
    # Other settings are another run: nothing is resumed from its checkpoint.
    measured.clear()
    stop_at[0] = 2
    assert bench.main([*argv, "--timeout", "30"]) == 130 and len(measured) == 2
    stop_at[0] = 99
    measured.clear()
    assert bench.main(argv) == 0 and len(measured) == 6
    assert len(list((tmp_path / "art" / "bench").iterdir())) == 1  # the --timeout 30 one


def test_a_replicate_runs_new_planner_seeds_and_reports_the_boxes_moved(
    tmp_path: Path,
    load_script: Callable[[str], ModuleType],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench = load_script("bench_namo")
    seeds: list[int] = []

    def fake_measure(
        pipe: Any, args: Any, overrides: Any, i: int, task: Any, ctx: Any, seed: int
    ) -> dict[str, Any]:
        seeds.append(seed)
        run = {"compute_time_s": 1.0, "success": True, "outcome": "goal"}
        stages = {"motion_planning": 0.5 + seed, "collision_checks": 0.25, "prepare": 1.0}
        return {"task": i, "seed": seed, "context": ctx.name, "ratio": 1.0,
                "pure": {**run, "picks": 4 + seed, "stage_times_s": stages},
                "camp": {**run, "picks": 1}, "stilman": run}  # fmt: skip

    monkeypatch.setattr(bench, "_measure", fake_measure)
    monkeypatch.setattr(bench, "route_context", lambda pipe, task: Context.universal())
    monkeypatch.setattr(bench, "checks_per_second", lambda *a, **k: 1.0)
    monkeypatch.setattr(bench, "fresh_checks_per_second", lambda *a, **k: 1.0)
    out = tmp_path / "bench.json"
    argv = ["--tasks", "2", "--repeats", "2", "--first-seed", "2", "--context", "route",
            "--artifacts", str(tmp_path / "art"), "--json", str(out)]  # fmt: skip
    assert bench.main(argv) == 0
    assert seeds == [2, 3, 2, 3]
    summary = json.loads(out.read_text())["summary"]
    assert summary["first_seed"] == 2
    assert (summary["pure_mean_picks"], summary["camp_mean_picks"]) == (6.5, 1)
    assert summary["stilman_mean_picks"] is None  # rows from before picks were recorded
    # Where the time went: the named stages only, averaged over the runs.
    assert summary["pure_stage_means_s"] == {"motion_planning": 3.0, "collision_checks": 0.25}
    assert summary["camp_stage_means_s"] == {}
    printed = capsys.readouterr().out
    assert "  pure     motion planning 3.000, collision checks 0.250\n" in printed


def test_runs_that_return_late_are_reported_with_where_they_were(
    load_script: Callable[[str], ModuleType],
) -> None:
    bench = load_script("bench_namo")

    def run(seconds: float, stacks: Any = None) -> dict[str, Any]:
        out: dict[str, Any] = {"compute_time_s": seconds, "success": False}
        if stacks is not None:
            out["past_timeout_stacks"] = stacks
        return out

    rows = [
        {"task": 0, "seed": 0, "pure": run(10.0), "camp": run(60.04),
         "stilman": run(60.6, [["tamp.py:870:_ways_ahead <- stilman.py:185:_clear", 41]])},
        {"task": 1, "seed": 2, "pure": run(60.2), "camp": run(3.0), "stilman": run(60.0)},
    ]  # fmt: skip
    lines = bench._late_runs(rows, 60.0)
    assert len(lines) == 2  # 0.04 s past is within LATE_S
    assert lines[0].startswith("stilman on task 0 (seed 0) returned 0.60 s past its 60 s")
    assert "tamp.py:870:_ways_ahead" in lines[0] and "(41 samples)" in lines[0]
    assert (
        lines[1].startswith("pure on task 1 (seed 2) returned 0.20 s") and "not sampled" in lines[1]
    )


def test_the_selector_mode_runs_the_camp_method_on_fresh_draws_and_reports_the_noise(
    tmp_path: Path,
    load_script: Callable[[str], ModuleType],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from camp_planner.domains import get_domain

    bench = load_script("bench_namo")
    bundle = tmp_path / "selector.pt"
    bundle.write_bytes(b"one")
    seen: list[tuple[int, int, Any]] = []
    stop_at = [99]
    # Per task: pure planning's time with planner seeds 0 and 1, and CAMP's. Task 0's
    # pure runs differ 2×, so CAMP's 2.7× (4 s ÷ the median 1.5 s) is within 1.5 × that
    # noise; task 1's are equal, so CAMP's 2× is beyond 1.5 × max(1, 1).
    times = {0: ([1.0, 2.0], 4.0), 1: ([1.0, 1.0], 2.0)}

    def fake_measure(
        pipe: Any, args: Any, overrides: Any, i: int, task: Any, ctx: Any, seed: int,
        camp_run: Any = None,
    ) -> dict[str, Any]:  # fmt: skip
        if len(seen) == stop_at[0]:
            raise KeyboardInterrupt
        # The selector picks the context as it runs: none is chosen beforehand.
        assert ctx is None and camp_run is not None
        seen.append((i, seed, task))
        pure, camp = times[i]

        def run(t: float) -> dict[str, Any]:
            return {"compute_time_s": t, "success": True, "outcome": "goal"}

        return {"task": i, "seed": seed, "context": f"room {i}", "ratio": pure[seed] / camp,
                "pure": run(pure[seed]), "camp": run(camp), "stilman": run(1.0)}  # fmt: skip

    monkeypatch.setattr(bench, "_measure", fake_measure)
    monkeypatch.setattr(
        bench, "selector_method", lambda pipe, path, overrides, timeout: (lambda t, s: 0, path)
    )
    monkeypatch.setattr(bench, "checks_per_second", lambda *a, **k: 1.0)
    monkeypatch.setattr(bench, "fresh_checks_per_second", lambda *a, **k: 1.0)
    out = tmp_path / "bench.json"
    art = tmp_path / "art"
    argv = ["--context", "selector", "--bundle", str(bundle), "--task-seed", "77", "--tasks",
            "2", "--repeats", "2", "--artifacts", str(art), "--json", str(out)]  # fmt: skip
    assert bench.main(argv) == 0
    # The tasks are the generator's draw for seed 77, not the configuration's.
    namo = get_domain("namo")
    config = namo.default_config()
    config["seed"], config["tasks"]["test"] = 77, 2
    assert [task for _, seed, task in seen if seed == 0] == list(namo.make_tasks(config, "test"))
    summary = json.loads(out.read_text())["summary"]
    assert (summary["context"], summary["task_seed"]) == ("selector", 77)
    assert summary["bundle"] == str(bundle)
    noise = summary["replanning_noise"]
    assert [t["noise"] for t in noise["tasks"]] == [2.0, 1.0]
    assert [t["camp_slower_beyond_noise"] for t in noise["tasks"]] == [False, True]
    assert noise["tasks_camp_slower_beyond_noise"] == 1
    printed = capsys.readouterr().out
    assert "   0    0  room 0 " in printed  # the selector's context, per run
    assert (
        "CAMP more than 1.5× slower than pure planning beyond the replanning noise on 1 of 2 "
        "tasks" in printed
    )

    # The checkpoint is keyed on the mode, the bundle's bytes and the task seed.
    def measured(args: list[str], stop: int = 99) -> int:
        seen.clear()
        stop_at[0] = stop
        code = bench.main(args)
        return len(seen) if code == 0 else -len(seen)

    assert measured(argv, stop=1) == -1  # one run kept in the checkpoint
    assert measured([*argv[:5], "78", *argv[6:]]) == 4  # another task seed: nothing resumed
    bundle.write_bytes(b"two")
    assert measured(argv) == 4  # another selector: nothing resumed
    bundle.write_bytes(b"one")
    assert measured(argv) == 3  # the same: the kept run is not measured again


def test_the_replanning_noise_needs_two_runs_of_a_task(
    load_script: Callable[[str], ModuleType],
) -> None:
    bench = load_script("bench_namo")

    def row(task: int, seed: int, pure: float, camp: float) -> dict[str, Any]:
        return {"task": task, "seed": seed, "pure": {"compute_time_s": pure},
                "camp": {"compute_time_s": camp}}  # fmt: skip

    assert bench.replanning_noise([row(0, 0, 1.0, 9.0)], 0) is None
    # Seeds 3 and 4 of task 0 (the first seed of a replicate); task 1 ran once: left out.
    rows = [row(0, 3, 2.0, 3.0), row(0, 4, 1.0, 3.0), row(1, 3, 1.0, 9.0)]
    noise = bench.replanning_noise(rows, 3)
    (task,) = noise["tasks"]
    assert (task["pure_seed_ratio"], task["noise"]) == (2.0, 2.0)
    assert task["camp_over_pure"] == pytest.approx(2.0) and task["limit"] == 3.0
    assert noise["tasks_camp_slower_beyond_noise"] == 0
    # A pure run that took no time at all is a ratio, not a division error.
    assert bench.replanning_noise([row(0, 0, 0.0, 1.0), row(0, 1, 1.0, 1.0)], 0)["tasks"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--bundle", "selector.pt"],  # the bundle is the selector mode's
        ["--task-seed", "5", "--split", "train"],  # the seed draws test tasks
        ["--task-seed", "x"],
        ["--task-seed", "-1"],
    ],
)
def test_selector_and_task_seed_arguments_are_checked(
    argv: list[str], load_script: Callable[[str], ModuleType]
) -> None:
    bench = load_script("bench_namo")
    with pytest.raises(SystemExit) as exit_:
        bench.main(argv)
    assert exit_.value.code == 2


@pytest.mark.slow
@pytest.mark.pybullet
def test_the_shipped_selector_plans_a_fresh_task(
    tmp_path: Path, load_script: Callable[[str], ModuleType]
) -> None:
    from camp_planner.learning.bundle import shipped_bundle

    assert shipped_bundle("namo", "tamp") is not None, "the package ships a NAMO bundle"
    bench = load_script("bench_namo")
    out = tmp_path / "bench.json"
    argv = ["--context", "selector", "--task-seed", "1000", "--tasks", "1", "--timeout", "10",
            "--artifacts", str(tmp_path / "art"), "--json", str(out)]  # fmt: skip
    assert bench.main(argv) == 0
    (row,) = json.loads(out.read_text())["rows"]
    # The full CAMP method ran: its first context is recorded, and the context it ended in.
    assert row["camp"]["first_context"] and row["context"] != "?"
    assert row["pure"]["success"] in (True, False) and row["camp"]["compute_time_s"] > 0
