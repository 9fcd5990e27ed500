"""NAMO tasks built by hand for the tests of the TAMP interface and the planners that drive
it (imported as ``namo_worlds``), and a replay that checks a plan in the full world."""

from __future__ import annotations

import math

from camp_planner.domains.namo.mdp import NamoMDP
from camp_planner.domains.namo.world import Box, Door, NamoTask

# A chain of rooms 0-1-2-5-8; a box stands right behind the only doorway out of room 0, so
# the robot must pick it and put it aside. Rooms 3 and 4 hold boxes that never matter.
CHAIN = NamoTask(
    task_id=0,
    seed=0,
    doors=(
        Door(0, 1, 3.0, 1.5, True),
        Door(1, 2, 6.0, 1.5, True),
        Door(2, 5, 7.5, 3.0, False),
        Door(5, 8, 7.5, 6.0, False),
    ),
    boxes=(
        Box("box_r1_0", 1, 3.4, 1.5),
        Box("box_r3_0", 3, 1.5, 4.5),
        Box("box_r4_0", 4, 4.5, 4.5),
        Box("box_r4_1", 4, 3.4, 4.0),
    ),
    start=(1.5, 1.5, 0.0),
    goal=(7.5, 7.5),
)


def replay_is_collision_free(task: NamoTask, actions: list, forbidden: set[int]) -> None:
    """Execute ``actions`` in a fresh full world and check every 1 cm of every drive."""
    mdp = NamoMDP.from_task(task)
    state = mdp.initial_state()
    for action in actions:
        if action[0] == "move":
            scene = mdp.sync(state)
            (x0, y0, t0), (x1, y1, t1) = state[0], action[1]
            dt = math.remainder(t1 - t0, 2 * math.pi)
            n = max(1, math.ceil(math.hypot(x1 - x0, y1 - y0) / 0.01), math.ceil(abs(dt) / 0.02))
            for k in range(n + 1):
                f = k / n
                pose = (x0 + f * (x1 - x0), y0 + f * (y1 - y0), t0 + f * dt)
                assert not scene.collisions(pose), (action, pose, scene.collisions(pose))
                assert task.room_of(pose[0], pose[1]) not in forbidden
        state = mdp.step(state, action)
    assert mdp.is_terminal(state)
    mdp.close()


# Rooms 0-1-2-5-8 in a chain, two doorways blocked one after the other.
TWO_BLOCKED = NamoTask(
    task_id=1,
    seed=0,
    doors=CHAIN.doors,
    boxes=(
        Box("box_r1_0", 1, 3.4, 1.5),  # behind the doorway out of room 0
        Box("box_r2_0", 2, 7.5, 2.6),  # in front of the doorway from room 2 up to room 5
        Box("box_r3_0", 3, 1.5, 4.5),
    ),
    start=(1.5, 1.5, 0.0),
    goal=(7.5, 7.5),
)


# Two ways from room 0 into room 1: straight through their doorway (one box behind it), or
# round through rooms 3 and 4 (two boxes on the way, or none).
def two_ways(round_boxes: bool) -> NamoTask:
    doors = (
        Door(0, 1, 3.0, 1.5, True),
        Door(0, 3, 1.5, 3.0, False),
        Door(3, 4, 3.0, 4.5, True),
        Door(1, 4, 4.5, 3.0, False),
        Door(1, 2, 6.0, 1.5, True),
        Door(2, 5, 7.5, 3.0, False),
        Door(5, 8, 7.5, 6.0, False),
    )
    boxes = [Box("box_r1_0", 1, 3.4, 1.5)]
    if round_boxes:
        boxes += [Box("box_r3_0", 3, 1.5, 3.4), Box("box_r4_0", 4, 3.4, 4.5)]
    return NamoTask(
        task_id=2, seed=0, doors=doors, boxes=tuple(boxes), start=(1.5, 1.5, 0.0), goal=(7.5, 7.5)
    )


def open_chain() -> NamoTask:
    """CHAIN without the box in the doorway: a clear way 0-1-2-5-8 through four doorways."""
    return NamoTask(
        task_id=3,
        seed=0,
        doors=CHAIN.doors,
        boxes=CHAIN.boxes[1:],
        start=CHAIN.start,
        goal=CHAIN.goal,
    )


def box_along_a_wall() -> NamoTask:
    """CHAIN with its doorway box put down 2 cm off the wall between rooms 1 and 4 (its
    face at y = 2.95; the box is 0.3 m wide), as a placement may leave it."""
    boxes = tuple(
        Box(b.name, b.room, 4.5, 2.78) if b.name == "box_r1_0" else b for b in CHAIN.boxes
    )
    return NamoTask(0, 0, CHAIN.doors, boxes, (4.5, 1.5, math.pi / 2), CHAIN.goal)
