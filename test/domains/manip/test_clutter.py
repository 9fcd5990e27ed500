"""The cluttered manipulation world (``world.red_cells: any``, config/manip/cluttered.yaml,
issue 64): the default world and its configuration keys are untouched, the option puts reds
on inner cells among blues, generation keeps only layouts whose every red can be picked, and
a red whose side grasps the blues block is planned to the goal."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from camp_planner.config import load_config
from camp_planner.core.errors import CampError
from camp_planner.domains.manip.domain import ManipDomain, world_settings
from camp_planner.domains.manip.world import (
    ManipSettings,
    ManipTask,
    cell_of,
    generate_task,
    make_tasks,
)

DOMAIN = ManipDomain()
CONFIGS = Path(__file__).parents[3] / "config" / "manip"
ANY = ManipSettings(red_cells="any")


def _inner(task: ManipTask, cell: tuple[int, int]) -> bool:
    n = task.settings.cells_per_side
    return 0 < cell[0] < n - 1 and 0 < cell[1] < n - 1


def _blue_neighbours(task: ManipTask, cell: tuple[int, int]) -> int:
    """Blues in the eight cells around ``cell``."""
    blues = {cell_of(task, b) for b in task.distractors}
    i, j = cell
    return sum((i + di, j + dj) in blues for di in (-1, 0, 1) for dj in (-1, 0, 1) if di or dj)


def test_the_default_world_and_its_configurations_are_unchanged() -> None:
    # The option is off unless a file gives it, and then absent from the configuration that
    # every cache and bundle key is hashed from.
    assert ManipSettings().red_cells == "outer"
    for config in (DOMAIN.default_config(), load_config(DOMAIN, CONFIGS / "reduced.yaml")):
        assert "red_cells" not in config["world"]
        assert world_settings(config) == ManipSettings()
        assert DOMAIN.world_name(config) is None  # the shipped selector's world
    # Naming the default explicitly draws the very same tasks, every red on an outer cell.
    tasks = make_tasks("train", 50)
    assert make_tasks("train", 50, settings=ManipSettings(red_cells="outer")) == tasks
    n = ManipSettings().cells_per_side
    cells = [cell_of(t, r) for t in tasks for r in t.reds]
    assert all(min(c) == 0 or max(c) == n - 1 for c in cells)


def test_reds_anywhere_stand_on_inner_cells_among_blues_and_keep_the_features() -> None:
    tasks = make_tasks("train", 20, settings=ANY)
    inner = [(t, cell_of(t, r)) for t in tasks for r in t.reds if _inner(t, cell_of(t, r))]
    assert len(inner) >= 5  # 9 of the 25 cells are inner: about 14 of 40 reds
    assert all(_blue_neighbours(t, c) >= 3 for t, c in inner[:5])
    # The red radius and the bins (what the selector sees) are drawn as in the default world.
    assert [t.features() for t in tasks] == [t.features() for t in make_tasks("train", 20)]
    # An accept test that refuses a draw gets the next draw of the same task's stream.
    refused: list[ManipTask] = []

    def once(task: ManipTask) -> bool:
        refused.append(task)
        return len(refused) > 1

    again = generate_task(0, 0, ANY, accept=once)
    assert again != refused[0] and again.features() == refused[0].features()
    with pytest.raises(ValueError, match="no draw"):
        generate_task(0, 0, ANY, accept=lambda task: False)


def test_the_cluttered_configuration_names_its_world() -> None:
    config = load_config(DOMAIN, CONFIGS / "cluttered.yaml")
    assert world_settings(config).red_cells == "any"
    assert DOMAIN.world_name(config) == "cluttered"  # no selector of the paper world for it
    bad = {**config, "world": {**config["world"], "red_cells": "inner"}}
    with pytest.raises(CampError, match=r"world\.red_cells must be one of outer, any"):
        world_settings(bad)


@pytest.mark.pybullet
def test_cluttered_tasks_keep_only_layouts_where_every_red_can_be_picked() -> None:
    from camp_planner.domains.manip.clutter import every_red_graspable

    config = load_config(DOMAIN, CONFIGS / "cluttered.yaml")
    tasks = DOMAIN.make_tasks(config, "test")
    assert len(tasks) == 10 and all(every_red_graspable(t) for t in tasks)
    assert any(_inner(t, cell_of(t, r)) for t in tasks for r in t.reds)
    # Their first draws are not all kept: a fat red on an inner cell has no top grasp, and
    # its blue neighbours block the side grasps.
    first = make_tasks("test", 10, settings=ANY)
    assert [t.features() for t in first] == [t.features() for t in tasks]
    assert not all(every_red_graspable(t) for t in first)


@pytest.mark.pybullet
@pytest.mark.fast_downward
def test_a_red_whose_side_grasps_blues_block_is_planned_to_the_goal() -> None:
    from camp_planner.core.objective import run_episode
    from camp_planner.core.planner import Deadline
    from camp_planner.domains.manip.mdp import ManipMDP
    from camp_planner.planners.tamp import TAMP, InterfaceSettings

    config = load_config(DOMAIN, CONFIGS / "cluttered.yaml")
    tasks = [t for t in DOMAIN.make_tasks(config, "test") if not t.fat]
    found = None
    for task in tasks:
        mdp = ManipMDP.from_task(task)
        for red in task.reds:
            iface = mdp.tamp_interface(mdp.initial_state(), None, 0, InterfaceSettings())
            refused = iface.refine(("pick-side", red.name), Deadline(30.0))
            if not refused.ok and "blue_" in refused.reason:
                found = (task, red, refused)
                break
        mdp.close()
        if found:
            break
    assert found is not None, "no skinny red with every side grasp blocked by blues"
    task, red, refused = found
    assert _inner(task, cell_of(task, red))
    assert refused.facts == [f"(blocked {red.name} side)"]  # what the task planner learns
    mdp = ManipMDP.from_task(task)
    result = run_episode(
        mdp, TAMP(seed=0), lam=100.0, timeout_s=60.0, rng=random.Random(0), camp=None
    )
    assert result.success and result.outcome == "goal"
    picks = {str(a[2]): str(a[3]) for a in result.actions if a[0] == "pick"}
    assert picks[red.name] == "top" and any(a[0] == "regrasp" for a in result.actions)
    # The plan holds in a fresh simulator of the full world, every blue present.
    full = ManipMDP.from_task(task)
    state = full.initial_state()
    for action, expected in zip(result.actions, result.states[1:], strict=True):
        state = full.step(state, action)
        assert state == expected
    assert full.is_terminal(state)
    full.close()
    mdp.close()
