"""A NAMO task's robot driven as its controllers drive it (:class:`NamoRobot`), for the sim
robot node of closed-loop execution.

Every change of the world goes through the task's :class:`~.mdp.NamoMDP`, so the robot's
state is always a state of the model: its scene (:func:`~.scene_io.scene_from_task`) is one
the planner reads back and replans from. The base moves by the MDP's own straight drive,
which stops at the first collision with a wall or a box. The arm is remembered, not
simulated: NAMO checks drives with the arm tucked and does not collision-check its motions.
What the gripper takes hold of follows from where the arm puts it (forward kinematics),
never from a plan. Objects are named by the scene's ids, which for a simulated task are the
MDP's box slot names.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from itertools import pairwise

from camp_planner.core.mdp import State
from camp_planner.domains.interface.robot import RobotSim
from camp_planner.domains.interface.scene import Pose2, Scene
from camp_planner.domains.namo.layout import NONE, SLOTS_PER_ROOM, in_reach, wrap
from camp_planner.domains.namo.mdp import MOVE_STEP, TURN_STEP, NamoMDP
from camp_planner.domains.namo.plan_io import PANDA_JOINTS, POSITION_TOLERANCE, YAW_TOLERANCE
from camp_planner.domains.namo.scene_io import scene_from_task
from camp_planner.domains.namo.world import NamoTask
from camp_planner.sim.carry import hold_point
from camp_planner.sim.floor_scene import TUCKED, FloorScene

# The Panda's fingers open 8 cm: with the grasp point up to half that beyond a box's edge,
# the inner finger still closes on the box, so a box is under the gripper while its centre
# lies within half its side plus 4 cm of the grasp point (in x, y). A plan's grasp joints
# put the gripper on the centre. Boxes never overlap, so a gripper over one box's top is
# nearer its centre than any other's: of the boxes within reach, the nearest is taken.
FINGER_REACH = 0.04
# Metres the grasp point may lie off the height a pick sends it to (2 cm above the box's
# top): IK lands within 1.5 cm of it, and fingers about 5 cm long, sent higher, close on air.
GRASP_HEIGHT_TOLERANCE = 0.05
PUSH_CANDIDATES = 3  # a push moves one of the nearest boxes
PUSH_RANGE = 2.5  # metres from the base within which a box can be bumped (most of a room)
PUSH_DISTANCE = (0.3, 0.6)  # metres a pushed box slides
DISTURB_TRIES = 30  # spots drawn per box before a disturbance gives that box up
BLOCK_SPAN = (0.4, 0.8)  # where on the remaining path a box is put, as fractions of its length
# Sideways offsets (metres) tried for a box put on the path: the base (0.3 m half side) still
# strikes a 0.15 m half-side box 0.2 m off its centre line.
BLOCK_OFFSETS = (0.0, 0.1, -0.1, 0.2, -0.2)
# A slipped box that cannot stand right below the gripper is put at the nearest free spot
# on rings around it, this far apart, out to SLIP_RADIUS (a box that falls against an
# obstacle comes to rest beside it).
SLIP_RING, SLIP_RADIUS, SLIP_ANGLES = 0.05, 0.6, 16


class NamoRobot(RobotSim):
    """The robot and world of one NAMO task, moved through the task's MDP."""

    joint_names = PANDA_JOINTS

    def __init__(self, task: NamoTask, mdp: NamoMDP) -> None:
        self.task = task
        self.mdp = mdp
        self.state: State = mdp.initial_state()
        self._q: tuple[float, ...] = TUCKED
        st = task.settings
        self._top = st.box_size[2] + 0.02  # where a pick sends the grasp point (NamoMDP)
        self._grasp_radius = min(st.box_size[0], st.box_size[1]) / 2 + FINGER_REACH

    # --- state ------------------------------------------------------------------------------
    def base_pose(self) -> Pose2:
        pose = self.state[0]
        assert isinstance(pose, tuple)
        return (float(pose[0]), float(pose[1]), float(pose[2]))

    def _held_slot(self) -> str:
        held = str(self.state[2])
        return "" if held == NONE else held

    def _floor_boxes(self) -> dict[str, tuple[float, float]]:
        """Slot name → (x, y) of every box standing on the floor."""
        out: dict[str, tuple[float, float]] = {}
        for name, i in self.mdp.layout.slot_index.items():
            value = self.state[i]
            if isinstance(value, tuple):
                out[name] = (float(value[0]), float(value[1]))
        return out

    def _scene(self) -> FloorScene:
        return self.mdp.sync(self.state)

    def _with_box(self, name: str, x: float, y: float) -> State:
        """The state with box ``name`` standing at (x, y) and not held."""
        out = list(self.state)
        if out[2] == name:
            out[2] = NONE
        out[self.mdp.layout.slot_index[name]] = (round(x, 4), round(y, 4))
        return tuple(out)

    # --- RobotSim -----------------------------------------------------------------------------
    def drive(self, pose: Pose2) -> str:
        target = (float(pose[0]), float(pose[1]), float(pose[2]))
        start = self.base_pose()
        self.state = self.mdp.simulate(self.state, ("move", target, NONE))
        x, y, yaw = self.base_pose()
        off = math.hypot(x - target[0], y - target[1])
        if off <= POSITION_TOLERANCE and abs(wrap(yaw - target[2])) <= YAW_TOLERANCE:
            return ""
        hits = self._blocker(start, target)
        what = f"blocked by {', '.join(sorted(hits))}" if hits else "blocked"
        return (
            f"{what} at ({x:.2f}, {y:.2f}), {off:.2f} m short of ({target[0]:.2f}, {target[1]:.2f})"
        )

    def _blocker(self, start: Pose2, target: Pose2) -> set[str]:
        """What the base strikes first on its way from ``start`` to ``target``: the MDP's
        drive interpolated again (its steps), up to the first pose that collides."""
        scene = self._scene()
        dyaw = wrap(target[2] - start[2])
        dist = math.hypot(target[0] - start[0], target[1] - start[1])
        n = max(1, math.ceil(max(dist / MOVE_STEP, abs(dyaw) / TURN_STEP)))
        hits: set[str] = set()
        for k in range(1, n + 1):
            f = k / n
            probe = (
                start[0] + f * (target[0] - start[0]),
                start[1] + f * (target[1] - start[1]),
                start[2] + f * dyaw,
            )
            hits = scene.collisions(probe)
            if hits:
                break
        scene.set_base(self.base_pose())
        return hits

    def arm_joints(self) -> tuple[float, ...]:
        return self._q

    def set_arm(self, q: Sequence[float]) -> str:
        if len(q) != len(PANDA_JOINTS):
            return f"the arm has {len(PANDA_JOINTS)} joints, not {len(q)}"
        self._q = tuple(float(v) for v in q)
        return ""

    def gripper(self, close: bool) -> str:
        return self._close() if close else self._open()

    def _close(self) -> str:
        held = self._held_slot()
        if held:
            return f"the gripper already holds {held}"
        gx, gy, gz = self._scene().gripper_point(self._q)
        at = f"({gx:.2f}, {gy:.2f}, {gz:.2f})"
        if abs(gz - self._top) > GRASP_HEIGHT_TOLERANCE:
            return f"nothing to grasp: the gripper at {at} is not at a box's top"
        near = [
            (math.hypot(bx - gx, by - gy), name)
            for name, (bx, by) in self._floor_boxes().items()
            if math.hypot(bx - gx, by - gy) <= self._grasp_radius
        ]
        if not near:
            return f"nothing to grasp under the gripper at {at}"
        _, name = min(near)
        nxt = self.mdp.simulate(self.state, ("pick", None, name))
        if nxt[2] != name:
            bx, by = self._floor_boxes()[name]
            reaches = in_reach(self.base_pose(), bx, by) and self._scene().arm_reaches(
                bx, by, self._top
            )
            why = "lifting it would strike something" if reaches else "out of the arm's reach"
            return f"could not pick {name} under the gripper at {at}: {why}"
        self.state = nxt
        return ""

    def _open(self) -> str:
        held = self._held_slot()
        if not held:
            return "the gripper holds nothing"
        scene = self._scene()
        gx, gy, _ = scene.gripper_point(self._q)
        x, y = round(gx, 4), round(gy, 4)
        nxt = self.mdp.simulate(self.state, ("place", (x, y), NONE))
        if nxt[2] != NONE:
            if not in_reach(self.base_pose(), x, y):
                why = "out of the arm's reach"
            else:
                hits = self._scene().box_collisions(held, x, y) - {held}
                why = (
                    f"it would overlap {', '.join(sorted(hits))}"
                    if hits
                    else "the arm cannot reach it"
                )
            return f"could not put {held} down at ({x:.2f}, {y:.2f}): {why}"
        self.state = nxt
        return ""

    def held(self) -> str:
        return self._held_slot()

    def scene(self, frame_id: str) -> Scene:
        return scene_from_task(self.task, self.state, frame_id)

    def goal_reached(self) -> bool:
        # The same as is_terminal for NAMO (an episode ends only at the goal); is_goal says
        # what is asked: the task is achieved.
        return self.mdp.is_goal(self.state)

    # --- disturbances -------------------------------------------------------------------------
    def _representable(self, name: str, x: float, y: float) -> bool:
        """Whether the model (and so the planner reading the scene back) has a state with box
        ``name`` standing at (x, y): inside the map, outside the goal room, a free slot in
        its room (the held box counts in the room it is carried in)."""
        st = self.task.settings
        if not (0.0 < x < st.world_size and 0.0 < y < st.world_size):
            return False
        room = self.task.room_of(x, y)
        if room == st.goal_room:
            return False
        there = [
            n for n, (bx, by) in self._floor_boxes().items() if self.task.room_of(bx, by) == room
        ]
        held = self._held_slot()
        if held:
            hx, hy, _ = hold_point(self.base_pose(), st.box_size[2])
            if self.task.room_of(hx, hy) == room:
                there.append(held)
        return len(set(there) - {name}) < SLOTS_PER_ROOM

    def _fits(self, name: str, x: float, y: float, scene: FloorScene) -> bool:
        """Whether box ``name`` may be put at (x, y): a state of the model, and overlapping
        nothing (walls, boxes, the goal object, the robot with what it holds)."""
        if not self._representable(name, x, y):
            return False
        return not (scene.box_collisions(name, x, y) - {name})

    def _move_box(self, name: str, x: float, y: float) -> None:
        self.state = self._with_box(name, x, y)
        self.mdp.sync(self.state)

    def push_object(self, rng: random.Random) -> str:
        x, y, _ = self.base_pose()
        near = sorted(
            (math.hypot(bx - x, by - y), name)
            for name, (bx, by) in self._floor_boxes().items()
            if math.hypot(bx - x, by - y) <= PUSH_RANGE
        )[:PUSH_CANDIDATES]
        names = [name for _, name in near]
        rng.shuffle(names)
        scene = self._scene()
        for name in names:
            bx, by = self._floor_boxes()[name]
            for _ in range(DISTURB_TRIES):
                d = rng.uniform(*PUSH_DISTANCE)
                heading = rng.uniform(-math.pi, math.pi)
                px, py = bx + d * math.cos(heading), by + d * math.sin(heading)
                if self._fits(name, px, py, scene):
                    self._move_box(name, px, py)
                    return name
        return ""

    def block_path(self, path: Sequence[Pose2], rng: random.Random) -> str:
        ahead = _ahead(path, self.base_pose())
        length = sum(math.dist(a[:2], b[:2]) for a, b in pairwise(ahead))
        if length <= 0.0:
            return ""
        scene = self._scene()
        # Boxes the robot (or what it holds) touches stay: moving one would move the robot's
        # own contact, which no push from outside does.
        touching = scene.collisions(self.base_pose(), 0.01)
        boxes = {n: xy for n, xy in self._floor_boxes().items() if n not in touching}
        for _ in range(DISTURB_TRIES):
            px, py, heading = _along(ahead, rng.uniform(*BLOCK_SPAN) * length)
            room = self.task.room_of(px, py)
            # Boxes of the spot's room first (a box moved within its room), then the nearest.
            order = sorted(
                boxes,
                key=lambda n: (
                    self.task.room_of(*boxes[n]) != room,
                    math.hypot(boxes[n][0] - px, boxes[n][1] - py),
                    n,
                ),
            )
            side = (-math.sin(heading), math.cos(heading))
            for name in order:
                for off in BLOCK_OFFSETS:
                    bx, by = px + off * side[0], py + off * side[1]
                    if self._fits(name, bx, by, scene):
                        self._move_box(name, bx, by)
                        return name
        return ""

    def slip(self) -> str:
        held = self._held_slot()
        if not held:
            return ""
        pose = self.base_pose()
        hx, hy, _ = hold_point(pose, self.task.settings.box_size[2])
        x, y = round(hx, 4), round(hy, 4)
        nxt = self.mdp.simulate(self.state, ("place", (x, y), NONE))
        if nxt[2] == NONE and self._representable(held, x, y):
            self.state = nxt
            return held
        scene = self._scene()
        steps = round(SLIP_RADIUS / SLIP_RING)
        for ring in range(1, steps + 1):
            r = ring * SLIP_RING
            for k in range(SLIP_ANGLES):
                a = 2 * math.pi * k / SLIP_ANGLES
                sx, sy = hx + r * math.cos(a), hy + r * math.sin(a)
                if self._fits(held, sx, sy, scene):
                    self._move_box(held, sx, sy)
                    return held
        return ""  # nowhere for it to come to rest: the grasp holds

    def close(self) -> None:
        self.mdp.close()


def _ahead(path: Sequence[Pose2], at: Pose2) -> list[Pose2]:
    """The part of ``path`` after the point nearest ``at`` (that point first)."""
    if len(path) < 2:
        return list(path)
    best: tuple[float, int, Pose2] | None = None
    for i, (a, b) in enumerate(pairwise(path)):
        dx, dy = b[0] - a[0], b[1] - a[1]
        seg = dx * dx + dy * dy
        t = 0.0 if seg == 0.0 else ((at[0] - a[0]) * dx + (at[1] - a[1]) * dy) / seg
        t = min(max(t, 0.0), 1.0)
        point = (a[0] + t * dx, a[1] + t * dy, a[2] + t * wrap(b[2] - a[2]))
        d = math.hypot(point[0] - at[0], point[1] - at[1])
        if best is None or d < best[0] - 1e-9:
            best = (d, i, point)
    assert best is not None
    _, i, point = best
    return [point, *path[i + 1 :]]


def _along(path: Sequence[Pose2], s: float) -> tuple[float, float, float]:
    """(x, y, heading of travel) at arc length ``s`` along ``path``."""
    for a, b in pairwise(path):
        seg = math.dist(a[:2], b[:2])
        if seg > 0.0 and s <= seg:
            f = s / seg
            heading = math.atan2(b[1] - a[1], b[0] - a[0])
            return (a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1]), heading)
        s -= seg
    a, b = path[-2], path[-1]
    return (b[0], b[1], math.atan2(b[1] - a[1], b[0] - a[0]))
