"""What the nodes share: QoS profiles, topic names, the service parameters (``world``
among them: :mod:`camp_planner.ros.worlds`) and where their files are found."""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.action import ActionClient as _RclpyActionClient
from rclpy.callback_groups import CallbackGroup
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.subscription import Subscription

from camp_planner.core.errors import CampError
from camp_planner.ros.worlds import (
    DEFAULT_WORLD,
    check_world,
    is_world_file,
    world_config,
    world_file_bundle,
)

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

# Relative names, so a launch ``namespace`` moves them all; the topics sit under ``camp/`` so
# none meets another stack's topic of the same name and another type (Nav2 publishes a
# nav_msgs/Path on ``plan``). The service and the action keep their own names: nothing else
# serves ``select_context`` or ``plan_task``, and ``ros2 service call /select_context`` is
# what users type.
TOPIC_PREFIX = "camp/"
# select_context, both ends: every request and every answer is kept until taken (the
# default depth of 10 overwrote most of a burst, unanswered and unsaid).
SELECT_QOS = QoSProfile(
    depth=1, history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE
)

SCENE_TOPIC = "camp/scene"
CONTEXT_TOPIC = "camp/context"
PLAN_TOPIC = "camp/plan"
BASE_PATH_TOPIC = "camp/plan/base_path"
ARM_TRAJECTORY_TOPIC = "camp/plan/arm_trajectory"
STATUS_TOPIC = "camp/status"
MARKERS_TOPIC = "camp/markers"
EXECUTION_TOPIC = "camp/execution_report"
EXECUTION_PATH_TOPIC = "camp/execution/path"  # camp_executor: where the robot has been
EXECUTION_MARKERS_TOPIC = "camp/execution/markers"  # camp_executor: the world and the step now
DIAGNOSTICS_TOPIC = "/diagnostics"  # absolute, as every diagnostics aggregator reads it
SELECT_SERVICE = "select_context"
PLAN_ACTION = "plan_task"
EXECUTE_ACTION = "execute_plan"  # camp_executor's
# The lifecycle nodes a camp_lifecycle_manager brings up, in this order.
MANAGED_NODES = ("tamp_server", "camp_planner", "camp_executor")
OPEN_LOOP_MANAGED = MANAGED_NODES[:2]


class ActionClient(_RclpyActionClient):
    """rclpy's action client, safe to create while an executor spins its node.

    rclpy adds the client to its node before it sets the lock that the executor's wait-set
    queries take (ros2/rclpy#1589). An executor thread that met the client in between raised
    AttributeError and stopped spinning: a restarted ``camp_executor`` died while it
    configured, under load in CI. The lock is there from the start."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._lock = threading.Lock()
        super().__init__(*args, **kwargs)


def managed_nodes(names: Sequence[str]) -> list[str]:
    """The lifecycle nodes among ``names``, in bring-up order: what their manager waits for."""
    return [n for n in MANAGED_NODES if n in names]


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
    (``none``: no selector), else the one shipped for ``world``, or for a world file the one
    ``camp train --world`` wrote beside it (None if there is none)."""
    check_world(domain, world)
    if is_world_file(world):
        bundle = selector_bundle or world_file_bundle(world)
    else:
        bundle = selector_bundle or default_bundle(domain, world)
    return resolve_path(bundle) if bundle and bundle != "none" else None


START_UP = "read when the node starts (configures), so read-only while it runs"


def declare_world(node: Node, domain: str, config_file: str) -> tuple[str, Path | None]:
    """Declare ``world`` on ``node``; return it and the configuration the node loads (see
    :func:`config_path`). An unknown world destroys the node and raises the
    :class:`CampError` that :func:`camp_planner.ros.bringup.start_node` reports."""
    world = str(
        node.declare_parameter(
            "world",
            DEFAULT_WORLD,
            ParameterDescriptor(description=f"the world to plan in; {START_UP}", read_only=True),
        ).value
    )
    try:
        return world, config_path(domain, world, config_file)
    except CampError:
        # The class's own destroy_node may need attributes its __init__ has not set yet.
        Node.destroy_node(node)
        raise


# Parameter → what it is; every one is read at configure and read-only.
SERVICE_PARAMS: dict[str, tuple[str, str]] = {
    "domain": ("namo", "the domain plug-in (namo, manip, ...)"),
    "config_file": ("", "the domain configuration (YAML); empty: the world's"),
    "selector_bundle": ("", "the selector bundle; empty: the world's shipped one; none: none"),
    "artifacts": ("artifacts", "folder for CSIs and caches"),
    "planner": ("tamp", "the planner that solves the CAMP"),
    "frame_id": ("map", "the fixed frame scenes and plans are in (REP 105)"),
}


def declare_service_params(node: Node) -> None:
    """Declare the parameters every node that runs the CAMP pipeline reads, read-only; an
    unknown world destroys the node and raises its :class:`CampError` at once (a parameter
    check, before anything is loaded)."""
    for name, (default, what) in SERVICE_PARAMS.items():
        node.declare_parameter(
            name, default, ParameterDescriptor(description=f"{what}; {START_UP}", read_only=True)
        )
    declare_world(node, str(node.get_parameter("domain").value), "")


def service_params(node: Node) -> dict[str, Any]:
    """The :class:`~camp_planner.service.planning.CampService` arguments the parameters of
    :func:`declare_service_params` give (resolving the world's configuration and bundle: a
    :class:`CampError` when one is missing)."""
    domain = str(node.get_parameter("domain").value)
    world = str(node.get_parameter("world").value)
    config = config_path(domain, world, str(node.get_parameter("config_file").value))
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
            f"world {world}: no selector bundle for it (a world file's is written beside it "
            "by camp train --world); give selector_bundle"
        )
    return {
        "domain": domain,
        "config_path": config,
        "bundle_path": bundle,
        "artifacts": Path(str(node.get_parameter("artifacts").value)),
        "planner": str(node.get_parameter("planner").value),
        "frame_id": str(node.get_parameter("frame_id").value),
    }


def namespaced_params(data: dict[str, Any], namespace: str) -> dict[str, Any]:
    """A parameter file's blocks for nodes run under ``namespace``. ROS matches a block keyed
    by a bare node name (``camp_planner``) only to that node at the root, so such a key
    becomes ``/<namespace>/camp_planner``; absolute keys and wildcards (``/**``) are kept."""
    ns = namespace.strip("/")
    if not ns:
        return data
    return {(k if str(k).startswith("/") else f"/{ns}/{k}"): v for k, v in data.items()}


def params_for_namespace(path: Path, namespace: str, folder: Path) -> Path:
    """``path``, or when ``namespace`` is given its :func:`namespaced_params` copy written
    into ``folder`` (what ``camp bringup --namespace`` and the launch files pass on)."""
    if not namespace.strip("/"):
        return path
    data = yaml.safe_load(path.read_text()) or {}
    out = folder / f"{namespace.strip('/').replace('/', '_')}_{path.name}"
    out.write_text(yaml.safe_dump(namespaced_params(data, namespace), sort_keys=False))
    return out
