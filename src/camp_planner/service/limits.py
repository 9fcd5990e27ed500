"""Request bounds of the planning service, checked before any work: a value outside its
range is refused with ``ErrorCode.INVALID_REQUEST`` and a message giving the range.

Light on purpose (no NumPy, no simulator): the ROS nodes check a goal here before they hand
it to a planning worker.
"""

from __future__ import annotations

import math

from camp_planner.domains.interface.errors import ErrorCode, ServiceError

# An hour is far beyond any plan worth waiting for on a robot, and larger values overflow the
# clocks and waits below (select(), Connection.poll, the driver's time limit).
MAX_TIMEOUT_S = 3600.0
MAX_LAMBDA = 1e6
# The selector normalises its inputs with its training mean and SD; values beyond this are
# no measurement, and at float32's range (3.4e38) the network's output turns to NaN.
MAX_FEATURE_ABS = 1e6


def check_plan_request(lam: float | None, timeout_s: float | None) -> None:
    """Refuse a λ or timeout outside its range (≤ 0 means the default, as in ``PlanTask``)."""
    for name, value, top, unit in (
        ("lambda_cost", lam, MAX_LAMBDA, ""),
        ("timeout", timeout_s, MAX_TIMEOUT_S, " s"),
    ):
        if value is None:
            continue
        if not math.isfinite(value) or value > top:
            raise ServiceError(
                ErrorCode.INVALID_REQUEST,
                f"{name} = {value!r} is out of range: give a value in (0, {top:g}]{unit}, "
                "or ≤ 0 for the server's default",
            )
