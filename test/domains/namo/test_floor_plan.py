"""Floor plans, the user's building as a world file (docs/your-building.md): any plan the
grid can hold loads, and every task it gives has its doorways, start and goal rooms and no
box in the goal room; a plan it cannot hold is refused by the field that breaks it; a scene
of the building reads back as the building, and one whose doorway moved is refused."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from building_files import BUILDING, load_world_data, write_building
from hypothesis import given
from hypothesis import strategies as st

from camp_planner.config import load_config, load_world_file
from camp_planner.core.errors import CampError
from camp_planner.domains import get_domain
from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.namo.domain import world_settings
from camp_planner.domains.namo.layout import layout
from camp_planner.domains.namo.scene_io import scene_from_task, task_from_scene
from camp_planner.domains.namo.world import NamoSettings

D = get_domain("namo")


def _neighbours(grid: int) -> list[tuple[int, int]]:
    n = grid * grid
    return [(r, r + 1) for r in range(n) if r % grid != grid - 1] + [
        (r, r + grid) for r in range(n - grid)
    ]


@st.composite
def floor_plans(draw: st.DrawFn) -> dict[str, Any]:
    """A world file's contents with a valid floor plan: every room joined by a spanning
    tree of doorways (plus extra ones), each somewhere along its wall or in its middle."""
    grid = draw(st.integers(2, 4))
    room_size = draw(st.floats(2.0, 5.0))
    settings = NamoSettings(grid=grid, room_size=room_size)
    low, high = settings.door_span()
    parent = list(range(grid * grid))

    def find(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    doors = []
    for a, b in draw(st.permutations(_neighbours(grid))):
        if find(a) != find(b) or draw(st.booleans()):
            parent[find(a)] = find(b)
            door: dict[str, Any] = {"rooms": draw(st.permutations([a, b]))}
            if draw(st.booleans()):
                door["at"] = draw(st.floats(low, high))
            doors.append(door)
    start, goal = draw(
        st.lists(st.integers(0, grid * grid - 1), min_size=2, max_size=2, unique=True)
    )
    return {
        "domain": "namo",
        "world": {
            "grid": grid,
            "room_size": room_size,
            "doors": doors,
            "start_room": start,
            "goal_room": goal,
        },
        "contexts": {"required_values": [start, goal], "max_domain_size": 16},
        "tasks": {"train": 2, "test": 1},
    }


@given(floor_plans())
def test_every_valid_floor_plan_loads_and_its_tasks_are_that_building(
    data: dict[str, Any],
) -> None:
    name, config = load_world_data(data)
    plan = data["world"]
    settings = world_settings(config)
    assert name == "namo" and D.is_world_file(config) and D.world_name(config) == "building"
    assert (settings.start_room, settings.goal_room) == (plan["start_room"], plan["goal_room"])
    assert layout(settings.grid, settings.goal_room).box_rooms == tuple(
        r for r in range(settings.n_rooms) if r != settings.goal_room
    )
    pairs = sorted(tuple(sorted(d["rooms"])) for d in plan["doors"])
    for task in D.make_tasks(config, "train"):
        assert sorted((d.a, d.b) for d in task.doors) == pairs
        assert task.room_of(*task.start[:2]) == plan["start_room"]
        assert task.room_of(*task.goal) == plan["goal_room"]
        assert all(box.room != plan["goal_room"] for box in task.boxes)
        for door in task.doors:  # a doorway is open: no wall covers its centre
            assert not any(
                x0 <= door.x <= x1 and y0 <= door.y <= y1 for x0, y0, x1, y1 in task.walls()
            )
        assert D.features(task).shape[0] == 4


def _break(data: dict[str, Any], how: str) -> str:
    """Break ``data``'s plan in place one way; the error the break must be refused with."""
    world = data["world"]
    g, doors = world["grid"], world["doors"]
    start, goal = world["start_room"], world["goal_room"]
    if how == "diagonal":
        doors.append({"rooms": [0, g + 1]})
        return rf"world\.doors\[{len(doors) - 1}\] \(rooms 0 and {g + 1}\): the rooms share no wall"
    if how == "twice":
        doors.append({"rooms": list(reversed(doors[0]["rooms"]))})
        return rf"world\.doors\[{len(doors) - 1}\] .*a second doorway"
    if how == "off the wall":
        doors[0]["at"] = world["room_size"]
        return r"world\.doors\[0\] .*at must be from"
    if how == "unknown key":
        doors[0]["width"] = 1.0
        return r"world\.doors\[0\]: unknown key 'width'"
    if how == "no such room":
        world["goal_room"] = g * g
        return r"world\.goal_room must be a room of the"
    if how == "same room":
        world["goal_room"] = start
        return r"world\.goal_room is the start room"
    if how == "unreachable":
        world["doors"] = [d for d in doors if goal not in d["rooms"]]
        if not world["doors"]:
            return r"world\.doors must be a list of doorways"
        return rf"world\.goal_room {goal} cannot be reached from world\.start_room {start}"
    if how == "room size":
        world["room_size"] = 9.0
        return r"world\.room_size must be from 2 to 8"
    if how == "rooms without doors":
        del world["doors"]
        return r"world\.start_room needs world\.doors"
    assert how == "contexts"
    data["contexts"]["required_values"] = [start]
    return rf"contexts\.required_values to \[{start}, {goal}\]"


BREAKS = [
    "diagonal",
    "twice",
    "off the wall",
    "unknown key",
    "no such room",
    "same room",
    "unreachable",
    "room size",
    "rooms without doors",
    "contexts",
]


@given(floor_plans(), st.sampled_from(BREAKS))
def test_a_floor_plan_the_grid_cannot_hold_is_refused_by_its_field(
    data: dict[str, Any], how: str
) -> None:
    message = _break(data, how)
    with pytest.raises(CampError, match=message) as refused:
        load_world_data(data)
    assert "building.yaml" in str(refused.value)  # and by its file


def test_a_configuration_without_a_floor_plan_is_no_world_file(tmp_path: Path) -> None:
    path = tmp_path / "cluttered.yaml"
    path.write_text("domain: namo\nworld: {fill_prob: 0.8}\n")
    with pytest.raises(CampError, match="not a world file"):
        load_world_file(path)
    path.write_text("world: {fill_prob: 0.8}\n")
    with pytest.raises(CampError, match="must name its domain"):
        load_world_file(path)
    # Drawn worlds keep their settings, their name and their doors drawn per task.
    config = load_config(D, path)
    assert not D.is_world_file(config) and D.world_name(config) is None
    assert world_settings(config).plan is None


def test_a_scene_of_the_building_reads_back_and_a_moved_doorway_is_refused(
    tmp_path: Path,
) -> None:
    _, config = load_world_file(write_building(tmp_path))
    settings = world_settings(config)
    task = D.make_tasks(config, "test")[0]
    read, _ = task_from_scene(scene_from_task(task), settings)
    assert read.doors == task.doors and read.boxes == task.boxes
    # The same boxes in a building whose doorway 0-1 stands elsewhere along its wall.
    moved = BUILDING.replace("{rooms: [0, 1], at: 1.2}", "{rooms: [0, 1], at: 2.3}")
    _, other = load_world_file(write_building(tmp_path, moved))
    elsewhere = D.make_tasks(other, "test")[0]
    with pytest.raises(ServiceError) as refused:
        task_from_scene(scene_from_task(elsewhere), settings)
    assert refused.value.code == ErrorCode.INVALID_SCENE
    assert re.search(r"wall '.*' is not a wall .* the floor plan's doorways", refused.value.message)
