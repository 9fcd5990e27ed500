"""The PyBullet world of a floor plan: walls, movable boxes, a goal object and a mobile
manipulator (the world of navigation among movable obstacles).

The robot is a holonomic 0.6 m square base carrying a Franka Panda from ``pybullet_data``,
mounted towards the back of the base and tucked for driving. The base is placed kinematically
(``resetBasePositionAndOrientation``): motion plans are checked pose by pose along finely
interpolated paths, and execution replays them the same way, so nothing is teleported past an
obstacle unchecked. A held box is carried rigidly under the gripper and checked with the robot.

Collision checking is pruned on the floor plan: each query asks a floor index
(:class:`~camp_planner.sim.floor_index.FloorIndex`) for the bodies near the robot, and only
those get an exact ``getClosestPoints`` query. Every call passes the physics client id
explicitly; a scene never touches a global client.

:meth:`FloorScene.open` takes a server from a small per-process pool that keeps the arm
loaded (:class:`~camp_planner.sim.pybullet_servers.ServerPool`), and :meth:`FloorScene.close`
removes the world's bodies and hands the server back.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from functools import cache
from time import perf_counter as _now
from typing import Protocol

import pybullet as pb

from camp_planner.sim.carry import HOLD_AHEAD, LIFT
from camp_planner.sim.floor_index import FloorIndex, Rect, rect_dist2
from camp_planner.sim.pybullet_servers import ServerPool, static_box, yaw_quaternion

Pose2D = tuple[float, float, float]  # x, y, yaw

TUCKED = (0.0, 0.0, 0.0, -3.0, 0.0, 3.0, 0.8)  # Panda joints 1-7: folded over the base
ARM_MOUNT_X = -0.12  # the arm's base sits behind the base's centre, so the tucked arm fits
GRASP_LINK = 11  # panda_grasptarget
IK_TOLERANCE = 0.015  # metres between the gripper and the grasp point
# Metres a plan's arm joints may leave the gripper off its point (precise_arm_solution):
# under half the 0.1 mm to which NAMO's states round positions, so the gripper's (x, y),
# rounded as a state holds it, is the point itself. Refining reached it in each of 450
# places of three test tasks (6 ms a solve; only plans' geometry asks for it).
PRECISE_TOLERANCE, PRECISE_ROUNDS = 4e-5, 30
# The floor-plan shortcut of ``blocked_at`` claims a hit only this far (metres) inside the
# margin, so that rounding never lets it disagree with PyBullet's distances.
_SURE_SLACK = 1e-3
_AWAY = (500.0, 500.0, -50.0)  # where absent boxes wait, outside every query
_ARM_LINKS = range(-1, 12)
_IK_MEMO = 100_000  # arm IK answers a scene remembers (each a few hundred bytes)
_Disc = tuple[float, float, float]  # a robot part's (x, y) offset and radius


# The floor index serves discs up to this much wider than the one it was built for (a
# check's margin), before it is built again.
_INDEX_SLACK = 0.05
# Up to this many bodies moved since the last query are re-indexed at once (a planner moves
# a box or two between thousands of checks); more are tested one by one until the queries
# answered that way would have paid for re-indexing them (see FloorScene._near): indexing a
# body costs what testing it 35 times does (35 µs against 0.5–1 µs), whatever their number.
_FOLD_STALE, _FOLD_QUERIES = 16, 32


ARM_URDF = "franka_panda/panda.urdf"
# Idle servers the pool keeps: one per scene a process holds at a time is enough (a planning
# call holds one; the ROS TAMP server may run two goals at once).
POOL_SIZE = 2
_POOL = ServerPool(ARM_URDF, POOL_SIZE)


def idle_servers() -> int:
    """How many servers the pool holds, ready for :meth:`FloorScene.open`."""
    return _POOL.idle()


@cache
def warm_up() -> None:
    """Put one server with the arm loaded into the pool. The first scene of a process took
    0.20 s to build (PyBullet parses the URDF's meshes once per process) and the next ones
    0.06 s, 0.04 s of it the arm: without this, that cost would land inside a planning call's
    clock."""
    _POOL.give_back(*_POOL.new_server())


class FloorDimensions(Protocol):
    """The sizes of a floor world's things, in metres."""

    @property
    def wall_height(self) -> float: ...
    @property
    def box_size(self) -> tuple[float, float, float]: ...
    @property
    def base_half_extent(self) -> float: ...
    @property
    def base_height(self) -> float: ...
    @property
    def goal_radius(self) -> float: ...
    @property
    def world_size(self) -> float: ...


class PlacedBox(Protocol):
    """A movable box standing axis-aligned at (x, y)."""

    @property
    def name(self) -> str: ...
    @property
    def x(self) -> float: ...
    @property
    def y(self) -> float: ...


class FloorWorld(Protocol):
    """What a scene is built from (a domain's task, e.g. NAMO's): walls as floor
    rectangles, named boxes, the goal object's centre and the robot's start pose."""

    @property
    def task_id(self) -> int: ...
    @property
    def settings(self) -> FloorDimensions: ...
    @property
    def boxes(self) -> Sequence[PlacedBox]: ...
    @property
    def start(self) -> Pose2D: ...
    @property
    def goal(self) -> tuple[float, float]: ...

    def walls(self) -> list[Rect]: ...

    def box_rect(self, x: float, y: float) -> Rect: ...


class FloorScene:
    """One world's scene in the PyBullet server ``client``.

    ``boxes`` names the movable boxes to create (default: all of the world's). A CAMP's
    collision world is built from the boxes it keeps, so dropped boxes cost nothing.
    ``arm``: the arm, already loaded in ``client`` (as the pool's servers have it); by
    default it is loaded here.
    """

    def __init__(
        self,
        world: FloorWorld,
        client: int,
        boxes: Iterable[str] | None = None,
        arm: int | None = None,
    ) -> None:
        self.world = world
        self.client = client
        self._pooled = False
        st = world.settings
        c = client
        self.checks = 0  # collision queries answered (the four methods below)
        self.check_seconds = 0.0  # ... and the time they took
        self.ik_requests = 0  # arm_solution calls, remembered answers included
        self.walls: list[int] = []
        for x0, y0, x1, y1 in world.walls():
            self.walls.append(
                static_box(
                    self.client,
                    ((x1 - x0) / 2, (y1 - y0) / 2, st.wall_height / 2),
                    ((x0 + x1) / 2, (y0 + y1) / 2, st.wall_height / 2),
                    (0.15, 0.16, 0.2, 1.0),
                )
            )
        wanted = None if boxes is None else set(boxes)
        self.boxes: dict[str, int] = {}
        half = (st.box_size[0] / 2, st.box_size[1] / 2, st.box_size[2] / 2)
        for box in world.boxes:
            if wanted is None or box.name in wanted:
                self.boxes[box.name] = static_box(
                    self.client, half, (box.x, box.y, half[2]), (0.15, 0.39, 0.92, 1.0)
                )
        if wanted is not None and wanted - set(self.boxes):
            unknown = ", ".join(sorted(wanted - set(self.boxes)))
            raise KeyError(f"task {world.task_id} has no box named {unknown}")
        goal_shape = pb.createCollisionShape(
            pb.GEOM_CYLINDER, radius=st.goal_radius, height=0.2, physicsClientId=c
        )
        self.goal = pb.createMultiBody(0.0, goal_shape, -1, (*world.goal, 0.1), physicsClientId=c)
        hb = st.base_half_extent
        self.base = static_box(
            self.client, (hb, hb, st.base_height / 2), (0, 0, 0), (0.3, 0.3, 0.3, 1)
        )
        if arm is None:
            arm = pb.loadURDF(
                ARM_URDF, (0, 0, st.base_height), useFixedBase=True, physicsClientId=c
            )
        self.arm = int(arm)
        for j, q in enumerate(TUCKED):
            pb.resetJointState(self.arm, j, q, physicsClientId=c)
        self.held: str | None = None
        self._box_rects: dict[int, tuple[float, float, float, float] | None] = {}
        # The floor index of :meth:`_near` (built on its first call), and the bodies that
        # moved, appeared or went since it last looked at them.
        self._index: FloorIndex | None = None
        self._stale: set[int] = set()
        self._lazy_queries = 0  # queries answered without the index since it was refreshed
        self._zones: list[int] = []
        self._held_offset = (0.0, 0.0, 0.0)
        # Per robot part: (x, y) offset in the robot frame and radius of a disc holding it.
        self._part_discs: dict[int, _Disc] = {}
        # What _measure_robot found, per held box (None: nothing held).
        self._measured: dict[str | None, tuple[float, float, dict[int, _Disc]]] = {}
        self._ik_memo: dict[tuple[Pose2D, float, float, float], tuple[float, ...] | None] = {}
        self._names = {v: k for k, v in self.boxes.items()}
        self._away_slot = {name: i for i, name in enumerate(sorted(self.boxes))}
        self._names.update({w: "wall" for w in self.walls})
        self._names[self.goal] = "goal"
        self._robot = {self.base, self.arm}
        # Floor rectangles of the bodies that never move (walls, goal, keep-out zones), for
        # the exact disc test in :meth:`_near`.
        self._static_rects: dict[int, tuple[float, float, float, float]] = {
            w: rect for w, rect in zip(self.walls, world.walls(), strict=True)
        }
        gx, gy = world.goal
        g = st.goal_radius
        self._static_rects[self.goal] = (gx - g, gy - g, gx + g, gy + g)
        self.pose: Pose2D = world.start
        self._arm_at: Pose2D | None = None  # where the arm was last put (None: not yet)
        self.set_base(world.start)
        self._measure_robot()

    @classmethod
    def open(cls, world: FloorWorld, boxes: Iterable[str] | None = None) -> FloorScene:
        """The scene in a server of the process's pool (a new one if none is idle); give it
        back with :meth:`close`."""
        client, arm = _POOL.take()
        try:
            scene = cls(world, client, boxes, arm=arm)
        except BaseException:
            pb.disconnect(physicsClientId=client)
            raise
        scene._pooled = True
        return scene

    def close(self) -> None:
        """Remove everything but the arm and hand the server back to the pool (a scene from
        :meth:`open` only; the scene is unusable afterwards)."""
        if not self._pooled:
            raise RuntimeError("only a scene from FloorScene.open goes back to the pool")
        self._pooled = False
        c = self.client
        for body in {*self.walls, *self.boxes.values(), *self._zones, self.goal, self.base}:
            pb.removeBody(body, physicsClientId=c)
        for j, q in enumerate(TUCKED):
            pb.resetJointState(self.arm, j, q, physicsClientId=c)
        _POOL.give_back(c, self.arm)

    # --- placing things ---------------------------------------------------------------------
    def set_base(self, pose: Pose2D) -> None:
        """Put the base (and the arm and any held box with it) at ``pose``."""
        self._move_base(pose)
        self._place_arm()

    def _move_base(self, pose: Pose2D) -> None:
        """:meth:`set_base` without the arm, which follows when something asks for it
        (:meth:`_place_arm`).

        The arm is a body of 12 links: moving it cost 6.2 µs against the base's 1.1 µs, and
        of the validity checks that had to move the robot to ask PyBullet, 96 % were settled
        without asking about the arm (the paper's world, test task 0)."""
        c = self.client
        x, y, yaw = pose
        quat = yaw_quaternion(yaw)
        h = self.world.settings.base_height
        pb.resetBasePositionAndOrientation(self.base, (x, y, h / 2), quat, physicsClientId=c)
        if self.held is not None:
            dx, dy, z = self._held_offset
            hx = x + dx * math.cos(yaw) - dy * math.sin(yaw)
            hy = y + dx * math.sin(yaw) + dy * math.cos(yaw)
            held = self.boxes[self.held]
            pb.resetBasePositionAndOrientation(held, (hx, hy, z), quat, physicsClientId=c)
            self._moved(held)
        self.pose = pose

    def _place_arm(self) -> None:
        """Put the arm on the base where the base now stands, if it is not there already.
        Everything that asks PyBullet about the arm calls this first."""
        if self._arm_at == self.pose:
            return
        x, y, yaw = self.pose
        ax, ay = x + ARM_MOUNT_X * math.cos(yaw), y + ARM_MOUNT_X * math.sin(yaw)
        pb.resetBasePositionAndOrientation(
            self.arm,
            (ax, ay, self.world.settings.base_height),
            yaw_quaternion(yaw),
            physicsClientId=self.client,
        )
        self._arm_at = self.pose

    def _moved(self, body: int) -> None:
        """Forget what is remembered about where box ``body`` stands (every method that
        moves a box calls this)."""
        self._box_rects.pop(body, None)
        self._stale.add(body)

    def remove_box(self, name: str) -> None:
        """Take box ``name`` out of the world (a box that is absent in a state)."""
        i = self._away_slot[name]
        x, y, z = _AWAY
        body = self.boxes[name]
        pb.resetBasePositionAndOrientation(
            body, (x + 2 * i, y, z), (0, 0, 0, 1), physicsClientId=self.client
        )
        self._moved(body)

    def grasp(self, name: str) -> None:
        """Hold box ``name``: from now on it moves with the base and counts as the robot."""
        if self.held is not None:
            raise RuntimeError(f"already holding {self.held}")
        self.held = name
        self._held_offset = (HOLD_AHEAD, 0.0, self.world.settings.box_size[2] / 2 + LIFT)
        self.set_base(self.pose)
        self._measure_robot()

    def let_go(self) -> None:
        """Stop counting the held box as part of the robot, wherever it is (the caller puts
        it somewhere). The broadphase radius shrinks back to the bare robot's: left at the
        carrying size, every later check would look at about three times the floor area."""
        if self.held is not None:
            self._stale.add(self.boxes[self.held])  # back on the floor index
        self.held = None
        self._measure_robot()

    def release(self, x: float, y: float) -> None:
        """Put the held box down standing at (x, y)."""
        if self.held is None:
            raise RuntimeError("not holding anything")
        name = self.held
        self.place_box(name, x, y)  # axis-aligned, as NAMO states record boxes
        self.let_go()

    def arm_reaches(self, x: float, y: float, z: float) -> bool:
        """Whether the tucked arm can put its gripper, pointing down, at (x, y, z) from the
        current base pose (inverse kinematics within ``IK_TOLERANCE``); the arm is tucked
        again afterwards."""
        return self.arm_solution(x, y, z) is not None

    def arm_solution(self, x: float, y: float, z: float) -> tuple[float, ...] | None:
        """The 7 Panda joint angles that put the gripper, pointing down, at (x, y, z) from the
        current base pose, or None when IK misses by more than ``IK_TOLERANCE``; the arm is
        left tucked.

        Remembered per base pose and target: the arm starts every solve tucked, so the
        answer depends on nothing else. A CSI sample's variants ask the same question up to
        25 times, and IK was a fifth of CSI learning's time."""
        self.ik_requests += 1
        key = (self.pose, x, y, z)
        if key in self._ik_memo:
            return self._ik_memo[key]
        if len(self._ik_memo) >= _IK_MEMO:
            self._ik_memo.clear()
        found = self._arm_solution(x, y, z)
        self._ik_memo[key] = found
        return found

    def _arm_solution(self, x: float, y: float, z: float) -> tuple[float, ...] | None:
        self._place_arm()
        c = self.client
        down = pb.getQuaternionFromEuler((math.pi, 0.0, self.pose[2]))
        q = pb.calculateInverseKinematics(
            self.arm,
            GRASP_LINK,
            (x, y, z),
            down,
            maxNumIterations=100,
            residualThreshold=1e-4,
            physicsClientId=c,
        )
        for j in range(7):
            pb.resetJointState(self.arm, j, q[j], physicsClientId=c)
        reached = pb.getLinkState(
            self.arm, GRASP_LINK, computeForwardKinematics=True, physicsClientId=c
        )[4]
        for j, v in enumerate(TUCKED):
            pb.resetJointState(self.arm, j, v, physicsClientId=c)
        if math.dist(reached, (x, y, z)) > IK_TOLERANCE:
            return None
        return tuple(float(v) for v in q[:7])

    def precise_arm_solution(self, x: float, y: float, z: float) -> tuple[float, ...] | None:
        """:meth:`arm_solution`, refined until the gripper lands within ``PRECISE_TOLERANCE``
        of (x, y, z) (or as close as ``PRECISE_ROUNDS`` more solves get it): joints for a
        plan's controllers, where the gripper's place is where a box goes; the arm is left
        tucked. PyBullet's IK stops up to ``IK_TOLERANCE`` short, towards the base (13 mm
        in the test tasks): a box put down where those joints take the gripper overlapped
        the robot in a tenth of the places the MDP had accepted at the exact point. Each
        round aims past the point by the miss so far, seeded with the best joints yet."""
        q = self.arm_solution(x, y, z)
        if q is None:
            return None
        goal = (x, y, z)
        at = self.gripper_point(q)
        miss = math.dist(at, goal)
        aim = list(goal)
        c = self.client
        down = pb.getQuaternionFromEuler((math.pi, 0.0, self.pose[2]))
        for _ in range(PRECISE_ROUNDS):
            if miss <= PRECISE_TOLERANCE:
                break
            aim = [a + g - f for a, g, f in zip(aim, goal, at, strict=True)]
            for j, v in enumerate(q):
                pb.resetJointState(self.arm, j, v, physicsClientId=c)
            ik = {"maxNumIterations": 100, "residualThreshold": 1e-5, "physicsClientId": c}
            solved = pb.calculateInverseKinematics(self.arm, GRASP_LINK, aim, down, **ik)
            for j, v in enumerate(TUCKED):
                pb.resetJointState(self.arm, j, v, physicsClientId=c)
            candidate = tuple(float(v) for v in solved[:7])
            at = self.gripper_point(candidate)
            if math.dist(at, goal) < miss:
                q, miss = candidate, math.dist(at, goal)
        return q

    def gripper_point(self, q: Sequence[float]) -> tuple[float, float, float]:
        """Where the grasp link (``GRASP_LINK``) is with the arm at Panda joints 1-7 ``q`` on
        the current base pose (forward kinematics); the arm is put back as it was, so that
        collision checks keep seeing the arm they were measured with."""
        if len(q) != len(TUCKED):
            raise ValueError(f"the arm has {len(TUCKED)} joints, not {len(q)}")
        self._place_arm()
        c = self.client
        was = [float(pb.getJointState(self.arm, j, physicsClientId=c)[0]) for j in range(7)]
        for j, v in enumerate(q):
            pb.resetJointState(self.arm, j, float(v), physicsClientId=c)
        at = pb.getLinkState(
            self.arm, GRASP_LINK, computeForwardKinematics=True, physicsClientId=c
        )[4]
        for j, v in enumerate(was):
            pb.resetJointState(self.arm, j, v, physicsClientId=c)
        return (float(at[0]), float(at[1]), float(at[2]))

    def box_collisions(self, name: str, x: float, y: float, yaw: float = 0.0) -> set[str]:
        """What box ``name`` would overlap standing at (x, y): names, ``"robot"`` included.
        The box is put back afterwards."""
        self.checks += 1
        t0 = _now()
        hits = self._box_collisions(name, x, y, yaw)
        self.check_seconds += _now() - t0
        return hits

    def _box_collisions(self, name: str, x: float, y: float, yaw: float) -> set[str]:
        self._place_arm()
        c = self.client
        body = self.boxes[name]
        old_pos, old_orn = pb.getBasePositionAndOrientation(body, physicsClientId=c)
        self.place_box(name, x, y, yaw)
        hits: set[str] = set()
        lo, hi = pb.getAABB(body, -1, physicsClientId=c)
        found = pb.getOverlappingObjects(lo, hi, physicsClientId=c) or ()
        robot = {self.base, self.arm}
        for other in {int(b) for b, _ in found} - {body}:
            label = "robot" if other in robot else self._names.get(other)
            if label is None or label in hits:
                continue
            if any(p[8] < -1e-6 for p in pb.getClosestPoints(body, other, 0.0, physicsClientId=c)):
                hits.add(label)
        pb.resetBasePositionAndOrientation(body, old_pos, old_orn, physicsClientId=c)
        self._moved(body)
        return hits

    def box_position(self, name: str) -> tuple[float, float]:
        pos, _ = pb.getBasePositionAndOrientation(self.boxes[name], physicsClientId=self.client)
        return (float(pos[0]), float(pos[1]))

    def place_box(self, name: str, x: float, y: float, yaw: float = 0.0) -> None:
        """Put box ``name`` standing on the floor at (x, y)."""
        z = self.world.settings.box_size[2] / 2
        body = self.boxes[name]
        pb.resetBasePositionAndOrientation(
            body, (x, y, z), yaw_quaternion(yaw), physicsClientId=self.client
        )
        self._moved(body)

    # --- keep-out zones -----------------------------------------------------------------------
    def set_zones(self, rects: list[tuple[float, float, float, float]]) -> None:
        """Make floor rectangles (e.g. the rooms a context forbids) solid for collision checks:
        they are reported as ``"forbidden"``. Planning only; :meth:`clear_zones` removes them."""
        self.clear_zones()
        height = self.world.settings.wall_height + 1.0
        for x0, y0, x1, y1 in rects:
            body = static_box(
                self.client,
                ((x1 - x0) / 2, (y1 - y0) / 2, height / 2),
                ((x0 + x1) / 2, (y0 + y1) / 2, height / 2),
                (0.5, 0.5, 0.5, 0.0),
            )
            self._zones.append(body)
            self._names[body] = "forbidden"
            self._static_rects[body] = (x0, y0, x1, y1)
            self._stale.add(body)

    def clear_zones(self) -> None:
        for body in self._zones:
            pb.removeBody(body, physicsClientId=self.client)
            self._names.pop(body, None)
            self._static_rects.pop(body, None)
            self._stale.add(body)
        self._zones = []

    # --- collision checking -----------------------------------------------------------------
    def robot_parts(self) -> list[int]:
        """The robot's bodies (base, arm, any held box), each where the robot stands."""
        self._place_arm()
        parts = [self.base, self.arm]
        if self.held is not None:
            parts.append(self.boxes[self.held])
        return parts

    def collisions(
        self,
        pose: Pose2D | None = None,
        margin: float = 0.0,
        ignore: frozenset[str] | set[str] = frozenset(),
    ) -> set[str]:
        """Names of everything the robot (with a held box) overlaps at ``pose`` (default: where
        it is): box names, ``"wall"``, ``"goal"`` and ``"forbidden"`` (keep-out zones).
        ``margin`` > 0 also reports bodies closer than that; names in ``ignore`` are not
        checked at all (cheaper than filtering the result)."""
        self.checks += 1
        t0 = _now()
        if pose is not None:
            self.set_base(pose)
        x, y, _ = self.pose
        hits = self._exact(self._near(x, y, margin, ignore), margin)
        self.check_seconds += _now() - t0
        return hits

    def collisions_at(
        self,
        pose: Pose2D,
        margin: float = 0.0,
        ignore: frozenset[str] | set[str] = frozenset(),
    ) -> set[str]:
        """What :meth:`collisions` reports at ``pose``, for motion planners' validity checks:
        the robot is moved in the simulator only when the broadphase finds something near,
        so afterwards it stands at ``pose`` or where it was.

        The broadphase box depends only on ``pose`` and the robot's radius, not on where the
        robot's bodies are; in open space (most of a planner's samples) this skips the two
        or three body resets that were 40 % of a check's cost."""
        self.checks += 1
        t0 = _now()
        near = self._near(pose[0], pose[1], margin, ignore)
        hits: set[str] = set()
        if near:
            self.set_base(pose)
            hits = self._exact(near, margin)
        self.check_seconds += _now() - t0
        return hits

    def blocked_at(
        self,
        pose: Pose2D,
        margin: float = 0.0,
        ignore: frozenset[str] | set[str] = frozenset(),
    ) -> bool:
        """Whether :meth:`collisions_at` would report anything at ``pose``: the validity
        check motion planners call hundreds of thousands of times, so it answers as cheaply
        as the geometry allows.

        Nearly every sample a planner draws in a cluttered room has something within the
        broadphase box, and most invalid samples lie squarely inside a wall or a box. Those
        are settled on the floor plan without the simulator: the disc inscribed in the base
        (half-extent ``base_half_extent`` at any yaw) overlapping a body's floor rectangle
        grown by ``margin`` means the base itself comes closer than ``margin`` (every body
        stands on the floor, as the base does, so their heights overlap). Only the rest is
        asked of PyBullet, stopping at the first body within ``margin``; the robot is
        moved there first, its arm only when the arm is asked about."""
        self.checks += 1
        t0 = _now()
        hit = self._blocked_at(pose, margin, ignore)
        self.check_seconds += _now() - t0
        return hit

    def _blocked_at(self, pose: Pose2D, margin: float, ignore: frozenset[str] | set[str]) -> bool:
        x, y = pose[0], pose[1]
        near = self._near(x, y, margin, ignore)
        if not near:
            return False
        sure = self.world.settings.base_half_extent + margin - _SURE_SLACK
        rects: list[tuple[int, tuple[float, float, float, float] | None]] = []
        for body, _ in near:
            if body == self.goal:  # a cylinder: its floor rectangle would claim its corners
                gx, gy = self.world.goal
                if math.hypot(x - gx, y - gy) < self.world.settings.goal_radius + sure:
                    return True
            rect = self._static_rects.get(body) or self._box_rect(body)
            if rect is not None and body != self.goal and rect_dist2(rect, x, y) < sure * sure:
                return True
            rects.append((body, rect))
        # Each part of the robot lies within its own disc (measured with the robot): a body
        # whose floor rectangle is farther from a part's disc than the margin cannot touch
        # that part, so PyBullet is asked only about the pairs left, and not at all (the
        # robot not even moved) when none is.
        yaw = pose[2]
        cos, sin = math.cos(yaw), math.sin(yaw)
        pairs: list[tuple[int, int]] = []
        for part, (cx, cy, r) in self._part_discs.items():
            px, py = x + cx * cos - cy * sin, y + cx * sin + cy * cos
            reach = r + margin + _SURE_SLACK
            for body, rect in rects:
                if rect is not None and rect_dist2(rect, px, py) >= reach * reach:
                    continue
                pairs.append((part, body))
        if not pairs:
            return False
        self._move_base(pose)
        c, arm = self.client, self.arm
        for part, body in pairs:
            if part == arm:
                self._place_arm()
            points = pb.getClosestPoints(part, body, margin, physicsClientId=c)
            if any(p[8] < margin - 1e-6 for p in points):
                return True
        return False

    def _box_rect(self, body: int) -> tuple[float, float, float, float] | None:
        """The floor rectangle of a movable box standing axis-aligned (None if turned).

        Remembered until the box moves (every method that moves one forgets it): a
        validity check asked PyBullet for the pose of every box near the robot, 80,000
        times in ten of the paper's tasks."""
        if body in self._box_rects:
            return self._box_rects[body]
        pos, orn = pb.getBasePositionAndOrientation(body, physicsClientId=self.client)
        rect = None
        if abs(orn[2]) <= 1e-9 and abs(orn[0]) <= 1e-9 and abs(orn[1]) <= 1e-9:
            rect = self.world.box_rect(float(pos[0]), float(pos[1]))
        self._box_rects[body] = rect
        return rect

    def _near(
        self, x: float, y: float, margin: float, ignore: frozenset[str] | set[str]
    ) -> list[tuple[int, str]]:
        """(body, name) of every named body, not ignored and not the robot's, whose floor
        rectangle comes within ``margin`` of the robot's disc at (x, y) (radius ``_radius``;
        a turned box's rectangle is its AABB's). Every point of the robot lies in that disc
        at any yaw, and every body stands on the floor, so no other body can come within
        ``margin`` of the robot: callers settle the rest exactly.

        Answered from a floor index (:class:`FloorIndex`) instead of PyBullet's broadphase:
        the AABB query and the loop over what it found (the robot's own links included)
        were half of a validity check's cost. Queries the index was not built for (a larger
        disc, or outside the world) go to PyBullet (:meth:`_near_broadphase`)."""
        r = self._radius + margin
        index = self._index
        if index is None or r > index.reach:
            index = self._index = FloorIndex(self.world.settings.world_size, r + _INDEX_SLACK)
            self._stale = set(self._names)
        stale = self._stale
        if stale and (len(stale) <= _FOLD_STALE or self._lazy_queries >= _FOLD_QUERIES):
            self._refresh(index)
            stale = self._stale
        cell = index.cell_of(x, y)
        if cell < 0:
            return self._near_broadphase(x, y, margin, ignore)
        held = -1 if self.held is None else self.boxes[self.held]
        r2 = r * r
        if not stale:
            return [
                (body, name)
                for body, (name, rect) in index.cells[cell].items()
                if body != held and name not in ignore and rect_dist2(rect, x, y) <= r2
            ]
        # Many bodies moved (CSI learning puts a new sampled state in the scene for each
        # check): test them one by one until re-indexing them pays. The bodies listed are
        # the same; only their order differs, and every caller reduces it to a set or a bool.
        self._lazy_queries += 1
        near = [
            (body, name)
            for body, (name, rect) in index.cells[cell].items()
            if body not in stale
            and body != held
            and name not in ignore
            and rect_dist2(rect, x, y) <= r2
        ]
        for body in stale:
            name = self._names.get(body)
            if name is None or body == held or name in ignore:
                continue
            rect = self._floor_rect(body)
            if rect_dist2(rect, x, y) <= r2:
                near.append((body, name))
        return near

    def _floor_rect(self, body: int) -> tuple[float, float, float, float]:
        """The floor rectangle the index lists named body ``body`` by (a turned box's is its
        AABB's)."""
        rect = self._static_rects.get(body) or self._box_rect(body)
        if rect is None:
            lo, hi = pb.getAABB(body, -1, physicsClientId=self.client)
            rect = (lo[0], lo[1], hi[0], hi[1])
        return rect

    def _refresh(self, index: FloorIndex) -> None:
        """Put every stale body where it now stands in ``index`` (nowhere if it is held or
        has gone)."""
        held = -1 if self.held is None else self.boxes[self.held]
        for body in self._stale:
            name = self._names.get(body)
            rect = None
            if name is not None and body != held:
                rect = self._floor_rect(body)
            index.put(body, name or "", rect)
        self._stale = set()
        self._lazy_queries = 0

    def _near_broadphase(
        self, x: float, y: float, margin: float, ignore: frozenset[str] | set[str]
    ) -> list[tuple[int, str]]:
        """(body, name) of every named body, not ignored and not the robot's, that may come
        within ``margin`` of the robot at (x, y): its AABB overlaps a box around the robot's
        disc, and (for walls, the goal and zones) its floor rectangle meets the disc itself.

        The disc (radius ``_radius`` + ``margin``) holds every point of the robot at any yaw,
        since turning about the base's axis keeps each point's distance to it; a rectangle
        farther away cannot be touched. Near a doorway this drops the walls that only the
        box's corners reached."""
        r = self._radius + margin
        found = pb.getOverlappingObjects(
            (x - r, y - r, -1.0), (x + r, y + r, self._top + margin), physicsClientId=self.client
        )
        # The base and the arm have no name; the held box has one but is the robot's. Every
        # named body has one link, so each comes once (the arm's links come once each).
        held = -1 if self.held is None else self.boxes[self.held]
        names, static, r2 = self._names, self._static_rects, r * r
        near: list[tuple[int, str]] = []
        for body, _ in found or ():
            name = names.get(body)
            if name is None or body == held or name in ignore:
                continue
            rect = static.get(body)
            if rect is not None and rect_dist2(rect, x, y) > r2:
                continue
            near.append((body, name))
        return near

    def _exact(self, near: list[tuple[int, str]], margin: float) -> set[str]:
        """Names of the ``near`` bodies closer than ``margin`` to a robot part (touching if 0)."""
        own = self.robot_parts()
        hits: set[str] = set()
        for body, name in near:
            if name in hits:
                continue
            for part in own:
                points = pb.getClosestPoints(part, body, margin, physicsClientId=self.client)
                if any(p[8] < margin - 1e-6 for p in points):
                    hits.add(name)
                    break
        return hits

    def _measure_robot(self) -> None:
        """The robot's horizontal radius around the base centre and its height, for the
        broadphase box (recomputed when it picks or drops a box).

        Measured from the parts' AABBs with the robot turned to heading 0, where the base's
        box is axis-aligned and its AABB is the box itself: at 45 degrees the AABB's corners
        lie 41 % farther out than the base's, and a radius measured there would make every
        broadphase box up to twice the area it needs. Any heading gives a valid radius
        (turning about the base's axis keeps distances to it); heading 0 the tightest.

        Measured once per held box (the robot's shape is the same wherever it stands):
        CSI learning picks and drops a box about once per transition it asks for."""
        known = self._measured.get(self.held)
        if known is not None:
            # Shared, not copied: a measurement fills a new dict and nothing changes it after.
            self._radius, self._top, self._part_discs = known
            return
        c = self.client
        pose = self.pose
        x, y, _ = pose
        self.set_base((x, y, 0.0))
        radius, top = 0.0, 0.0
        self._part_discs = {}
        for part in self.robot_parts():
            links = _ARM_LINKS if part == self.arm else (-1,)
            x0 = y0 = math.inf
            x1 = y1 = -math.inf
            for link in links:
                lo, hi = pb.getAABB(part, link, physicsClientId=c)
                for cx in (lo[0], hi[0]):
                    for cy in (lo[1], hi[1]):
                        radius = max(radius, math.hypot(cx - x, cy - y))
                top = max(top, hi[2])
                x0, y0 = min(x0, lo[0]), min(y0, lo[1])
                x1, y1 = max(x1, hi[0]), max(y1, hi[1])
            # The part's disc, in the robot's frame (heading 0 here, so world offsets are
            # robot-frame offsets): centred on the part's AABB, through its corners.
            half = math.hypot(x1 - x0, y1 - y0) / 2 + 0.01
            self._part_discs[part] = ((x0 + x1) / 2 - x, (y0 + y1) / 2 - y, half)
        self.set_base(pose)
        self._radius = radius + 0.01
        self._top = top + 0.01
        self._measured[self.held] = (self._radius, self._top, self._part_discs)

    def is_free(self, pose: Pose2D, margin: float = 0.0) -> bool:
        return not self.collisions(pose, margin)
