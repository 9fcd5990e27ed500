"""Named error codes of the robot interface (the values match the ``ERROR_*`` constants of
``camp_msgs/srv/SelectContext`` and ``camp_msgs/action/PlanTask``).

They live with the domains because a domain's scene adapter is what refuses a malformed
scene; the service and the ROS nodes above answer with the same codes."""

from __future__ import annotations

from enum import IntEnum

from camp_planner.core.errors import CampError


class ErrorCode(IntEnum):
    NONE = 0
    INVALID_SCENE = 1
    WRONG_FEATURE_LENGTH = 2
    NO_SELECTOR = 3
    UNKNOWN_DOMAIN = 4
    UNKNOWN_CONTEXT = 5
    MISSING_GOAL = 6
    UNKNOWN_OBJECT = 7
    EMPTY_SCENE = 8
    UNREACHABLE_GOAL = 9
    NO_PLAN = 10
    TIMEOUT = 11
    CANCELED = 12
    BUSY = 13
    INVALID_REQUEST = 14
    SERVER_LOST = 15
    INACTIVE = 16
    INTERNAL = 255


class ServiceError(CampError):
    """A request the service cannot serve, with the code a client can branch on."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __reduce__(self) -> tuple[object, ...]:  # survive pickling to and from worker processes
        return (ServiceError, (self.code, self.message))
