import itertools
import math
import subprocess
import sys

import pytest

from camp_planner.domains.namo.world import generate_task
from camp_planner.motion.ompl_se2 import edge_resolution, plan_base_path
from camp_planner.sim.floor_scene import FloorScene
from camp_planner.sim.pybullet_servers import direct_client

TASK = generate_task(0, 1000)
BOUNDS = (0.0, 0.0, 9.0, 9.0)


def _wall_free(x: float, y: float, yaw: float) -> bool:
    # A 9 × 9 m square with one wall across the middle, open at the top.
    return not (4.0 < x < 5.0 and y < 7.0) and 0.3 < x < 8.7 and 0.3 < y < 8.7


def test_path_goes_around_the_wall_and_every_waypoint_is_valid() -> None:
    result = plan_base_path((1.0, 1.0, 0.0), (8.0, 1.0, 0.0), BOUNDS, _wall_free, seed=1)
    assert result.path is not None and not result.timed_out
    assert result.path[0] == pytest.approx((1.0, 1.0, 0.0))
    assert result.path[-1] == pytest.approx((8.0, 1.0, 0.0))
    assert all(_wall_free(*p) for p in result.path)
    assert max(p[1] for p in result.path) > 7.0  # it had to go over the top
    steps = [math.dist(a[:2], b[:2]) for a, b in zip(result.path, result.path[1:], strict=False)]
    assert max(steps) <= 0.05 + 1e-6
    assert result.checks > 0


def test_an_edge_that_jumps_a_thin_wall_is_replanned_finer_not_reported_as_no_path() -> None:
    # At this coarse resolution OMPL checks the straight edge only a few times and misses the
    # 12 cm wall; the interpolated waypoints land on it. A path over the top exists.
    def thin_wall(x: float, y: float, yaw: float) -> bool:
        return not (4.5 < x < 4.62 and y < 7.0) and 0.3 < x < 8.7 and 0.3 < y < 8.7

    result = plan_base_path(
        (1.0, 1.0, 0.0), (8.0, 1.0, 0.0), BOUNDS, thin_wall, resolution=0.2, timeout_s=10, seed=1
    )
    assert result.path is not None and not result.timed_out
    assert all(thin_wall(*p) for p in result.path)
    assert max(p[1] for p in result.path) > 7.0


_SCRIPT = """
from camp_planner.motion.ompl_se2 import edge_resolution, plan_base_path
free = lambda x, y, t: not (4.0 < x < 5.0 and y < 7.0) and 0.3 < x < 8.7 and 0.3 < y < 8.7
for _ in range(2):
    print(plan_base_path((1.0, 1.0, 0.0), (8.0, 1.0, 0.0), (0, 0, 9, 9), free, seed=3).path)
"""


def test_a_fresh_process_with_the_same_seed_plans_the_same_paths() -> None:
    # Nothing of a process's earlier queries leaks into a path: two fresh processes agree.
    runs = [
        subprocess.run(
            [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    ]
    assert runs[0] == runs[1] and runs[0].count("[(") == 2


def _middle(seed: int) -> tuple[float, float, float]:
    def free(x: float, y: float, yaw: float) -> bool:
        return not (4.0 < x < 5.0 and y < 7.0) and 0.3 < x < 8.7 and 0.3 < y < 8.7

    result = plan_base_path((1, 1, 0), (8, 1, 0), (0, 0, 9, 9), free, seed=seed)
    assert result.path is not None
    return result.path[len(result.path) // 2]


def test_a_query_seeded_path_does_not_depend_on_the_queries_before_it() -> None:
    first = _middle(5)
    _middle(7)
    _middle(9)
    assert _middle(5) == first
    assert _middle(7) != first


def test_a_heading_of_exactly_pi_is_a_valid_goal() -> None:
    # OMPL's SO(2) range is [-pi, pi): pi itself used to make the goal unsampleable, and the
    # query ran into its timeout on an empty plane.
    for yaw in (math.pi, -math.pi, 3 * math.pi):
        result = plan_base_path((1.0, 1.0, 0.0), (3.0, 1.0, yaw), BOUNDS, _wall_free, timeout_s=2)
        assert result.path is not None and not result.timed_out
        assert math.cos(result.path[-1][2]) == pytest.approx(-1.0)


def test_unreachable_goal_returns_none_after_the_timeout() -> None:
    def sealed(x: float, y: float, yaw: float) -> bool:
        return not (4.0 < x < 5.0)

    result = plan_base_path((1.0, 1.0, 0.0), (8.0, 1.0, 0.0), BOUNDS, sealed, timeout_s=0.3)
    assert result.path is None and result.timed_out


def test_invalid_start_fails_fast_and_bad_arguments_are_refused() -> None:
    assert plan_base_path((4.5, 1.0, 0.0), (8.0, 1.0, 0.0), BOUNDS, _wall_free).path is None
    with pytest.raises(ValueError, match="unknown OMPL planner"):
        plan_base_path((1.0, 1.0, 0.0), (8.0, 1.0, 0.0), BOUNDS, _wall_free, planner="A*")
    with pytest.raises(ValueError, match="timeout"):
        plan_base_path((1.0, 1.0, 0.0), (8.0, 1.0, 0.0), BOUNDS, _wall_free, timeout_s=0)


@pytest.mark.pybullet
def test_base_path_in_the_namo_walls_is_collision_free_in_pybullet() -> None:
    goal = (TASK.goal[0] - 0.6, TASK.goal[1], 0.0)
    with direct_client() as client:
        walls = FloorScene(TASK, client, boxes=[])
        result = plan_base_path(
            TASK.start, goal, BOUNDS, lambda x, y, t: walls.is_free((x, y, t)), timeout_s=10
        )
        assert result.path is not None
        assert all(not walls.collisions(p) for p in result.path)
        assert TASK.reached(*result.path[-1][:2])


def _length(path: list[tuple[float, float, float]]) -> float:
    return sum(math.dist(a[:2], b[:2]) for a, b in itertools.pairwise(path))


def test_shortcutting_pulls_the_raw_path_taut_and_an_unknown_simplification_is_refused() -> None:
    start, goal = (1.0, 1.0, 0.0), (8.0, 1.0, 0.0)
    raw = plan_base_path(start, goal, BOUNDS, _wall_free, seed=1, simplify="none")
    taut = plan_base_path(start, goal, BOUNDS, _wall_free, seed=1, simplify="shortcut")
    assert raw.path is not None and taut.path is not None
    assert all(_wall_free(*p) for p in taut.path)
    # Over the wall's top (y = 7) and back: no taut path is much longer than 7 + 2 * 6.3 m.
    assert _length(taut.path) < 21.0
    assert taut.vertices is not None and raw.vertices is not None
    assert len(taut.vertices) <= len(raw.vertices)
    with pytest.raises(ValueError, match="simplify"):
        plan_base_path(start, goal, BOUNDS, _wall_free, simplify="smooth")


def test_waypoints_are_never_further_apart_than_the_step() -> None:
    from camp_planner.motion.ompl_se2 import _densify

    # A long straight segment and a short one, as OMPL's rounding can leave them.
    poses = [(0.0, 0.0, 3.0), (0.512, 0.0, -3.0), (0.52, 0.01, -3.0)]
    out = _densify(poses, 0.05)
    steps = [math.dist(a[:2], b[:2]) for a, b in itertools.pairwise(out)]
    assert max(steps) <= 0.05 + 1e-9 and len(out) == 13
    assert out[0] == poses[0] and out[-1] == poses[-1] and poses[1] in out
    # Headings turn the short way round (through pi, not through 0) and stay in [-pi, pi).
    assert all(abs(p[2]) > 2.9 and -math.pi <= p[2] < math.pi for p in out)


def test_path_simplification_stops_at_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # OMPL bounds its search by the budget but not its shortcutting. The clock here is a
    # counter that jumps past the budget at the simplifier's first check: after that the
    # simplifier must not have any state checked, and the path returned must still be valid.
    from camp_planner.motion import ompl_se2

    now = [0.0]
    phase = ["solve"]
    calls: dict[str, int] = {"solve": 0, "simplify": 0, "after": 0}
    simplifier = ompl_se2.og.PathSimplifier

    class Spy:
        def __init__(self, info: object) -> None:
            self.inner = simplifier(info)

        def __getattr__(self, name: str) -> object:
            method = getattr(self.inner, name)

            def call(*args: object) -> object:
                phase[0] = "simplify"
                out = method(*args)
                phase[0] = "after"
                return out

            return call

    def checked(x: float, y: float, yaw: float) -> bool:
        calls[phase[0]] += 1
        if phase[0] == "simplify":
            now[0] += 100.0
        return _wall_free(x, y, yaw)

    monkeypatch.setattr(ompl_se2, "_clock", lambda: now[0])
    monkeypatch.setattr(ompl_se2.og, "PathSimplifier", Spy)
    result = plan_base_path((1.0, 1.0, 0.0), (8.0, 1.0, 0.0), BOUNDS, checked, timeout_s=5.0)
    assert result.path is not None and all(_wall_free(*p) for p in result.path)
    assert calls["solve"] > 0 and calls["after"] == len(result.path)
    assert calls["simplify"] == 1  # the one check begun before the clock passed the budget


@pytest.mark.parametrize(
    "bounds", [(0.0, 0.0, 9.0, 9.0), (2.6, 2.6, 6.4, 6.4), (0.0, 0.0, 30.0, 30.0)]
)
def test_edge_step_in_metres_is_the_same_whatever_the_bounds(
    bounds: tuple[float, float, float, float],
) -> None:
    # OMPL's SE(2) extent: the bounds' diagonal plus half a metre per radian of the half turn.
    extent = math.hypot(bounds[2] - bounds[0], bounds[3] - bounds[1]) + math.pi / 2
    assert edge_resolution(bounds, 0.004, None) == 0.004
    assert edge_resolution(bounds, 0.004, 0.05) * extent == pytest.approx(0.05)


def test_a_path_planned_with_an_edge_step_in_metres_is_valid_and_a_bad_step_is_refused() -> None:
    result = plan_base_path(
        (1.0, 1.0, 0.0), (8.0, 1.0, 0.0), BOUNDS, _wall_free, seed=1, segment_m=0.05
    )
    assert result.path is not None and all(_wall_free(*p) for p in result.path)
    with pytest.raises(ValueError, match="segment_m"):
        plan_base_path((1.0, 1.0, 0.0), (8.0, 1.0, 0.0), BOUNDS, _wall_free, segment_m=0.0)


def test_a_budget_of_checks_stops_a_hopeless_search_at_that_count() -> None:
    def sealed(x: float, y: float, yaw: float) -> bool:
        return not (4.0 < x < 5.0)

    result = plan_base_path(
        (1.0, 1.0, 0.0), (8.0, 1.0, 0.0), BOUNDS, sealed, timeout_s=30, max_checks=3000
    )
    assert result.path is None and result.timed_out
    # OMPL asks between extensions of its trees, so the last one may finish past the count.
    assert 3000 <= result.checks < 3500


# The same query under a budget of checks or of seconds, with the wall clock as it is or
# running a millisecond per reading (a machine far slower than this one): one line each.
_CLOCKS = """
import itertools, sys
from camp_planner.motion import ompl_se2
if sys.argv[1] == "slow":
    ticks = itertools.count()
    ompl_se2._clock = lambda: next(ticks) * 0.001
free = lambda x, y, t: not (4.0 < x < 5.0 and y < 7.0) and 0.3 < x < 8.7 and 0.3 < y < 8.7
budget = {"max_checks": 20000, "timeout_s": 1e6} if sys.argv[2] == "checks" else {"timeout_s": 2}
for _ in range(2):
    r = ompl_se2.plan_base_path((1, 1, 0), (8, 1, 0), (0, 0, 9, 9), free, seed=3, **budget)
    print(r.checks, r.path)
"""


def _query(clock: str, budget: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", _CLOCKS, clock, budget], capture_output=True, text=True, check=True
    ).stdout


def test_a_budget_of_checks_gives_the_same_paths_whatever_the_clock_says() -> None:
    here = _query("real", "checks")
    assert here == _query("slow", "checks") and here.count("[(") >= 1
    # A budget of seconds on the slow clock gives up sooner and plans other paths.
    assert _query("real", "seconds") != _query("slow", "seconds")


def test_a_bad_budget_of_checks_is_refused() -> None:
    start, goal = (1.0, 1.0, 0.0), (8.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="max_checks"):
        plan_base_path(start, goal, BOUNDS, _wall_free, max_checks=0)
    with pytest.raises(ValueError, match="full"):
        plan_base_path(start, goal, BOUNDS, _wall_free, max_checks=100, simplify="full")


@pytest.mark.parametrize("timeout_s", [1e10, math.inf])
def test_a_huge_budget_plans_as_a_normal_one(timeout_s: float) -> None:
    """OMPL's timer overflowed on 1e10 s and reported no path at once."""
    result = plan_base_path(
        (1.0, 1.0, 0.0), (8.0, 1.0, 0.0), BOUNDS, _wall_free, seed=1, timeout_s=timeout_s
    )
    assert result.path is not None and not result.timed_out
