"""What the nodes share: QoS profiles, topic names, the service parameters and where
their files are found."""

from __future__ import annotations

import sys
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


def resolve_path(path: str | Path) -> Path:
    """``path`` as given if it exists, else inside the installed package share folder, else
    relative to the source tree (so a params file can name ``config/...`` from anywhere)."""
    p = Path(path)
    if p.is_absolute() or p.exists():
        return p
    for root in (Path(sys.prefix) / "share" / "camp_planner", Path(__file__).resolve().parents[3]):
        if (root / p).exists():
            return root / p
    return p


def default_bundle(domain: str = "namo") -> str:
    """The selector bundle the package ships for ``domain`` (empty if this install has
    none): the one trained with TAMP, the planner of the ROS nodes, whatever planner a node
    is given."""
    from camp_planner.learning.bundle import shipped_bundle  # torch: only when asked

    path = shipped_bundle(domain, "tamp")
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
    config = str(node.get_parameter("config_file").value)
    domain = str(node.get_parameter("domain").value)
    planner = str(node.get_parameter("planner").value)
    # "": the bundle shipped with the package; "none": run without a selector.
    bundle = str(node.get_parameter("selector_bundle").value) or default_bundle(domain)
    return {
        "domain": domain,
        "config_path": resolve_path(config) if config else None,
        "bundle_path": resolve_path(bundle) if bundle and bundle != "none" else None,
        "artifacts": Path(str(node.get_parameter("artifacts").value)),
        "planner": planner,
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
