import math
import random

import pytest
from toy_mdps import GridMDP

from camp_planner.core.camp import CAMP
from camp_planner.core.context import Context, Term
from camp_planner.core.objective import run_episode
from camp_planner.core.planner import Deadline, PlanningError
from camp_planner.domains.namo.mdp import NONE, SLOT_NAMES, NamoMDP
from camp_planner.domains.namo.world import Box, Door, NamoTask
from camp_planner.planners.stilman import Stilman
from camp_planner.planners.tamp import TAMP

pytestmark = [pytest.mark.pybullet, pytest.mark.fast_downward, pytest.mark.slow]

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


def _replay_is_collision_free(task: NamoTask, actions: list, forbidden: set[int]) -> None:
    """Execute ``actions`` in a fresh full world and check every 1 cm of every drive."""
    mdp = NamoMDP.from_task(task)
    state = mdp.initial_state()
    for action in actions:
        if action[0] == "move":
            scene = mdp._sync(state)
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


def test_tamp_clears_the_doorway_and_the_plan_replays_in_the_full_world() -> None:
    mdp = NamoMDP.from_task(CHAIN)
    planner = TAMP(seed=0, motion_timeout_s=5.0)  # generous: only a loaded machine needs it
    result = run_episode(mdp, planner, lam=0.0, timeout_s=60, rng=random.Random(0))
    assert result.success, result.outcome
    picked = [a[2] for a in result.actions if a[0] == "pick"]
    assert "box_r1_0" in picked
    assert {"task_planning", "motion_planning"} <= set(result.stage_times_s)
    _replay_is_collision_free(CHAIN, result.actions, set())
    mdp.close()


def test_a_camp_drops_forbidden_rooms_boxes_and_never_touches_them() -> None:
    mdp = NamoMDP.from_task(CHAIN)
    context = Context("disjunction", tuple(Term("robot_room", r) for r in (0, 1, 2, 5, 8)))
    dropped = {n for n in SLOT_NAMES if n.startswith(("box_r3_", "box_r4_", "box_r6_"))}
    relevant = frozenset(v.name for v in mdp.variables) - dropped
    camp = CAMP.build(mdp, context, relevant)
    assert set(camp.dropped_variables) == dropped
    result = run_episode(
        mdp,
        TAMP(seed=1, motion_timeout_s=5.0),
        lam=0.0,
        timeout_s=60,
        rng=random.Random(0),
        camp=camp,
    )
    assert result.success, result.outcome
    assert result.context_violations == 0
    # Verified by execution in the full world: no contact, no forbidden room entered.
    _replay_is_collision_free(CHAIN, result.actions, {3, 4, 6, 7})
    final = result.states[-1]
    for name in ("box_r3_0", "box_r4_0", "box_r4_1"):
        box = CHAIN.box(name)
        assert final[mdp.state_index(name)] == (round(box.x, 4), round(box.y, 4))
    assert final[2] == NONE
    mdp.close()


def test_tamp_refuses_domains_without_an_interface() -> None:
    with pytest.raises(PlanningError, match="task-and-motion"):
        TAMP().prepare(GridMDP(("S.G",)), Deadline(None))
    with pytest.raises(ValueError, match="motion_timeout_s"):
        TAMP(motion_timeout_s=0)


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


def test_stilman_clears_a_chain_of_two_obstructions() -> None:
    mdp = NamoMDP.from_task(TWO_BLOCKED)
    # Generous motion budgets: RRT-Connect returns as soon as it finds a path, so they only
    # matter on a loaded machine, where the default 1 s made queries fail spuriously.
    planner = Stilman(seed=0, motion_timeout_s=5.0, detour_timeout_s=2.0)
    result = run_episode(mdp, planner, lam=0.0, timeout_s=60, rng=random.Random(0))
    assert result.success, result.outcome
    picked = [a[2] for a in result.actions if a[0] == "pick"]
    assert picked.index("box_r1_0") < picked.index("box_r2_0")  # in the order the way meets them
    assert planner.last_stats["obstacles_moved"] >= 2
    _replay_is_collision_free(TWO_BLOCKED, result.actions, set())
    mdp.close()
