"""A task's robot simulated at the level its controllers command it, for the sim robot node.

Where :class:`~camp_planner.domains.interface.plugin.Simulator` executes whole plan steps,
a :class:`RobotSim` is driven as a robot's controllers drive one: the base pose by pose in
short increments, the arm joint configuration by joint configuration, the gripper opened
and closed. It decides what a gripper closing takes hold of from where the gripper is,
never from a plan, and it reports what a perception stack would see. Disturbances (a box
pushed, a box moved into the way, a grasp that slips) come from a seeded random generator,
so a test that disturbs the robot replays.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Sequence

from camp_planner.domains.interface.scene import Pose2, Scene


class RobotSim(ABC):
    """One task's robot and world, moved by controller-level commands."""

    # The arm's joints in the order :meth:`arm_joints` and :meth:`set_arm` use.
    joint_names: tuple[str, ...] = ()

    @abstractmethod
    def base_pose(self) -> Pose2:
        """Where the base stands now (x, y, yaw) in the scene's frame."""

    @abstractmethod
    def drive(self, pose: Pose2) -> str:
        """Move the base straight to ``pose`` (a short increment: a control period's motion),
        carrying what it holds; "" if it got there, else why not (it stops where the first
        collision would be, as a robot's safety stop would)."""

    @abstractmethod
    def arm_joints(self) -> tuple[float, ...]:
        """The arm's joint angles now."""

    @abstractmethod
    def set_arm(self, q: Sequence[float]) -> str:
        """Move the arm to joint angles ``q`` (a short increment); "" if it got there, else
        why not (the arm stays where it was)."""

    @abstractmethod
    def gripper(self, close: bool) -> str:
        """Close the gripper (taking hold of the object between its fingers, if one is) or
        open it (letting go of what it holds, where it is); "" on success, else why it
        failed (nothing to grasp, nothing held, the object would not stand there)."""

    @abstractmethod
    def held(self) -> str:
        """The scene id of the object in the gripper, or ""."""

    @abstractmethod
    def scene(self, frame_id: str) -> Scene:
        """The scene a perfect perception stack would report now (as the domain's scene
        adapter reads it: a held object where the gripper carries it)."""

    @abstractmethod
    def goal_reached(self) -> bool:
        """Whether the world now satisfies the task's goal."""

    # --- disturbances, each from ``rng`` so that a schedule replays ---------------------------
    @abstractmethod
    def push_object(self, rng: random.Random) -> str:
        """Push a movable object near the robot (not the held one) to a free spot a short way
        off; the id of the object pushed, or "" if none could be."""

    @abstractmethod
    def block_path(self, path: Sequence[Pose2], rng: random.Random) -> str:
        """Move a movable object (not the held one, and not one the robot touches) onto
        ``path`` ahead of the robot, where it blocks the base; its id, or ""."""

    @abstractmethod
    def slip(self) -> str:
        """The held object slips out of the gripper and comes to rest below it; its id, or
        "" if nothing was held."""

    @abstractmethod
    def close(self) -> None:
        """Release the simulator (physics clients)."""
