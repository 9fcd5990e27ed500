"""A world file (the user's building or work cell, docs/your-building.md) as the ROS
``world``: the file is the nodes' configuration, its bundle the one ``camp train --world``
wrote beside it, a file of another domain, with a broken floor plan or a cell the robot
cannot work refused by name; at the end, a building and a work cell that ship with nothing
each go from YAML to a plan over ROS."""

from __future__ import annotations

from pathlib import Path

import pytest
from building_files import BUILDING, WORKCELL, write_building, write_workcell

from camp_planner.cli import main
from camp_planner.core.errors import CampError

pytestmark = [pytest.mark.ros]


def test_a_world_file_is_its_own_configuration_and_its_bundle_lies_beside_it(
    tmp_path: Path,
) -> None:
    from camp_planner.ros.common import bundle_path, config_path
    from camp_planner.ros.worlds import check_world

    world = str(write_building(tmp_path))
    assert check_world("namo", world) == world
    assert config_path("namo", world, "") == Path(world)
    # Nothing trained yet: no bundle, and none shipped for a building is looked for.
    assert bundle_path("namo", world, "") is None
    (tmp_path / "building.pt").write_bytes(b"")
    assert bundle_path("namo", world, "") == tmp_path / "building.pt"
    assert bundle_path("namo", world, str(tmp_path / "b.pt")) == tmp_path / "b.pt"
    assert bundle_path("namo", world, "none") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BUILDING.replace("domain: namo", "domain: manip"), "is a 'manip' world, not namo"),
        (BUILDING.replace("[4, 7]", "[4, 8]"), r"world\.doors\[6\] \(rooms 4 and 8\)"),
        (BUILDING.replace("    - {rooms: [4, 7]}\n", ""), "world.goal_room 4 cannot be reached"),
        ("domain: namo\nworld: {fill_prob: 0.8}\n", "not a world file"),
    ],
)
def test_a_world_that_is_no_valid_building_is_refused_by_name(
    tmp_path: Path, text: str, message: str
) -> None:
    from camp_planner.ros.common import config_path

    world = str(write_building(tmp_path, text))
    with pytest.raises(CampError, match=message):
        config_path("namo", world, "")
    with pytest.raises(CampError, match="cannot read"):
        config_path("namo", str(tmp_path / "missing.yaml"), "")


def test_a_work_cell_file_is_its_own_configuration_and_its_bundle_lies_beside_it(
    tmp_path: Path,
) -> None:
    from camp_planner.ros.common import bundle_path, config_path

    world = str(write_workcell(tmp_path))
    assert config_path("manip", world, "") == Path(world)
    # Nothing trained yet: no bundle, and not the paper's cell's shipped one (its 9 bins).
    assert bundle_path("manip", world, "") is None
    (tmp_path / "workcell.pt").write_bytes(b"")
    assert bundle_path("manip", world, "") == tmp_path / "workcell.pt"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (WORKCELL.replace("domain: manip", "domain: namo"), "is a 'namo' world, not manip"),
        (WORKCELL.replace("pitch: 0.22", "pitch: 0.12"), "world.bins.pitch 0.12 m is less"),
    ],
)
def test_a_work_cell_the_robot_cannot_work_is_refused_by_name(
    tmp_path: Path, text: str, message: str
) -> None:
    from camp_planner.ros.common import config_path

    with pytest.raises(CampError, match=message):
        config_path("manip", str(write_workcell(tmp_path, text)), "")


def _goes_to_a_plan_over_ros(domain: str, world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``camp train --world`` writes the bundle beside ``world``, and ``camp bringup
    --world`` plans test task 0 with it and executes the plan to the goal."""
    folder = world.parent
    train = ["train", "--world", str(world), "--planner", "tamp", "--workers", "1"]
    assert main([*train, "--artifacts", str(folder / "artifacts")]) == 0
    out = capsys.readouterr().out
    assert f"world bundle: {world.with_suffix('.pt')}" in out
    assert world.with_suffix(".pt").is_file()
    bringup = ["bringup", domain, "--world", str(world), "--task", "0"]
    assert main([*bringup, "--once", "--wait", "300"]) == 0
    out = capsys.readouterr().out
    assert "goal reached: True" in out and "[bringup] context:" in out
    assert list((folder / "artifacts" / "ros").glob(f"{domain}_execution_*.png"))


@pytest.mark.pybullet
@pytest.mark.fast_downward
@pytest.mark.slow
def test_a_building_goes_from_its_world_file_to_a_plan_over_ros(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # the nodes' artifacts and renders land here
    _goes_to_a_plan_over_ros("namo", write_building(tmp_path), capsys)


@pytest.mark.pybullet
@pytest.mark.fast_downward
@pytest.mark.slow
def test_a_work_cell_goes_from_its_world_file_to_a_plan_over_ros(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    # Two bins a side, six distractors: a cell that ships with nothing, not even the
    # paper's manipulation bundle (its nine bins' features).
    _goes_to_a_plan_over_ros("manip", write_workcell(tmp_path), capsys)
