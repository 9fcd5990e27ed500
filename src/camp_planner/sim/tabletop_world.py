"""What a tabletop scene (:mod:`.tabletop_scene`) is built from: the robot's sizes, the
static slabs (tables, bins) and the upright objects of a world, as protocols any domain's
world description satisfies (the manipulation domain's ``ManipTask``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from camp_planner.sim.tabletop_geometry import Section, Vec3

Pose2D = tuple[float, float, float]  # x, y, yaw
Rgba = tuple[float, float, float, float]


class TabletopDimensions(Protocol):
    """The robot's sizes, in metres."""

    @property
    def base_half_extent(self) -> float: ...
    @property
    def base_height(self) -> float: ...
    @property
    def arm_mount_x(self) -> float: ...
    @property
    def gripper_max_opening(self) -> float: ...
    @property
    def finger_pad(self) -> float: ...


class StaticSlab(Protocol):
    """A static axis-aligned box (a table, a bin's floor or wall); several may share a name."""

    @property
    def name(self) -> str: ...
    @property
    def centre(self) -> Vec3: ...
    @property
    def half(self) -> Vec3: ...
    @property
    def rgba(self) -> Rgba: ...


class UprightSolid(Protocol):
    """A movable body of revolution standing with its bottom's centre at (x, y, z)."""

    @property
    def name(self) -> str: ...
    @property
    def x(self) -> float: ...
    @property
    def y(self) -> float: ...
    @property
    def z(self) -> float: ...
    @property
    def sections(self) -> Sequence[Section]: ...
    @property
    def rgba(self) -> Rgba: ...


class TabletopWorld(Protocol):
    """What a scene is built from (e.g. the manipulation domain's ``ManipTask``)."""

    @property
    def task_id(self) -> int: ...
    @property
    def settings(self) -> TabletopDimensions: ...
    @property
    def objects(self) -> Sequence[UprightSolid]: ...
    @property
    def start(self) -> Pose2D: ...

    def slabs(self) -> Sequence[StaticSlab]: ...
