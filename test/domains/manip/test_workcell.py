"""Work cells, the user's tables and bins as a manipulation world file
(docs/your-building.md): any cell within the documented ranges loads, and every task and scene
it gives has those tables and bins; a cell the robot cannot work is refused by the field that
breaks it; the paper's configurations stay as they were."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml
from building_files import WORKCELL, load_world_data, write_workcell
from hypothesis import given, settings
from hypothesis import strategies as st

from camp_planner.config import load_config, load_world_file
from camp_planner.core.errors import CampError
from camp_planner.domains import get_domain
from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.manip.domain import world_settings
from camp_planner.domains.manip.scene_io import scene_from_task, task_from_scene

D = get_domain("manip")
CONFIG = Path(__file__).parents[3] / "config" / "manip"


@st.composite
def workcells(draw: st.DrawFn) -> dict[str, Any]:
    """A world file within the ranges docs/your-building.md gives (sizes in centimetres,
    so that the drawn values are the round numbers a user writes)."""
    cm = lambda lo, hi: draw(st.integers(lo, hi)) / 100  # noqa: E731
    inner = cm(17, 20)
    return {
        "domain": "manip",
        "world": {
            "n_distractors": draw(st.integers(0, 15)),
            "tables": {
                "height": cm(50, 70),
                "left_gap": cm(45, 80),
                "right_gap": cm(45, 80),
                "staging_depth": cm(18, 30),
            },
            "bins": {
                "per_side": draw(st.integers(2, 3)),
                "inner": inner,
                "pitch": round(inner + cm(2, 6), 2),
                "margin": cm(0, 10),
            },
        },
        "tasks": {"train": 2, "test": 1},
    }


@settings(max_examples=30, deadline=None)
@given(workcells())
def test_every_valid_work_cell_loads_and_its_tasks_and_scenes_are_that_cell(
    data: dict[str, Any],
) -> None:
    name, config = load_world_data(data)
    tables, bins = data["world"]["tables"], data["world"]["bins"]
    assert name == "manip" and D.is_world_file(config) and D.world_name(config) == "workcell"
    cell = world_settings(config)
    for task in D.make_tasks(config, "train"):
        left, right = task.tables
        assert left.height == right.height == tables["height"]
        assert left.x1 == pytest.approx(-tables["left_gap"])
        assert right.x0 == pytest.approx(tables["right_gap"])
        assert len(task.bins) == len(task.occupied) == bins["per_side"] ** 2
        assert all(b.inner == bins["inner"] for b in task.bins)
        xs = sorted({round(b.x, 6) for b in task.bins})
        assert all(b - a == pytest.approx(bins["pitch"]) for a, b in itertools.pairwise(xs))
        # Every bin and staging spot stands on the bins' table, beyond the strip for bins.
        for b in task.bins:
            h = b.inner / 2 + b.wall - 1e-9  # margin 0: a bin's wall flush with the edge
            assert right.x0 + tables["staging_depth"] <= b.x - h and b.x + h <= right.x1
            assert right.y0 <= b.y - h and b.y + h <= right.y1
        assert all(right.y0 < y < right.y1 for _, y in task.staging_spots())
        assert len(task.reds) == 2 and len(task.distractors) == data["world"]["n_distractors"]
        assert all(o.z == tables["height"] for o in task.reds + task.distractors)
        assert D.features(task).shape[0] == 1 + bins["per_side"] ** 2
        read, _ = task_from_scene(scene_from_task(task), cell)
        assert read.tables == task.tables and read.bins == task.bins
        assert read.occupied == task.occupied


def _with(**changes: str) -> str:
    """The test work cell with some ``section.key: value`` lines changed."""
    data = yaml.safe_load(WORKCELL)
    for dotted, value in changes.items():
        section, key = dotted.split("__")
        data["world"][section][key] = yaml.safe_load(value)
    return yaml.safe_dump(data)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_with(bins__per_side="1"), "world.bins.per_side 1 gives 1 bin, too few for the 2 reds"),
        (_with(bins__per_side="4"), "world.bins.per_side 4 gives 16 bins.*max_domain_size 10"),
        (
            _with(bins__per_side="2.5"),
            r"world.bins.per_side. in .* should be a whole number, got 2.5",
        ),
        (_with(bins__pitch="0.15"), "world.bins.pitch 0.15 m is less than a bin's outer width"),
        (_with(bins__inner="0.12"), r"world.bins.inner must be from 0.17 to 0.3 m, got 0.12"),
        (_with(tables__height="0.9"), r"world.tables.height must be from 0.5 to 0.7 m"),
        (_with(tables__left_gap="0.3"), r"world.tables.left_gap must be from 0.45"),
        (
            _with(
                tables__right_gap="1.5", bins__per_side="3", bins__pitch="0.3", bins__margin="0.3"
            ),
            r"world.tables.right_gap 1.5 m: table_right .* does not fit on the floor",
        ),
        (
            _with(bins__per_side="3", bins__pitch="0.5", bins__margin="0.3"),
            r"world.bins \(a bin\) at .* is out of the arm's reach",
        ),
        (_with(tables__colour="'red'"), "unknown setting 'world.tables.colour'"),
        ("domain: manip\nworld: {n_distractors: 30}\n", "not a world file"),
    ],
)
def test_a_work_cell_the_robot_cannot_work_is_refused_by_its_field(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(CampError, match=message):
        load_world_file(write_workcell(tmp_path, text))


def test_the_papers_configurations_keep_their_settings_and_ship_their_bundle(
    tmp_path: Path,
) -> None:
    for path in (None, *sorted(CONFIG.glob("*.yaml"))):
        config = load_config(D, path)
        if path is not None and path.name == "cluttered.yaml":  # the paper's clutter (issue 64)
            assert config["world"] == {"n_distractors": 15, "red_cells": "any"}
            assert not D.is_world_file(config) and D.world_name(config) == "cluttered"
            continue
        assert config["world"] == {"n_distractors": 15}
        assert not D.is_world_file(config) and D.world_name(config) is None
    # The paper's cell given as a world file is a world file, with the paper's geometry.
    paper = "domain: manip\nworld: {bins: {per_side: 3}}\n"
    _, config = load_world_file(write_workcell(tmp_path, paper))
    assert world_settings(config) == world_settings(load_config(D, None))


def test_a_scene_of_another_cell_is_refused_naming_the_bins(tmp_path: Path) -> None:
    _, config = load_world_file(write_workcell(tmp_path))
    _, paper = load_world_file(
        write_workcell(tmp_path, "domain: manip\nworld: {bins: {per_side: 3}}\n")
    )
    task = D.make_tasks(paper, "test")[0]
    with pytest.raises(ServiceError) as refused:
        task_from_scene(scene_from_task(task), world_settings(config))
    assert refused.value.code == ErrorCode.INVALID_SCENE
