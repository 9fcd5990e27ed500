import itertools
import math
import random

import pytest
from toy_mdps import FakeClock, GridMDP, ScriptedInterface, ScriptedMDP

from camp_planner.core.camp import CAMP
from camp_planner.core.context import Context, Term
from camp_planner.core.mdp import State
from camp_planner.core.objective import run_episode
from camp_planner.core.planner import Deadline, NoPlanFound, PlanningError, PlanningTimeout
from camp_planner.domains.namo.mdp import NONE, SLOT_NAMES, NamoMDP
from camp_planner.domains.namo.world import Box, Door, NamoTask
from camp_planner.planners.stilman import Stilman
from camp_planner.planners.tamp import TAMP, AttemptCutoff, Refinement, Stuck

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
    stages = result.stage_times_s
    assert {"task_planning", "motion_planning"} <= set(stages)
    # The collision queries' time is a part of refinement's (motion planning, grasps and
    # placements, and the simulated execution of what was refined).
    assert 0 < stages["collision_checks"] < stages["refinement"] <= stages["prepare"]
    _replay_is_collision_free(CHAIN, result.actions, set())
    mdp.close()
    # The planner counts its work (nominal seconds), whatever the budgets' clock.
    assert result.work_s is not None and result.work_s > 0


def test_the_same_plan_made_again_counts_the_same_work() -> None:
    # With NAMO's settings (budgets on the work clock, OMPL seeded per query) a plan does not
    # depend on the machine's speed, and neither does the work it counts.
    runs = []
    for _ in range(2):
        mdp = NamoMDP.from_task(CHAIN)
        planner = TAMP(seed=0, budget_clock="work", motion_seeds="query")
        runs.append(run_episode(mdp, planner, lam=0.0, timeout_s=60, rng=random.Random(0)))
        mdp.close()
    first, second = runs
    assert first.success and second.actions == first.actions
    assert first.work_s is not None and first.work_s > 0 and second.work_s == first.work_s


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


def test_the_room_test_agrees_with_the_tasks_rooms_and_is_left_out_only_where_it_passes() -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    mdp = NamoMDP.from_task(CHAIN)
    rng = random.Random(3)
    size = CHAIN.settings.room_size
    for allowed in (frozenset({0, 1, 2, 5, 8}), frozenset({4}), frozenset(range(9))):
        iface = NamoTampInterface(mdp, mdp.initial_state(), allowed, seed=0, settings={})
        # On and off room borders, and outside the world (clamped as ``room_of`` clamps).
        points = [(rng.uniform(-1.0, 10.0), rng.uniform(-1.0, 10.0)) for _ in range(2000)]
        points += [(i * size, j * size) for i in range(-1, 5) for j in range(-1, 5)]
        for x, y in points:
            assert iface._allowed_at(x, y) == (CHAIN.room_of(x, y) in allowed), (x, y)
        for _ in range(300):
            x0, x1 = sorted(rng.uniform(0.0, 9.0) for _ in range(2))
            y0, y1 = sorted(rng.uniform(0.0, 9.0) for _ in range(2))
            # The rooms the bounds meet: those of its corners and of every border it crosses.
            xs = [x0, x1, *(k * size for k in range(4) if x0 < k * size <= x1)]
            ys = [y0, y1, *(k * size for k in range(4) if y0 < k * size <= y1)]
            met = {CHAIN.room_of(x, y) for x in xs for y in ys}
            assert iface._all_allowed((x0, y0, x1, y1)) == (met <= allowed)
        # Room 0's OMPL bounds reach past its walls into rooms 1 and 3.
        assert iface._all_allowed(iface._room_bounds(0)) == ({0, 1, 3, 4} <= allowed)
        iface.close()
    mdp.close()


def test_a_camp_plans_the_same_with_the_room_test_asked_in_every_query(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The room test is left out of a query only within bounds where it passes everywhere, so
    # the plan and its work are those of a check that asks it every time.
    from camp_planner.domains.namo.tamp import NamoTampInterface

    context = Context("disjunction", tuple(Term("robot_room", r) for r in (0, 1, 2, 5, 8)))
    runs = []
    for always in (False, True):
        if always:
            monkeypatch.setattr(NamoTampInterface, "_within", lambda self, valid, _: valid.tested)
        mdp = NamoMDP.from_task(CHAIN)
        dropped = {n for n in SLOT_NAMES if n.startswith(("box_r3_", "box_r4_", "box_r6_"))}
        camp = CAMP.build(mdp, context, frozenset(v.name for v in mdp.variables) - dropped)
        planner = TAMP(seed=1, budget_clock="work", motion_seeds="query")
        runs.append(
            run_episode(mdp, planner, lam=0.0, timeout_s=60, rng=random.Random(0), camp=camp)
        )
        mdp.close()
    skipped, asked = runs
    assert skipped.success and asked.actions == skipped.actions
    assert skipped.work_s is not None and skipped.work_s == asked.work_s


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


# Two ways from room 0 into room 1: straight through their doorway (one box behind it), or
# round through rooms 3 and 4 (two boxes on the way, or none).
def _two_ways(round_boxes: bool) -> NamoTask:
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


@pytest.mark.parametrize(
    ("round_boxes", "allowed", "expected"),
    [
        (True, None, {"box_r1_0"}),  # one box straight on beats two round about
        (False, None, set()),  # a clear way round beats any box
        (False, frozenset({0, 1, 2, 5, 8}), {"box_r1_0"}),  # ...unless the context forbids it
    ],
)
def test_relaxed_path_runs_through_the_fewest_boxes(
    round_boxes: bool, allowed: frozenset[int] | None, expected: set[str]
) -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    task = _two_ways(round_boxes)
    mdp = NamoMDP.from_task(task)
    iface = NamoTampInterface(mdp, mdp.initial_state(), allowed, seed=0, settings={})
    goal = (4.5, 1.5, 0.0)
    path = iface._fewest_boxes_path(task.start, goal, "")
    assert path is not None and path[0] == task.start and path[-1] == goal
    assert max(math.dist(a[:2], b[:2]) for a, b in itertools.pairwise(path)) < 0.08
    assert iface._boxes_on(path, Deadline(None)) == expected
    if allowed is not None:
        assert all(task.room_of(x, y) in allowed for x, y, _ in path)
    # Once the planning call's deadline has passed (not only an attempt's), checking the
    # path stops: nothing found now could be used.
    now = [0.0]
    call = Deadline(60.0, clock=lambda: now[0])
    attempt = AttemptCutoff(120.0, call)
    now[0] = 61.0
    assert not attempt.expired() and attempt.call is call
    with pytest.raises(PlanningTimeout):
        iface._boxes_on(path, attempt)
    # The box to be picked can be made solid: then no relaxed way through it exists here.
    if allowed is not None:
        assert iface._fewest_boxes_path(task.start, goal, "box_r1_0") is None
    iface.close()
    mdp.close()


def test_a_relaxed_query_in_ompl_doors_mode_follows_the_shortest_route_through_boxes() -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    task = _two_ways(round_boxes=False)
    mdp = NamoMDP.from_task(task)
    settings = {"relaxed": "ompl_doors", "motion_timeout_s": 5.0}
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings=settings)
    goal = (4.5, 1.5, 0.0)
    # The fewest-boxes path goes round (no box that way); ignoring boxes, it goes straight.
    assert iface._boxes_on(iface._fewest_boxes_path(task.start, goal, ""), Deadline(None)) == set()
    straight = iface._fewest_boxes_path(task.start, goal, "", boxes="ignored")
    assert straight is not None and {task.room_of(x, y) for x, y, _ in straight} == {0, 1}
    assert iface._boxes_on(straight, Deadline(None)) == {"box_r1_0"}
    # The relaxed motion plan is guided along that route: through the doorway into room 1,
    # never round through rooms 3 and 4.
    result = iface._plan(task.start, goal, True, Deadline(30.0))
    assert result.path is not None and result.vertices is not None
    assert (iface.guided_queries, iface.guide_fallbacks) == (1, 0)
    assert {task.room_of(x, y) for x, y, _ in result.path} == {0, 1}
    assert any(math.dist(v[:2], (3.0, 1.5)) < 0.13 for v in result.vertices)
    # ``relaxed: ompl`` keeps the paper's one unguided query.
    iface.relaxed_mode = "ompl"
    assert iface._plan(task.start, goal, True, Deadline(30.0)).path is not None
    assert iface.guided_queries == 1
    iface.close()
    mdp.close()


def test_tamp_in_ompl_doors_mode_reaches_the_goal_and_replays_collision_free() -> None:
    task = _two_ways(round_boxes=True)
    mdp = NamoMDP.from_task(task)
    planner = TAMP(seed=0, relaxed="ompl_doors", motion_timeout_s=5.0, detour_timeout_s=2.0)
    result = run_episode(mdp, planner, lam=0.0, timeout_s=60, rng=random.Random(0))
    assert result.success, result.outcome
    _replay_is_collision_free(task, result.actions, set())
    mdp.close()


class _ScriptedInterface(ScriptedInterface):
    """A TAMP interface whose symbolic problem is unsolvable until its facts are forgotten
    (``unsolvable``), or whose one step fails without explanation the first ``flaky`` times."""

    DOMAIN = (
        "(define (domain d) (:requirements :strips) (:predicates (free) (done))\n"
        "  (:action finish :parameters () :precondition (free) :effect (done)))"
    )

    def __init__(self, unsolvable: bool, flaky: int, can_forget: bool = True) -> None:
        super().__init__()
        self.unsolvable, self.flaky, self.can_forget = unsolvable, flaky, can_forget

    def pddl(self) -> tuple[str, str]:
        init = "" if self.unsolvable else "(free)"
        return self.DOMAIN, f"(define (problem p) (:domain d) (:init {init}) (:goal (done)))"

    def refine(self, step: tuple[str, ...], deadline: Deadline) -> Refinement:
        if self.flaky > 0:
            self.flaky -= 1
            return Refinement(False, reason="no sample worked this time")
        self.done = True
        return Refinement(True, [("up",)], [(2, 0)])

    def forget(self) -> bool:
        if not (self.unsolvable and self.can_forget):
            return False
        self.unsolvable = False
        return True


_ScriptedMDP = ScriptedMDP


def test_tamp_forgets_learnt_facts_when_they_make_the_task_unsolvable() -> None:
    planner = TAMP()
    planner.prepare(_ScriptedMDP(_ScriptedInterface(unsolvable=True, flaky=0)), Deadline(60))
    assert planner.last_stats["restarts"] == 1
    # Nothing left to forget: the proof of unsolvability stands.
    stuck = _ScriptedMDP(_ScriptedInterface(unsolvable=True, flaky=0, can_forget=False))
    with pytest.raises(NoPlanFound, match="unsolvable"):
        TAMP().prepare(stuck, Deadline(60))


def test_tamp_resamples_unexplained_refinement_failures_up_to_its_budget() -> None:
    planner = TAMP(max_resamples=2)
    planner.prepare(_ScriptedMDP(_ScriptedInterface(unsolvable=False, flaky=2)), Deadline(60))
    assert planner.last_stats["resamples"] == 2
    with pytest.raises(NoPlanFound, match="no sample worked"):
        TAMP(max_resamples=2).prepare(
            _ScriptedMDP(_ScriptedInterface(unsolvable=False, flaky=3)), Deadline(60)
        )
    with pytest.raises(ValueError, match="max_resamples"):
        TAMP(max_resamples=-1)
    with pytest.raises(ValueError, match="relaxed must be one of grid, ompl, ompl_doors"):
        TAMP(relaxed="straight")


def _open_chain() -> NamoTask:
    """CHAIN without the box in the doorway: a clear way 0-1-2-5-8 through four doorways."""
    return NamoTask(
        task_id=3,
        seed=0,
        doors=CHAIN.doors,
        boxes=CHAIN.boxes[1:],
        start=CHAIN.start,
        goal=CHAIN.goal,
    )


def test_a_cross_room_motion_is_planned_doorway_to_doorway_and_is_collision_free() -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    task = _open_chain()
    mdp = NamoMDP.from_task(task)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings={})
    goal = (7.5, 4.5, math.pi / 2)  # room 5, three doorways away
    result = iface._plan(task.start, goal, False, Deadline(30.0))
    assert result.path is not None and result.vertices is not None
    assert (iface.guided_queries, iface.guide_fallbacks) == (1, 0)
    assert result.path[0] == task.start and result.path[-1] == pytest.approx(goal)
    # The base passes each doorway on the way square to its wall, at the doorway's centre.
    for door in task.doors[:3]:
        assert any(math.dist(v[:2], (door.x, door.y)) < 0.13 for v in result.vertices), door
    scene = iface._scene()
    assert not any(scene.collisions(p) for p in result.path)
    # The same motion with the guide off is one whole query.
    iface.guide = "none"
    assert iface._plan(task.start, goal, False, Deadline(30.0)).path is not None
    assert iface.guided_queries == 1
    # Within one room there is nothing to guide.
    iface.guide = "doors"
    assert iface._plan(task.start, (2.0, 2.2, 0.0), False, Deadline(30.0)).path is not None
    assert iface.guided_queries == 1
    iface.close()
    mdp.close()


def test_guide_rooms_plans_a_motion_inside_one_room_within_that_rooms_bounds() -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    task = _open_chain()
    mdp = NamoMDP.from_task(task)
    settings = {"guide": "rooms"}
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings=settings)
    goal = (2.2, 2.0, 1.0)  # room 0, where the robot starts
    result = iface._plan(task.start, goal, False, Deadline(30.0))
    assert result.path is not None and result.path[-1] == pytest.approx(goal)
    assert iface.room_queries == 1
    x0, y0, x1, y1 = iface._room_bounds(0)
    assert all(x0 <= x <= x1 and y0 <= y <= y1 for x, y, _ in result.path)
    scene = iface._scene()
    assert not any(scene.collisions(p) for p in result.path)
    # Across rooms it is the doorway guide; with ``doors`` a same-room motion is planned
    # in the whole world, as before.
    assert iface._plan(task.start, (7.5, 4.5, math.pi / 2), False, Deadline(30.0)).path
    assert (iface.room_queries, iface.guided_queries) == (1, 1)
    iface.guide = "doors"
    assert iface._plan(task.start, goal, False, Deadline(30.0)).path is not None
    assert iface.room_queries == 1
    iface.close()
    mdp.close()


def test_the_grid_never_blocks_a_gap_a_planned_base_path_passes() -> None:
    # The grid's disc must be a necessary condition: every pose of a path OMPL finds with the
    # planning's validity check (the margin, relaxed near the start) lies on an open cell.
    from camp_planner.domains.namo.tamp import NamoTampInterface, _block, _open_around
    from camp_planner.motion.ompl_se2 import plan_base_path

    task = _two_ways(round_boxes=False)
    mdp = NamoMDP.from_task(task)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings={})
    cell, n, radius, static = iface._grid_setup()
    grid = static.copy()
    for box in task.boxes:
        _block(grid, task.box_rect(box.x, box.y), radius, cell)
    _open_around(grid, iface._cell(task.start, cell, n))
    valid = iface._valid(iface._scene(), False, "", task.start).tested
    found = 0
    for goal in ((4.5, 1.5, 0.0), (4.5, 4.5, 1.0), (1.5, 4.5, -2.0), (2.45, 1.5, 0.0)):
        result = plan_base_path(task.start, goal, (0.0, 0.0, 9.0, 9.0), valid, timeout_s=10)
        if result.path is None:
            continue
        found += 1
        for pose in result.path:
            assert not grid[iface._cell(pose, cell, n)], pose
    assert found >= 3
    iface.close()
    mdp.close()


def test_a_drive_to_the_goal_ends_where_the_goal_is_reached() -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    task = _open_chain()
    mdp = NamoMDP.from_task(task)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings={})
    # A straight line through the goal's reach to a pose beyond it.
    iface.state = mdp._with_pose(iface.state, (7.5, 6.3, math.pi / 2))
    done = iface._drive(
        [(7.5, 6.3, math.pi / 2), (7.5, 7.0, math.pi / 2), (7.0, 7.0, 0.0)], (7.0, 7.0, 0.0), "goal"
    )
    assert done is not None and done.ok and len(done.actions) == 1
    assert mdp.is_terminal(iface.state) and iface.at == "goal"
    iface.close()
    mdp.close()


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("guide", "guide must be one of doors, none, rooms"),
        ("failed_motions", "failed_motions must be one of retry, give_up"),
    ],
)
def test_unknown_choices_are_refused(setting: str, message: str) -> None:
    for planner in (TAMP, Stilman):
        with pytest.raises(ValueError, match=message):
            planner(**{setting: "corridors"})


def test_boxes_met_along_one_way_are_cleared_in_the_order_met() -> None:
    # Learnt without precedences, the three facts let the task planner clear the far box
    # first; its own way, planned from the start, then crossed the near ones and the facts
    # cycled (7 of the 50 default training tasks gave up after max_replans).
    from camp_planner.domains.namo.tamp import NamoTampInterface
    from camp_planner.planners.fast_downward import FDRunner

    mdp = NamoMDP.from_task(CHAIN)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings={})
    way = ["box_r1_0", "box_r4_1", "box_r3_0"]  # the order the way to the goal meets them
    iface.learn([f"(blocks {b} goal)" for b in way])
    assert iface.blocks == {"goal": set(way)}  # observed
    assert iface.after["near_box_r4_1"] == {"box_r1_0"}  # inferred from the order met
    assert iface.after["near_box_r3_0"] == {"box_r1_0", "box_r4_1"}
    assert "near_box_r1_0" not in iface.after
    plan = FDRunner().solve(*iface.pddl(), Deadline(60.0))
    picks = [line.strip("()").split()[1] for line in plan if line.startswith("(pick")]
    assert picks == way
    iface.close()
    mdp.close()


def test_an_inferred_order_is_forgotten_before_what_was_observed() -> None:
    # The way to the goal meets box_r1_0 before box_r4_1, which orders box_r1_0 first; then
    # the way to box_r1_0 is found blocked by box_r4_1. The observed obstruction contradicts
    # the inferred order, and forgetting both rediscovered the same pair (a cycle until
    # max_replans, on NAMO test task 3 of eval seed 0).
    from camp_planner.core.planner import Unsolvable
    from camp_planner.domains.namo.tamp import NamoTampInterface
    from camp_planner.planners.fast_downward import FDRunner

    mdp = NamoMDP.from_task(CHAIN)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings={})
    iface.learn(["(blocks box_r1_0 goal)", "(blocks box_r4_1 goal)"])
    iface.learn(["(blocks box_r4_1 near_box_r1_0)"])
    with pytest.raises(Unsolvable):
        FDRunner().solve(*iface.pddl(), Deadline(60.0))
    assert iface.forget()  # drops the inferred order only
    assert iface.after == {}
    assert iface.blocks == {"goal": {"box_r1_0", "box_r4_1"}, "near_box_r1_0": {"box_r4_1"}}
    plan = FDRunner().solve(*iface.pddl(), Deadline(60.0))
    picks = [line.strip("()").split()[1] for line in plan if line.startswith("(pick")]
    assert picks == ["box_r4_1", "box_r1_0"]
    assert iface.forget()  # now the observed facts go too
    assert iface.blocks == {} and not iface.forget()
    iface.close()
    mdp.close()


def _box_along_a_wall() -> NamoTask:
    """CHAIN with its doorway box put down 2 cm off the wall between rooms 1 and 4 (its
    face at y = 2.95; the box is 0.3 m wide), as a placement may leave it."""
    boxes = tuple(
        Box(b.name, b.room, 4.5, 2.78) if b.name == "box_r1_0" else b for b in CHAIN.boxes
    )
    return NamoTask(0, 0, CHAIN.doors, boxes, (4.5, 1.5, math.pi / 2), CHAIN.goal)


def test_every_pose_offered_for_picking_a_box_picks_it_in_the_simulator() -> None:
    # Reach and inverse kinematics alone let poses through from which the box, held ahead
    # of the base at the base's heading, swings into the wall beside it: a plan that went
    # there failed at the pick and the whole planning call with it.
    from camp_planner.domains.namo.tamp import NamoTampInterface

    mdp = NamoMDP.from_task(_box_along_a_wall())
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings={})
    poses = iface._targets("near_box_r1_0")
    assert poses
    start = mdp.initial_state()
    for pose in poses:
        here = (pose, 1, *start[2:])
        assert mdp.step(here, ("pick", None, "box_r1_0"))[2] == "box_r1_0", pose
    # The square pose straight below the box, at the holding distance, is among them.
    assert any(abs(p[2] - math.pi / 2) < 1e-9 and abs(p[0] - 4.5) < 1e-9 for p in poses)
    iface.close()
    mdp.close()


def test_the_interfaces_pick_test_agrees_with_the_simulated_pick() -> None:
    # _pick_works repeats the pick's last test without stepping the MDP (no resync of the
    # scene after it): it must accept exactly the poses from which the MDP's pick works.
    from camp_planner.domains.namo.tamp import NamoTampInterface

    mdp = NamoMDP.from_task(_box_along_a_wall())
    start = mdp.initial_state()
    iface = NamoTampInterface(mdp, start, None, seed=0, settings={})
    rng = random.Random(3)
    verdicts = []
    for _ in range(300):
        d, bearing = rng.uniform(0.4, 0.65), rng.uniform(-math.pi, 0.0)
        pose = (
            round(4.5 + d * math.cos(bearing), 4),
            round(2.78 + d * math.sin(bearing), 4),
            round(bearing + math.pi + rng.uniform(-0.8, 0.8), 4),
        )
        scene = iface._scene()
        if scene.collisions(pose) or not scene.arm_reaches(4.5, 2.78, 0.72):
            continue
        works = iface._pick_works(pose, "box_r1_0")
        picked = mdp.step((pose, 1, *start[2:]), ("pick", None, "box_r1_0"))
        assert works == (picked[2] == "box_r1_0"), pose
        verdicts.append(works)
    # Both kinds of pose were met: some picks swing the box into the wall.
    assert True in verdicts and False in verdicts
    iface.close()
    mdp.close()


def test_a_failed_pick_sends_the_next_plan_back_to_a_new_approach() -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    mdp = NamoMDP.from_task(_box_along_a_wall())
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings={})
    iface.near.add("box_r1_0")
    iface.at = "near_box_r1_0"  # but the robot stands 1.2 m away: the pick must fail
    outcome = iface.refine(("pick", "box_r1_0", "near_box_r1_0"), Deadline(60.0))
    assert not outcome.ok and not outcome.facts
    assert iface.at == "here"
    iface.close()
    mdp.close()


def test_tamp_solves_a_default_training_task_whose_learnt_facts_used_to_cycle() -> None:
    from camp_planner.domains.namo.world import generate_task

    task = generate_task(11, 11)  # training task 11 of the default configuration
    mdp = NamoMDP.from_task(task)
    result = run_episode(mdp, TAMP(seed=0), lam=0.0, timeout_s=60, rng=random.Random(0))
    assert result.success, result.failures
    mdp.close()


def test_stilman_solves_the_eval_task_where_its_first_placement_blocked_the_next_box() -> None:
    from camp_planner.domains.namo.world import generate_task

    # Test task 0 of `camp eval` seed 2, where Stilman's algorithm with planner seed 2 once
    # put box_r3_1 down in front of box_r3_2 and, backtracking over no move, gave up. Motion
    # planning runs against the clock, so the same seed need not meet that trap again: this
    # checks the task is solved and the plan replays, whichever way the search goes.
    task = generate_task(0, 2 * 10_000 + 1_000_000)
    mdp = NamoMDP.from_task(task)
    planner = Stilman(seed=2)
    result = run_episode(mdp, planner, lam=0.0, timeout_s=60, rng=random.Random(2))
    assert result.success, result.failures
    _replay_is_collision_free(task, result.actions, set())
    mdp.close()


def test_a_box_is_not_put_down_in_front_of_the_next_box_to_clear() -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    task = _two_ways(round_boxes=True)
    mdp = NamoMDP.from_task(task)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings={})
    iface.learn(["(blocks box_r3_0 goal)", "(blocks box_r4_0 goal)", "(blocks box_r1_0 goal)"])
    iface.moved.add("box_r1_0")
    now = [0.0]
    call = Deadline(60.0, clock=lambda: now[0])
    ahead = iface._ways_ahead("box_r3_0", AttemptCutoff(10.0, call))
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
        iface._ways_ahead("box_r3_0", AttemptCutoff(120.0, call))
    assert searched == []
    iface.close()
    mdp.close()


def test_a_camp_closes_the_doorways_into_forbidden_rooms_not_the_rooms_walls() -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    task = _two_ways(round_boxes=False)
    mdp = NamoMDP.from_task(task)
    allowed = frozenset({0, 1, 2, 5, 8})
    iface = NamoTampInterface(mdp, mdp.initial_state(), allowed, seed=0, settings={})
    slabs = iface._closed_doors()
    # Doorways 0-3 and 1-4 lead into forbidden rooms: closed on the forbidden side.
    expected = [(1.0, 3.0, 2.0, 3.05), (4.0, 3.0, 5.0, 3.05)]
    assert [c for slab in sorted(slabs) for c in slab] == pytest.approx(
        [c for slab in expected for c in slab]
    )
    scene = iface._scene()
    # Nose into doorway 0-3 with the centre still in room 0: the robot would enter room 3.
    assert "forbidden" in scene.collisions((1.5, 2.75, math.pi / 2))
    # Along the wall between rooms 0 and 3, away from the doorway, nothing new is near.
    names = {name for _, name in scene._near(0.6, 2.5, 0.03, frozenset())}
    assert "forbidden" not in names
    # Poses whose centre lies in a forbidden room are invalid for planning.
    assert not iface._valid(scene, False, "", task.start).tested(1.5, 4.5, 0.0)
    iface.close()
    assert "forbidden" not in mdp.scene().collisions((1.5, 2.75, math.pi / 2))
    mdp.close()


def test_a_relaxed_path_keeps_its_ends_headings_near_its_ends() -> None:
    # The base is holonomic: beside a box it slides away rather than turning into it, so a
    # relaxed path must not name that box for a turn the real motion never makes.
    from camp_planner.domains.namo.tamp import HOLD_HEADING, NamoTampInterface

    task = _open_chain()
    mdp = NamoMDP.from_task(task)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings={})
    start, goal = (1.5, 1.5, 1.0), (4.5, 1.5, -0.5)
    path = iface._fewest_boxes_path(start, goal, "")
    assert path is not None
    for x, y, heading in path:
        if math.hypot(x - start[0], y - start[1]) < HOLD_HEADING:
            assert heading == start[2]
        elif math.hypot(x - goal[0], y - goal[1]) < HOLD_HEADING:
            assert heading == goal[2]
    assert any(abs(h) < 0.2 for _, _, h in path)  # between the ends: along the way (+x)
    iface.close()
    mdp.close()


class _StallingInterface(_ScriptedInterface):
    """While ``stuck``, refinement spends all the (fake) time its deadline leaves and fails
    without explanation; otherwise it succeeds at once."""

    def __init__(self, clock: FakeClock, stuck: bool) -> None:
        super().__init__(unsolvable=False, flaky=10**6 if stuck else 0)
        self.clock = clock

    def refine(self, step: tuple[str, ...], deadline: Deadline) -> Refinement:
        if self.flaky > 0:
            self.clock.now += deadline.remaining + 0.01
        return super().refine(step, deadline)


class _SeededMDP(GridMDP):
    """Hands out a fresh interface per planning attempt, stuck for the seeds in ``stuck``."""

    def __init__(self, clock: FakeClock, stuck: set[int] | None, fail: bool = False) -> None:
        super().__init__(("S.G",))
        self.clock, self.stuck, self.fail = clock, stuck, fail
        self.seeds: list[int] = []

    def tamp_interface(self, state: State, camp: object, seed: int, settings: object) -> object:
        self.seeds.append(seed)
        if self.fail:
            return _ScriptedInterface(unsolvable=True, flaky=0, can_forget=False)
        return _StallingInterface(self.clock, self.stuck is None or seed in self.stuck)


@pytest.mark.parametrize("restart_clock", ["wall", "stalled"])
def test_an_attempt_past_its_cutoff_restarts_with_fresh_randomness(restart_clock: str) -> None:
    clock = FakeClock()
    mdp = _SeededMDP(clock, stuck={0})
    # Cutoffs of 10 s and more: Fast Downward's driver turns a budget of about a second
    # into a CPU limit its translator starts beyond. A stalled attempt makes no progress,
    # so either clock cuts it off.
    planner = TAMP(
        seed=0,
        restart_s=10.0,
        max_resamples=10**6,
        max_replans=10**6,
        restart_clock=restart_clock,
    )
    planner.prepare(mdp, Deadline(100, clock))
    assert planner.cutoffs == 1 and planner.last_stats["cutoffs"] == 1
    assert len(mdp.seeds) == 2 and mdp.seeds[0] == 0 and mdp.seeds[1] != 0
    assert clock.now == pytest.approx(10.01)  # the stuck attempt was abandoned at its cutoff
    # Without a cutoff the same stuck attempt runs on to the call's deadline.
    clock.now = 0.0
    stuck = _SeededMDP(clock, stuck={0})
    with pytest.raises(PlanningTimeout):
        TAMP(seed=0, max_resamples=10**6, max_replans=10**6).prepare(stuck, Deadline(100, clock))
    assert stuck.seeds == [0] and clock.now >= 100


def test_restart_cutoffs_grow_and_the_call_deadline_still_holds() -> None:
    clock = FakeClock()
    mdp = _SeededMDP(clock, stuck=None)  # every attempt stalls
    planner = TAMP(restart_s=10.0, restart_growth=2.0, max_resamples=10**6, max_replans=10**6)
    with pytest.raises(PlanningTimeout):
        planner.prepare(mdp, Deadline(100, clock))
    # Cutoffs 10, 20 and 40 s; at 70 s the 80 s cutoff exceeds what is left, so the fourth
    # attempt gets the rest of the call's 100 s and the call times out on schedule.
    assert planner.cutoffs == 3 and len(set(mdp.seeds)) == 4
    assert clock.now == pytest.approx(100.01)


class _ChainInterface(_ScriptedInterface):
    """A plan of ``length`` steps, each refined successfully in ``step_s`` (fake) seconds."""

    def __init__(self, clock: FakeClock, length: int, step_s: float) -> None:
        super().__init__(unsolvable=False, flaky=0)
        self.clock, self.length, self.step_s = clock, length, step_s
        self.reached = 0

    def pddl(self) -> tuple[str, str]:
        facts = " ".join(f"(at{k})" for k in range(self.length + 1))
        actions = "".join(
            f"(:action step{k} :parameters () :precondition (at{k - 1}) :effect (at{k}))"
            for k in range(1, self.length + 1)
        )
        domain = f"(define (domain c) (:requirements :strips) (:predicates {facts}) {actions})"
        problem = (
            f"(define (problem p) (:domain c) (:init (at{self.reached})) (:goal (at{self.length})))"
        )
        return domain, problem

    def refine(self, step: tuple[str, ...], deadline: Deadline) -> Refinement:
        self.clock.now += self.step_s
        self.reached = int(step[0].removeprefix("step"))
        return Refinement(True, [("up",)], [(2, 0)])

    def at_goal(self) -> bool:
        return self.reached == self.length


class _ChainMDP(GridMDP):
    def __init__(self, clock: FakeClock) -> None:
        super().__init__(("S.G",))
        self.clock = clock
        self.seeds: list[int] = []

    def tamp_interface(self, state: State, camp: object, seed: int, settings: object) -> object:
        self.seeds.append(seed)
        return _ChainInterface(self.clock, length=5, step_s=4.0)


def test_a_stalled_restart_clock_does_not_cut_off_a_long_plan_that_keeps_succeeding() -> None:
    # Five steps of 4 s each under a 10 s cutoff: by the wall clock the first attempt is
    # abandoned after three good steps (12 s) and the second, with 20 s, redoes all five;
    # a NAMO task that must clear seven boxes in a cluttered world lost its work this way.
    clock = FakeClock()
    wall = TAMP(seed=0, restart_s=10.0)
    wall.prepare(_ChainMDP(clock), Deadline(100, clock))
    assert wall.cutoffs == 1 and clock.now == pytest.approx(32.0)
    clock.now = 0.0
    mdp = _ChainMDP(clock)
    stalled = TAMP(seed=0, restart_s=10.0, restart_clock="stalled")
    stalled.prepare(mdp, Deadline(100, clock))
    assert stalled.cutoffs == 0 and mdp.seeds == [0] and clock.now == pytest.approx(20.0)
    # The call's own deadline still holds: the 20 s plan does not fit in 15 s.
    clock.now = 0.0
    with pytest.raises(PlanningTimeout):
        TAMP(seed=0, restart_s=10.0, restart_clock="stalled").prepare(
            _ChainMDP(clock), Deadline(15, clock)
        )
    assert clock.now <= 16.0 + 1e-9


def test_credit_never_reaches_past_the_calls_deadline() -> None:
    clock = FakeClock()
    outer = Deadline(30, clock)
    clock.now = 3.0
    attempt = AttemptCutoff(10.0, outer)
    clock.now = 9.0
    attempt.credit(4.0)
    assert attempt.remaining == pytest.approx(8.0)  # 10 + 4 - 6 s spent
    attempt.credit(100.0)
    assert attempt.remaining == pytest.approx(outer.remaining) == pytest.approx(21.0)


def test_an_attempt_that_fails_is_not_restarted() -> None:
    clock = FakeClock()
    mdp = _SeededMDP(clock, stuck=None, fail=True)
    with pytest.raises(NoPlanFound):
        TAMP(restart_s=10.0).prepare(mdp, Deadline(100, clock))
    assert mdp.seeds == [0]  # a CAMP that cannot work still fails fast


class _LoopingInterface(_ScriptedInterface):
    """Its one step always fails naming an obstruction; the learnt fact makes the problem
    unsolvable, forgetting it makes it solvable again: the loop of NAMO's trap (boxes put
    down around the robot, each way out blocked by the same two)."""

    def __init__(self) -> None:
        super().__init__(unsolvable=False, flaky=0)
        self.refinements = 0

    def refine(self, step: tuple[str, ...], deadline: Deadline) -> Refinement:
        self.refinements += 1
        return Refinement(False, facts=["(blocks a b)"], reason="a blocks the way")

    def learn(self, facts: list[str]) -> None:
        self.unsolvable = True


class _LoopingMDP(GridMDP):
    """Hands out a looping interface for the seeds in ``looping``, a working one otherwise."""

    def __init__(self, looping: set[int]) -> None:
        super().__init__(("S.G",))
        self.looping = looping
        self.seeds: list[int] = []
        self.interfaces: list[_ScriptedInterface] = []

    def tamp_interface(self, state: State, camp: object, seed: int, settings: object) -> object:
        self.seeds.append(seed)
        interface = (
            _LoopingInterface()
            if seed in self.looping
            else _ScriptedInterface(unsolvable=False, flaky=0)
        )
        self.interfaces.append(interface)
        return interface


def test_an_attempt_going_round_in_a_loop_is_cut_short() -> None:
    mdp = _LoopingMDP(looping={0})
    with pytest.raises(Stuck, match="loop"):
        TAMP(seed=0, stuck_restarts=0, max_replans=30).prepare(mdp, Deadline(60))
    # Caught the third time the same unsolvable problem came back from the same state, not
    # after max_replans: a two-step forget legitimately meets the same dead end twice.
    first = mdp.interfaces[0]
    assert isinstance(first, _LoopingInterface) and first.refinements == 3
    assert mdp.seeds == [0]


def test_an_attempt_going_round_in_a_loop_starts_over_with_fresh_samples() -> None:
    mdp = _LoopingMDP(looping={0})
    planner = TAMP(seed=0)  # stuck_restarts defaults to 2, with or without restart_s
    planner.prepare(mdp, Deadline(60))
    assert planner.last_stats["stuck"] == 1 and mdp.seeds[0] == 0 and len(mdp.seeds) == 2
    assert planner.cutoffs == 0
    # Every attempt loops: the call ends after stuck_restarts fresh starts.
    always = _LoopingMDP(looping={0 + 104_729 * k for k in range(10)})
    with pytest.raises(Stuck):
        TAMP(seed=0, stuck_restarts=2).prepare(always, Deadline(60))
    assert len(always.seeds) == 3
    with pytest.raises(ValueError, match="stuck_restarts"):
        TAMP(stuck_restarts=-1)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"restart_s": 0.0}, "restart_s"),
        ({"restart_s": 1.0, "restart_growth": 0.5}, "growth"),
        ({"edge_step_m": 0.0}, "edge_step_m"),
    ],
)
def test_bad_restart_settings_are_refused(settings: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TAMP(**settings)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        Stilman(**settings)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="restart_clock"):
        TAMP(restart_clock="cpu")


class _PlacementTrapInterface:
    """Box ``a`` blocks the way to the goal and box ``b`` stands behind it. The first place
    ``a`` is put down blocks the approach to ``b``, without a box to blame (the motion just
    fails); any later placement is fine. Only a search that puts ``a`` down elsewhere
    reaches the goal. The world lives in ``state`` so that Stilman's snapshots restore it."""

    def __init__(self) -> None:
        self.state: tuple[str, bool] = ("way", False)  # where a stands; whether b is moved
        self.at = "here"
        self.moved: set[str] = set()
        self.blocks: dict[str, set[str]] = {}
        self.near: set[str] = set()
        self.keep_out: list[object] = []
        self.stage_times: dict[str, float] = {}
        self.a_placements = 0  # fresh samples, so not restored by a snapshot

    def refine(self, step: tuple[str, ...], deadline: Deadline) -> Refinement:
        a_at, b_moved = self.state
        if step[0] == "move_to_goal":
            if a_at == "way":
                return Refinement(False, facts=["(blocks a goal)"], reason="a in the way")
            if not b_moved:
                return Refinement(False, facts=["(blocks b goal)"], reason="b in the way")
            return self._done(step, self.state, "goal")
        if step[0] == "move_to_near_b" and a_at == "bad":
            return Refinement(False, reason="no motion to near_b")
        if step[0].startswith("move_to_near_"):
            return self._done(step, self.state, step[0][len("move_to_") :])
        if step[0] == "pick":
            return self._done(step, self.state, self.at)
        if step == ("place", "a"):
            self.a_placements += 1
            return self._done(step, ("bad" if self.a_placements == 1 else "aside", b_moved))
        return self._done(step, (a_at, True))

    def _done(self, step: tuple[str, ...], state: tuple[str, bool], at: str = "") -> Refinement:
        self.state, self.at = state, at or self.at
        return Refinement(True, [step], [state])

    def learn(self, facts: list[str]) -> None:
        for fact in facts:
            _, box, loc = fact.strip("()").split()
            self.blocks.setdefault(loc, set()).add(box)

    def at_goal(self) -> bool:
        return self.at == "goal"

    def close(self) -> None:
        pass


def test_stilman_puts_a_box_down_elsewhere_when_its_first_placement_blocks_the_next() -> None:
    planner = Stilman()
    planner.prepare(_ScriptedMDP(_PlacementTrapInterface()), Deadline(60))  # type: ignore[arg-type]
    plan = planner._plan
    assert plan[-1] == ("move_to_goal", "near_b")
    # The branch that put a in the bad spot was undone: a is placed once in the plan.
    assert plan.count(("place", "a")) == 1 and ("place", "b") in plan
    assert planner.last_stats["backtracks"] == planner.backtracks == 1
    assert planner.last_stats["obstacles_moved"] == 2


@pytest.mark.parametrize("settings", [{"placements": 1}, {"max_backtracks": 0}])
def test_stilman_without_placement_search_gives_up_on_the_trap(settings: dict[str, int]) -> None:
    with pytest.raises(NoPlanFound, match="no way to the goal"):
        Stilman(**settings).prepare(_ScriptedMDP(_PlacementTrapInterface()), Deadline(60))  # type: ignore[arg-type]


class _LongWayInterface(_PlacementTrapInterface):
    """``n`` boxes stand one after the other on the way to the goal, each free to reach,
    pick and put down. The first ``comes_back`` placements of box b0 land on the way again
    (it blocks the goal once more); any later placement is fine."""

    def __init__(self, n: int, comes_back: int = 0) -> None:
        super().__init__()
        self.n = n
        self.comes_back = comes_back
        self.state = (0, False)  # type: ignore[assignment]  # boxes moved; b0 back on the way
        self.b0_placements = 0  # fresh samples, so not restored by a snapshot

    def refine(self, step: tuple[str, ...], deadline: Deadline) -> Refinement:
        moved, back = self.state  # type: ignore[misc]
        if step[0] == "move_to_goal":
            if back:
                return Refinement(False, facts=["(blocks b0 goal)"], reason="b0 back")
            if moved < self.n:
                return Refinement(False, facts=[f"(blocks b{moved} goal)"], reason="blocked")
            return self._done(step, self.state, "goal")  # type: ignore[arg-type]
        if step[0] == "pick":
            return self._done(step, self.state, self.at)  # type: ignore[arg-type]
        if step[0].startswith("move_to_near_"):
            return self._done(step, self.state, step[0][len("move_to_") :])  # type: ignore[arg-type]
        if step == ("place", "b0"):
            self.b0_placements += 1
            lands_back = self.b0_placements <= self.comes_back
            return self._done(step, (max(moved, 1), lands_back))  # type: ignore[arg-type]
        return self._done(step, (moved + 1, back))  # type: ignore[arg-type]


def test_stilman_clears_as_many_boxes_off_one_way_as_stand_on_it() -> None:
    """A way across a large world meets more obstructors than the paper's; the search
    clears every one of them (it used to stop at nine)."""
    planner = Stilman()
    planner.prepare(_ScriptedMDP(_LongWayInterface(15)), Deadline(60))  # type: ignore[arg-type]
    assert planner._plan[-1][0] == "move_to_goal"
    assert [a[1] for a in planner._plan if a[0] == "place"] == [f"b{i}" for i in range(15)]
    assert planner.last_stats["obstacles_moved"] == 15
    assert planner.last_stats["backtracks"] == 0


@pytest.mark.parametrize("comes_back", [1, 2])
def test_stilman_clears_a_box_found_in_its_way_again(comes_back: int) -> None:
    """A box put down where the way runs is carried off again, without undoing anything."""
    iface = _LongWayInterface(3, comes_back=comes_back)
    planner = Stilman()
    planner.prepare(_ScriptedMDP(iface), Deadline(60))  # type: ignore[arg-type]
    places = [a[1] for a in planner._plan if a[0] == "place"]
    assert places == ["b0"] * (comes_back + 1) + ["b1", "b2"]
    assert planner.last_stats["backtracks"] == 0


def test_stilman_gives_up_on_a_box_that_always_comes_back() -> None:
    """The clears along one way are bounded: a box that lands on the way wherever it is put
    fails the search in a bounded number of placements, not at the deadline."""
    iface = _LongWayInterface(3, comes_back=10**9)
    with pytest.raises(NoPlanFound, match="no way to the goal"):
        Stilman().prepare(_ScriptedMDP(iface), Deadline(60))  # type: ignore[arg-type]
    assert iface.b0_placements < 200


@pytest.mark.parametrize(
    ("settings", "message"),
    [({"placements": 0}, "placements"), ({"max_backtracks": -1}, "max_backtracks")],
)
def test_bad_placement_search_settings_are_refused(settings: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Stilman(**settings)


def test_edge_step_reaches_every_query_and_the_plan_replays_collision_free() -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    planner = TAMP(seed=0, motion_timeout_s=5.0, guide="rooms", edge_step_m=0.05)
    assert planner.settings["edge_step_m"] == 0.05
    mdp = NamoMDP.from_task(CHAIN)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings=planner.settings)
    assert iface.edge_step_m == 0.05
    iface.close()
    result = run_episode(mdp, planner, lam=0.0, timeout_s=60, rng=random.Random(0))
    assert result.success, result.outcome
    _replay_is_collision_free(CHAIN, result.actions, set())
    mdp.close()


@pytest.mark.parametrize("failed_motions", ["retry", "give_up"])
def test_a_failed_guided_search_is_retried_whole_only_when_asked_to(
    failed_motions: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``retry`` plans a motion in the whole world after its in-room or doorway-to-doorway
    search fails, and searches again when asked again; ``give_up`` takes the failed search
    as the answer and answers the same motion among the same boxes at once, unless asked
    with a larger budget. A doorway with no valid pose is no search: both plan whole."""
    import camp_planner.domains.namo.tamp as namo_tamp
    from camp_planner.motion.ompl_se2 import MotionResult

    queries: list[tuple[float, float, float, float]] = []

    def failing(start: object, goal: object, bounds: tuple, valid: object, **kw: object) -> object:
        queries.append(bounds)
        return MotionResult(None, 0.0, 0, True)

    monkeypatch.setattr(namo_tamp, "plan_base_path", failing)
    task = _two_ways(round_boxes=False)
    mdp = NamoMDP.from_task(task)
    settings = {"guide": "rooms", "failed_motions": failed_motions, "motion_timeout_s": 1.0}
    iface = namo_tamp.NamoTampInterface(mdp, mdp.initial_state(), None, 0, settings)
    whole = (0.0, 0.0, task.settings.world_size, task.settings.world_size)
    in_room, across = (2.2, 1.5, 0.0), (4.5, 1.5, 0.0)
    retry = failed_motions == "retry"
    for _again in range(2):
        for goal in (in_room, across):
            queries.clear()
            assert iface._plan(task.start, goal, False, Deadline(30.0)).path is None
            if retry:
                assert len(queries) == 2 and queries[-1] == whole  # the room's, then the whole
            else:
                # The room's (or the first doorway piece's) search only, then none at all.
                assert len(queries) == (0 if _again else 1) and whole not in queries
    assert iface.failures_remembered == (0 if retry else 2)
    # A larger budget than the one that failed searches again.
    queries.clear()
    iface._plan(task.start, in_room, False, Deadline(30.0), timeout=4.0)
    assert len(queries) == (2 if retry else 1)
    # No valid pose in a doorway: the guide runs no search, and the motion is planned whole.
    monkeypatch.setattr(namo_tamp.NamoTampInterface, "_door_pose", lambda *a: None)
    queries.clear()
    iface._plan(task.start, (4.4, 1.6, 0.0), False, Deadline(30.0))
    assert queries == [whole]
    iface.close()
    mdp.close()
