"""Base motions of NAMO's TAMP interface (``domains/namo/tamp/motion.py``): doorway to
doorway across rooms, within the room's bounds inside one, the whole world's query when
those fail, the CAMP's room test, edges checked in metres and OMPL seeded per query."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from namo_worlds import CHAIN, open_chain, replay_is_collision_free, two_ways

from camp_planner.core.camp import CAMP
from camp_planner.core.context import Context, Term
from camp_planner.core.objective import run_episode
from camp_planner.core.planner import Deadline
from camp_planner.domains.namo.mdp import SLOT_NAMES, NamoMDP
from camp_planner.planners.tamp import TAMP, InterfaceSettings
from camp_planner.workflow import Pipeline

pytestmark = [pytest.mark.pybullet]


def test_the_room_test_agrees_with_the_tasks_rooms_and_is_left_out_only_where_it_passes() -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    mdp = NamoMDP.from_task(CHAIN)
    rng = random.Random(3)
    size = CHAIN.settings.room_size
    for allowed in (frozenset({0, 1, 2, 5, 8}), frozenset({4}), frozenset(range(9))):
        iface = NamoTampInterface(
            mdp, mdp.initial_state(), allowed, seed=0, settings=InterfaceSettings()
        )
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


@pytest.mark.fast_downward
@pytest.mark.slow
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
        planner = TAMP(seed=1)
        runs.append(
            run_episode(mdp, planner, lam=0.0, timeout_s=60, rng=random.Random(0), camp=camp)
        )
        mdp.close()
    skipped, asked = runs
    assert skipped.success and asked.actions == skipped.actions
    assert skipped.work_s is not None and skipped.work_s == asked.work_s


def test_a_cross_room_motion_is_planned_doorway_to_doorway_and_is_collision_free() -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    task = open_chain()
    mdp = NamoMDP.from_task(task)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings=InterfaceSettings())
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
    # Within one room there is nothing to guide.
    assert iface._plan(task.start, (2.0, 2.2, 0.0), False, Deadline(30.0)).path is not None
    assert iface.guided_queries == 1
    iface.close()
    mdp.close()


def test_a_motion_inside_one_room_is_planned_within_that_rooms_bounds() -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    task = open_chain()
    mdp = NamoMDP.from_task(task)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings=InterfaceSettings())
    goal = (2.2, 2.0, 1.0)  # room 0, where the robot starts
    result = iface._plan(task.start, goal, False, Deadline(30.0))
    assert result.path is not None and result.path[-1] == pytest.approx(goal)
    assert iface.room_queries == 1
    x0, y0, x1, y1 = iface._room_bounds(0)
    assert all(x0 <= x <= x1 and y0 <= y <= y1 for x, y, _ in result.path)
    scene = iface._scene()
    assert not any(scene.collisions(p) for p in result.path)
    # Across rooms it is the doorway guide.
    assert iface._plan(task.start, (7.5, 4.5, math.pi / 2), False, Deadline(30.0)).path
    assert (iface.room_queries, iface.guided_queries) == (1, 1)
    iface.close()
    mdp.close()


def test_a_motion_through_boxes_is_one_whole_query_as_in_the_papers_interface_layer() -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    task = two_ways(round_boxes=False)
    mdp = NamoMDP.from_task(task)
    settings = InterfaceSettings(relaxed="ompl", motion_timeout_s=5.0)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings=settings)
    goal = (4.5, 1.5, 0.0)
    # The fewest-boxes path goes round (no box that way); ignoring boxes, it goes straight.
    assert iface._boxes_on(iface._fewest_boxes_path(task.start, goal, ""), Deadline(None)) == set()
    straight = iface._fewest_boxes_path(task.start, goal, "", boxes="ignored")
    assert straight is not None and {task.room_of(x, y) for x, y, _ in straight} == {0, 1}
    assert iface._boxes_on(straight, Deadline(None)) == {"box_r1_0"}
    # A motion through boxes is not guided: one OMPL query, whatever it crosses.
    assert iface._plan(task.start, goal, True, Deadline(30.0)).path is not None
    assert (iface.guided_queries, iface.room_queries) == (0, 0)
    iface.close()
    mdp.close()


@pytest.mark.fast_downward
def test_tamp_with_the_papers_interface_layer_reaches_the_goal_and_replays_collision_free() -> None:
    task = two_ways(round_boxes=True)
    mdp = NamoMDP.from_task(task)
    planner = TAMP(seed=0, relaxed="ompl", motion_timeout_s=5.0, detour_timeout_s=2.0)
    result = run_episode(mdp, planner, lam=0.0, timeout_s=60, rng=random.Random(0))
    assert result.success, result.outcome
    replay_is_collision_free(task, result.actions, set())
    mdp.close()


def test_a_camp_closes_the_doorways_into_forbidden_rooms_not_the_rooms_walls() -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    task = two_ways(round_boxes=False)
    mdp = NamoMDP.from_task(task)
    allowed = frozenset({0, 1, 2, 5, 8})
    iface = NamoTampInterface(
        mdp, mdp.initial_state(), allowed, seed=0, settings=InterfaceSettings()
    )
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


def test_every_query_checks_edges_in_metres_and_is_seeded_from_the_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every OMPL query of a motion (the room's, each doorway piece, the whole world's) checks
    its edges every ``EDGE_STEP_M`` and is seeded from the interface's own random numbers."""
    import camp_planner.domains.namo.tamp.motion as motion
    from camp_planner.domains.namo.tamp import NamoTampInterface
    from camp_planner.motion.ompl_se2 import MotionResult

    asked: list[dict[str, object]] = []

    def failing(start: object, goal: object, bounds: tuple, valid: object, **kw: object) -> object:
        asked.append(kw)
        return MotionResult(None, 0.0, 0, True)

    monkeypatch.setattr(motion, "plan_base_path", failing)
    task = two_ways(round_boxes=False)
    mdp = NamoMDP.from_task(task)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, 7, InterfaceSettings())
    draws = random.Random(7)
    for goal in ((2.2, 1.5, 0.0), (4.5, 1.5, 0.0)):
        iface._plan(task.start, goal, False, Deadline(30.0))
    assert len(asked) == 4
    assert all(kw["segment_m"] == motion.EDGE_STEP_M == 0.05 for kw in asked)
    assert all("max_checks" in kw for kw in asked)
    assert [kw["seed"] for kw in asked] == [draws.randrange(2**31) for _ in asked]
    iface.close()
    mdp.close()


def test_a_failed_guided_search_is_planned_again_in_the_whole_world(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A motion whose in-room or doorway-to-doorway search fails is planned in the whole
    world, and searched again whenever it is asked for again. A doorway with no valid pose
    is no search: the motion is planned whole at once."""
    import camp_planner.domains.namo.tamp.motion as motion
    from camp_planner.domains.namo.tamp import NamoTampInterface
    from camp_planner.motion.ompl_se2 import MotionResult

    queries: list[tuple[float, float, float, float]] = []

    def failing(start: object, goal: object, bounds: tuple, valid: object, **kw: object) -> object:
        queries.append(bounds)
        return MotionResult(None, 0.0, 0, True)

    monkeypatch.setattr(motion, "plan_base_path", failing)
    task = two_ways(round_boxes=False)
    mdp = NamoMDP.from_task(task)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, 0, InterfaceSettings())
    whole = (0.0, 0.0, task.settings.world_size, task.settings.world_size)
    in_room, across = (2.2, 1.5, 0.0), (4.5, 1.5, 0.0)
    for _again in range(2):
        for goal in (in_room, across):
            queries.clear()
            assert iface._plan(task.start, goal, False, Deadline(30.0)).path is None
            assert len(queries) == 2 and queries[-1] == whole  # the room's, then the whole
    # No valid pose in a doorway: the guide runs no search, and the motion is planned whole.
    monkeypatch.setattr(NamoTampInterface, "_door_pose", lambda *a: None)
    queries.clear()
    iface._plan(task.start, (4.4, 1.6, 0.0), False, Deadline(30.0))
    assert queries == [whole]
    iface.close()
    mdp.close()


@pytest.fixture(scope="module")
def pipe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:
    scratch: Path = tmp_path_factory.mktemp("motion-seeds")
    pipeline = Pipeline.create("namo", None, scratch / "artifacts")
    pipeline.config["tasks"]["test"] = 4
    yield pipeline


def _plans(pipe: Pipeline, planner: str) -> list[str]:
    """Test task 3, task 0, then task 3 again, in this process, with planner seed 1."""
    tasks = pipe.tasks("test")
    plans = []
    for i in (3, 0, 3):
        result, _ = pipe.run(
            tasks[i],
            planner,
            None,
            seed=1,
            timeout_s=60.0,
        )
        assert result.success
        plans.append(repr(result.actions))
    return plans


@pytest.mark.fast_downward
@pytest.mark.slow
@pytest.mark.parametrize("planner", ["tamp", "stilman"])
def test_seeded_per_query_a_task_planned_again_gets_the_same_plan(
    pipe: Pipeline, planner: str
) -> None:
    # OMPL is seeded before every query from the planning call's own random numbers, so
    # what the process planned before (task 0) does not change the plan.
    first, _, again = _plans(pipe, planner)
    assert first == again
