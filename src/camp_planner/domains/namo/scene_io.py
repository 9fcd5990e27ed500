"""NAMO tasks to and from perceived scenes (:class:`camp_planner.service.scene.Scene`).

A scene is what a perception stack reports: walls as static boxes, movable boxes, a goal
object and the robot's base pose. Turning it into a :class:`NamoTask` means recovering the
doorways from the gaps between wall segments and giving every box one of its room's slot
variables; the map from the scene's object ids to slot names is kept, so plans and dropped
variables can be reported in the scene's own ids. Anything the NAMO model cannot represent is
refused with a named error rather than silently ignored (an ignored obstacle is a collision).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Sequence

from camp_planner.core.mdp import Action, State
from camp_planner.domains.namo.mdp import HELD, NONE, SLOTS_PER_ROOM, NamoMDP, layout
from camp_planner.domains.namo.world import (
    Box,
    Door,
    NamoSettings,
    NamoTask,
    Rect,
)
from camp_planner.service.errors import ErrorCode, ServiceError
from camp_planner.service.scene import Pose2, Scene, SceneObject, validate_scene
from camp_planner.service.types import PlanStepData

WALL, BOX, GOAL = "wall", "box", "goal"
GOAL_ID = "goal"


def scene_from_task(
    task: NamoTask, state: Sequence[Hashable] | None = None, frame_id: str = "map"
) -> Scene:
    """The scene a perfect perception stack would report for ``task`` in ``state`` (the
    initial state if None): every wall segment, every box on the floor, the goal object."""
    st = task.settings
    objects: list[SceneObject] = []
    for i, (x0, y0, x1, y1) in enumerate(task.walls()):
        objects.append(
            SceneObject(
                f"wall_{i}",
                WALL,
                ((x0 + x1) / 2, (y0 + y1) / 2, 0.0),
                (x1 - x0, y1 - y0, st.wall_height),
                False,
            )
        )
    robot = task.start
    positions = {b.name: (b.x, b.y) for b in task.boxes}
    if state is not None:
        pose = state[0]
        assert isinstance(pose, tuple)
        robot = (float(pose[0]), float(pose[1]), float(pose[2]))
        positions = {}
        for k, name in enumerate(layout(st.grid).slot_names):
            value = state[3 + k]
            if isinstance(value, tuple):
                positions[name] = (float(value[0]), float(value[1]))
            elif value == HELD:
                ahead = 0.5
                positions[name] = (
                    robot[0] + ahead * math.cos(robot[2]),
                    robot[1] + ahead * math.sin(robot[2]),
                )
    for name, (x, y) in sorted(positions.items()):
        objects.append(
            SceneObject(name, BOX, (x, y, 0.0), st.box_size, True, str(task.room_of(x, y)))
        )
    gx, gy = task.goal
    d = 2 * st.goal_radius
    objects.append(SceneObject(GOAL_ID, GOAL, (gx, gy, 0.0), (d, d, 0.3), False, str(st.goal_room)))
    return Scene(
        domain="namo",
        robot_pose=robot,
        objects=tuple(objects),
        goal_object_id=GOAL_ID,
        frame_id=frame_id,
        scene_id=f"namo-task-{task.task_id}",
    )


def _rect(obj: SceneObject) -> Rect:
    sx, sy = obj.size[0], obj.size[1]
    yaw = obj.pose[2] % math.pi
    if abs(yaw - math.pi / 2) < math.pi / 4:  # a wall turned by 90° swaps its extents
        sx, sy = sy, sx
    x, y = obj.pose[0], obj.pose[1]
    return (x - sx / 2, y - sy / 2, x + sx / 2, y + sy / 2)


@functools.lru_cache(maxsize=64)
def _doors(walls: tuple[Rect, ...], st: NamoSettings) -> tuple[Door, ...]:
    """Doorways: gaps at least half a door wide in the wall between two adjacent rooms.

    Cached: a robot sees the same walls in scene after scene, and this is a third of the
    cost of turning a scene into a task."""
    s, t = st.room_size, st.wall_thickness
    doors: list[Door] = []
    g, n = st.grid, st.n_rooms
    for a in range(n):
        row, col = divmod(a, g)
        for b, vertical in ((a + 1, True), (a + g, False)):
            if (vertical and col == g - 1) or b >= n:
                continue
            at = (col + 1) * s if vertical else (row + 1) * s
            lo = row * s if vertical else col * s
            hi = lo + s
            covered: list[tuple[float, float]] = []
            for x0, y0, x1, y1 in walls:
                across = (x0, x1) if vertical else (y0, y1)
                along = (y0, y1) if vertical else (x0, x1)
                if across[0] <= at + t / 2 and across[1] >= at - t / 2:
                    covered.append((max(along[0], lo), min(along[1], hi)))
            cursor, best = lo, (0.0, 0.0)
            for c0, c1 in sorted(c for c in covered if c[1] > c[0]):
                if c0 - cursor > best[1] - best[0]:
                    best = (cursor, c0)
                cursor = max(cursor, c1)
            if hi - cursor > best[1] - best[0]:
                best = (cursor, hi)
            if best[1] - best[0] >= st.door_width / 2:
                centre = (best[0] + best[1]) / 2
                if vertical:
                    doors.append(Door(a, b, at, centre, True))
                else:
                    doors.append(Door(a, b, centre, at, False))
    return tuple(doors)


def task_from_scene(
    scene: Scene, settings: NamoSettings | None = None, task_id: int = 0
) -> tuple[NamoTask, dict[str, str]]:
    """(the NAMO task of ``scene``, scene object id → slot variable name)."""
    st = settings or NamoSettings()
    validate_scene(scene)
    size = st.world_size
    rx, ry, ryaw = scene.robot_pose
    if not (0.0 < rx < size and 0.0 < ry < size):
        raise ServiceError(
            ErrorCode.INVALID_SCENE, f"the robot at ({rx:.2f}, {ry:.2f}) is outside the map"
        )
    walls = [_rect(o) for o in scene.objects if o.object_class == WALL]
    if not walls:
        raise ServiceError(ErrorCode.INVALID_SCENE, "the scene has no walls: the map is missing")
    skeleton = NamoTask(task_id, 0, _doors(tuple(walls), st), (), (rx, ry, ryaw), (0.0, 0.0), st)
    if skeleton.room_of(rx, ry) != st.start_room:
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"the NAMO model expects the robot in room {st.start_room}, not "
            f"{skeleton.room_of(rx, ry)}",
        )
    if scene.goal_object_id:
        goal_obj = scene.object(scene.goal_object_id)
        goal = (goal_obj.pose[0], goal_obj.pose[1])
    else:
        assert scene.goal_xy is not None  # validate_scene checked
        goal = scene.goal_xy
    if not (0.0 < goal[0] < size and 0.0 < goal[1] < size):
        raise ServiceError(ErrorCode.UNREACHABLE_GOAL, "the goal is outside the map")
    if skeleton.room_of(*goal) != st.goal_room:
        raise ServiceError(
            ErrorCode.UNREACHABLE_GOAL,
            f"the NAMO model expects the goal in room {st.goal_room}, "
            f"not {skeleton.room_of(*goal)}",
        )
    if not _connected(skeleton.door_graph(), st.start_room, st.goal_room):
        raise ServiceError(
            ErrorCode.UNREACHABLE_GOAL, "no chain of doorways joins the robot's room to the goal's"
        )
    by_room: dict[int, list[SceneObject]] = {}
    for obj in scene.objects:
        if obj.object_class == WALL or obj.id == scene.goal_object_id:
            continue
        if obj.object_class != BOX or not obj.movable:
            kind = "movable" if obj.movable else "static"
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"object '{obj.id}': the NAMO model has no {kind} '{obj.object_class}' objects "
                "(only walls, movable boxes and the goal)",
            )
        by_room.setdefault(skeleton.room_of(obj.pose[0], obj.pose[1]), []).append(obj)
    boxes: list[Box] = []
    slot_of: dict[str, str] = {}
    for room, objs in sorted(by_room.items()):
        if room == st.goal_room:
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"boxes {sorted(o.id for o in objs)} stand in the goal room, which the model "
                "keeps free",
            )
        if len(objs) > SLOTS_PER_ROOM:
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"room {room} holds {len(objs)} boxes; the model has {SLOTS_PER_ROOM} slots "
                "per room",
            )
        free = [f"box_r{room}_{k}" for k in range(SLOTS_PER_ROOM)]
        # Keep an id that already is this room's slot name, so simulated scenes round-trip.
        for obj in sorted(objs, key=lambda o: (o.id not in free, o.id)):
            name = obj.id if obj.id in free else free[0]
            free.remove(name)
            slot_of[obj.id] = name
            boxes.append(Box(name, room, obj.pose[0], obj.pose[1]))
    task = NamoTask(task_id, 0, skeleton.doors, tuple(boxes), (rx, ry, ryaw), goal, st)
    return task, slot_of


def _connected(graph: dict[int, set[int]], a: int, b: int) -> bool:
    seen, frontier = {a}, [a]
    while frontier:
        room = frontier.pop()
        for nxt in graph[room] - seen:
            seen.add(nxt)
            frontier.append(nxt)
    return b in seen


def plan_geometry(
    mdp: NamoMDP, states: Sequence[State], actions: Sequence[Action], slot_to_id: dict[str, str]
) -> tuple[list[PlanStepData], list[Pose2], list[tuple[int, tuple[float, ...]]]]:
    """(symbolic steps, base poses, (step index, Panda joint angles) for every pick and place)
    of an executed plan, with objects named by the scene's ids."""
    st = mdp.task.settings if mdp.task is not None else NamoSettings()
    top = st.box_size[2] + 0.02
    pose0 = states[0][0]
    assert isinstance(pose0, tuple)
    path: list[Pose2] = [(float(pose0[0]), float(pose0[1]), float(pose0[2]))]
    steps: list[PlanStepData] = []
    arm: list[tuple[int, tuple[float, ...]]] = []
    for i, (op, target, obj) in enumerate(actions):
        before, after = states[i], states[i + 1]
        pose = after[0]
        assert isinstance(pose, tuple)
        base: Pose2 = (float(pose[0]), float(pose[1]), float(pose[2]))
        held = str(before[2])
        name = slot_to_id.get(held, held)
        if op == "move":
            if base != path[-1]:
                path.append(base)
            mode = "transit" if held == NONE else "transfer"
            objects = [] if held == NONE else [name]
            steps.append(PlanStepData("move", objects, mode, base, len(path) - 1))
        elif op in ("pick", "place"):
            if op == "pick":
                value = before[mdp.layout.slot_index[str(obj)]]
                assert isinstance(value, tuple)
                xy = (float(value[0]), float(value[1]))
                objects = [slot_to_id.get(str(obj), str(obj))]
            else:
                assert isinstance(target, tuple)
                xy = (float(target[0]), float(target[1]))
                objects = [name]
            scene = mdp._sync(before)
            joints = scene.arm_solution(xy[0], xy[1], top)
            if joints is not None:
                arm.append((len(steps), joints))
            steps.append(
                PlanStepData(op, objects, "manipulation", (xy[0], xy[1], base[2]), len(path) - 1)
            )
    return steps, path, arm


POSITION_TOLERANCE = 0.02  # metres between a move's target and where the base stopped
YAW_TOLERANCE = 0.05  # radians


def execute_steps(
    mdp: NamoMDP, steps: Sequence[tuple[str, list[str], Pose2]]
) -> tuple[list[State], int, str]:
    """Execute (action, object ids, target) steps from ``mdp``'s initial state in its
    simulator, as a robot would: a move drives straight and stops at the first collision
    with any wall or box. Returns (states visited, steps done, why it stopped early or "")."""
    state = mdp.initial_state()
    trace = [state]
    for i, (action, objects, target) in enumerate(steps):
        if action == "move":
            nxt = mdp.step(state, ("move", target, NONE))
            pose = nxt[0]
            assert isinstance(pose, tuple)
            off = math.hypot(float(pose[0]) - target[0], float(pose[1]) - target[1])
            dyaw = abs((float(pose[2]) - target[2] + math.pi) % (2 * math.pi) - math.pi)
            if off > POSITION_TOLERANCE or dyaw > YAW_TOLERANCE:
                trace.append(nxt)
                return (
                    trace,
                    i,
                    (
                        f"step {i}: the base was blocked {off:.2f} m short of "
                        f"({target[0]:.2f}, {target[1]:.2f})"
                    ),
                )
        elif action == "pick":
            if len(objects) != 1:
                return trace, i, f"step {i}: a pick names {len(objects)} objects"
            nxt = mdp.step(state, ("pick", None, objects[0]))
            if nxt[2] != objects[0]:
                return trace, i, f"step {i}: could not pick '{objects[0]}'"
        elif action == "place":
            nxt = mdp.step(state, ("place", (target[0], target[1]), NONE))
            if nxt[2] != NONE:
                return (
                    trace,
                    i,
                    (f"step {i}: could not put the box down at ({target[0]:.2f}, {target[1]:.2f})"),
                )
        else:
            return trace, i, f"step {i}: unknown action '{action}'"
        state = nxt
        trace.append(state)
    return trace, len(steps), ""
