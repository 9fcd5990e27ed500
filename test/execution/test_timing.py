from __future__ import annotations

import itertools
import math

import pytest

from camp_planner.execution.timing import (
    PANDA_MAX_ACCELERATION,
    PANDA_MAX_VELOCITY,
    Limits,
    TimedPoint,
    check_limits,
    time_parametrise,
)

PANDA = Limits(PANDA_MAX_VELOCITY, PANDA_MAX_ACCELERATION, scale=0.5)
TUCKED = (0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785)
GRASP = (0.4, 0.3, -0.2, -1.9, 0.1, 2.2, 0.6)


def test_a_timed_motion_passes_through_every_waypoint_at_rest_within_the_limits() -> None:
    points = time_parametrise([TUCKED, GRASP, TUCKED], PANDA, dt=0.05)
    assert points[0] == TimedPoint(0.0, TUCKED, (0.0,) * 7)
    assert points[-1].positions == TUCKED and points[-1].velocities == (0.0,) * 7
    at_grasp = [p for p in points if p.positions == GRASP]
    assert len(at_grasp) == 1 and at_grasp[0].velocities == (0.0,) * 7
    assert all(b.t > a.t for a, b in itertools.pairwise(points))
    assert check_limits(points, PANDA) == ""


def test_the_slowest_joint_sets_the_duration_and_moves_at_its_limit() -> None:
    # Joint 1 (7.5 rad/s² on the Panda) moving 2 rad: a triangle, 2·sqrt(2/a) seconds.
    limits = Limits(PANDA_MAX_VELOCITY, PANDA_MAX_ACCELERATION)
    start, goal = (0.0,) * 7, (0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    points = time_parametrise([start, goal], limits, dt=0.01)
    rate_limited = 2.0 / 2.175 + 2.175 / 7.5  # cruise at 2.175 rad/s after a 7.5 rad/s² ramp
    assert points[-1].t == pytest.approx(rate_limited)
    assert max(abs(p.velocities[1]) for p in points) == pytest.approx(2.175, rel=1e-3)


def test_the_checker_names_a_trajectory_that_is_too_fast_between_its_samples() -> None:
    fast = [TimedPoint(0.0, TUCKED, (0.0,) * 7), TimedPoint(0.1, GRASP, (0.0,) * 7)]
    why = check_limits(fast, PANDA)
    assert "faster than" in why and why.startswith("points 0-1: joint")
    jerk = [TimedPoint(0.0, (0.0,) * 7, (0.0,) * 7), TimedPoint(0.01, (0.0,) * 7, (1.0,) * 7)]
    assert "accelerates" in check_limits(jerk, PANDA)


def test_bad_limits_and_waypoints_are_named() -> None:
    with pytest.raises(ValueError, match="7 velocity limits but 6"):
        Limits(PANDA_MAX_VELOCITY, PANDA_MAX_ACCELERATION[:6])
    with pytest.raises(ValueError, match="scale"):
        Limits(PANDA_MAX_VELOCITY, PANDA_MAX_ACCELERATION, scale=0.0)
    with pytest.raises(ValueError, match="waypoint 1 has 3 joints"):
        time_parametrise([TUCKED, (0.0, 0.0, 0.0)], PANDA)
    with pytest.raises(ValueError, match="waypoint 0 is not finite"):
        time_parametrise([(math.nan,) * 7], PANDA)


def test_a_motion_to_where_the_arm_is_takes_no_time() -> None:
    assert time_parametrise([TUCKED, TUCKED], PANDA) == [TimedPoint(0.0, TUCKED, (0.0,) * 7)]
