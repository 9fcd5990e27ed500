"""The control_msgs and nav2_msgs subsets that `make setup` builds (src/ros_subsets/).

The plan executor must drive real controllers, so each interface has to be the published one.
The table ros_subsets_jazzy.yaml is written from the ROS 2 Jazzy definitions (control_msgs
5.5.0, nav2_msgs 1.3) in .msg notation; every generated class must have exactly its fields,
types and constants, and survive a CDR round trip.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.ros

TABLE = Path(__file__).with_name("ros_subsets_jazzy.yaml")


def _key(name: str) -> tuple[str, str, str]:
    """ "module/Class" or "module/Action/Part" -> (module, class, part or "")."""
    module, cls, *part = name.split("/")
    return module, cls, part[0] if part else ""


# (module, class, part) -> its definition in .msg notation, written from the upstream text.
DEFINITIONS = {_key(k): v for k, v in yaml.safe_load(TABLE.read_text()).items()}


def _parse(text: str) -> tuple[dict[str, str], dict[str, int]]:
    """Split a definition into its fields (name -> type, in order) and constants."""
    fields: dict[str, str] = {}
    constants: dict[str, int] = {}
    for line in text.strip().splitlines():
        msg_type, decl = line.split()
        if "=" in decl:
            name, value = decl.split("=")
            constants[name] = int(value)
        else:
            fields[decl] = msg_type
    return fields, constants


# .msg primitive names as the generated Python classes report them (rosidl's IDL names).
_IDL = {"float64": "double", "float32": "float", "bool": "boolean"}


def _idl(msg_type: str) -> str:
    if msg_type.endswith("[]"):
        return f"sequence<{_idl(msg_type[:-2])}>"
    return _IDL.get(msg_type, msg_type)


def _cls(key: tuple[str, str, str]) -> Any:
    module, name, part = key
    cls = getattr(importlib.import_module(module), name)
    return getattr(cls, part) if part else cls


@pytest.mark.parametrize("key", list(DEFINITIONS), ids=lambda k: ".".join(p for p in k if p))
def test_each_interface_has_exactly_the_published_fields_and_constants(
    key: tuple[str, str, str],
) -> None:
    cls = _cls(key)
    fields, constants = _parse(DEFINITIONS[key])
    expected = {name: _idl(t) for name, t in fields.items()}
    # Order matters too: CDR serializes fields in declaration order.
    assert list(cls.get_fields_and_field_types().items()) == list(expected.items())
    for name, value in constants.items():
        assert getattr(cls, name) == value, name
    # No constant beyond the definition's: rosidl exposes constants as upper-case attributes
    # (beside its own SLOT_TYPES).
    assert {n for n in dir(cls) if n.isupper()} - {"SLOT_TYPES"} == set(constants)


def _filled() -> dict[tuple[str, str, str], Any]:
    """One goal, result and feedback of each action, with every kind of field set."""
    from builtin_interfaces.msg import Duration
    from control_msgs.action import FollowJointTrajectory, GripperCommand
    from control_msgs.msg import GripperCommand as GripperCommandMsg
    from control_msgs.msg import JointComponentTolerance, JointTolerance
    from geometry_msgs.msg import PoseStamped, Transform
    from nav2_msgs.action import FollowPath, NavigateThroughPoses
    from trajectory_msgs.msg import JointTrajectoryPoint, MultiDOFJointTrajectoryPoint

    fjt_goal = FollowJointTrajectory.Goal()
    fjt_goal.trajectory.joint_names = ["shoulder", "elbow"]
    fjt_goal.trajectory.points = [
        JointTrajectoryPoint(positions=[0.1, -0.2], time_from_start=Duration(sec=2))
    ]
    fjt_goal.multi_dof_trajectory.joint_names = ["base"]
    fjt_goal.multi_dof_trajectory.points = [
        MultiDOFJointTrajectoryPoint(transforms=[Transform()], time_from_start=Duration(sec=1))
    ]
    fjt_goal.path_tolerance = [JointTolerance(name="elbow", position=0.05, velocity=-1.0)]
    fjt_goal.component_path_tolerance = [
        JointComponentTolerance(
            joint_name="base", component=JointComponentTolerance.TRANSLATION, position=0.1
        )
    ]
    fjt_goal.goal_tolerance = [JointTolerance(name="shoulder", position=0.01)]
    fjt_goal.component_goal_tolerance = [
        JointComponentTolerance(joint_name="base", component=JointComponentTolerance.ROTATION)
    ]
    fjt_goal.goal_time_tolerance = Duration(sec=0, nanosec=500_000_000)
    fjt_feedback = FollowJointTrajectory.Feedback(joint_names=["shoulder", "elbow"])
    fjt_feedback.header.frame_id = "base_link"
    fjt_feedback.desired.positions = [0.1, -0.2]
    fjt_feedback.actual.positions = [0.09, -0.19]
    fjt_feedback.error.positions = [0.01, -0.01]
    fjt_feedback.multi_dof_joint_names = ["base"]
    fjt_feedback.multi_dof_actual.transforms = [Transform()]

    pose = PoseStamped()
    pose.header.frame_id = "map"
    pose.pose.position.x, pose.pose.orientation.w = 1.5, 1.0
    fp_goal = FollowPath.Goal(controller_id="FollowPath", goal_checker_id="general_goal_checker")
    fp_goal.progress_checker_id = "progress_checker"
    fp_goal.path.header.frame_id = "map"
    fp_goal.path.poses = [pose, pose]
    ntp_feedback = NavigateThroughPoses.Feedback(current_pose=pose, number_of_recoveries=1)
    ntp_feedback.navigation_time = Duration(sec=3)
    ntp_feedback.distance_remaining, ntp_feedback.number_of_poses_remaining = 2.5, 1

    return {
        ("control_msgs.action", "FollowJointTrajectory", "Goal"): fjt_goal,
        ("control_msgs.action", "FollowJointTrajectory", "Result"): FollowJointTrajectory.Result(
            error_code=FollowJointTrajectory.Result.PATH_TOLERANCE_VIOLATED,
            error_string="elbow off by 0.2 rad",
        ),
        ("control_msgs.action", "FollowJointTrajectory", "Feedback"): fjt_feedback,
        ("control_msgs.action", "GripperCommand", "Goal"): GripperCommand.Goal(
            command=GripperCommandMsg(position=0.08, max_effort=40.0)
        ),
        ("control_msgs.action", "GripperCommand", "Result"): GripperCommand.Result(
            position=0.02, effort=39.5, stalled=True, reached_goal=False
        ),
        ("control_msgs.action", "GripperCommand", "Feedback"): GripperCommand.Feedback(
            position=0.05, effort=10.0, stalled=False, reached_goal=False
        ),
        ("nav2_msgs.action", "FollowPath", "Goal"): fp_goal,
        ("nav2_msgs.action", "FollowPath", "Result"): FollowPath.Result(
            error_code=FollowPath.Result.FAILED_TO_MAKE_PROGRESS, error_msg="stuck"
        ),
        ("nav2_msgs.action", "FollowPath", "Feedback"): FollowPath.Feedback(
            distance_to_goal=1.25, speed=0.5
        ),
        ("nav2_msgs.action", "NavigateThroughPoses", "Goal"): NavigateThroughPoses.Goal(
            poses=[pose, pose], behavior_tree=""
        ),
        ("nav2_msgs.action", "NavigateThroughPoses", "Result"): NavigateThroughPoses.Result(
            error_code=NavigateThroughPoses.Result.NONE, error_msg=""
        ),
        ("nav2_msgs.action", "NavigateThroughPoses", "Feedback"): ntp_feedback,
    }


def test_goals_results_and_feedback_round_trip_through_cdr() -> None:
    from rclpy.serialization import deserialize_message, serialize_message

    messages = _filled()
    assert set(messages) == {k for k in DEFINITIONS if k[2]}  # every action part is exercised
    for key, msg in messages.items():
        data = serialize_message(msg)
        back = deserialize_message(data, _cls(key))
        assert back == msg, key
        # CDR's alignment padding is not zeroed by the serializer, so compare the length and a
        # second round trip rather than the bytes.
        again = serialize_message(back)
        assert len(again) == len(data), key
        assert deserialize_message(again, _cls(key)) == msg, key


def test_defaults_are_zero_and_empty_as_in_the_definitions() -> None:
    # None of the definitions declares a default value, so every field starts at zero.
    from control_msgs.action import FollowJointTrajectory
    from nav2_msgs.action import FollowPath

    goal = FollowJointTrajectory.Goal()
    assert list(goal.path_tolerance) == [] and goal.goal_time_tolerance.sec == 0
    result = FollowPath.Result()
    assert result.error_code == FollowPath.Result.NONE and result.error_msg == ""
