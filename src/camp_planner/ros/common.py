"""What the nodes share: QoS profiles, topic names and the service parameters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

# A scene, a plan and an execution report are state, not a stream: late joiners get the
# last one (a client that starts after a fast execution must still see its report).
LATCHED = QoSProfile(
    depth=1,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
EVENTS = QoSProfile(depth=20, reliability=ReliabilityPolicy.RELIABLE)

SCENE_TOPIC = "scene"
CONTEXT_TOPIC = "context"
PLAN_TOPIC = "plan"
BASE_PATH_TOPIC = "plan/base_path"
ARM_TRAJECTORY_TOPIC = "plan/arm_trajectory"
STATUS_TOPIC = "camp_planner/status"
MARKERS_TOPIC = "camp_planner/markers"
EXECUTION_TOPIC = "execution_report"
SELECT_SERVICE = "select_context"
PLAN_ACTION = "plan_task"


def default_bundle() -> str:
    """The selector bundle that ships with the package (empty if this install has none)."""
    from camp_planner.learning.bundle import shipped_bundle  # torch: only when asked

    path = shipped_bundle("namo", "tamp")
    return str(path) if path is not None else ""


def declare_service_params(node: Node) -> dict[str, Any]:
    """Declare the parameters every node that runs the CAMP pipeline reads; return the
    :class:`~camp_planner.service.planning.CampService` arguments they give."""
    node.declare_parameter("domain", "namo")
    node.declare_parameter("config_file", "")
    node.declare_parameter("selector_bundle", "")
    node.declare_parameter("artifacts", "artifacts")
    node.declare_parameter("planner", "tamp")
    node.declare_parameter("frame_id", "map")
    from camp_planner.ros.bringup import resolve_path

    config = str(node.get_parameter("config_file").value)
    # "": the bundle shipped with the package; "none": run without a selector.
    bundle = str(node.get_parameter("selector_bundle").value) or default_bundle()
    return {
        "domain": str(node.get_parameter("domain").value),
        "config_path": resolve_path(config) if config else None,
        "bundle_path": resolve_path(bundle) if bundle and bundle != "none" else None,
        "artifacts": Path(str(node.get_parameter("artifacts").value)),
        "planner": str(node.get_parameter("planner").value),
        "frame_id": str(node.get_parameter("frame_id").value),
    }


def remap_rules(argv: list[str]) -> list[str]:
    """The ``-r/--remap`` rules of a process's ``--ros-args`` sections, as ``--ros-args``
    arguments for a second context in the same process. A rule that renames every node
    (``__node:=`` / ``__name:=`` without a node prefix) is left out: it is meant for the
    process's main node, and two nodes must not share a name."""
    rules: list[str] = []
    inside = False
    args = iter(argv)
    for arg in args:
        if arg == "--ros-args":
            inside = True
        elif arg == "--":
            inside = False
        elif inside and arg in ("-r", "--remap"):
            rule = next(args, "")
            if rule and not rule.startswith(("__node:=", "__name:=")):
                rules += ["-r", rule]
    return ["--ros-args", *rules] if rules else []
