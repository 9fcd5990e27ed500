"""Base motion planning in SE(2) with OMPL's own planners (the one module importing OMPL).

The caller supplies the collision world as a plain ``is_valid(x, y, yaw)`` callable, so this
module knows nothing about PyBullet or NAMO. OMPL checks states along every edge at
``resolution`` (a fraction of the space's extent); the solution is simplified, interpolated
into waypoints no further apart than ``step`` metres, and every waypoint is checked again
before the path is returned. All OMPL objects live inside the call (module-level ones leak).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from ompl import base as ob
from ompl import geometric as og
from ompl import util as ou

Pose2D = tuple[float, float, float]

PLANNERS: dict[str, Callable[[object], object]] = {
    "RRTConnect": og.RRTConnect,
    "RRT": og.RRT,
    "RRTstar": og.RRTstar,
    "PRM": og.PRM,
    "KPIECE1": og.KPIECE1,
    "BITstar": og.BITstar,
}


SIMPLIFY = ("shortcut", "full", "none")

# The wall clock every budget here is measured on (a module attribute so that tests can
# drive it without sleeping).
_clock = time.perf_counter


MAX_QUERY_S = 86400.0  # the longest wall-clock budget one OMPL query is given


def _seed_query(seed: int) -> None:
    """Seed OMPL's random numbers for the next query alone. Every OMPL object of a query is
    made inside it and draws its seed from OMPL's seed generator when made, so reseeding
    the generator first makes the query's paths a function of ``seed``. OMPL 2.0.1 does
    reseed after sampling has begun, but logs an error saying it will not: silenced."""
    ou.setLogLevel(ou.LOG_NONE)
    ou.RNG.setSeed(max(1, seed))
    ou.setLogLevel(ou.LOG_ERROR)


@dataclass(frozen=True)
class MotionResult:
    """A planned base path (``None`` if none was found in time) and what it cost.

    ``path`` holds the densely interpolated waypoints (all checked); ``vertices`` the corners
    of the simplified path, i.e. the straight segments a base controller drives."""

    path: list[Pose2D] | None
    solve_time_s: float
    checks: int
    timed_out: bool
    vertices: list[Pose2D] | None = None


def plan_base_path(
    start: Pose2D,
    goal: Pose2D,
    bounds: tuple[float, float, float, float],
    is_valid: Callable[[float, float, float], bool],
    *,
    timeout_s: float = 5.0,
    seed: int = 0,
    planner: str = "RRTConnect",
    resolution: float = 0.002,
    step: float = 0.05,
    simplify: str = "shortcut",
    segment_m: float | None = None,
    max_checks: int | None = None,
) -> MotionResult:
    """A collision-free SE(2) path from ``start`` to ``goal`` within ``bounds`` =
    (x_min, y_min, x_max, y_max), or ``path=None`` when OMPL finds none before ``timeout_s``.

    ``max_checks``: when given, the search's budget is this many validity checks and
    ``timeout_s`` only caps its wall-clock time. A budget of work gives the same answer on
    a slow machine as on a fast one (OMPL's random numbers are seeded by ``seed`` before the
    query, so the same call gives the same path); a budget of seconds gives up
    sooner on a slower or busier machine, and the plan built on the answer changes.

    ``simplify``: ``shortcut`` (default) removes vertices and pulls the path taut with
    OMPL's shortcutting passes; ``full`` runs OMPL's whole simplification (also B-spline
    smoothing and repeated passes, up to 0.5 s); ``none`` keeps RRT-Connect's raw path. On
    the NAMO test tasks ``full`` doubled the cost of a successful query (62 vs 31 ms, 3,400
    vs 1,600 collision checks; TAMP's planning time 40 vs 26 s over 20 runs) for paths 2 %
    shorter than ``shortcut``'s; raw paths are 1.9 times longer (paired in-room queries).

    OMPL's random numbers are seeded with ``seed`` before the query, so its path depends on
    its own arguments alone, not on the queries the process made before it.

    ``segment_m``: when given, OMPL checks edges every ``segment_m`` of SE(2) distance
    (metres, plus half a metre per radian turned) whatever the bounds, in place of
    ``resolution``, which is a fraction of the bounds' extent: 0.004 of it is 5.7 cm in a
    9 m world, 2.8 cm in one 3.8 m room and 17.6 cm in a 30 m world.

    Raises ValueError for an unknown planner name or simplification, for a
    non-positive timeout, ``segment_m`` or ``max_checks``, and for ``max_checks`` with
    ``simplify="full"``."""
    if planner not in PLANNERS:
        raise ValueError(f"unknown OMPL planner '{planner}'; choose one of: {', '.join(PLANNERS)}")
    if simplify not in SIMPLIFY:
        raise ValueError(f"unknown simplify '{simplify}'; choose one of: {', '.join(SIMPLIFY)}")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    # OMPL's timer overflows on huge budgets (1e10 s returned "no path" at once, as if
    # searched out); a day is beyond any query, and ``max_checks`` bounds a search by work.
    timeout_s = min(timeout_s, MAX_QUERY_S)
    if segment_m is not None and not segment_m > 0:
        raise ValueError(f"segment_m must be positive, got {segment_m}")
    if max_checks is not None and max_checks < 1:
        raise ValueError(f"max_checks must be positive, got {max_checks}")
    if max_checks is not None and simplify == "full":
        # OMPL's whole simplification runs for a time, so its result would depend on the
        # machine again.
        raise ValueError("simplify 'full' is bounded by time: use 'shortcut' with max_checks")
    checks = 0
    t0 = _clock()
    if not (is_valid(*start) and is_valid(*goal)):
        return MotionResult(None, _clock() - t0, 2, False)

    ou.setLogLevel(ou.LOG_ERROR)
    _seed_query(seed)
    # OMPL checks edges only at discrete points, so an edge may clip a corner between two of
    # them and a returned waypoint then fails its own check. That is the discretisation's
    # fault, not evidence that no path exists: plan again with a finer resolution, for as
    # long as the budget lasts, instead of reporting "no path" to the task planner.
    while True:
        remaining = timeout_s - (_clock() - t0)
        checks_left = None if max_checks is None else max_checks - checks
        if remaining <= 0 or (checks_left is not None and checks_left <= 0):
            return MotionResult(None, _clock() - t0, checks, True)
        attempt = _attempt(
            start,
            goal,
            bounds,
            is_valid,
            remaining,
            planner,
            resolution,
            step,
            simplify,
            segment_m,
            checks_left,
        )
        checks += attempt.checks
        elapsed = _clock() - t0
        if attempt.path is not None:
            return MotionResult(attempt.path, elapsed, checks, False, attempt.vertices)
        if not attempt.clipped:
            spent = elapsed >= timeout_s * 0.99
            if max_checks is not None:
                spent = spent or checks >= max_checks
            return MotionResult(None, elapsed, checks, spent)
        resolution /= 2
        segment_m = None if segment_m is None else segment_m / 2


def edge_resolution(
    bounds: tuple[float, float, float, float], resolution: float, segment_m: float | None
) -> float:
    """OMPL's state validity checking resolution (a fraction of the space's extent) for a
    query in ``bounds``: ``resolution`` itself, or the fraction that makes checks
    ``segment_m`` apart when that is given."""
    space = ob.SE2StateSpace()
    space.setBounds(_bounds(bounds))
    return _resolution(space, resolution, segment_m)


def _resolution(space: object, resolution: float, segment_m: float | None) -> float:
    if segment_m is None:
        return resolution
    extent = float(space.getMaximumExtent())  # type: ignore[attr-defined]
    return min(segment_m / extent, 1.0)


def _bounds(bounds: tuple[float, float, float, float]) -> object:
    box = ob.RealVectorBounds(2)
    box.setLow(0, bounds[0])
    box.setLow(1, bounds[1])
    box.setHigh(0, bounds[2])
    box.setHigh(1, bounds[3])
    return box


@dataclass(frozen=True)
class _Attempt:
    path: list[Pose2D] | None
    vertices: list[Pose2D] | None
    checks: int
    clipped: bool  # OMPL found a path but an interpolated waypoint was in collision


def _attempt(
    start: Pose2D,
    goal: Pose2D,
    bounds: tuple[float, float, float, float],
    is_valid: Callable[[float, float, float], bool],
    timeout_s: float,
    planner: str,
    resolution: float,
    step: float,
    simplify: str,
    segment_m: float | None = None,
    max_checks: int | None = None,
) -> _Attempt:
    """One OMPL solve with fresh objects at the given edge-checking resolution (``segment_m``
    metres of SE(2) distance if given, else ``resolution`` of the space's extent), within
    ``timeout_s`` and, if given, ``max_checks`` validity checks."""
    t0 = _clock()
    checks = 0
    # OMPL bounds its search by the budget but not its path simplification: rope
    # shortcutting a path across the whole world took up to 1.6 s in a query begun with
    # almost nothing of the budget left. Past the budget every check the simplifier asks for
    # answers "invalid" without being made, so it rejects every remaining shortcut in
    # microseconds and the path stays what has been verified so far. Before the budget runs
    # out nothing changes.
    stop_at = t0 + timeout_s
    simplifying = False

    def spent() -> bool:
        return (max_checks is not None and checks >= max_checks) or _clock() >= stop_at

    space = ob.SE2StateSpace()
    space.setBounds(_bounds(bounds))
    setup = og.SimpleSetup(space)

    def valid(state: object) -> bool:
        nonlocal checks
        if simplifying and spent():
            return False
        checks += 1
        return bool(is_valid(state.getX(), state.getY(), state.getYaw()))  # type: ignore[attr-defined]

    setup.setStateValidityChecker(valid)
    info = setup.getSpaceInformation()
    info.setStateValidityCheckingResolution(_resolution(space, resolution, segment_m))
    s, g = space.allocState(), space.allocState()
    for st, (x, y, yaw) in ((s, start), (g, goal)):
        st.setX(x)
        st.setY(y)
        # OMPL's SO(2) bounds are [-pi, pi): a heading of exactly pi is "out of bounds", and
        # RRT-Connect then reports that it cannot sample the goal and searches until timeout.
        st.setYaw((yaw + math.pi) % (2 * math.pi) - math.pi)
    setup.setStartAndGoalStates(s, g)
    setup.setPlanner(PLANNERS[planner](info))
    if max_checks is None:
        solved = setup.solve(timeout_s)
    else:
        # OMPL asks the condition at every iteration of its search, in this thread: the
        # search stops after the same samples whatever the machine's speed.
        solved = setup.solve(ob.PlannerTerminationCondition(spent))
    if not (solved and setup.haveExactSolutionPath()):
        return _Attempt(None, None, checks, False)
    path = setup.getSolutionPath()
    simplifying = True
    if simplify == "full":
        remaining = max(timeout_s - (_clock() - t0), 1e-3)
        setup.simplifySolution(min(remaining, 0.5))
        path = setup.getSolutionPath()
    elif simplify == "shortcut":
        simplifier = og.PathSimplifier(info)
        simplifier.reduceVertices(path)
        simplifier.ropeShortcutPath(path)
        simplifier.reduceVertices(path)
    corners = [(float(p.getX()), float(p.getY()), float(p.getYaw())) for p in path.getStates()]
    n = max(2, math.ceil(path.length() / step) + 1)
    path.interpolate(n)
    poses = _densify(
        [(float(p.getX()), float(p.getY()), float(p.getYaw())) for p in path.getStates()], step
    )
    # OMPL checked the edges at its resolution; the returned waypoints are what execution
    # replays, so each is checked again.
    for pose in poses:
        checks += 1
        if not is_valid(*pose):
            return _Attempt(None, None, checks, True)
    return _Attempt(poses, corners, checks, False)


def _densify(poses: list[Pose2D], step: float) -> list[Pose2D]:
    """``poses`` with waypoints inserted wherever two are more than ``step`` metres apart.

    OMPL's ``interpolate(n)`` shares the n states among the segments in proportion to their
    SE(2) length, rounding per segment, so a long straight segment can end up a few per
    cent short of states (5.1 cm between waypoints at a 5 cm step, seen under load); the
    waypoints are what execution replays and what is checked again, so the promise holds
    here."""
    out = [poses[0]]
    for a, b in itertools.pairwise(poses):
        pieces = math.ceil(math.dist(a[:2], b[:2]) / step - 1e-9)
        turn = (b[2] - a[2] + math.pi) % (2 * math.pi) - math.pi
        for j in range(1, pieces):
            t = j / pieces
            yaw = (a[2] + t * turn + math.pi) % (2 * math.pi) - math.pi
            out.append((a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]), yaw))
        out.append(b)
    return out
