"""Manipulation tasks to and from perceived scenes (``domains/manip/scene_io.py``): a task's
scene is that task again, and every scene the model cannot represent is refused with a named
error code and a message naming the object and what the model allows."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.interface.scene import Pose, Scene, SceneObject
from camp_planner.domains.manip.layout import ABSENT, HELD, NONE, TABLE, bin_loc
from camp_planner.domains.manip.mdp import ManipMDP
from camp_planner.domains.manip.scene_io import pose_names, scene_from_task, task_from_scene
from camp_planner.domains.manip.world import ManipTask, generate_task, make_tasks

TASK = generate_task(0, 0)


def _refused(scene: Scene) -> ServiceError:
    with pytest.raises(ServiceError) as info:
        task_from_scene(scene)
    return info.value


def _with(scene: Scene, object_id: str, **changes: Any) -> Scene:
    """``scene`` with object ``object_id`` changed."""
    objects = tuple(replace(o, **changes) if o.id == object_id else o for o in scene.objects)
    return replace(scene, objects=objects)


def _without(scene: Scene, keep: Callable[[SceneObject], bool]) -> Scene:
    return replace(scene, objects=tuple(o for o in scene.objects if keep(o)))


@pytest.mark.parametrize(
    "task", [*make_tasks("test", 6), *make_tasks("train", 3)], ids=lambda t: f"seed{t.seed}"
)
def test_a_task_s_scene_is_that_task(task: ManipTask) -> None:
    scene = scene_from_task(task)
    back, slot_of = task_from_scene(scene)
    assert back.objects == task.objects
    assert back.occupied == task.occupied and back.fat == task.fat
    assert back.features() == task.features()
    assert back.start == task.start and back.settings == task.settings
    for obj in task.objects:
        expected = f"bin_{obj.name[6:]}" if obj.kind == "green" else obj.name
        assert slot_of[obj.name] == expected


def test_both_red_widths_occur_and_the_scene_tells_them_apart() -> None:
    tasks = make_tasks("test", 10)
    assert {t.fat for t in tasks} == {False, True}
    for task in tasks:
        back, _ = task_from_scene(scene_from_task(task))
        assert back.reds[0].radius == task.reds[0].radius and back.fat == task.fat


def test_the_scene_holds_tables_bins_and_objects_as_bounding_boxes() -> None:
    scene = scene_from_task(TASK, frame_id="map")
    classes = [o.object_class for o in scene.objects]
    assert classes.count("table") == 2 and classes.count("bin") == 9
    assert classes.count("red") == 2 and classes.count("blue") == len(TASK.distractors)
    assert classes.count("green") == sum(TASK.occupied)
    assert not scene.goal_object_id and scene.goal_pose is None  # every red in a bin
    red = scene.object("red_0")
    obj = TASK.obj("red_0")
    assert red.movable and red.room == "table_left"
    assert red.pose.z == pytest.approx(obj.z + obj.height / 2)
    assert red.size == pytest.approx((2 * obj.radius, 2 * obj.radius, obj.height))
    green = next(o for o in scene.objects if o.object_class == "green")
    assert green.room == f"bin_{green.id[6:]}"


def test_unknown_ids_get_the_model_s_names_in_id_order() -> None:
    scene = scene_from_task(TASK)
    renamed = {"red_0": "cup_b", "red_1": "cup_a", "blue_0": "zz", "green_0": "g"}
    objects = tuple(replace(o, id=renamed.get(o.id, o.id)) for o in scene.objects)
    task, slot_of = task_from_scene(replace(scene, objects=objects))
    assert slot_of["cup_a"] == "red_0" and slot_of["cup_b"] == "red_1"
    assert task.obj("red_0").x == TASK.obj("red_1").x
    # blue_0's id is taken by no one: the free name left after the ids that are model names
    assert slot_of["zz"] == "blue_0"
    if TASK.occupied[0]:
        assert slot_of["g"] == "bin_0"


def test_a_state_s_scene_leaves_out_what_the_state_has_removed() -> None:
    mdp = ManipMDP.from_task(TASK)  # no simulator: only its state layout
    lay = mdp.layout
    s = mdp.assign_state(mdp.initial_state(), lay.blue_index["blue_3"], ABSENT)
    full = next(j for j in range(9) if TASK.occupied[j])
    s = mdp.assign_state(s, lay.bin_index[full], NONE)
    ids = {o.id for o in scene_from_task(TASK, s).objects}
    assert "blue_3" not in ids and f"green_{full}" not in ids and "blue_4" in ids
    held = mdp.assign_state(mdp.initial_state(), 1, "red_1")
    red = scene_from_task(TASK, held).object("red_1")
    assert red.room == f"held_{held[2]}"


# --- refusals -------------------------------------------------------------------------------
def test_a_nan_pose_is_refused() -> None:
    scene = scene_from_task(TASK)
    bad = _with(scene, "red_0", pose=Pose((math.nan, 0.0, 0.69)))
    err = _refused(bad)
    assert err.code == ErrorCode.INVALID_SCENE and "red_0" in err.message
    assert "NaN" in err.message
    robot = _refused(replace(scene, robot_pose=Pose((0.0, math.inf, 0.0))))
    assert robot.code == ErrorCode.INVALID_SCENE and "robot" in robot.message


def test_an_object_outside_every_table_is_refused() -> None:
    scene = scene_from_task(TASK)
    on_floor = _with(scene, "blue_2", pose=Pose.planar(0.0, 1.5, 0.0, 0.075))
    err = _refused(on_floor)
    assert err.code == ErrorCode.INVALID_SCENE
    assert "blue_2" in err.message and "stands on no table" in err.message
    # On the bins' table, a red stands in a bin or on the staging strip; a blue, never.
    right = TASK.right_table
    beyond = right.x0 + TASK.settings.staging_depth + 0.02
    elsewhere = _with(scene, "red_1", pose=Pose.planar(beyond, right.y1 - 0.02, 0.0, 0.69))
    err = _refused(elsewhere)
    assert err.code == ErrorCode.INVALID_SCENE and "neither in a bin nor" in err.message
    blue = _with(scene, "blue_1", pose=Pose.planar(right.x0 + 0.1, 0.0, 0.0, 0.675))
    err = _refused(blue)
    assert err.code == ErrorCode.INVALID_SCENE and "left table" in err.message
    # Floating above the left table.
    obj = TASK.obj("red_0")
    floating = _with(scene, "red_0", pose=Pose.planar(obj.x, obj.y, 0.0, 0.9))
    assert "does not stand on the left table" in _refused(floating).message


def test_a_scene_without_red_objects_has_no_goal() -> None:
    scene = scene_from_task(TASK)
    err = _refused(_without(scene, lambda o: o.object_class != "red"))
    assert err.code == ErrorCode.MISSING_GOAL and "no red objects" in err.message


def test_a_bin_index_out_of_range_is_refused() -> None:
    scene = scene_from_task(TASK)
    err = _refused(_with(scene, "bin_8", id="bin_9"))
    assert err.code == ErrorCode.INVALID_SCENE
    assert "bin index 9, out of range" in err.message and "bin_0 … bin_8" in err.message
    green = next(o for o in scene.objects if o.object_class == "green")
    err = _refused(_with(scene, green.id, room="bin_12"))
    assert err.code == ErrorCode.INVALID_SCENE and green.id in err.message
    assert "bin index 12, out of range" in err.message
    err = _refused(_with(scene, "bin_0", id="bin_-1"))
    assert "bin index -1, out of range" in err.message
    missing = _refused(_without(scene, lambda o: o.id != "bin_4"))
    assert missing.code == ErrorCode.INVALID_SCENE and "no bin 4" in missing.message


def test_what_the_model_cannot_represent_is_refused_by_name() -> None:
    scene = scene_from_task(TASK)
    obj = TASK.obj("red_0")

    def message(bad: Scene) -> str:
        err = _refused(bad)
        assert err.code == ErrorCode.INVALID_SCENE
        return err.message

    # a red neither skinny nor fat
    assert "0.110 m across" in message(_with(scene, "red_0", size=(0.11, 0.11, obj.height)))
    # tilted 10°
    tilt = math.radians(10.0)
    tilted = Pose(
        scene.object("red_0").pose.position, (math.sin(tilt / 2), 0, 0, math.cos(tilt / 2))
    )
    assert "tilted 10.0°" in message(_with(scene, "red_0", pose=tilted))
    # two objects in one place
    blue = scene.object("blue_0")
    assert "overlap" in message(_with(scene, "blue_1", pose=blue.pose))
    # an unknown class, a static red, a table off the model's
    assert "no 'mug' objects" in message(_with(scene, "blue_0", object_class="mug"))
    assert "are movable" in message(_with(scene, "red_0", movable=False))
    table = scene.object("table_right")
    moved = Pose.planar(table.pose.x + 0.1, table.pose.y, 0.0, table.pose.z)
    assert "table_right" in message(_with(scene, "table_right", pose=moved))
    # the robot inside a table, and a scene in another frame
    inside = replace(scene, robot_pose=Pose.planar(-0.6, 0.0, 0.0))
    assert "overlaps table_left" in message(inside)
    with pytest.raises(ServiceError) as info:
        task_from_scene(scene, frame_id="odom")
    assert info.value.code == ErrorCode.INVALID_SCENE and "odom" in info.value.message


def test_too_few_free_bins_for_the_reds_is_an_unreachable_goal() -> None:
    scene = scene_from_task(TASK)
    greens = [
        SceneObject(
            f"green_{b.index}",
            "green",
            Pose.planar(b.x, b.y, 0.0, b.floor_z + TASK.settings.green_height / 2),
            (2 * TASK.settings.green_radius,) * 2 + (TASK.settings.green_height,),
            True,
            f"bin_{b.index}",
        )
        for b in TASK.bins[:8]
    ]
    full = replace(
        scene, objects=(*(o for o in scene.objects if o.object_class != "green"), *greens)
    )
    err = _refused(full)
    assert err.code == ErrorCode.UNREACHABLE_GOAL and "too few are free" in err.message


# --- fuzzed scenes ----------------------------------------------------------------------------
WEIRD = st.sampled_from([math.nan, math.inf, -math.inf, 1e300, -1e300, 0.0, -0.0, 5e-324])
NUMBERS = st.one_of(st.floats(-2.0, 2.0), WEIRD, st.floats(allow_nan=True, allow_infinity=True))
BASE = scene_from_task(TASK)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    index=st.integers(0, len(BASE.objects) - 1),
    what=st.sampled_from(["position", "size", "class", "id", "room", "turn", "drop", "copy"]),
    values=st.tuples(NUMBERS, NUMBERS, NUMBERS),
    text=st.one_of(
        st.sampled_from(["red", "blue", "green", "bin", "table", "bin_9", "bin_-1", "bin_x"]),
        st.text(max_size=6),
    ),
)
def test_a_mutated_scene_is_refused_by_name_or_read_faithfully(
    index: int, what: str, values: tuple[float, float, float], text: str
) -> None:
    obj = BASE.objects[index]
    if what == "position":
        changed = [replace(obj, pose=Pose(values, obj.pose.orientation))]
    elif what == "size":
        changed = [replace(obj, size=values)]
    elif what == "class":
        changed = [replace(obj, object_class=text)]
    elif what == "id":
        changed = [replace(obj, id=text)]
    elif what == "room":
        changed = [replace(obj, room=text)]
    elif what == "turn":
        changed = [replace(obj, pose=Pose(obj.pose.position, (*values, 1.0)))]
    elif what == "drop":
        changed = []
    else:
        changed = [obj, replace(obj, id=f"{obj.id}_copy")]
    objects = (*BASE.objects[:index], *changed, *BASE.objects[index + 1 :])
    scene = replace(BASE, objects=objects)
    try:
        task, slot_of = task_from_scene(scene)
    except ServiceError as err:
        assert err.code in (
            ErrorCode.INVALID_SCENE,
            ErrorCode.MISSING_GOAL,
            ErrorCode.UNREACHABLE_GOAL,
            ErrorCode.EMPTY_SCENE,
            ErrorCode.UNKNOWN_OBJECT,
        )
        assert err.message
        return
    # Read: every blue stands on the left table, every red there or where the model puts
    # reds (a bin, the staging strip, the gripper), every object has a model name.
    left = task.left_table
    for o in task.objects:
        on_left = left.x0 <= o.x <= left.x1 and left.y0 <= o.y <= left.y1
        if o.kind == "blue" or (o.kind == "red" and task.place_of(o) == TABLE and not task.held):
            assert on_left and o.z == left.height
    movable = {o.id for o in scene.objects if o.object_class in ("red", "blue", "green")}
    assert set(slot_of) == movable
    assert len(task.reds) == sum(1 for o in scene.objects if o.object_class == "red")


def test_the_plug_in_reads_scenes_of_the_configured_world() -> None:
    from camp_planner.domains import get_domain
    from camp_planner.domains.manip.plugin import ManipPlugin

    domain = get_domain("manip")
    config = domain.default_config()
    config["world"] = {"n_distractors": 30}  # a 6 × 6 grid: a larger left table
    config["tasks"] = {"train": 1, "test": 1}
    task = domain.make_tasks(config, "test")[0]
    assert len(task.distractors) == 30
    plugin = ManipPlugin()
    scene = plugin.scene_from_task(task, None, "map")
    back, _ = plugin.task_from_scene(scene, config, "map")
    assert back.objects == task.objects and back.settings == task.settings
    # A blue perception missed: the configured table still, one blue fewer.
    fewer = _without(scene, lambda o: o.id != "blue_7")
    back, slot_of = plugin.task_from_scene(fewer, config, "map")
    assert len(back.distractors) == 29 and back.left_table == task.left_table
    assert slot_of["blue_29"] == "blue_7"  # 29 blues are blue_0 … blue_28: the gap is filled
    # ... and the default world's table is not this one.
    err = _refused(scene)
    assert err.code == ErrorCode.INVALID_SCENE and "table_left" in err.message


# --- scenes partway through a task: reds already in bins, one held --------------------------
@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 30),
    done=st.lists(st.booleans(), min_size=2, max_size=2),
    held=st.sampled_from([None, 0, 1]),
    style=st.sampled_from(["top", "side"]),
    base=st.integers(0, 48),
)
def test_a_mid_task_scene_is_the_state_it_shows(
    seed: int, done: list[bool], held: int | None, style: str, base: int
) -> None:
    """Reds put into free bins, one red held, the robot at any of the MDP's poses: the
    scene of that state is read as a task whose initial state is that state, the robot
    starting where it stands."""
    task = generate_task(seed, seed)
    mdp = ManipMDP.from_task(task)  # no simulator: only its state layout
    lay = mdp.layout
    state = list(mdp.initial_state())
    free = iter(task.free_bins)
    for k, red in enumerate(lay.reds):
        i = lay.loc_index[red]
        if k == held:
            state[1:3] = [red, style]
            state[i : i + 2] = [HELD, HELD]
        elif done[k]:
            b = task.bins[next(free)]
            state[i : i + 2] = [bin_loc(b.index), (round(b.x, 4), round(b.y, 4), b.floor_z)]
            state[lay.bin_index[b.index]] = red
    state[0] = lay.base_poses[base]
    back, _ = task_from_scene(scene_from_task(task, tuple(state)))
    assert back.start == pose_names(task)[str(state[0])]
    assert back.held == ("" if held is None else lay.reds[held])
    again = ManipMDP.from_task(back).initial_state()
    assert again[1:] == tuple(state[1:])
    # A filled bin is a taken bin for the selector, as a green's is.
    taken = [state[i] != NONE for i in lay.bin_index]
    assert back.features()[1:] == tuple(1.0 if t else 0.0 for t in taken)


def _mid_scene() -> Scene:
    mdp = ManipMDP.from_task(TASK)
    lay = mdp.layout
    s = list(mdp.initial_state())
    b = TASK.bins[TASK.free_bins[0]]
    i = lay.loc_index["red_0"]
    s[i : i + 2] = [bin_loc(b.index), (round(b.x, 4), round(b.y, 4), b.floor_z)]
    s[lay.bin_index[b.index]] = "red_0"
    i = lay.loc_index["red_1"]
    s[1:3] = ["red_1", "side"]
    s[i : i + 2] = [HELD, HELD]
    return scene_from_task(TASK, tuple(s))


def test_what_a_mid_task_scene_cannot_be_is_refused_by_name() -> None:
    scene = _mid_scene()
    assert task_from_scene(scene)[0].grasp_style == "side"
    untold = _refused(_with(scene, "red_1", room="held"))
    assert untold.code == ErrorCode.INVALID_SCENE and "held_side" in untold.message
    far = _with(scene, "red_1", pose=Pose.planar(-1.5, 0.0, 0.0, 0.69), room="held_top")
    assert "arm reaches" in _refused(far).message
    red = scene.object("red_0")
    aloft = _with(scene, "red_0", pose=Pose.planar(red.pose.x, red.pose.y, 0.0, 0.95))
    assert "not on its floor" in _refused(aloft).message
    green = next(b for b in TASK.bins if TASK.occupied[b.index])
    into = _with(scene, "red_0", pose=Pose.planar(green.x, green.y, 0.0, red.pose.z))
    assert "and another object" in _refused(into).message
    two = replace(scene, objects=(*scene.objects, replace(scene.object("red_1"), id="red_9")))
    assert "at most one" in _refused(two).message
