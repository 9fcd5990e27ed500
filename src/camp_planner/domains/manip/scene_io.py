"""Manipulation tasks (paper domain D4) to and from perceived scenes
(:class:`camp_planner.domains.interface.scene.Scene`).

A scene of this domain holds the two tables and the nine bins as static objects (classes
``table`` and ``bin``, the bins named ``bin_0`` … ``bin_8`` as the model numbers them), and
the movable objects: ``red`` cylinders to put into bins, ``blue`` distractors beside them on
the left table and ``green`` objects already standing in bins (each green's ``room`` names
its bin, ``bin_j``; an empty ``room`` reads the bin from its position). Every pose is the
centre of the object's bounding box (``size``: its extents), as for NAMO's boxes; the model
stands objects upright with their bottom on a support, so a bottom is the centre's height
less half the object's height. The goal is implicit (every red in a bin): a scene names no
goal object or pose.

Reds are told apart by their width, as the selector's "red radius" feature: a skinny red is
the model's plain cylinder (0.06 m across), a fat one its stem under a 0.16 m cap (see
:func:`camp_planner.domains.manip.world.red_profile`); a width between is refused.

A scene may show a task partway through: the robot anywhere on the floor, reds already
standing in bins (on a bin's floor; read at the bin's centre, where a place puts them) or on
the staging strip, and at most one red in the gripper, its ``room`` saying how it is held
(``held_top`` or ``held_side``: the model holds a red in a canonical grasp of that style,
and only a side-held red can be placed). The task it becomes starts there
(``ManipTask.held``, ``ManipTask.place_of``).

Refuse, never repair: anything the model cannot represent faithfully is refused with a named
:class:`~camp_planner.domains.interface.errors.ErrorCode` (the codes NAMO uses; no
domain-specific ones): a NaN or infinite pose (``INVALID_SCENE``, from
:func:`~camp_planner.domains.interface.scene.validate_scene`), an object on no table or in no
bin, a blue anywhere but on the left table, a red on the bins' table neither in a bin nor on
the staging strip, a held red whose grasp is not named or that is out of the arm's reach, two
held reds, a bin holding two objects, a bin index outside 0 … 8, tables or bins off the
model's, overlapping objects, a tilted object (all ``INVALID_SCENE``), too few free bins for
the reds still to put away (``UNREACHABLE_GOAL``), and a scene with no red object, which has
no goal (``MISSING_GOAL``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Sequence
from dataclasses import replace

from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.interface.scene import Pose, Scene, SceneObject, validate_scene
from camp_planner.domains.manip.layout import GRASPS, GREEN, HELD, START, TABLE, layout
from camp_planner.domains.manip.world import (
    BLUE,
    RED,
    ManipObject,
    ManipSettings,
    ManipTask,
    Pose2D,
    Section,
    Table,
    red_profile,
)
from camp_planner.domains.manip.world import (
    GREEN as GREEN_RGBA,
)

TABLE_CLASS, BIN_CLASS = "table", "bin"
RED_CLASS, BLUE_CLASS, GREEN_CLASS = "red", "blue", "green"
MOVABLE_CLASSES = (RED_CLASS, BLUE_CLASS, GREEN_CLASS)

# How far a perceived scene may differ from its model (metres, radians).
SIZE_TOLERANCE = 0.01  # on an object's width (0.5 cm a side) and on a bin's outer width
HEIGHT_TOLERANCE = 0.02  # on an object's height, and its bottom above its support
TABLE_TOLERANCE = 0.025  # every face of a table, every bin's centre, off the model's
TILT_TOLERANCE = math.radians(2.0)  # the model stands everything upright
AXIS_TOLERANCE = math.radians(5.0)  # tables and bins are axis-aligned
OVERLAP_TOLERANCE = 1e-3  # two objects may interpenetrate this much and count as touching
# Metres from the base's centre within which a held red can be: the arm reaches 0.97 m from
# its shoulder, mounted 0.1 m forward of the centre (manip mdp's SAMPLE_REACH, with slack).
HELD_REACH = 1.2
_BIN_ID = re.compile(r"bin_(-?\d+)$")


# --- the model's poses and objects -----------------------------------------------------------
def pose_names(task: ManipTask) -> dict[str, Pose2D]:
    """The MDP's named base poses (``start``, ``left_i``, ``right_i``), as
    :class:`camp_planner.domains.manip.mdp.ManipMDP` names them, without building it."""
    poses: dict[str, Pose2D] = {START: task.start}
    for side, table in (("left", "table_left"), ("right", "table_right")):
        for i, pose in enumerate(task.work_poses(table)):
            poses[f"{side}_{i}"] = pose
    return poses


def _blue_profile(st: ManipSettings) -> tuple[Section, ...]:
    return ((0.0, st.distractor_height, st.distractor_radius),)


def _green_profile(st: ManipSettings) -> tuple[Section, ...]:
    return ((0.0, st.green_height, st.green_radius),)


def _scene_object(
    obj: ManipObject, x: float, y: float, z: float, room: str, object_class: str | None = None
) -> SceneObject:
    """``obj`` standing with its bottom at (x, y, z), as a bounding box."""
    d, h = 2 * obj.radius, obj.height
    return SceneObject(
        obj.name,
        object_class or obj.kind,
        Pose.planar(x, y, 0.0, z + h / 2),
        (d, d, h),
        True,
        room,
    )


# --- task -> scene ---------------------------------------------------------------------------
def scene_from_task(
    task: ManipTask, state: Sequence[Hashable] | None = None, frame_id: str = "map"
) -> Scene:
    """The scene a perfect perception stack would report for ``task`` in ``state`` (an MDP
    state of :class:`~camp_planner.domains.manip.mdp.ManipMDP`; the initial state if None):
    the tables, the bins, every object where the state has it (a held red in front of the
    robot at table height; an absent blue, or a green of a bin the state has emptied, left
    out) and the robot at its base pose."""
    st = task.settings
    objects: list[SceneObject] = []
    for t in task.tables:
        cx, cy = t.centre
        objects.append(
            SceneObject(
                t.name,
                TABLE_CLASS,
                Pose.planar(cx, cy, 0.0, t.height / 2),
                (t.x1 - t.x0, t.y1 - t.y0, t.height),
                False,
            )
        )
    tall = st.bin_floor + st.bin_wall_height
    for b in task.bins:
        outer = b.inner + 2 * b.wall
        objects.append(
            SceneObject(
                f"bin_{b.index}",
                BIN_CLASS,
                Pose.planar(b.x, b.y, 0.0, st.table_height + tall / 2),
                (outer, outer, tall),
                False,
                f"bin_{b.index}",
            )
        )
    robot = task.start
    if state is None:
        for obj in task.objects:
            if obj.kind == "green":
                room = _green_bin(task, obj.x, obj.y)
            elif obj.name == task.held:
                room = f"{HELD}_{task.grasp_style}"
            else:
                room = _room(task.place_of(obj) if obj.kind == "red" else TABLE)
            objects.append(_scene_object(obj, obj.x, obj.y, obj.z, room))
    else:
        robot = pose_names(task)[str(state[0])]
        lay = layout(
            len(task.reds),
            len(task.distractors),
            st.bins_per_side**2,
            len(task.work_poses("table_left")),
        )
        for red in task.reds:
            i = lay.loc_index[red.name]
            loc, pose = state[i], state[i + 1]
            if isinstance(pose, tuple):
                x, y, z = (float(v) for v in pose)
                room = _room(str(loc))
            else:  # held: in front of the base, at table height; its room says how
                assert pose == HELD
                ahead = st.base_half_extent + 0.3
                x = robot[0] + ahead * math.cos(robot[2])
                y = robot[1] + ahead * math.sin(robot[2])
                z, room = st.table_height, f"{HELD}_{state[2]}"
            objects.append(_scene_object(red, x, y, z, room))
        for blue in task.distractors:
            value = state[lay.blue_index[blue.name]]
            if isinstance(value, tuple):
                x, y = float(value[0]), float(value[1])
                objects.append(_scene_object(blue, x, y, st.table_height, "table_left"))
        green = _green_template(task)
        for j, i in enumerate(lay.bin_index):
            if state[i] == GREEN:
                b = task.bins[j]
                obj = replace(green, name=f"green_{j}")
                objects.append(_scene_object(obj, b.x, b.y, b.floor_z, f"bin_{j}"))
    return Scene(
        domain="manip",
        robot_pose=Pose.planar(*robot),
        objects=tuple(objects),
        frame_id=frame_id,
        scene_id=f"manip-task-{task.task_id}",
    )


def _room(place: str) -> str:
    """A red's ``room`` in a scene for its place in the model (``table``, ``staging``,
    ``bin_j``): the left table by its table's name, the others by the model's."""
    return "table_left" if place == TABLE else place


def _green_template(task: ManipTask) -> ManipObject:
    st = task.settings
    return ManipObject("green", "green", 0.0, 0.0, 0.0, _green_profile(st), GREEN_RGBA)


def _green_bin(task: ManipTask, x: float, y: float) -> str:
    for b in task.bins:
        if b.contains(x, y):
            return f"bin_{b.index}"
    return ""


# --- scene -> task ---------------------------------------------------------------------------
def _m(value: float) -> str:
    return f"{value:.3f}" if abs(value) < 1e6 else f"{value:.3g}"


def _upright(pose: Pose, what: str) -> None:
    tilt = pose.tilt()
    if not tilt <= TILT_TOLERANCE:
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"{what} is tilted {math.degrees(tilt):.1f}° from upright; the manipulation model "
            f"stands everything upright (± {math.degrees(TILT_TOLERANCE):.0f}°)",
        )


def _axis_aligned(obj: SceneObject) -> bool:
    """Whether ``obj``'s yaw is a multiple of a half turn (within AXIS_TOLERANCE); a quarter
    turn would swap its extents, which the model's tables do not allow for."""
    return abs(math.remainder(obj.pose.yaw, math.pi)) <= AXIS_TOLERANCE


def _check_table(obj: SceneObject, model: Table) -> None:
    """A scene table must be the model's within TABLE_TOLERANCE on every face."""
    if not _axis_aligned(obj):
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"table '{obj.id}' is turned {math.degrees(obj.pose.yaw):.1f}°; the model's tables "
            f"are axis-aligned (± {math.degrees(AXIS_TOLERANCE):.0f}°)",
        )
    x, y, z = obj.pose.position
    sx, sy, sz = obj.size
    faces = (x - sx / 2, y - sy / 2, x + sx / 2, y + sy / 2, z + sz / 2)
    want = (model.x0, model.y0, model.x1, model.y1, model.height)
    if any(abs(a - b) > TABLE_TOLERANCE for a, b in zip(faces, want, strict=True)):
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"table '{obj.id}' spans x {_m(faces[0])}–{_m(faces[2])}, y {_m(faces[1])}–"
            f"{_m(faces[3])}, top {_m(faces[4])} m; the model's {model.name} spans x "
            f"{model.x0:.3f}–{model.x1:.3f}, y {model.y0:.3f}–{model.y1:.3f}, top "
            f"{model.height:.3f} m (± {TABLE_TOLERANCE} m)",
        )


def _bin_index(text: str, n_bins: int, what: str) -> int:
    """The bin index ``text`` (``bin_j``) names, refused outside 0 … n_bins - 1."""
    found = _BIN_ID.match(text)
    if found is None:
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"{what} names bin '{text}'; the model's bins are bin_0 … bin_{n_bins - 1}",
        )
    index = int(found.group(1))
    if not 0 <= index < n_bins:
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"{what} names bin index {index}, out of range: the model has {n_bins} bins, "
            f"bin_0 … bin_{n_bins - 1}",
        )
    return index


def _profile(obj: SceneObject, st: ManipSettings) -> tuple[Section, ...]:
    """The model's profile of a red, blue or green scene object, checked against its size."""
    width, height = max(obj.size[0], obj.size[1]), obj.size[2]
    if obj.object_class == RED_CLASS:
        options = [
            (red_profile(st, False), "skinny (a plain cylinder)"),
            (red_profile(st, True), "fat (a stem under a cap)"),
        ]
    elif obj.object_class == BLUE_CLASS:
        options = [(_blue_profile(st), "a blue distractor")]
    else:
        options = [(_green_profile(st), "a green object")]
    for sections, _ in options:
        d = 2 * max(r for _, _, r in sections)
        h = max(z1 for _, z1, _ in sections)
        if abs(width - d) <= SIZE_TOLERANCE and abs(height - h) <= HEIGHT_TOLERANCE:
            return sections
    sizes = " or ".join(
        f"{2 * max(r for _, _, r in s):.2f} m across and {max(z for _, z, _ in s):.2f} m tall "
        f"({name})"
        for s, name in options
    )
    raise ServiceError(
        ErrorCode.INVALID_SCENE,
        f"object '{obj.id}' is {_m(width)} m across and {_m(height)} m tall; the model's "
        f"{obj.object_class} objects are {sizes} (± {SIZE_TOLERANCE} m across, "
        f"± {HEIGHT_TOLERANCE} m tall)",
    )


def _on_top(x: float, y: float, t: Table) -> bool:
    return t.x0 <= x <= t.x1 and t.y0 <= y <= t.y1


def _base_overlap(t: Table, pose: Pose2D, half: float) -> float:
    """How deep the robot's square base (half-side ``half``) at ``pose`` and table ``t``'s
    footprint interpenetrate (separating axes of the two rectangles)."""
    x, y, yaw = pose
    c, s = math.cos(yaw), math.sin(yaw)
    rx, ry = (t.x0 + t.x1) / 2, (t.y0 + t.y1) / 2
    hw, hh = (t.x1 - t.x0) / 2, (t.y1 - t.y0) / 2
    depth = math.inf
    for ux, uy in ((1.0, 0.0), (0.0, 1.0), (c, s), (-s, c)):
        reach = half * (abs(ux * c + uy * s) + abs(uy * c - ux * s)) + hw * abs(ux) + hh * abs(uy)
        depth = min(depth, reach - abs(ux * (x - rx) + uy * (y - ry)))
    return depth


def _names(ids: Sequence[str], prefix: str) -> dict[str, str]:
    """Scene id → model name ``prefix_k`` (k < len(ids)), keeping an id that already is one
    (so a simulated scene round-trips), the others in id order."""
    free = [f"{prefix}_{k}" for k in range(len(ids))]
    out: dict[str, str] = {}
    for oid in sorted(ids, key=lambda i: (i not in free, i)):
        name = oid if oid in free else free[0]
        free.remove(name)
        out[oid] = name
    return out


def task_from_scene(
    scene: Scene,
    settings: ManipSettings | None = None,
    task_id: int = 0,
    frame_id: str = "map",
) -> tuple[ManipTask, dict[str, str]]:
    """(the manipulation task of ``scene``, scene object id → model name: ``red_k`` for a
    red (its variables are ``red_k_loc`` and ``red_k_pose``), ``blue_k`` for a blue, and for a
    green the variable of its bin, ``bin_j``), for a scene given in frame ``frame_id``; a
    :class:`ServiceError` naming the first thing the model cannot represent faithfully.

    ``settings`` is the configured world (the domain's ``world`` block): its geometry, the
    left table's size included, which the generator grows with the configured number of
    distractors; the counts of reds and blues are the scene's (a scene with a blue fewer
    than configured keeps the configured table)."""
    validate_scene(scene, need_goal=False, frame_id=frame_id)
    st = settings or ManipSettings()
    _upright(scene.robot_pose, "the robot")
    for obj in scene.objects:
        _upright(obj.pose, f"object '{obj.id}'")
    by_class: dict[str, list[SceneObject]] = {}
    for obj in scene.objects:
        if obj.object_class not in (TABLE_CLASS, BIN_CLASS, *MOVABLE_CLASSES):
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"object '{obj.id}': the manipulation model has no '{obj.object_class}' objects "
                "(only static tables and bins, movable red, blue and green objects)",
            )
        static = obj.object_class in (TABLE_CLASS, BIN_CLASS)
        if obj.movable == static:
            kind = "static" if static else "movable"
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"object '{obj.id}': the model's '{obj.object_class}' objects are {kind}",
            )
        by_class.setdefault(obj.object_class, []).append(obj)
    reds, blues = by_class.get(RED_CLASS, []), by_class.get(BLUE_CLASS, [])
    if not reds:
        raise ServiceError(
            ErrorCode.MISSING_GOAL,
            "the scene has no red objects: the goal is every red in a bin, so there is none",
        )
    skeleton = ManipTask(task_id, 0, False, (), (False,) * st.bins_per_side**2, settings=st)
    # Tables: exactly the model's two.
    tables = {t.name: t for t in skeleton.tables}
    seen: set[str] = set()
    for obj in by_class.get(TABLE_CLASS, []):
        cx, cy = obj.pose.x, obj.pose.y
        model = next((t for t in tables.values() if _on_top(cx, cy, t)), None)
        if model is None or model.name in seen:
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"table '{obj.id}' at ({_m(cx)}, {_m(cy)}) is not a table of the model (the left "
                f"table beside the robot's start, the bins' table on its right, one each)",
            )
        _check_table(obj, model)
        seen.add(model.name)
    for name in sorted(set(tables) - seen):
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"the scene has no table where the model has {name}; tables are static objects of "
            f"class '{TABLE_CLASS}'",
        )
    # Bins: all of the model's, each at its place.
    n_bins = st.bins_per_side**2
    model_bins = skeleton.bins
    found_bins: set[int] = set()
    for obj in by_class.get(BIN_CLASS, []):
        k = _bin_index(obj.id, n_bins, f"bin object '{obj.id}'")
        b = model_bins[k]
        outer = b.inner + 2 * b.wall
        off = math.hypot(obj.pose.x - b.x, obj.pose.y - b.y)
        if k in found_bins:
            raise ServiceError(ErrorCode.INVALID_SCENE, f"bin {k} appears twice")
        if off > TABLE_TOLERANCE or abs(max(obj.size[0], obj.size[1]) - outer) > SIZE_TOLERANCE:
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"bin '{obj.id}' at ({_m(obj.pose.x)}, {_m(obj.pose.y)}), {_m(obj.size[0])} m "
                f"wide, is not the model's bin {k} at ({b.x:.3f}, {b.y:.3f}), {outer:.2f} m wide "
                f"(± {TABLE_TOLERANCE} m, ± {SIZE_TOLERANCE} m)",
            )
        found_bins.add(k)
    missing = sorted(set(range(n_bins)) - found_bins)
    if missing:
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"the scene has no bin {missing[0]} where the model has one (bins bin_0 … "
            f"bin_{n_bins - 1}, static objects of class '{BIN_CLASS}')",
        )
    # The robot: on the floor, clear of the tables.
    rx, ry, ryaw = scene.robot_pose.as_planar()
    start = (rx, ry, ryaw)
    if not skeleton.on_floor(start):
        hx, hy = st.world_half
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"the robot at ({_m(rx)}, {_m(ry)}) is off the floor (x within ± {hx:.1f} m, y "
            f"within ± {hy:.1f} m, less the base's reach)",
        )
    for t in skeleton.tables:
        if _base_overlap(t, start, st.base_half_extent) > OVERLAP_TOLERANCE:
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"the robot at ({_m(rx)}, {_m(ry)}) overlaps {t.name} (its base is a "
                f"{2 * st.base_half_extent:.2f} m square)",
            )
    # Objects on the left table: reds and blues.
    left = skeleton.left_table
    red_names = _names([o.id for o in reds], "red")
    blue_names = _names([o.id for o in blues], "blue")
    fat = False
    standing: list[tuple[SceneObject, ManipObject]] = []
    done: list[tuple[SceneObject, ManipObject]] = []  # reds in bins or on the staging strip
    held: tuple[SceneObject, ManipObject, str] | None = None
    for obj in sorted((*reds, *blues), key=lambda o: o.id):
        sections = _profile(obj, st)
        x, y = obj.pose.x, obj.pose.y
        bottom = obj.pose.z - obj.size[2] / 2
        where = f"object '{obj.id}' at ({_m(x)}, {_m(y)}, bottom {_m(bottom)})"
        fat = fat or len(sections) > 1
        red = ManipObject(red_names.get(obj.id, ""), "red", x, y, bottom, sections, RED)
        if obj.object_class == RED_CLASS and obj.room.startswith(HELD):
            if held is not None:
                raise ServiceError(
                    ErrorCode.INVALID_SCENE,
                    f"reds '{held[0].id}' and '{obj.id}' are both held; the model's robot "
                    "holds at most one",
                )
            held = (obj, red, _grasp_style(obj, start))
            continue
        if obj.object_class == RED_CLASS and _on_top(x, y, skeleton.right_table):
            done.append((obj, _put_down(obj, red, skeleton)))
            continue
        table = next((t for t in skeleton.tables if _on_top(x, y, t)), None)
        if table is None:
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"{where} stands on no table: the left table spans x {left.x0:.3f}–"
                f"{left.x1:.3f}, y {left.y0:.3f}–{left.y1:.3f}, the bins' table x "
                f"{skeleton.right_table.x0:.3f}–{skeleton.right_table.x1:.3f}",
            )
        if table.name != left.name:
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"{where} is on {table.name}; the model has the blues on the left table (x "
                f"{left.x0:.3f}–{left.x1:.3f}, y {left.y0:.3f}–{left.y1:.3f}) only",
            )
        if abs(bottom - left.height) > HEIGHT_TOLERANCE:
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"{where} does not stand on the left table's top at {left.height:.2f} m "
                f"(± {HEIGHT_TOLERANCE} m)",
            )
        radius = max(r for _, _, r in sections)
        inside_x = left.x0 + radius <= x <= left.x1 - radius
        if not (inside_x and left.y0 + radius <= y <= left.y1 - radius):
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"{where} overhangs the left table's edge (it is {2 * radius:.2f} m across)",
            )
        if obj.object_class == RED_CLASS:
            name, kind, rgba = red_names[obj.id], "red", RED
        else:
            name, kind, rgba = blue_names[obj.id], "blue", BLUE
        standing.append((obj, ManipObject(name, kind, x, y, left.height, sections, rgba)))
    for i, (sa, ma) in enumerate(standing):
        for sb, mb in standing[i + 1 :]:
            gap = math.hypot(ma.x - mb.x, ma.y - mb.y) - ma.radius - mb.radius
            if gap < -OVERLAP_TOLERANCE:
                raise ServiceError(
                    ErrorCode.INVALID_SCENE,
                    f"objects '{sa.id}' at ({_m(ma.x)}, {_m(ma.y)}) and '{sb.id}' at "
                    f"({_m(mb.x)}, {_m(mb.y)}) overlap",
                )
    # Greens: in bins.
    occupied = [False] * n_bins
    greens: list[ManipObject] = []
    slot_of: dict[str, str] = {}
    for obj in sorted(by_class.get(GREEN_CLASS, []), key=lambda o: o.id):
        sections = _profile(obj, st)
        x, y = obj.pose.x, obj.pose.y
        bottom = obj.pose.z - obj.size[2] / 2
        at = next((b for b in model_bins if b.contains(x, y)), None)
        if obj.room:
            k = _bin_index(obj.room, n_bins, f"green object '{obj.id}'")
            if at is None or at.index != k:
                raise ServiceError(
                    ErrorCode.INVALID_SCENE,
                    f"green object '{obj.id}' at ({_m(x)}, {_m(y)}) is said to be in bin {k} "
                    f"but stands {'in no bin' if at is None else f'in bin {at.index}'}",
                )
        elif at is None:
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"green object '{obj.id}' at ({_m(x)}, {_m(y)}) stands in no bin; the model "
                "has greens only in bins",
            )
        b = model_bins[at.index]
        if abs(bottom - b.floor_z) > HEIGHT_TOLERANCE:
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"green object '{obj.id}' does not stand on bin {b.index}'s floor at "
                f"{b.floor_z:.2f} m (± {HEIGHT_TOLERANCE} m)",
            )
        if occupied[b.index]:
            raise ServiceError(
                ErrorCode.INVALID_SCENE, f"bin {b.index} holds two objects; the model, one"
            )
        occupied[b.index] = True
        # The model's green stands at the bin's centre, where every place is checked against.
        greens.append(
            ManipObject(f"green_{b.index}", "green", b.x, b.y, b.floor_z, sections, GREEN_RGBA)
        )
        slot_of[obj.id] = f"bin_{b.index}"
    filled = list(occupied)
    for obj, red in done:
        place = skeleton.place_of(red)
        if place.startswith("bin_"):
            k = int(place[len("bin_") :])
            if filled[k]:
                raise ServiceError(
                    ErrorCode.INVALID_SCENE,
                    f"bin {k} holds red '{obj.id}' and another object; the model, one",
                )
            filled[k] = True
    to_place = len(reds) - sum(filled) + sum(occupied)
    if n_bins - sum(filled) < to_place:
        raise ServiceError(
            ErrorCode.UNREACHABLE_GOAL,
            f"{sum(filled)} of the {n_bins} bins hold a green or a red: too few are free for "
            f"the {to_place} reds still to put away",
        )
    everything = [*standing, *done, *([held[:2]] if held is not None else [])]
    reds_first = sorted(
        (m for _, m in everything), key=lambda m: (m.kind != "red", int(m.name.split("_")[1]))
    )
    for obj, placed in everything:
        slot_of[obj.id] = placed.name
    task = ManipTask(
        task_id,
        0,
        fat,
        (*reds_first, *sorted(greens, key=lambda g: int(g.name.split("_")[1]))),
        tuple(occupied),
        start,
        st,
        "" if held is None else held[1].name,
        "" if held is None else held[2],
    )
    return task, slot_of


def _grasp_style(obj: SceneObject, robot: Pose2D) -> str:
    """How red ``obj``, whose ``room`` says it is held, is held: ``held_top`` or
    ``held_side`` name the grasp (the model's held red sits in a canonical grasp of that
    style, and only a side-held red can be placed); it must be within the arm's reach."""
    style = obj.room[len(HELD) + 1 :] if obj.room.startswith(f"{HELD}_") else ""
    if style not in GRASPS[1:]:
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"red '{obj.id}' is held ('{obj.room}') but not said how: the model holds a red "
            f"in a top or a side grasp, room '{HELD}_top' or '{HELD}_side'",
        )
    off = math.hypot(obj.pose.x - robot[0], obj.pose.y - robot[1])
    if off > HELD_REACH:
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"red '{obj.id}' is said to be held but stands {off:.2f} m from the robot's base; "
            f"the arm reaches {HELD_REACH:.2f} m",
        )
    return style


def _put_down(obj: SceneObject, red: ManipObject, task: ManipTask) -> ManipObject:
    """Red ``red`` (scene object ``obj``) on the bins' table as the model has it: standing on
    a bin's floor, at the bin's centre (where a place puts it), or on the staging strip
    before the bins (where a regrasp puts it down); anywhere else there is refused."""
    st = task.settings
    where = f"red '{obj.id}' at ({_m(red.x)}, {_m(red.y)}, bottom {_m(red.z)})"
    for b in task.bins:
        if b.contains(red.x, red.y):
            if abs(red.z - b.floor_z) > HEIGHT_TOLERANCE:
                raise ServiceError(
                    ErrorCode.INVALID_SCENE,
                    f"{where} is over bin {b.index} but not on its floor at {b.floor_z:.2f} m "
                    f"(± {HEIGHT_TOLERANCE} m)",
                )
            return replace(red, x=b.x, y=b.y, z=b.floor_z)
    t = task.right_table
    on_strip = t.x0 + red.radius <= red.x <= t.x0 + st.staging_depth - red.radius
    if not on_strip or abs(red.z - st.table_height) > HEIGHT_TOLERANCE:
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"{where} is on the bins' table but neither in a bin nor standing on the staging "
            f"strip (x {t.x0:.3f}–{t.x0 + st.staging_depth:.3f} m, top {st.table_height:.2f} m)",
        )
    return replace(red, z=st.table_height)


def held_red(scene: Scene) -> str:
    """The id of the red ``scene`` shows in the gripper (its room ``held_top`` or
    ``held_side``), or ""."""
    return next((o.id for o in scene.objects if o.room.startswith(f"{HELD}_")), "")
