"""What the nodes share: QoS profiles, topic names, the service parameters (``world``
among them: :mod:`camp_planner.ros.worlds`) and where their files are found."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rclpy.callback_groups import CallbackGroup
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.subscription import Subscription

from camp_planner.core.errors import CampError
from camp_planner.ros.worlds import DEFAULT_WORLD, check_world, world_config

# A scene, a plan and an execution report are state, not a stream: late joiners get the
# last one (a client that starts after a fast execution must still see its report).
LATCHED = QoSProfile(
    depth=1,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
EVENTS = QoSProfile(depth=20, reliability=ReliabilityPolicy.RELIABLE)
# Scenes in, from whatever perception publishes with: a best-effort volatile subscription
# matches every publisher (reliable or best effort, volatile or transient local), and a
# latched one beside it receives the scene a transient-local publisher sent before this node
# joined. A volatile publisher meets the latched subscription with an incompatible-QoS event,
# which :func:`subscribe_scenes` answers quietly; the copies a latched publisher sends to both
# are one scene, which the planner's scene comparison drops.
SCENE_STREAM = QoSProfile(
    depth=1,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.BEST_EFFORT,
    durability=DurabilityPolicy.VOLATILE,
)

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


def subscribe_scenes(
    node: Node, msg_type: Any, callback: Any, group: CallbackGroup | None = None
) -> list[Subscription[Any]]:
    """Subscribe ``callback`` to the scene topic with both :data:`SCENE_STREAM` and
    :data:`LATCHED`: every publisher is heard, and a latched scene is heard late."""

    def quiet(_info: Any) -> None:
        # Expected for one of the pair whenever a publisher is volatile or best effort; the
        # default handler would warn on every such match.
        node.get_logger().debug("a scene publisher matches only the stream subscription")

    events = SubscriptionEventCallbacks(incompatible_qos=quiet)
    return [
        node.create_subscription(
            msg_type, SCENE_TOPIC, callback, qos, callback_group=group, event_callbacks=events
        )
        for qos in (SCENE_STREAM, LATCHED)
    ]


def resolve_path(path: str | Path) -> Path:
    """``path`` as given if it exists, else inside the installed package share folder, else
    relative to the source tree (so a params file can name ``config/...`` from anywhere)."""
    p = Path(path)
    if p.is_absolute() or p.exists():
        return p
    here = Path(__file__).resolve().parents
    # The share folder of the prefix this module is installed in (<prefix>/lib/pythonX.Y/
    # site-packages/camp_planner/ros/): a colcon install's, which is not sys.prefix's.
    prefixes = [Path(sys.prefix), *here[5:6]]
    for root in (*(prefix / "share" / "camp_planner" for prefix in prefixes), here[3]):
        if (root / p).exists():
            return root / p
    return p


def default_bundle(domain: str = "namo", world: str = DEFAULT_WORLD) -> str:
    """The selector bundle the package ships for ``domain`` in ``world`` (empty if this
    install has none): the one trained with TAMP, the planner of the ROS nodes, whatever
    planner a node is given."""
    from camp_planner.learning.bundle import shipped_bundle  # torch: only when asked

    path = shipped_bundle(domain, "tamp", world=world or None)
    return str(path) if path is not None else ""


def config_path(domain: str, world: str, config_file: str) -> Path | None:
    """The configuration a node of ``domain`` loads: ``config_file`` if given, else
    ``world``'s (None: the domain's defaults). An unknown world is a :class:`CampError`
    even when ``config_file`` is given: a misspelt world must not pass unnoticed."""
    default = world_config(domain, world)
    config = config_file or default
    return resolve_path(config) if config else None


def bundle_path(domain: str, world: str, selector_bundle: str) -> Path | None:
    """The selector bundle a node of ``domain`` loads: ``selector_bundle`` if given
    (``none``: no selector), else the one shipped for ``world`` (None if there is none)."""
    check_world(domain, world)
    bundle = selector_bundle or default_bundle(domain, world)
    return resolve_path(bundle) if bundle and bundle != "none" else None


def declare_world(node: Node, domain: str, config_file: str) -> tuple[str, Path | None]:
    """Declare ``world`` on ``node``; return it and the configuration the node loads (see
    :func:`config_path`). An unknown world destroys the node and raises the
    :class:`CampError` that :func:`camp_planner.ros.bringup.start_node` reports."""
    node.declare_parameter("world", DEFAULT_WORLD)
    world = str(node.get_parameter("world").value)
    try:
        return world, config_path(domain, world, config_file)
    except CampError:
        # The class's own destroy_node may need attributes its __init__ has not set yet.
        Node.destroy_node(node)
        raise


def declare_service_params(node: Node) -> dict[str, Any]:
    """Declare the parameters every node that runs the CAMP pipeline reads; return the
    :class:`~camp_planner.service.planning.CampService` arguments they give."""
    node.declare_parameter("domain", "namo")
    node.declare_parameter("config_file", "")
    node.declare_parameter("selector_bundle", "")
    node.declare_parameter("artifacts", "artifacts")
    node.declare_parameter("planner", "tamp")
    node.declare_parameter("frame_id", "map")
    domain = str(node.get_parameter("domain").value)
    planner = str(node.get_parameter("planner").value)
    world, config = declare_world(node, domain, str(node.get_parameter("config_file").value))
    # "": the bundle shipped for the world; "none": run without a selector.
    given = str(node.get_parameter("selector_bundle").value)
    bundle = bundle_path(domain, world, given)
    if world:
        node.get_logger().info(
            f"world {world}: config {config or 'the defaults'}, selector bundle {bundle or 'none'}"
        )
    if world and not given and bundle is None:
        # Not fatal, as for the default world: the node plans under the universal context.
        node.get_logger().warning(
            f"world {world}: this install ships no selector bundle for it; give selector_bundle"
        )
    return {
        "domain": domain,
        "config_path": config,
        "bundle_path": bundle,
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
