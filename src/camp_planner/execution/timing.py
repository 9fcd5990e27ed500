"""Arm motions timed within joint velocity and acceleration limits, as
``FollowJointTrajectory`` wants them: positions, velocities and a time for every point.

Each segment between two waypoints is one synchronised trapezoid: every joint follows
``q(t) = q_a + s(t) (q_b - q_a)`` with the same path parameter ``s`` going from 0 to 1, at
rest at both waypoints (the plan's waypoints are grasp and approach poses, where a robot
stops anyway). The peak rate and acceleration of ``s`` are the largest every joint allows,
so the slowest joint sets the segment's duration. The trajectory is sampled every ``dt``
seconds and :func:`check_limits` verifies the samples between waypoints, not only at them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

Joints = tuple[float, ...]

# The Franka Panda's joint limits (Franka Control Interface documentation), the arm every
# shipped domain plans for; a real robot's executor takes its own as parameters.
PANDA_MAX_VELOCITY: Joints = (2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61)
PANDA_MAX_ACCELERATION: Joints = (15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0)


@dataclass(frozen=True)
class TimedPoint:
    """One point of a timed trajectory: seconds from its start, positions, velocities."""

    t: float
    positions: Joints
    velocities: Joints


@dataclass(frozen=True)
class Limits:
    """Per-joint limits, scaled by ``scale`` (0 < scale ≤ 1: a fraction of the hardware's)."""

    max_velocity: Joints
    max_acceleration: Joints
    scale: float = 1.0

    def __post_init__(self) -> None:
        if len(self.max_velocity) != len(self.max_acceleration):
            raise ValueError(
                f"{len(self.max_velocity)} velocity limits but "
                f"{len(self.max_acceleration)} acceleration limits"
            )
        if not 0.0 < self.scale <= 1.0:
            raise ValueError(f"limit scale {self.scale} is not in (0, 1]")
        for v in (*self.max_velocity, *self.max_acceleration):
            if not (math.isfinite(v) and v > 0.0):
                raise ValueError(f"joint limit {v} is not a positive number")

    def velocity(self, j: int) -> float:
        return self.max_velocity[j] * self.scale

    def acceleration(self, j: int) -> float:
        return self.max_acceleration[j] * self.scale


def _profile(delta: Sequence[float], limits: Limits) -> tuple[float, float, float]:
    """(peak rate, acceleration, duration) of the path parameter for one segment."""
    rate, accel = math.inf, math.inf
    for j, d in enumerate(delta):
        if abs(d) > 0.0:
            rate = min(rate, limits.velocity(j) / abs(d))
            accel = min(accel, limits.acceleration(j) / abs(d))
    if math.isinf(rate):
        return 0.0, 0.0, 0.0
    if rate * rate / accel >= 1.0:  # never reaches the peak rate: a triangle
        rate = math.sqrt(accel)
        return rate, accel, 2.0 / rate
    return rate, accel, 1.0 / rate + rate / accel


def _s(t: float, rate: float, accel: float, duration: float) -> tuple[float, float]:
    """The path parameter and its rate at ``t`` seconds into a segment."""
    ramp = rate / accel
    if t <= 0.0:
        return 0.0, 0.0
    if t >= duration:
        return 1.0, 0.0
    if t < ramp:
        return 0.5 * accel * t * t, accel * t
    if t > duration - ramp:
        left = duration - t
        return 1.0 - 0.5 * accel * left * left, accel * left
    return 0.5 * accel * ramp * ramp + rate * (t - ramp), rate


def time_parametrise(
    waypoints: Sequence[Sequence[float]], limits: Limits, dt: float = 0.1
) -> list[TimedPoint]:
    """The waypoints (the first is where the arm is) as a timed trajectory sampled every
    ``dt`` seconds and at every waypoint, starting at t = 0 with the first; a ValueError if a
    waypoint's length differs from the limits' or is not finite."""
    if dt <= 0.0:
        raise ValueError(f"sample period {dt} is not positive")
    width = len(limits.max_velocity)
    points = [tuple(float(v) for v in q) for q in waypoints]
    for k, q in enumerate(points):
        if len(q) != width:
            raise ValueError(f"waypoint {k} has {len(q)} joints, not {width}")
        if not all(math.isfinite(v) for v in q):
            raise ValueError(f"waypoint {k} is not finite")
    if not points:
        return []
    zero = (0.0,) * width
    out = [TimedPoint(0.0, points[0], zero)]
    start = 0.0
    for a, b in itertools.pairwise(points):
        delta = [qb - qa for qa, qb in zip(a, b, strict=True)]
        rate, accel, duration = _profile(delta, limits)
        if duration <= 0.0:
            continue
        n = max(1, math.ceil(duration / dt))
        for i in range(1, n + 1):
            t = duration * i / n
            s, ds = _s(t, rate, accel, duration)
            pos = b if i == n else tuple(qa + s * d for qa, d in zip(a, delta, strict=True))
            vel = zero if i == n else tuple(ds * d for d in delta)
            out.append(TimedPoint(start + t, pos, vel))
        start += duration
    return out


def check_limits(points: Sequence[TimedPoint], limits: Limits, slack: float = 1e-6) -> str:
    """ "" if the trajectory keeps within the limits between its samples (velocities at the
    samples, and the velocity change between consecutive samples over their interval as the
    acceleration), else the first violation, named."""
    for k, p in enumerate(points):
        for j, v in enumerate(p.velocities):
            if abs(v) > limits.velocity(j) * (1 + slack):
                return f"point {k}: joint {j} at {abs(v):.3f} rad/s > {limits.velocity(j):.3f}"
    for k, (a, b) in enumerate(itertools.pairwise(points)):
        span = b.t - a.t
        if span <= 0.0:
            return f"points {k} and {k + 1} are not in time order"
        for j in range(len(a.positions)):
            moved = abs(b.positions[j] - a.positions[j])
            # Moving ``moved`` in ``span`` needs at least this mean rate.
            if moved / span > limits.velocity(j) * (1 + slack):
                return (
                    f"points {k}-{k + 1}: joint {j} moves {moved:.3f} rad in {span:.3f} s, "
                    f"faster than {limits.velocity(j):.3f} rad/s"
                )
            change = abs(b.velocities[j] - a.velocities[j]) / span
            if change > limits.acceleration(j) * (1 + slack) + 1e-9:
                return (
                    f"points {k}-{k + 1}: joint {j} accelerates at {change:.3f} rad/s² > "
                    f"{limits.acceleration(j):.3f}"
                )
    return ""
