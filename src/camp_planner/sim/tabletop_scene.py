"""The PyBullet world of a tabletop task: static slabs (tables, bins), upright objects of
revolution, and the mobile manipulator (a holonomic base carrying a Franka Panda), with the
grasps, placements and base poses a manipulation planner asks about.

The scene knows no domain: it is built from any world with the shape of
:class:`TabletopWorld` (e.g. the manipulation domain's task). Every PyBullet call passes the
physics client id explicitly.

Grasps (:meth:`TabletopScene.check_grasp`): a grasp is a gripper pose and an approach pose
(backed off along the gripper's axis). It is feasible when the object's width the open fingers
must pass around fits the gripper's opening (:mod:`camp_planner.sim.tabletop_geometry`), IK
reaches both poses from the current base pose (checked by setting the joints and measuring the
gripper's pose error), and the arm, open gripper included, touches nothing at the approach, at
the grasp or at poses between them: every body of the scene is a candidate (the target object,
the tables, every other object); PyBullet's broadphase (``getOverlappingObjects`` on each
link's AABB) culls, ``getClosestPoints`` decides.

A held object is attached kinematically: a fixed transform from the grasp point, so moving the
arm or the base moves it. Placements (:meth:`TabletopScene.check_place`) put the held object
upright with its bottom at a given point, lowering it from above; they are checked like grasps,
the held object with the arm.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pybullet as pb

from camp_planner.sim.floor_scene import ARM_URDF, GRASP_LINK, TUCKED
from camp_planner.sim.pybullet_servers import (
    ServerPool,
    build_in_pool,
    static_box,
    yaw_quaternion,
)
from camp_planner.sim.tabletop_geometry import (
    SIDE,
    TOP,
    Quat,
    Section,
    Vec3,
    grasp_height,
    hand_orientation,
    swept_width,
)
from camp_planner.sim.tabletop_world import Pose2D, TabletopWorld, UprightSolid

Transform = tuple[Vec3, Quat]

ARM_JOINTS = range(7)
FINGERS = (9, 10)
ARM_LINKS = range(-1, 12)
# A start for IK that puts the gripper in front of the arm at table height, elbow up: seeding
# from the tucked pose, IK often folded the arm through the base.
READY = (0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8)
# ... and with the hand turned half a turn (joint 7), which IK does not cross on its own.
SEEDS = (READY, (*READY[:6], READY[6] - math.pi))
# Stowed for driving: NAMO's tucked pose turned back over the base (the first joint near its
# limit), since the arm is mounted near the base's front and would otherwise hang over a table.
STOWED = (2.9, *TUCKED[1:])
APPROACH = 0.12  # metres the approach pose backs off from the grasp (or lifts a placement)
IK_POSITION_TOLERANCE = 0.005
IK_ANGLE_TOLERANCE = 0.05  # radians
PATH_STEPS = 4  # joint-space poses checked between approach and grasp, ends excluded
CHECK_STEP = 0.05  # radians between the arm poses a motion is checked at (every joint)
LINE_STEP = 0.02  # metres between the IK poses of a straight withdrawal
PLACE_CLEARANCE = 0.003  # a placed object is let go this far above its support
_CONTACT = -1e-6  # a distance below this is a penetration (touching is allowed)
_IK_MEMO = 100_000  # IK answers a scene remembers (each a few hundred bytes)
_IK_ROUNDS = 3  # IK restarts from its own answer to tighten it
# ... while its answer misses by less than this (metres); farther off, another round did not
# converge in the tasks measured, and failed solves were most of a grasp check's time.
_IK_RETRY_WITHIN = 0.05
# The Panda's shoulder (joint 2) above its mount, and the farthest the grasp point gets from
# it (0.855 m to the flange, 0.105 m more to the fingertips' centre, rounded up): targets
# farther away are refused without asking IK.
_SHOULDER_Z = 0.333
_REACH = 0.97


@dataclass(frozen=True)
class Grasp:
    """A grasp of object ``obj``: the gripper's pose (``panda_grasptarget``) and its approach
    pose, both in the world frame, and the opening the fingers close to."""

    obj: str
    style: str  # "top" or "side"
    yaw: float  # top: the gripper's heading; side: the horizontal direction it moves in
    position: Vec3
    orientation: Quat
    approach: Vec3
    height: float  # grasp point above the object's bottom
    width: float  # the object's width the open fingers must pass around


@dataclass(frozen=True)
class ArmCheck:
    """The verdict on a grasp or placement: ``ok``, or why not (``reason``: "too_wide",
    "ik_failed" or "collision", with the names of the bodies hit), and the arm's joints at
    the approach and at the goal when IK found them."""

    ok: bool
    reason: str
    hits: frozenset[str] = frozenset()
    approach_q: tuple[float, ...] | None = None
    goal_q: tuple[float, ...] | None = None
    orientation: Quat | None = None  # the gripper's, of the two equivalent ones, IK found


_POOL = ServerPool(ARM_URDF, 2)


class TabletopScene:
    """One tabletop world in the PyBullet server ``client``.

    ``objects`` names the movable objects to create (default: all of the world's), so a
    CAMP's collision world holds only what it keeps. ``arm``: the Panda, already loaded in
    ``client`` (as the pool's servers have it); by default it is loaded here."""

    def __init__(
        self,
        world: TabletopWorld,
        client: int,
        objects: Iterable[str] | None = None,
        arm: int | None = None,
    ) -> None:
        self.world = world
        self.client = client
        self._pooled = False
        st = world.settings
        c = client
        self.checks = 0  # arm collision checks (one per arm pose)
        self.ik_requests = 0  # IK solves asked for, remembered answers included
        self._ik_memo: dict[tuple[object, ...], tuple[float, ...] | None] = {}
        self._names: dict[int, str] = {}
        self.slabs: list[int] = []
        for slab in world.slabs():
            body = static_box(c, slab.half, slab.centre, slab.rgba)
            self.slabs.append(body)
            self._names[body] = slab.name
        wanted = None if objects is None else set(objects)
        self.objects: dict[str, int] = {}
        self._sections: dict[str, tuple[Section, ...]] = {}
        for obj in world.objects:
            if wanted is None or obj.name in wanted:
                self.objects[obj.name] = self._solid(obj)
                self._sections[obj.name] = tuple(obj.sections)
                self._names[self.objects[obj.name]] = obj.name
        if wanted is not None and wanted - set(self.objects):
            unknown = ", ".join(sorted(wanted - set(self.objects)))
            raise KeyError(f"task {world.task_id} has no object named {unknown}")
        hb = st.base_half_extent
        self.base = static_box(c, (hb, hb, st.base_height / 2), (0.0, 0.0, 0.0), (0.3, 0.3, 0.3, 1))
        if arm is None:
            arm = pb.loadURDF(ARM_URDF, useFixedBase=True, physicsClientId=c)
        self.arm = int(arm)
        self.held: str | None = None
        self.held_grasp: Grasp | None = None
        self._held_rel: Transform | None = None  # object pose in the grasp point's frame
        self.pose: Pose2D = world.start
        self.set_arm(STOWED, 0.0)
        self.set_base(world.start)
        lower, upper = [], []
        for j in ARM_JOINTS:
            info = pb.getJointInfo(self.arm, j, physicsClientId=c)
            lower.append(float(info[8]))
            upper.append(float(info[9]))
        self._limits = (tuple(lower), tuple(upper))

    @classmethod
    def open(cls, world: TabletopWorld, objects: Iterable[str] | None = None) -> TabletopScene:
        """The scene in a pooled server (a new one if none is idle); give it back with
        :meth:`close`."""
        scene = build_in_pool(_POOL, lambda client, arm: cls(world, client, objects, arm=arm))
        scene._pooled = True
        return scene

    def close(self) -> None:
        """Remove everything but the arm and hand the server back (scenes from :meth:`open`)."""
        if not self._pooled:
            raise RuntimeError("only a scene from TabletopScene.open goes back to the pool")
        self._pooled = False
        for body in {*self.slabs, *self.objects.values(), self.base}:
            pb.removeBody(body, physicsClientId=self.client)
        self.set_arm(STOWED, 0.0)
        _POOL.give_back(self.client, self.arm)

    def _solid(self, obj: UprightSolid) -> int:
        """A body of one cylinder per section, its frame at the bottom's centre."""
        c = self.client
        n = len(obj.sections)
        radii = [r for _, _, r in obj.sections]
        lengths = [z1 - z0 for z0, z1, _ in obj.sections]
        frames = [(0.0, 0.0, (z0 + z1) / 2) for z0, z1, _ in obj.sections]
        shape = pb.createCollisionShapeArray(
            [pb.GEOM_CYLINDER] * n,
            radii=radii,
            lengths=lengths,
            collisionFramePositions=frames,
            physicsClientId=c,
        )
        look = pb.createVisualShapeArray(
            [pb.GEOM_CYLINDER] * n,
            radii=radii,
            lengths=lengths,
            visualFramePositions=frames,
            rgbaColors=[list(obj.rgba)] * n,
            physicsClientId=c,
        )
        return int(pb.createMultiBody(0.0, shape, look, (obj.x, obj.y, obj.z), physicsClientId=c))

    # --- placing things ---------------------------------------------------------------------
    def set_base(self, pose: Pose2D) -> None:
        """Put the base, the arm on it and any held object at ``pose``."""
        st = self.world.settings
        x, y, yaw = pose
        c = self.client
        pb.resetBasePositionAndOrientation(
            self.base, (x, y, st.base_height / 2), yaw_quaternion(yaw), physicsClientId=c
        )
        m = st.arm_mount_x
        at = (x + m * math.cos(yaw), y + m * math.sin(yaw), st.base_height)
        pb.resetBasePositionAndOrientation(self.arm, at, yaw_quaternion(yaw), physicsClientId=c)
        self.pose = pose
        self._carry()

    def set_arm(self, q: Sequence[float], opening: float | None = None) -> None:
        """Set the 7 arm joints (and the gripper's opening between the fingers, if given); a
        held object follows the gripper."""
        c = self.client
        for j, v in zip(ARM_JOINTS, q, strict=True):
            pb.resetJointState(self.arm, j, v, physicsClientId=c)
        if opening is not None:
            for j in FINGERS:
                pb.resetJointState(self.arm, j, opening / 2, physicsClientId=c)
        self._arm_q: tuple[float, ...] | None = tuple(q)
        self._carry()

    def tuck(self) -> None:
        # Every base validity check tucks first: resetting nine joints that are already
        # stowed cost a quarter of a motion query.
        if self._arm_q != STOWED:
            self.set_arm(STOWED)

    def arm_joints(self) -> tuple[float, ...]:
        return tuple(
            float(pb.getJointState(self.arm, j, physicsClientId=self.client)[0]) for j in ARM_JOINTS
        )

    def gripper_pose(self) -> Transform:
        state = pb.getLinkState(
            self.arm, GRASP_LINK, computeForwardKinematics=True, physicsClientId=self.client
        )
        return (tuple(state[4]), tuple(state[5]))

    def gripper_axes(self) -> tuple[Vec3, Vec3, Vec3]:
        """The gripper's x, y and z axes in the world frame (it points along z, its fingers
        close along y)."""
        m = pb.getMatrixFromQuaternion(self.gripper_pose()[1], physicsClientId=self.client)
        return ((m[0], m[3], m[6]), (m[1], m[4], m[7]), (m[2], m[5], m[8]))

    def touches_robot(self, name: str) -> bool:
        """Whether object ``name``, as it stands, penetrates the base or the arm."""
        body, c = self.objects[name], self.client
        return any(
            p[8] < _CONTACT
            for other in (self.base, self.arm)
            for p in pb.getClosestPoints(body, other, 0.0, physicsClientId=c)
        )

    def object_pose(self, name: str) -> Transform:
        pos, orn = pb.getBasePositionAndOrientation(self.objects[name], physicsClientId=self.client)
        return (tuple(pos), tuple(orn))

    def place_object(self, name: str, x: float, y: float, z: float) -> None:
        """Stand object ``name`` upright with its bottom's centre at (x, y, z)."""
        pb.resetBasePositionAndOrientation(
            self.objects[name], (x, y, z), (0.0, 0.0, 0.0, 1.0), physicsClientId=self.client
        )

    def remove_object(self, name: str) -> None:
        """Take object ``name`` out of the world (absent in a state): far below the floor,
        outside every query."""
        i = sorted(self.objects).index(name)
        self.place_object(name, 500.0 + 2 * i, 500.0, -50.0)

    def _carry(self) -> None:
        if self.held is None or self._held_rel is None:
            return
        pos, orn = self.gripper_pose()
        at, turn = pb.multiplyTransforms(pos, orn, *self._held_rel, physicsClientId=self.client)
        pb.resetBasePositionAndOrientation(
            self.objects[self.held], at, turn, physicsClientId=self.client
        )

    def attach(self, name: str) -> None:
        """Hold object ``name`` where it is relative to the gripper, from now on rigidly."""
        if self.held is not None:
            raise RuntimeError(f"already holding {self.held}")
        pos, orn = self.gripper_pose()
        inv = pb.invertTransform(pos, orn, physicsClientId=self.client)
        rel = pb.multiplyTransforms(*inv, *self.object_pose(name), physicsClientId=self.client)
        self._held_rel = (tuple(rel[0]), tuple(rel[1]))
        self.held = name

    def hold(self, name: str, style: str, flip: bool = False) -> None:
        """Hold object ``name`` in a canonical ``style`` grasp (upright, grasped at the
        style's height, facing the hand's heading), wherever the gripper is, without any
        check: for a simulator restoring a state that only says *what* is held and *how*.
        ``flip``: as the hand turned half a turn about its axis grasped it
        (:func:`hand_orientation`); a side grasp so made holds the object otherwise in the
        hand, and only a placement in the same hand orientation stands it upright."""
        if self.held is not None:
            raise RuntimeError(f"already holding {self.held}")
        sections = self._sections[name]
        h = grasp_height(style, sections)
        width = swept_width(style, sections, h, self.world.settings.finger_pad)
        orientation = hand_orientation(style, 0.0, flip)
        # The object's frame in the grasp point's frame: the inverse of the grasp point's
        # pose in the frame of an upright object at the origin.
        rel = pb.invertTransform((0.0, 0.0, h), orientation, physicsClientId=self.client)
        self._held_rel = (tuple(rel[0]), tuple(rel[1]))
        self.held = name
        self.held_grasp = Grasp(
            name, style, 0.0, (0.0, 0.0, h), orientation, (0.0, 0.0, h), h, width
        )
        self._carry()

    def detach(self) -> str:
        """Let go of the held object where it is; returns its name."""
        if self.held is None:
            raise RuntimeError("not holding anything")
        name, self.held, self._held_rel, self.held_grasp = self.held, None, None, None
        return name

    # --- collision checking -----------------------------------------------------------------
    def _robot(self) -> set[int]:
        parts = {self.base, self.arm}
        if self.held is not None:
            parts.add(self.objects[self.held])
        return parts

    def arm_collisions(self, margin: float = 0.0) -> set[str]:
        """Names of the bodies the arm (gripper included) and any held object come closer to
        than ``margin`` (penetrate, at 0), as they stand. Candidates come from PyBullet's
        broadphase on each link's AABB, and then every candidate is asked exactly."""
        self.checks += 1
        c = self.client
        robot = self._robot()
        parts: list[tuple[int, int]] = [(self.arm, link) for link in ARM_LINKS]
        if self.held is not None:
            parts.append((self.objects[self.held], -1))
        hits: set[str] = set()
        names = self._names
        for body, link in parts:
            lo, hi = pb.getAABB(body, link, physicsClientId=c)
            if margin:
                lo = tuple(v - margin for v in lo)
                hi = tuple(v + margin for v in hi)
            found = pb.getOverlappingObjects(lo, hi, physicsClientId=c)
            if not found:
                continue
            # The broadphase lists every overlapping link, the arm's own a dozen times:
            # one pass to the distinct named bodies keeps the exact queries few.
            for other in {o for o, _ in found} - robot:
                name = names.get(other)
                if name is None or name in hits:
                    continue
                points = pb.getClosestPoints(
                    body, other, margin, linkIndexA=link, physicsClientId=c
                )
                if any(p[8] < margin + _CONTACT for p in points):
                    hits.add(name)
        return hits

    def base_collisions(self, pose: Pose2D, margin: float = 0.0, tuck: bool = True) -> set[str]:
        """What the robot, arm tucked (with any held object), hits at base ``pose``; the
        robot is left there. Pair it with the world's floor bounds for a base pose's
        validity. ``tuck=False`` checks the arm where it stands instead: a robot driven at
        controller level carries its arm as its last arm command left it."""
        if tuck:
            self.tuck()
        self.set_base(pose)
        c = self.client
        if not self._near_anything(margin):
            return set()
        lo, hi = pb.getAABB(self.base, -1, physicsClientId=c)
        found = pb.getOverlappingObjects(
            tuple(v - margin for v in lo), tuple(v + margin for v in hi), physicsClientId=c
        )
        robot = self._robot()
        hits: set[str] = set()
        for other, _ in found or ():
            name = self._names.get(int(other))
            if int(other) in robot or name is None:
                continue
            if any(
                p[8] < margin + _CONTACT
                for p in pb.getClosestPoints(self.base, other, margin, physicsClientId=c)
            ):
                hits.add(name)
        return hits | self.arm_collisions(margin)

    def _near_anything(self, margin: float) -> bool:
        """Whether any body of the world overlaps the box around the whole robot (base, arm,
        held object) grown by ``margin``: one broadphase query where the exact check asks
        one per part, and away from the tables (most of a base motion's poses) the answer is
        no. The exact check's candidates are a subset of this box's, so it decides alike."""
        c = self.client
        parts = [(self.base, -1), *((self.arm, link) for link in ARM_LINKS)]
        if self.held is not None:
            parts.append((self.objects[self.held], -1))
        lo = [math.inf] * 3
        hi = [-math.inf] * 3
        for body, link in parts:
            a, b = pb.getAABB(body, link, physicsClientId=c)
            for k in range(3):
                lo[k] = min(lo[k], a[k] - margin)
                hi[k] = max(hi[k], b[k] + margin)
        robot = self._robot()
        return any(
            int(other) not in robot and int(other) in self._names
            for other, _ in pb.getOverlappingObjects(lo, hi, physicsClientId=c) or ()
        )

    def base_free(self, pose: Pose2D, margin: float = 0.0) -> bool:
        return not self.base_collisions(pose, margin)

    # --- inverse kinematics -----------------------------------------------------------------
    def solve_ik(
        self, position: Vec3, orientation: Quat, seed: Sequence[float] | None = None
    ) -> tuple[float, ...] | None:
        """Arm joints that put the gripper at (``position``, ``orientation``) from the current
        base pose, or None. PyBullet's IK (with joint limits) starts from ``seed`` (default:
        each of :data:`SEEDS`) and restarts from its own answer; the answer is verified by
        setting the joints and measuring the gripper's position and angle error, and must lie
        within the joint limits. The arm is left as it was.

        Remembered per base pose, target and seed: every solve resets the arm's joints to
        its start, so the answer depends on nothing else. A CSI sample's variants ask the
        same grasps and places again and again, and IK was half of CSI learning's time."""
        self.ik_requests += 1
        base, turn = pb.getBasePositionAndOrientation(self.arm, physicsClientId=self.client)
        key = (
            base,
            turn,
            tuple(position),
            tuple(orientation),
            None if seed is None else tuple(seed),
        )
        if key in self._ik_memo:
            return self._ik_memo[key]
        if len(self._ik_memo) >= _IK_MEMO:
            self._ik_memo.clear()
        found = self._solve_from_seeds(base, position, orientation, seed)
        self._ik_memo[key] = found
        return found

    def _solve_from_seeds(
        self,
        base: Sequence[float],
        position: Vec3,
        orientation: Quat,
        seed: Sequence[float] | None,
    ) -> tuple[float, ...] | None:
        ax, ay, az = base
        if math.dist(position, (ax, ay, az + _SHOULDER_Z)) > _REACH:
            return None
        for start in SEEDS if seed is None else (seed,):
            found = self._solve_ik(position, orientation, start)
            if found is not None:
                return found
        return None

    def _solve_ik(
        self, position: Vec3, orientation: Quat, seed: Sequence[float]
    ) -> tuple[float, ...] | None:
        c = self.client
        before = self.arm_joints()
        self._arm_q = None  # the joints are reset below; ``set_arm(before)`` records them
        lower, upper = self._limits
        ranges = [u - lo for lo, u in zip(lower, upper, strict=True)]
        q: tuple[float, ...] = tuple(seed)
        found: tuple[float, ...] | None = None
        held, self.held = self.held, None  # the held object follows once, at the end
        try:
            for _ in range(_IK_ROUNDS):
                for j, v in zip(ARM_JOINTS, q, strict=True):
                    pb.resetJointState(self.arm, j, v, physicsClientId=c)
                sol = pb.calculateInverseKinematics(
                    self.arm,
                    GRASP_LINK,
                    position,
                    orientation,
                    lowerLimits=[*lower, 0.0, 0.0],
                    upperLimits=[*upper, 0.04, 0.04],
                    jointRanges=[*ranges, 0.04, 0.04],
                    restPoses=[*seed, 0.02, 0.02],
                    maxNumIterations=200,
                    residualThreshold=1e-5,
                    physicsClientId=c,
                )
                q = tuple(float(v) for v in sol[:7])
                for j, v in zip(ARM_JOINTS, q, strict=True):
                    pb.resetJointState(self.arm, j, v, physicsClientId=c)
                if self._pose_error(position, orientation) and self._within_limits(q):
                    found = q
                    break
                if math.dist(self.gripper_pose()[0], position) > _IK_RETRY_WITHIN:
                    break
        finally:
            self.held = held
            self.set_arm(before)
        return found

    def _pose_error(self, position: Vec3, orientation: Quat) -> bool:
        """Whether the gripper stands within tolerance of the pose (True: close enough)."""
        pos, orn = self.gripper_pose()
        if math.dist(pos, position) > IK_POSITION_TOLERANCE:
            return False
        dot = abs(sum(a * b for a, b in zip(orn, orientation, strict=True)))
        return 2 * math.acos(min(1.0, dot)) <= IK_ANGLE_TOLERANCE

    def within_limits(self, q: Sequence[float]) -> bool:
        """Whether joints ``q`` lie within the arm's limits."""
        return self._within_limits(q)

    def _within_limits(self, q: Sequence[float]) -> bool:
        lower, upper = self._limits
        return all(lo - 1e-6 <= v <= u + 1e-6 for v, lo, u in zip(q, lower, upper, strict=True))

    # --- grasps -----------------------------------------------------------------------------
    def facing(self, x: float, y: float) -> float:
        """The heading from the arm's mount to (x, y): the natural yaw of a grasp there."""
        bx, by, yaw = self.pose
        m = self.world.settings.arm_mount_x
        return math.atan2(y - (by + m * math.sin(yaw)), x - (bx + m * math.cos(yaw)))

    def grasp(self, name: str, style: str, yaw: float | None = None) -> Grasp:
        """The ``style`` grasp ("top" or "side") of object ``name`` where it stands, at
        ``yaw`` (default: facing it from the arm). Top: the gripper points down and its
        approach is straight above; side: it points along ``yaw`` at the object's narrowest
        section and approaches backed off horizontally."""
        (x, y, z), _ = self.object_pose(name)
        if yaw is None:
            yaw = self.facing(x, y)
        sections = self._sections[name]
        h = grasp_height(style, sections)
        width = swept_width(style, sections, h, self.world.settings.finger_pad)
        at = (x, y, z + h)
        if style == TOP:
            approach = (x, y, z + h + APPROACH)
        else:
            approach = (x - APPROACH * math.cos(yaw), y - APPROACH * math.sin(yaw), z + h)
        orientation = hand_orientation(style, yaw)
        return Grasp(name, style, yaw, at, orientation, approach, h, width)

    def check_grasp(self, grasp: Grasp, flips: Sequence[bool] = (False, True)) -> ArmCheck:
        """Whether ``grasp`` is feasible from the current base pose (see the module's
        docstring); the arm is left as it was."""
        opening = self.world.settings.gripper_max_opening
        if grasp.width >= opening:
            return ArmCheck(False, "too_wide")
        return self._check_motion(grasp, opening, flips)

    def _check_motion(
        self, grasp: Grasp, opening: float | None, flips: Sequence[bool] = (False, True)
    ) -> ArmCheck:
        """IK at the approach and the goal (in the first of the gripper's two equivalent
        orientations, ``flips``, that IK reaches), then collisions of the arm (and any held
        object) at both and at ``PATH_STEPS`` joint-space poses between them."""
        goal, approach = grasp.position, grasp.approach
        goal_q: tuple[float, ...] | None = None
        orientation = grasp.orientation
        for flip in flips:
            orientation = hand_orientation(grasp.style, grasp.yaw, flip)
            goal_q = self.solve_ik(goal, orientation)
            if goal_q is not None:
                break
        if goal_q is None:
            return ArmCheck(False, "ik_failed")
        approach_q = self.solve_ik(approach, orientation, seed=goal_q)
        if approach_q is None:
            return ArmCheck(False, "ik_failed", goal_q=goal_q)
        before = self.arm_joints()
        fingers = pb.getJointState(self.arm, FINGERS[0], physicsClientId=self.client)[0]
        hits: set[str] = set()
        try:
            for k in range(PATH_STEPS + 2):
                t = k / (PATH_STEPS + 1)
                q = [a + t * (b - a) for a, b in zip(approach_q, goal_q, strict=True)]
                self.set_arm(q, opening)
                hits |= self.arm_collisions()
        finally:
            self.set_arm(before, 2 * float(fingers))
        if hits:
            return ArmCheck(False, "collision", frozenset(hits), approach_q, goal_q, orientation)
        return ArmCheck(True, "ok", frozenset(), approach_q, goal_q, orientation)

    def pick(self, grasp: Grasp, check: ArmCheck) -> None:
        """Execute a feasible grasp: gripper at the grasp, fingers closed on the object, the
        object attached, then lifted back to the approach pose."""
        if not check.ok or check.goal_q is None or check.approach_q is None:
            raise RuntimeError(f"grasp of {grasp.obj} is not feasible: {check.reason}")
        self.set_arm(check.goal_q, grasp.width)
        self.attach(grasp.obj)
        self.held_grasp = grasp
        lifted = (grasp.position[0], grasp.position[1], grasp.position[2] + APPROACH)
        # Away from the table before anything else moves: a side grasp's approach pose is
        # beside the object, so the object is lifted straight up instead.
        up = self.solve_ik(lifted, check.orientation or grasp.orientation, seed=check.goal_q)
        self.set_arm(up if up is not None else check.goal_q)

    # --- placements -------------------------------------------------------------------------
    def place_pose(self, x: float, y: float, z: float, yaw: float | None = None) -> Grasp:
        """Where the gripper goes to stand the held object upright with its bottom's centre
        at (x, y, z): the held grasp's style and height, at ``yaw`` (default: facing the
        spot), approached from straight above."""
        grasp = self.held_grasp
        if self.held is None or grasp is None:
            raise RuntimeError("not holding anything")
        if yaw is None:
            yaw = self.facing(x, y)
        z += PLACE_CLEARANCE
        at = (x, y, z + grasp.height)
        above = (x, y, z + grasp.height + APPROACH)
        orientation = hand_orientation(grasp.style, yaw)
        return Grasp(self.held, grasp.style, yaw, at, orientation, above, grasp.height, grasp.width)

    def check_place(self, place: Grasp, flips: Sequence[bool] = (False, True)) -> ArmCheck:
        """Whether the held object can be lowered to ``place`` (from :meth:`place_pose`) from
        the current base pose: IK, and no collision of the arm or the held object on the
        way down (an occupied bin's occupant, a bin's wall, a neighbour)."""
        return self._check_motion(place, None, flips)

    def motion_collisions(
        self, start: Sequence[float], end: Sequence[float], margin: float = 0.0
    ) -> set[str]:
        """What the arm (and a held object) touches moving in joint space from ``start`` to
        ``end``, at poses at most ``CHECK_STEP`` apart in every joint (``PATH_STEPS`` between
        the ends at least, as the grasp checks sample an approach), the ends included, closer
        than ``margin``; the arm is left at ``end``."""
        widest = max((abs(b - a) for a, b in zip(start, end, strict=True)), default=0.0)
        n = max(PATH_STEPS + 1, math.ceil(widest / CHECK_STEP))
        hits: set[str] = set()
        for k in range(n + 1):
            t = k / n
            self.set_arm([a + t * (b - a) for a, b in zip(start, end, strict=True)])
            hits |= self.arm_collisions(margin)
        return hits

    def _line(
        self, grasp: Grasp, check: ArmCheck, way: tuple[float, float, float]
    ) -> tuple[tuple[tuple[float, ...], ...], set[str]]:
        """The gripper moved from ``check``'s goal along the straight line ``way`` (dx, dy,
        dz), in the orientation the check's IK found: arm joints every ``LINE_STEP`` by IK,
        each seeded from the last, and what the joint-space motions between them touch; no
        joints if IK loses the line."""
        assert check.goal_q is not None
        x, y, z = grasp.position
        n = max(1, math.ceil(math.hypot(*way) / LINE_STEP))
        last: tuple[float, ...] = check.goal_q
        points: list[tuple[float, ...]] = []
        hits: set[str] = set()
        for k in range(1, n + 1):
            t = k / n
            at = (x + t * way[0], y + t * way[1], z + t * way[2])
            orientation = check.orientation or grasp.orientation
            # Near a joint limit IK from the last pose can stall: its usual seeds then, the
            # motion from the last pose checked all the same.
            q = self.solve_ik(at, orientation, seed=last) or self.solve_ik(at, orientation)
            if q is None:
                return (), hits
            hits |= self.motion_collisions(last, q)
            points.append(q)
            last = q
        return tuple(points), hits

    def withdrawal(
        self, grasp: Grasp, check: ArmCheck, holding: bool
    ) -> tuple[tuple[tuple[float, ...], ...], frozenset[str]]:
        """How the arm withdraws from ``check``'s goal, with the scene as after the gripper
        acted there (``holding`` the picked object, or with the placed one standing and the
        fingers open): the arm joints along the first of the candidate straight lines that is
        clear, and (), with what the candidates touched, if none is.

        A pick lifts straight up (backing out of a side grasp, beside the object at its
        height, would drag it across the table). A top placement lifts; a side placement
        backs out the way a side grasp came in, else diagonally up and back, else up: its
        palm stands against the object, and lifting slides it up the object's side (and
        under a fat object's cap), which an object let go a few millimetres off the planned
        spot (IK's tolerance, at the grasp and again at the place) turns into a collision.
        Lines, not one joint-space motion to the end: a joint-space motion to a pose 12 cm
        back swung the arm through the bins beside."""
        c, s = math.cos(grasp.yaw), math.sin(grasp.yaw)
        d = APPROACH / math.sqrt(2)
        up, back, diagonal = (
            (0.0, 0.0, APPROACH),
            (-APPROACH * c, -APPROACH * s, 0.0),
            (
                -d * c,
                -d * s,
                d,
            ),
        )
        if holding or grasp.style == TOP:
            ways = [up] if holding else [up, diagonal, back]
        else:
            ways = [back, diagonal, up]
        hits: set[str] = set()
        for way in ways:
            points, touched = self._line(grasp, check, way)
            if points and not touched:
                return points, frozenset()
            hits |= touched
        return (), frozenset(hits)

    def place(self, place: Grasp, check: ArmCheck) -> None:
        """Execute a feasible placement: lower, let go (fingers open), tuck the arm."""
        if not check.ok or check.goal_q is None:
            raise RuntimeError(f"placement of {place.obj} is not feasible: {check.reason}")
        self.set_arm(check.goal_q)
        name = self.detach()
        x, y, z = place.position
        self.place_object(name, x, y, z - place.height)
        self.set_arm(STOWED, self.world.settings.gripper_max_opening)


__all__ = [
    "SIDE",
    "TOP",
    "ArmCheck",
    "Grasp",
    "TabletopScene",
    "TabletopWorld",
]
