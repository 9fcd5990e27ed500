"""The manipulation domain's (paper domain D4) robot at controller level, for closed-loop
execution: the mobile base with its Panda in the task's PyBullet tabletop world, driven as
its controllers drive it (:class:`~camp_planner.domains.interface.robot.RobotSim`).

The state is the physical :class:`~camp_planner.sim.tabletop_scene.TabletopScene` itself: the
base anywhere on the floor (the MDP's named work poses are only where a path ends), the arm's
joints, the fingers' opening and a held red attached rigidly where the gripper closed on it.
Nothing here reads a plan: what a closing gripper takes is the red whose grasp point the
gripper stands at (forward kinematics), in the style its orientation shows; an opening gripper
lets the red down onto whatever is below it.

Every state between two commands is one a perception stack reports as a scene that
:func:`~camp_planner.domains.manip.scene_io.task_from_scene` reads back (reds on the left
table, on the staging strip or in bins, one held from the top or the side): a release or a
disturbance that would leave a red anywhere else (on the bins' table off the strip, in a
filled bin, on the floor) is refused or goes to the nearest place that is representable.

Collisions are those the plan's own checks count (:meth:`TabletopScene.arm_collisions`): the
arm, its fingers and a held red penetrating a table, a bin or another object; touching is
allowed, and the held red is part of the robot.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import replace

from camp_planner.domains.interface.robot import RobotSim
from camp_planner.domains.interface.scene import Pose2, Scene
from camp_planner.domains.manip.plan_io import PANDA_JOINTS
from camp_planner.domains.manip.scene_io import pose_names, scene_from_task
from camp_planner.domains.manip.world import ManipObject, ManipTask
from camp_planner.sim.tabletop_geometry import (
    SIDE,
    SIDE_PITCH,
    TOP,
    grasp_height,
    hand_orientation,
    swept_width,
)
from camp_planner.sim.tabletop_scene import STOWED, Grasp, TabletopScene

# The fingers open 0.08 m around a 0.06 m red: 1 cm a side. A red farther than that from the
# grasp point would meet a closing finger instead of lying between them; the plan's grasps
# put the gripper within IK's 5 mm of the grasp point.
GRASP_TOLERANCE = 0.01
# The gripper points straight down for a top grasp and SIDE_PITCH below horizontal for a side
# grasp (π/2 - SIDE_PITCH from down); IK puts it within 0.05 rad of either. Farther than this
# from both, it is tilted between them and grasps nothing.
STYLE_TOLERANCE = 0.2
# How far a released red may drop onto its support and still stand (the plan lets go 3 mm
# above it).
RELEASE_DROP = 0.05
# A base increment is checked at poses this far apart (OMPL checked the plan's paths at
# 0.05 m), so a stop lands before the first collision.
DRIVE_STEP_M = 0.02
DRIVE_STEP_RAD = 0.05
# A base pose this close to a named work pose is that pose (round-off of the increments).
SNAP_M = 1e-3
SNAP_RAD = 1e-3
# Disturbances: a push moves an object this far, to a spot found in this many draws; objects
# within this distance of the arm's mount, ahead of it, are "near the gripper side".
PUSH_RANGE = (0.05, 0.15)
DRAWS = 40
NEAR = 1.0
GAP = 0.005  # between a moved object and its new neighbours
# A released or slipped red that cannot stand below the gripper goes to the nearest spot
# found on rings this far apart around it.
RING_STEP = 0.02
RING_MAX = 2.0
RING_ANGLES = 24


def _angle(a: float) -> float:
    return abs(math.remainder(a, 2 * math.pi))


class ManipRobot(RobotSim):
    """One manipulation task's robot and world in a pooled PyBullet server."""

    joint_names = PANDA_JOINTS

    def __init__(self, task: ManipTask) -> None:
        self.task = task
        st = task.settings
        self._objects = {o.name: o for o in task.objects}
        self._sim = TabletopScene.open(task)
        self._sim.set_arm(STOWED, st.gripper_max_opening)
        self._style = ""
        if task.held:
            self._sim.hold(task.held, task.grasp_style)
            self._style = task.grasp_style
            self._sim.set_arm(STOWED, self._sim.held_grasp.width if self._sim.held_grasp else 0.0)
        self._poses = pose_names(task)

    # --- the base -----------------------------------------------------------------------------
    def base_pose(self) -> Pose2:
        x, y, yaw = self._sim.pose
        return (float(x), float(y), float(yaw))

    def work_pose(self) -> str:
        """The MDP's name of the pose the base stands at (``start``, ``left_i``, ``right_i``),
        or "" between them."""
        x, y, yaw = self._sim.pose
        for name, (px, py, pyaw) in self._poses.items():
            if math.hypot(px - x, py - y) <= SNAP_M and _angle(pyaw - yaw) <= SNAP_RAD:
                return name
        return ""

    def drive(self, pose: Pose2) -> str:
        x0, y0, yaw0 = self._sim.pose
        x1, y1, yaw1 = (float(v) for v in pose)
        turn = math.remainder(yaw1 - yaw0, 2 * math.pi)
        n = max(
            1,
            math.ceil(math.hypot(x1 - x0, y1 - y0) / DRIVE_STEP_M),
            math.ceil(abs(turn) / DRIVE_STEP_RAD),
        )
        for k in range(1, n + 1):
            t = k / n
            at = (x0 + t * (x1 - x0), y0 + t * (y1 - y0), yaw0 + t * turn)
            why = self._base_blocked(at)
            if why:
                return why
        # Exactly the MDP's work pose at the end of a path, not one a rounding off it: a
        # scene read back then starts the task where the plan's poses are.
        name = self.work_pose()
        if name:
            self._sim.set_base(self._poses[name])
        return ""

    def _base_blocked(self, pose: Pose2) -> str:
        """ "" after moving the base to ``pose``, else why not (the base stays where it was)."""
        before = self._sim.pose
        if not self.task.on_floor(pose):
            return f"the base cannot leave the floor at ({pose[0]:.2f}, {pose[1]:.2f})"
        # The arm as it stands, with what it holds: the plan's base checks stow it, a robot
        # drives with it where its last arm command left it.
        hits = self._sim.base_collisions(pose, tuck=False)
        if hits:
            self._sim.set_base(before)
            return (
                f"the base stops at ({before[0]:.2f}, {before[1]:.2f}, yaw {before[2]:.2f}): at "
                f"({pose[0]:.2f}, {pose[1]:.2f}, yaw {pose[2]:.2f}) it would hit "
                f"{', '.join(sorted(hits))}"
            )
        return ""

    # --- the arm and the gripper --------------------------------------------------------------
    def arm_joints(self) -> tuple[float, ...]:
        return self._sim.arm_joints()

    def set_arm(self, q: Sequence[float]) -> str:
        if len(q) != len(PANDA_JOINTS):
            return f"the arm has {len(PANDA_JOINTS)} joints, not {len(q)}"
        target = tuple(float(v) for v in q)
        if not self._sim.within_limits(target):
            return "the arm's joints would leave their limits"
        before = self._sim.arm_joints()
        self._sim.set_arm(target)
        hits = self._sim.arm_collisions()
        if hits:
            self._sim.set_arm(before)
            what = f" (holding {self._sim.held})" if self._sim.held else ""
            return f"the arm{what} would hit {', '.join(sorted(hits))}"
        return ""

    def _gripper_style(self) -> tuple[str, float, float]:
        """(the grasp style the gripper's orientation shows, "" if neither; its heading;
        how far it is off that style's orientation, radians)."""
        hand_x, _, axis = self._sim.gripper_axes()
        down = math.acos(max(-1.0, min(1.0, -axis[2])))
        if down <= (math.pi / 2 - SIDE_PITCH) / 2:
            heading = math.atan2(hand_x[1], hand_x[0])  # a top grasp's heading
            return TOP, heading, down
        heading = math.atan2(axis[1], axis[0])
        off = abs(down - (math.pi / 2 - SIDE_PITCH))
        return (SIDE if off <= STYLE_TOLERANCE else ""), heading, off

    def gripper(self, close: bool) -> str:
        return self._close() if close else self._open()

    def _close(self) -> str:
        sim = self._sim
        if sim.held is not None:
            return f"the gripper already holds {sim.held}"
        style, heading, off = self._gripper_style()
        if not style or off > STYLE_TOLERANCE:
            return (
                f"the gripper is tilted {math.degrees(off):.0f}° off a top or a side grasp: "
                "its fingers close on nothing"
            )
        point, _ = sim.gripper_pose()
        best, gap = "", math.inf
        for name in sorted(sim.objects):
            (x, y, z), _ = sim.object_pose(name)
            h = grasp_height(style, self._objects[name].sections)
            d = math.dist(point, (x, y, z + h))
            if d < gap:
                best, gap = name, d
        if not best or gap > GRASP_TOLERANCE:
            return (
                f"nothing between the fingers for a {style} grasp (the nearest grasp point, "
                f"{best or 'none'}'s, is {gap:.3f} m from the gripper's; within "
                f"{GRASP_TOLERANCE} m)"
            )
        obj = self._objects[best]
        if obj.kind != "red":
            return f"the fingers close on {best}, a {obj.kind} object: only reds are picked"
        st = self.task.settings
        h = grasp_height(style, obj.sections)
        width = swept_width(style, obj.sections, h, st.finger_pad)
        if width >= st.gripper_max_opening:
            return (
                f"{best} is {width:.2f} m wide where a {style} grasp closes: the gripper opens "
                f"{st.gripper_max_opening:.2f} m"
            )
        sim.set_arm(sim.arm_joints(), width)
        sim.attach(best)
        (x, y, z), _ = sim.object_pose(best)
        at = (x, y, z + h)
        sim.held_grasp = Grasp(
            best, style, heading, at, hand_orientation(style, heading), at, h, width
        )
        self._style = style
        return ""

    def _open(self) -> str:
        sim = self._sim
        red = sim.held
        if red is None:
            return "the gripper holds nothing to let go"
        (x, y, z), _ = sim.object_pose(red)
        # Straight down from between the fingers: they touch it by construction.
        support = self._support(red, x, y, robot=False)
        if isinstance(support, str):
            return f"{red} would not stand there: {support}"
        if z - support > RELEASE_DROP:
            return (
                f"{red} would drop {z - support:.2f} m onto its support and topple (it is let go "
                f"within {RELEASE_DROP} m)"
            )
        self._let_go(red, x, y, support)
        return ""

    def _let_go(self, red: str, x: float, y: float, z: float) -> None:
        sim = self._sim
        sim.detach()
        self._style = ""
        sim.place_object(red, x, y, z)
        sim.set_arm(sim.arm_joints(), self.task.settings.gripper_max_opening)

    def held(self) -> str:
        return self._sim.held or ""

    # --- what is where ------------------------------------------------------------------------
    def _where(self, name: str) -> tuple[float, float, float]:
        (x, y, z), _ = self._sim.object_pose(name)
        return float(x), float(y), float(z)

    def _support(
        self, name: str, x: float, y: float, ignore: str = "", robot: bool = True
    ) -> float | str:
        """The height object ``name`` stands at with its bottom's centre at (x, y), on a
        support the model represents (the left table, the staging strip, an empty bin that
        it fits into), free of the objects standing there (but ``ignore``) and, if
        ``robot``, of the robot; else why not."""
        obj = self._objects[name]
        st = self.task.settings
        r = obj.radius
        z: float | None = None
        for b in self.task.bins:
            if b.contains(x, y):
                if obj.kind != "red":
                    return f"bin_{b.index} takes only reds"
                if max(abs(x - b.x), abs(y - b.y)) > b.inner / 2 - r:
                    return f"it does not fit inside bin_{b.index}'s walls there"
                for other in self._standing(name):
                    if b.contains(*self._where(other)[:2]):
                        return f"bin_{b.index} holds {other}"
                z = b.floor_z
        if z is None:
            left, right = self.task.left_table, self.task.right_table
            inside_y = left.y0 + r <= y <= left.y1 - r
            if left.x0 + r <= x <= left.x1 - r and inside_y:
                z = left.height
            elif right.x0 <= x <= right.x1 and right.y0 <= y <= right.y1:
                strip = right.x0 + r <= x <= right.x0 + st.staging_depth - r
                if obj.kind != "red" or not strip or not right.y0 + r <= y <= right.y1 - r:
                    return "the bins' table holds reds only in bins and on the staging strip"
                z = right.height
            else:
                return f"there is no table under ({x:.2f}, {y:.2f})"
        if obj.kind != "red" and not (self.task.left_table.x0 <= x <= self.task.left_table.x1):
            return "blues stand on the left table only"
        for other in self._standing(name):
            if other == ignore:
                continue
            ox, oy, oz = self._where(other)
            gap = math.hypot(ox - x, oy - y) - r - self._objects[other].radius
            if abs(oz - z) < 0.05 and gap < GAP:
                return f"{other} stands there"
        if robot and self._touches_robot(name, x, y, z):
            return "the robot is in the way"
        return z

    def _standing(self, but: str) -> list[str]:
        """The objects standing in the world (not held), ``but`` left out."""
        return [n for n in sorted(self._sim.objects) if n not in (but, self._sim.held)]

    def _touches_robot(self, name: str, x: float, y: float, z: float) -> bool:
        """Whether object ``name`` standing at (x, y, z) would penetrate the base or the arm
        (it is put back where it was)."""
        before = self._where(name)
        self._sim.place_object(name, x, y, z)
        try:
            return self._sim.touches_robot(name)
        finally:
            self._sim.place_object(name, *before)

    def _nearest_spot(self, name: str, x: float, y: float) -> tuple[float, float, float] | None:
        """The nearest spot to (x, y) where ``name`` stands (rings around it, outward)."""
        found = self._support(name, x, y, robot=False)  # straight down, out of the fingers
        if not isinstance(found, str):
            return x, y, found
        for k in range(1, round(RING_MAX / RING_STEP) + 1):
            d = k * RING_STEP
            for a in range(RING_ANGLES):
                theta = 2 * math.pi * a / RING_ANGLES
                px, py = x + d * math.cos(theta), y + d * math.sin(theta)
                found = self._support(name, px, py)
                if not isinstance(found, str):
                    return px, py, found
        return None

    def scene(self, frame_id: str) -> Scene:
        """The task's scene with every object where it stands now (a held red where the
        gripper carries it, reported upright), the robot where its base is."""
        objects: list[ManipObject] = []
        for obj in self.task.objects:
            x, y, z = self._where(obj.name)
            objects.append(replace(obj, x=x, y=y, z=z))
        now = replace(
            self.task,
            objects=tuple(objects),
            start=self.base_pose(),
            held=self._sim.held or "",
            grasp_style=self._style if self._sim.held else "",
        )
        return scene_from_task(now, None, frame_id)

    def goal_reached(self) -> bool:
        if self._sim.held is not None:
            return False
        for obj in self.task.reds:
            x, y, z = self._where(obj.name)
            if not self.task.place_of(replace(obj, x=x, y=y, z=z)).startswith("bin_"):
                return False
        return True

    # --- disturbances -------------------------------------------------------------------------
    def _mount(self, pose: Pose2) -> tuple[float, float, float]:
        """The arm mount's (x, y) and the heading at base ``pose``."""
        x, y, yaw = pose
        m = self.task.settings.arm_mount_x
        return x + m * math.cos(yaw), y + m * math.sin(yaw), yaw

    def _on_table(self, name: str) -> bool:
        """Whether ``name`` stands on a table top (the left table or the strip), not in a
        bin and not held."""
        if name == self._sim.held:
            return False
        z = self._where(name)[2]
        return abs(z - self.task.settings.table_height) < 1e-3

    def _near_gripper(self, pose: Pose2) -> list[str]:
        """Reds and blues on a table top within reach ahead of the arm's mount at ``pose``,
        nearest first."""
        mx, my, yaw = self._mount(pose)
        found: list[tuple[float, str]] = []
        for name in self._standing(""):
            if self._objects[name].kind not in ("red", "blue") or not self._on_table(name):
                continue
            x, y, _ = self._where(name)
            ahead = (x - mx) * math.cos(yaw) + (y - my) * math.sin(yaw)
            d = math.hypot(x - mx, y - my)
            if ahead > 0 and d <= NEAR:
                found.append((d, name))
        return [n for _, n in sorted(found)]

    def _move_to(self, name: str, x: float, y: float) -> bool:
        """Stand ``name`` at (x, y) on the table it stands on, if it is free there."""
        z = self._support(name, x, y, ignore=name)
        if isinstance(z, str) or abs(z - self._where(name)[2]) > 1e-3:
            return False
        self._sim.place_object(name, x, y, z)
        return True

    def push_object(self, rng: random.Random) -> str:
        """A red or blue on a table top ahead of the gripper (chosen at random), shifted
        5–15 cm in a random direction to a free spot on the same table top: far beyond the
        grasp tolerance, so a grasp planned where it stood closes on nothing."""
        candidates = self._near_gripper(self.base_pose())
        rng.shuffle(candidates)
        for name in candidates:
            x, y, _ = self._where(name)
            for _ in range(DRAWS):
                d, a = rng.uniform(*PUSH_RANGE), rng.uniform(-math.pi, math.pi)
                if self._move_to(name, x + d * math.cos(a), y + d * math.sin(a)):
                    return name
        return ""

    def _side_grasp_works(self, red: str, pose: Pose2) -> bool:
        """Whether a side grasp of ``red`` works from base ``pose`` as the world stands (the
        base is put back)."""
        sim = self._sim
        here = sim.pose
        try:
            sim.set_base(pose)
            return sim.check_grasp(sim.grasp(red, SIDE)).ok
        finally:
            sim.set_base(here)

    def block_path(self, path: Sequence[Pose2], rng: random.Random) -> str:
        """A blue moved into the way of the grasp ahead: of the reds whose side grasp works
        from the end of ``path`` (where the robot is going; where it stands if ``path`` is
        empty), the nearest the arm's mount gets a blue (chosen at random) beside it on the
        side facing the mount, where the grasp then fails. The model's blues stand only on
        the left table, so a blue on the floor (in the base's way) is no scene the planner
        could read; a blue that spoils the grasp ahead is this domain's obstacle. A top grasp
        comes down from above and closes 3 cm below the red's top, above a blue's, so the
        grasp blocked is a side one; "" if no side grasp works from there."""
        end = path[-1] if path else self.base_pose()
        pose = (float(end[0]), float(end[1]), float(end[2]))
        mx, my, _ = self._mount(pose)
        reds = [
            n
            for n in self._near_gripper(pose)
            if self._objects[n].kind == "red" and self._side_grasp_works(n, pose)
        ]
        if not reds:
            return ""
        red = reds[0]
        rx, ry, _ = self._where(red)
        facing = math.atan2(my - ry, mx - rx)
        blues = [o.name for o in self.task.distractors if self._on_table(o.name)]
        rng.shuffle(blues)
        reach = self._objects[red].radius
        for blue in blues:
            home = self._where(blue)
            for _ in range(DRAWS):
                a = facing + rng.uniform(-0.4, 0.4)
                d = reach + self._objects[blue].radius + rng.uniform(GAP, 3 * GAP)
                if not self._move_to(blue, rx + d * math.cos(a), ry + d * math.sin(a)):
                    continue
                if not self._side_grasp_works(red, pose):
                    return blue
                self._sim.place_object(blue, *home)
        return ""

    def slip(self) -> str:
        """The held red drops out of the gripper, upright, onto what is below it: a table
        top, the staging strip or an empty bin, else the nearest such free spot. The
        fingers are left open, ready for a new grasp."""
        red = self._sim.held
        if red is None:
            return ""
        x, y, _ = self._where(red)
        spot = self._nearest_spot(red, x, y)
        if spot is None:
            return ""
        self._let_go(red, *spot)
        return red

    def close(self) -> None:
        self._sim.close()
