"""Placements of NAMO's TAMP interface (``domains/namo/tamp/place.py``): a box is put
down off the ways still needed, the ways to the boxes still to clear included."""

import pytest
from namo_worlds import two_ways

from camp_planner.core.planner import Deadline, PlanningTimeout
from camp_planner.domains.namo.mdp import NamoMDP
from camp_planner.planners.tamp import AttemptCutoff, InterfaceSettings

pytestmark = [pytest.mark.pybullet]


def test_a_box_is_not_put_down_in_front_of_the_next_box_to_clear() -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    task = two_ways(round_boxes=True)
    mdp = NamoMDP.from_task(task)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings=InterfaceSettings())
    iface.learn(["(blocks box_r3_0 goal)", "(blocks box_r4_0 goal)", "(blocks box_r1_0 goal)"])
    iface.moved.add("box_r1_0")
    now = [0.0]
    call = Deadline(60.0, clock=lambda: now[0])
    ahead = iface._ways_ahead("box_r3_0", AttemptCutoff(10.0, call, lambda: 0.0))
    # The box still to clear (box_r4_0 at 3.4, 4.5) and a way from here to it; not the box
    # in hand (box_r3_0) nor the one already moved (box_r1_0).
    assert (3.4, 4.5, 0.0) in ahead
    assert (1.5, 3.4, 0.0) not in ahead and (3.4, 1.5, 0.0) not in ahead
    assert len(ahead) > 10
    assert not iface._spot_ok(3.0, 4.5, ahead)  # right in front of box_r4_0
    # Past the planning call's deadline no way is searched for: nothing found could be
    # used, and with dozens of boxes pending the searches ran 0.6 s past it.
    searched: list[tuple[float, float, float]] = []
    fewest = iface._fewest_boxes_path
    iface._fewest_boxes_path = lambda a, b, solid: searched.append(b) or fewest(a, b, solid)
    now[0] = 61.0
    with pytest.raises(PlanningTimeout):
        iface._ways_ahead("box_r3_0", AttemptCutoff(120.0, call, lambda: 0.0))
    assert searched == []
    iface.close()
    mdp.close()


def test_placement_checks_near_a_point_agree_with_every_room_and_doorway() -> None:
    # The placement test looks only at the rooms and doorways near a point; asked of every
    # forbidden room and every doorway of a 5×5 world instead, it answers the same.
    import math
    import random

    from camp_planner.domains.namo.tamp import NamoTampInterface
    from camp_planner.domains.namo.tamp.place import DOOR_KEEP_OUT
    from camp_planner.domains.namo.world import NamoSettings, generate_task

    task = generate_task(5, 5, NamoSettings(grid=5))
    mdp = NamoMDP.from_task(task)
    allowed = frozenset({0, 1, 6, 7, 12, 13, 18, 24})
    iface = NamoTampInterface(
        mdp, mdp.initial_state(), allowed, seed=0, settings=InterfaceSettings()
    )
    rng = random.Random(0)
    size = task.settings.world_size
    forbidden = [task.room_rect(r) for r in range(task.settings.n_rooms) if r not in allowed]

    def inside_all(x: float, y: float, radius: float) -> bool:
        return all(
            math.hypot(max(x0 - x, 0.0, x - x1), max(y0 - y, 0.0, y - y1)) >= radius
            for x0, y0, x1, y1 in forbidden
        )

    disagreements = 0
    near_doors = 0
    for _ in range(3000):
        x, y, radius = rng.uniform(-0.5, size + 0.5), rng.uniform(-0.5, size + 0.5), 0.25
        disagreements += iface._inside((x, y, 0.0), radius) != inside_all(x, y, radius)
        every = any(math.hypot(x - d.x, y - d.y) < DOOR_KEEP_OUT for d in task.doors)
        near = any(
            math.hypot(x - d.x, y - d.y) < DOOR_KEEP_OUT
            for d in iface._doors_near(x, y, DOOR_KEEP_OUT)
        )
        disagreements += every != near
        near_doors += every
    assert disagreements == 0
    assert near_doors > 20  # the draw did test points near doorways
    iface.close()
    mdp.close()
