"""NAMO (paper domain D3) as a :class:`Domain`: seeded tasks, image features, room contexts,
renders. The simulator (PyBullet) is only started when an MDP is stepped."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from camp_planner.core.context import Context, Term
from camp_planner.core.errors import CampError
from camp_planner.core.feasibility import RegionGraph
from camp_planner.core.mdp import FactoredMDP
from camp_planner.domains.base import Domain, RenderPanel, paper_selector_settings
from camp_planner.domains.namo.world import (
    GOAL_ROOM,
    START_ROOM,
    Doorway,
    FloorPlan,
    NamoSettings,
    NamoTask,
    generate_task,
)

_SPLIT_OFFSET = {"train": 0, "test": 1_000_000}
IMAGE = 50  # features: a 50 × 50 top-down image (18 cm per pixel in the paper's world)
# Up to a 7×7 world every image is 50 × 50 (about 7 pixels per room); a larger world keeps
# that many pixels per room, so that its walls and doorways stay apart in the features.
IMAGE_GRID = 7


def image_size(grid: int) -> int:
    """The side in pixels of the feature image of a ``grid`` × ``grid`` world."""
    return max(IMAGE, -(-IMAGE * grid // IMAGE_GRID))


# World settings a configuration may change; the rest (slots per room, box size) fix the
# variable layout every task shares.
# ``grid`` (rooms per side) changes the variables too: each size has its own layout.
_WORLD_KEYS = ("door_width", "extra_door_prob", "fill_prob", "goal_reward", "reach", "grid")


# A floor plan's keys (NamoDomain.optional_settings: absent from the defaults, so that the
# configurations of drawn worlds, and every cache key hashed from them, stay as they were).
# ``doors`` makes the world a fixed building; the rooms need it; ``room_size`` does not.
_ROOM_KEYS = ("start_room", "goal_room")
_DOOR_KEYS = ("rooms", "at")


def world_settings(config: Mapping[str, Any]) -> NamoSettings:
    """The world geometry a (validated) NAMO configuration describes; a :class:`CampError`
    naming the ``world`` field the grid cannot hold."""
    world = config["world"]
    try:
        st = NamoSettings(
            **{k: world[k] for k in _WORLD_KEYS},
            **({"room_size": world["room_size"]} if "room_size" in world else {}),
        )
        if "doors" in world:
            st = replace(st, plan=_floor_plan(world, st))
    except (ValueError, TypeError) as exc:
        raise CampError(f"NAMO world settings: {exc}") from None
    given = [k for k in _ROOM_KEYS if k in world]
    if given and st.plan is None:
        raise CampError(f"world.{given[0]} needs world.doors: rooms are fixed by a floor plan")
    required = config["contexts"].get("required_values")
    if required is not None and not {st.start_room, st.goal_room} <= set(required):
        what = f"world.grid {st.grid}" if st.plan is None else "this floor plan"
        raise CampError(
            f"with {what} the start room is {st.start_room} and the goal room "
            f"{st.goal_room}: set contexts.required_values to [{st.start_room}, "
            f"{st.goal_room}] (now {required})"
        )
    return st


def _floor_plan(world: Mapping[str, Any], st: NamoSettings) -> FloorPlan:
    """``world``'s floor plan (``doors``, ``start_room``, ``goal_room``) on ``st``'s grid;
    a ValueError naming the field that is malformed (the plan's sense is checked by
    :class:`NamoSettings`)."""
    doors = world["doors"]
    if not isinstance(doors, list) or not doors:
        raise ValueError(
            "world.doors must be a list of doorways, each {rooms: [a, b], at: metres}, "
            f"got {doors!r}"
        )
    doorways = []
    for k, door in enumerate(doors):
        where = f"world.doors[{k}]"
        if not isinstance(door, Mapping):
            raise ValueError(f"{where} must be a mapping {{rooms: [a, b], at: metres}}")
        unknown = sorted(set(map(str, door)) - set(_DOOR_KEYS))
        if unknown:
            raise ValueError(f"{where}: unknown key {unknown[0]!r}; a doorway has rooms and at")
        rooms = door.get("rooms")
        if not isinstance(rooms, list) or len(rooms) != 2 or not all(_whole(r) for r in rooms):
            raise ValueError(f"{where}.rooms must be two room numbers [a, b], got {rooms!r}")
        # Absent: the middle of the wall.
        at = door.get("at", st.room_size / 2)
        if not _number(at):
            raise ValueError(f"{where}.at must be metres along the wall, got {at!r}")
        a, b = sorted(rooms)
        doorways.append(Doorway(a, b, float(at)))
    rooms = {k: world[k] for k in _ROOM_KEYS if k in world}
    for key, room in rooms.items():
        if not _whole(room):
            raise ValueError(f"world.{key} must be a room number, got {room!r}")
    return FloorPlan(tuple(doorways), **rooms)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def room_graph(task: NamoTask) -> RegionGraph:
    """Rooms joined by doorways (boxes in a doorway can be moved, so they don't count)."""
    return RegionGraph.from_edges(
        "robot_room",
        range(task.settings.n_rooms),
        [(d.a, d.b) for d in task.doors],
        task.room_of(*task.start[:2]),
        [task.settings.goal_room],
    )


def route_context(task: NamoTask) -> Context:
    """The rooms of the doorway route from the start room to the goal room whose rooms hold
    the fewest boxes (then: the fewest rooms), as a room disjunction: the context a
    structural oracle gives a task in worlds too large for the room-disjunction family
    (universal if no route exists, which the generator never draws)."""
    graph = room_graph(task)
    return _rooms_context(graph, graph.lightest_route(_boxes_per_room(task)))


def _boxes_per_room(task: NamoTask) -> dict[Hashable, float]:
    boxes: dict[Hashable, float] = {}
    for box in task.boxes:
        boxes[box.room] = boxes.get(box.room, 0.0) + 1.0
    return boxes


def _rooms_context(graph: RegionGraph, rooms: Sequence[Hashable] | None) -> Context:
    if rooms is None:
        return Context.universal()
    return Context("disjunction", tuple(Term(graph.variable, room) for room in rooms))


def shortest_route_context(task: NamoTask) -> Context:
    """The rooms of the doorway route through the fewest rooms (then the fewest boxes)."""
    graph = room_graph(task)
    boxes = _boxes_per_room(task)
    # One room outweighs every box of the world, so the room count decides first.
    per_room = 1.0 + sum(boxes.values())
    cost: dict[Hashable, float] = {
        r: per_room + boxes.get(r, 0.0) for r in range(task.settings.n_rooms)
    }
    return _rooms_context(graph, graph.lightest_route(cost))


def wide_route_context(task: NamoTask) -> Context:
    """The lightest route's rooms and every room a doorway joins to one of them: room to
    drive around a blocked doorway without the whole world's search."""
    route = route_context(task)
    if route.is_universal:
        return route
    rooms = {int(str(r)) for r in route.allowed("robot_room")}
    doors = task.door_graph()
    around = {nb for r in rooms for nb in doors[r]}
    return _rooms_context(room_graph(task), sorted(rooms | around))


# ``contexts.templates``: the rules a building-scale context space is made of (docs/design.md,
# "Context templates"), with what they allow.
TEMPLATES = {
    "lightest_route": "the rooms of the doorway route through the fewest boxes",
    "shortest_route": "the rooms of the doorway route through the fewest rooms",
    "wide_route": "the lightest route's rooms and the rooms a doorway joins to them",
}
_INSTANTIATE = {
    "lightest_route": route_context,
    "shortest_route": shortest_route_context,
    "wide_route": wide_route_context,
}


class NamoDomain(Domain):
    """Paper domain D3: a mobile manipulator clears boxes to reach a goal three rooms away."""

    name = "namo"
    default_planner = "tamp"
    # Label caches are keyed by the domain version and the configuration, not by code: bump
    # this whenever the simulator, the samples CSI learning draws, or the NAMO refiners of
    # the TAMP planner change behaviour; bump csi_version too unless only the refiners did.
    # What each version changed is in CHANGELOG.md.
    version = "11"
    csi_version = "4"
    baselines = ("stilman",)

    def default_config(self) -> dict[str, Any]:
        st = NamoSettings()
        return {
            "seed": 0,
            "tasks": {"train": 50, "test": 10},
            "mdp": {"horizon": 200, "gamma": 1.0},
            "world": {k: getattr(st, k) for k in _WORLD_KEYS},
            "contexts": {
                # Disjunctions of the rooms the robot may enter; every one keeps the start and
                # goal rooms (a context without them could never help).
                "variables": ["robot_room"],
                "max_domain_size": 10,
                "required_values": [START_ROOM, GOAL_ROOM],
                "include_single": False,
                "min_disjunction_length": 3,
                "max_disjunction_length": 8,
                "max_conjunction_length": 0,
                "max_contexts": 51,
                "seed": 0,
            },
            "csi": {
                "k1": 25,
                "k2": 25,
                "tasks": 10,
                "seed": 0,
                "ignore_exits": True,
                "stratify": True,
            },
            "camp": {"sink_reward": -1000.0, "attempt_budget_s": None},
            # The paper's hard labels, each training task's best context valued on the
            # planner's count of its work (return − λ × work), not on one wall-clock run: the
            # same plan costs the same on any machine, so a label names the context that
            # saves computation, not the luckiest run (docs/design.md, "Labels on the
            # planner's work"). The temperature is unused by hard labels; it is the one the
            # shipped selector was trained with, whose settings must match these.
            "selector": {
                **paper_selector_settings(),
                "labels": "hard",
                "label_cost": "work",
                "temperature": 50.0,
            },
            "timeout_s": 60.0,
            # The policy-learning baselines imitate plans whose actions are continuous base
            # poses: thousands of classes, one per pose, so the paper's stopping rule (loss
            # 1e-3) is never met and the task-conditioned one, with its 10,000 image inputs,
            # spent 20+ minutes per seed on the full 20,000 iterations. These many bound it.
            "baselines": {"policy_max_iterations": 2000},
            "lambda": {"tamp": 100.0, "stilman": 100.0},
            # TAMP restarts an attempt still stalled after 2 s of work (then 4, 8, ...) with
            # fresh samples: on the eval's 90 tail runs no run of 270 failed (1-2 of 90 did
            # without) and the mean fell 0.08-0.21 s. Stilman's algorithm keeps none: its
            # mean rose with them (docs/design.md, "Restarts").
            "planners": {"tamp": {"restart_s": 2.0}, "stilman": {}},
        }

    def make_tasks(self, config: Mapping[str, Any], split: str) -> Sequence[NamoTask]:
        settings = world_settings(config)
        # ``tasks.test_seed`` (``camp eval --task-seed``) draws the test split from another
        # seed, for claims on tasks never used in development; training keeps ``seed``.
        seed = (
            config["tasks"].get("test_seed", config["seed"]) if split == "test" else config["seed"]
        )
        base = int(seed) * 10_000 + _SPLIT_OFFSET[split]
        count = int(config["tasks"][split])
        return [generate_task(i, base + i, settings) for i in range(count)]

    def make_mdp(self, task: Any, config: Mapping[str, Any]) -> FactoredMDP:
        # The MDP's module loads PyBullet, OMPL and scipy (about a second): only for a
        # command that steps a NAMO task, not for one that lists domains or tasks.
        from camp_planner.domains.namo.mdp import NamoMDP

        assert isinstance(task, NamoTask)
        return NamoMDP.from_task(
            task, horizon=int(config["mdp"]["horizon"]), gamma=float(config["mdp"]["gamma"])
        )

    def features(self, task: Any) -> np.ndarray:
        """A 4 × 50 × 50 top-down image: walls, boxes, goal object, robot start (larger than
        50 × 50 beyond a 7×7 world: :func:`image_size`)."""
        assert isinstance(task, NamoTask)
        side = image_size(task.settings.grid)
        img = np.zeros((4, side, side), dtype=np.float32)
        scale = side / task.settings.world_size

        def fill(channel: int, rect: tuple[float, float, float, float]) -> None:
            x0, y0, x1, y1 = rect
            c0, c1 = max(int(x0 * scale), 0), min(int(np.ceil(x1 * scale)), side)
            r0, r1 = max(int(y0 * scale), 0), min(int(np.ceil(y1 * scale)), side)
            img[channel, r0:r1, c0:c1] = 1.0

        for wall in task.walls():
            fill(0, wall)
        for box in task.boxes:
            fill(1, task.box_rect(box.x, box.y))
        gx, gy = task.goal
        fill(2, (gx - 0.1, gy - 0.1, gx + 0.1, gy + 0.1))
        sx, sy, _ = task.start
        h = task.settings.base_half_extent
        fill(3, (sx - h, sy - h, sx + h, sy + h))
        return img

    def world_name(self, config: Mapping[str, Any]) -> str | None:
        # A floor plan is the user's building: nothing ships for it (no file of this name).
        if "doors" in config["world"]:
            return "building"
        grid = int(config["world"]["grid"])
        return None if grid == NamoSettings().grid else f"grid{grid}"

    def optional_settings(self) -> Mapping[str, Any]:
        # The doors' null only gives the key; the room numbers' 0 only their type.
        return {
            "world.room_size": 3.0,
            "world.doors": None,
            **{f"world.{k}": 0 for k in _ROOM_KEYS},
        }

    def check_config(self, config: Mapping[str, Any]) -> None:
        world_settings(config)

    def is_world_file(self, config: Mapping[str, Any]) -> bool:
        return "doors" in config["world"]

    def context_templates(self) -> Mapping[str, str]:
        return TEMPLATES

    def instantiate(self, context: Context, task: Any) -> Context:
        if not context.is_template:
            return context
        assert isinstance(task, NamoTask)
        rule = _INSTANTIATE.get(context.template_name)
        if rule is None:
            raise CampError(
                f"unknown NAMO context template '{context.template_name}'; choose from "
                f"{', '.join(TEMPLATES)}"
            )
        return rule(task)

    def region_graph(self, task: Any) -> RegionGraph:
        assert isinstance(task, NamoTask)
        return room_graph(task)

    def render(self, task: Any, panels: Sequence[RenderPanel], path: Path) -> None:
        from camp_planner.domains.namo.render import render_panels  # matplotlib: on demand

        assert isinstance(task, NamoTask)
        render_panels(task, panels, path)
