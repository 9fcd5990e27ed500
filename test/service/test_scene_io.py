"""NAMO scenes ↔ tasks: a perceived scene round-trips, and every malformed scene is refused
with its named error code."""

from __future__ import annotations

import dataclasses
import math

import pytest

from camp_planner.domains.namo.scene_io import scene_from_task, task_from_scene
from camp_planner.domains.namo.world import NamoSettings, generate_task
from camp_planner.service.errors import ErrorCode, ServiceError
from camp_planner.service.scene import Scene, SceneObject


def _close(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(math.isclose(x, y, abs_tol=1e-9) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize(("seed", "grid"), [*((s, 3) for s in range(12)), (0, 4), (1, 5)])
def test_scene_round_trips_to_the_same_task(seed: int, grid: int) -> None:
    settings = NamoSettings(grid=grid)
    task = generate_task(seed, seed, settings)
    back, slot_of = task_from_scene(scene_from_task(task), settings)
    assert sorted((d.a, d.b) for d in back.doors) == sorted((d.a, d.b) for d in task.doors)
    for d in task.doors:
        twin = next(e for e in back.doors if (e.a, e.b) == (d.a, d.b))
        assert math.isclose(d.x, twin.x, abs_tol=1e-6) and math.isclose(d.y, twin.y, abs_tol=1e-6)
    assert sorted(back.boxes, key=lambda b: b.name) == sorted(task.boxes, key=lambda b: b.name)
    assert all(
        _close(w, v) for w, v in zip(sorted(task.walls()), sorted(back.walls()), strict=True)
    )
    assert slot_of == {b.name: b.name for b in task.boxes}
    assert _close(back.start, task.start) and _close(back.goal, task.goal)


def test_foreign_box_ids_get_slots_of_their_room() -> None:
    task = generate_task(3, 3)
    scene = scene_from_task(task)
    renamed = tuple(
        dataclasses.replace(o, id=f"crate-{i}") if o.object_class == "box" else o
        for i, o in enumerate(scene.objects)
    )
    back, slot_of = task_from_scene(dataclasses.replace(scene, objects=renamed))
    assert len(slot_of) == len(task.boxes)
    for box in back.boxes:
        assert box.name.startswith(f"box_r{box.room}_")


def _scene() -> Scene:
    return scene_from_task(generate_task(5, 5))


def _code(scene: Scene) -> ErrorCode:
    with pytest.raises(ServiceError) as info:
        task_from_scene(scene)
    assert info.value.message
    return info.value.code


def _box(scene: Scene) -> SceneObject:
    return next(o for o in scene.objects if o.object_class == "box")


def test_malformed_scenes_get_named_errors() -> None:
    s = _scene()
    assert _code(dataclasses.replace(s, robot_pose=(math.nan, 1.0, 0.0))) == ErrorCode.INVALID_SCENE
    inf_box = dataclasses.replace(_box(s), pose=(math.inf, 1.0, 0.0))
    objs = tuple(inf_box if o.id == inf_box.id else o for o in s.objects)
    assert _code(dataclasses.replace(s, objects=objs)) == ErrorCode.INVALID_SCENE
    assert _code(dataclasses.replace(s, objects=())) == ErrorCode.EMPTY_SCENE
    assert _code(dataclasses.replace(s, goal_object_id="")) == ErrorCode.MISSING_GOAL
    assert _code(dataclasses.replace(s, goal_object_id="mug")) == ErrorCode.UNKNOWN_OBJECT
    outside = dataclasses.replace(s, goal_object_id="", goal_xy=(20.0, 20.0))
    assert _code(outside) == ErrorCode.UNREACHABLE_GOAL
    wrong_room = dataclasses.replace(s, goal_object_id="", goal_xy=(4.5, 1.5))
    assert _code(wrong_room) == ErrorCode.UNREACHABLE_GOAL
    twice = dataclasses.replace(s, objects=(*s.objects, _box(s)))
    assert _code(twice) == ErrorCode.INVALID_SCENE
    table = SceneObject("table", "table", (1.5, 1.5, 0.0), (0.8, 0.8, 0.7), False)
    assert _code(dataclasses.replace(s, objects=(*s.objects, table))) == ErrorCode.INVALID_SCENE
    no_walls = tuple(o for o in s.objects if o.object_class != "wall")
    assert _code(dataclasses.replace(s, objects=no_walls)) == ErrorCode.INVALID_SCENE


def test_a_room_with_too_many_boxes_is_refused() -> None:
    s = _scene()
    extra = tuple(
        SceneObject(f"extra{k}", "box", (3.3 + 0.4 * k, 0.5, 0.0), (0.3, 0.3, 0.7), True)
        for k in range(6)
    )
    assert _code(dataclasses.replace(s, objects=(*s.objects, *extra))) == ErrorCode.INVALID_SCENE


def test_walls_that_close_every_doorway_make_the_goal_unreachable() -> None:
    s = _scene()
    walls = [o for o in s.objects if o.object_class != "wall"]
    size = 9.0
    for k in (1, 2):  # full walls across the grid: no doorway anywhere
        walls.append(
            SceneObject(f"v{k}", "wall", (3.0 * k, size / 2, 0.0), (0.1, size, 1.0), False)
        )
        walls.append(
            SceneObject(f"h{k}", "wall", (size / 2, 3.0 * k, 0.0), (size, 0.1, 1.0), False)
        )
    assert _code(dataclasses.replace(s, objects=tuple(walls))) == ErrorCode.UNREACHABLE_GOAL
