"""A world file (the user's building, docs/your-building.md) as the ROS ``world``: the file
is the nodes' configuration, its bundle the one ``camp train --world`` wrote beside it, a
file of another domain or with a broken floor plan refused by name; at the end, a building
that ships with nothing goes from YAML to a plan over ROS."""

from __future__ import annotations

from pathlib import Path

import pytest
from building_files import BUILDING, write_building

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


@pytest.mark.pybullet
@pytest.mark.fast_downward
@pytest.mark.slow
def test_a_building_goes_from_its_world_file_to_a_plan_over_ros(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # the nodes' artifacts and renders land here
    world = write_building(tmp_path)
    train = ["train", "--world", str(world), "--planner", "tamp", "--workers", "1"]
    assert main([*train, "--artifacts", str(tmp_path / "artifacts")]) == 0
    out = capsys.readouterr().out
    assert f"world bundle: {tmp_path / 'building.pt'}" in out
    assert (tmp_path / "building.pt").is_file()
    bringup = ["bringup", "namo", "--world", str(world), "--task", "0"]
    assert main([*bringup, "--once", "--wait", "300"]) == 0
    out = capsys.readouterr().out
    assert "goal reached: True" in out and "[bringup] context:" in out
    assert list((tmp_path / "artifacts" / "ros").glob("namo_execution_*.png"))
