"""The managed nodes through ``lifecycle_msgs`` services: a broken bundle leaves the planner
``unconfigured`` and alive with its reason on ``/diagnostics``; the lifecycle manager names
it; a node serves only while active; start-up parameters are read-only; and
a burst of ``select_context`` requests is answered or refused with a named code, none
dropped."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.ros]


def _wait(condition: Callable[[], object], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())


class Rig:
    """Nodes spun in the background in one context, and a peer node to call them from."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.executors import MultiThreadedExecutor

        from camp_planner.ros.bringup import spin_executor

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.peer = rclpy.create_node("lifecycle_test_peer", context=self.context)
        self.diagnostics: list[Any] = []
        from diagnostic_msgs.msg import DiagnosticArray

        self.peer.create_subscription(
            DiagnosticArray, "/diagnostics", lambda m: self.diagnostics.extend(m.status), 50
        )
        self.executor = MultiThreadedExecutor(num_threads=4, context=self.context)
        self.executor.add_node(self.peer)
        self.nodes: list[Any] = []
        self._thread = threading.Thread(target=spin_executor, args=(self.executor,), daemon=True)
        self._thread.start()

    def add(self, node: Any) -> Any:
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def call(self, srv_type: Any, name: str, request: Any, timeout: float = 60.0) -> Any:
        client = self.peer.create_client(srv_type, name)
        try:
            assert client.wait_for_service(timeout_sec=timeout), name
            future = client.call_async(request)
            assert _wait(future.done, timeout), f"{name} did not answer"
            return future.result()
        finally:
            self.peer.destroy_client(client)

    def change(self, node: str, transition: int) -> bool:
        from lifecycle_msgs.msg import Transition
        from lifecycle_msgs.srv import ChangeState

        request = ChangeState.Request(transition=Transition(id=transition))
        return bool(self.call(ChangeState, f"/{node}/change_state", request).success)

    def state(self, node: str) -> str:
        from lifecycle_msgs.srv import GetState

        return str(
            self.call(GetState, f"/{node}/get_state", GetState.Request()).current_state.label
        )

    def select(self, stamp: Any = None) -> Any:
        from camp_msgs.srv import SelectContext

        request = SelectContext.Request(task_features=[0.0])
        if stamp is not None:
            request.stamp = stamp
        return self.call(SelectContext, "/select_context", request)

    def offered(self, name: str = "/select_context") -> bool:
        """Whether ``name`` is offered once the graph has settled: a service just withdrawn
        may be listed for a moment, so "not offered" is waited for, up to 10 s."""
        from camp_msgs.srv import SelectContext

        client = self.peer.create_client(SelectContext, name)
        try:
            return not _wait(lambda: not client.service_is_ready(), 10.0)
        finally:
            self.peer.destroy_client(client)

    def close(self) -> None:
        self.context.try_shutdown()
        self._thread.join(5.0)
        self.executor.shutdown()
        for node in [*self.nodes, self.peer]:
            node.destroy_node()


@pytest.fixture
def rig() -> Iterator[Rig]:
    made = Rig()
    try:
        yield made
    finally:
        made.close()


def _planner(rig: Rig, artifacts: Path, **params: Any) -> Any:
    from rclpy.parameter import Parameter

    from camp_planner.ros.camp_planner_node import CampPlannerNode

    given = {"selector_bundle": "none", "artifacts": str(artifacts), **params}
    overrides = [Parameter(k, value=v) for k, v in given.items()]
    return rig.add(CampPlannerNode(context=rig.context, parameter_overrides=overrides))


def test_a_broken_bundle_leaves_the_planner_unconfigured_alive_and_saying_why(
    rig: Rig, tmp_path: Path
) -> None:
    from diagnostic_msgs.msg import DiagnosticStatus
    from lifecycle_msgs.msg import Transition
    from rclpy.parameter import Parameter

    from camp_planner.ros.lifecycle_manager import LifecycleManager

    broken = tmp_path / "broken.pt"
    broken.write_bytes(b"not a bundle")
    _planner(rig, tmp_path, selector_bundle=str(broken))
    assert rig.state("camp_planner") == "unconfigured"
    assert not rig.change("camp_planner", Transition.TRANSITION_CONFIGURE)
    # Alive, unconfigured, and saying why on /diagnostics.
    assert rig.state("camp_planner") == "unconfigured"
    assert _wait(
        lambda: any(
            s.name == "/camp_planner" and s.level == DiagnosticStatus.ERROR for s in rig.diagnostics
        )
    )
    said = next(s for s in rig.diagnostics if s.level == DiagnosticStatus.ERROR)
    assert "configure failed" in said.message and "broken.pt" in said.message
    assert {"state": "unconfigured", "errors.configure": "1"}.items() <= {
        v.key: v.value for v in said.values
    }.items()
    # Nothing is served until the node is active.
    assert not rig.offered()
    # The lifecycle manager stops at the node and passes its reason on.
    manager = rig.add(
        LifecycleManager(
            context=rig.context,
            parameter_overrides=[
                Parameter("autostart", value=False),
                Parameter("node_names", value=["camp_planner"]),
            ],
        )
    )
    up, why = manager.startup()
    assert not up and why.startswith("camp_planner could not configure: configure failed")
    assert "broken.pt" in why


def test_the_planner_serves_only_while_active_and_its_start_up_parameters_are_read_only(
    rig: Rig, tmp_path: Path
) -> None:
    from diagnostic_msgs.msg import DiagnosticStatus
    from lifecycle_msgs.msg import Transition
    from rclpy.parameter import Parameter

    from camp_msgs.srv import SelectContext

    node = _planner(rig, tmp_path)
    assert rig.change("camp_planner", Transition.TRANSITION_CONFIGURE)
    assert rig.state("camp_planner") == "inactive" and not rig.offered()
    assert rig.change("camp_planner", Transition.TRANSITION_ACTIVATE)
    # Active: served (no selector here, so refused by that name, not as inactive).
    answer = rig.select()
    assert answer.error_code == SelectContext.Response.ERROR_NO_SELECTOR, answer.error_message
    assert _wait(
        lambda: any(
            s.name == "/camp_planner"
            and s.level == DiagnosticStatus.OK
            and {"state": "active", "errors.select_no_selector": "1"}.items()
            <= {v.key: v.value for v in s.values}.items()
            for s in rig.diagnostics
        )
    )
    assert rig.change("camp_planner", Transition.TRANSITION_DEACTIVATE)
    assert not rig.offered()
    assert rig.change("camp_planner", Transition.TRANSITION_CLEANUP)
    assert rig.state("camp_planner") == "unconfigured" and node.service is None
    # Start-up parameters refuse a change; run-time ones take it within their range.
    for name, value in (("world", "grid10"), ("selector_bundle", "x.pt"), ("domain", "manip")):
        (result,) = node.set_parameters([Parameter(name, value=value)])
        assert not result.successful and "read-only" in result.reason
    (result,) = node.set_parameters([Parameter("timeout_s", value=5.0)])
    assert result.successful
    described = node.describe_parameter("replan_tolerance_m")
    assert described.floating_point_range[0].to_value == 10.0


def test_a_request_that_waited_past_the_deadline_is_refused_as_busy(
    rig: Rig, tmp_path: Path
) -> None:
    from builtin_interfaces.msg import Time
    from lifecycle_msgs.msg import Transition

    from camp_msgs.srv import SelectContext

    _planner(rig, tmp_path, select_deadline_s=0.5)
    for transition in (Transition.TRANSITION_CONFIGURE, Transition.TRANSITION_ACTIVATE):
        assert rig.change("camp_planner", transition)
    now = rig.peer.get_clock().now().nanoseconds
    old = Time(sec=(now // 10**9) - 3, nanosec=now % 10**9)
    answer = rig.select(old)
    assert answer.error_code == SelectContext.Response.ERROR_BUSY
    assert "select_deadline_s = 0.5 s" in answer.error_message
    fresh = rig.select(rig.peer.get_clock().now().to_msg())
    assert fresh.error_code == SelectContext.Response.ERROR_NO_SELECTOR


@pytest.mark.pybullet
def test_a_burst_of_selections_is_answered_or_refused_by_name_none_dropped(
    rig: Rig, namo_tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    """300 requests in flight at once from 3 clients: every one gets an answer, a selection
    or ERROR_BUSY, never silence (the default queue of 10 lost most of such a burst)."""
    from lifecycle_msgs.msg import Transition

    from camp_msgs.srv import SelectContext
    from camp_planner.domains.namo.scene_io import scene_from_task
    from camp_planner.ros.client import CampClient
    from camp_planner.ros.convert import scene_to_msg
    from camp_planner.workflow import Pipeline

    config, bundle = namo_tiny
    _planner(rig, tmp_path, selector_bundle=str(bundle), config_file=str(config))
    for transition in (Transition.TRANSITION_CONFIGURE, Transition.TRANSITION_ACTIVATE):
        assert rig.change("camp_planner", transition)
    pipe = Pipeline.create("namo", config, tmp_path)
    scenes = [scene_to_msg(scene_from_task(pipe.task("test", i))) for i in range(3)]
    client = CampClient("burst_client")
    try:
        burst = client.select_burst(scenes, 300)
    finally:
        client.close()
    assert burst["unanswered"] == 0, burst
    assert burst["other"] == 0 and burst["selected"] > 0, burst
    assert set(burst["codes"]) <= {
        SelectContext.Response.ERROR_NONE,
        SelectContext.Response.ERROR_BUSY,
    }


def _fill(msg: Any, data: dict[str, Any]) -> None:
    """Set ``msg``'s fields from ``data`` the way ``ros2 service call`` does (its
    rosidl_runtime_py.set_message_fields, not installable here): nested mappings fill nested
    messages, lists of mappings fill sequences of messages; a key that is no field fails."""
    import importlib

    slots = dict(zip(msg.get_fields_and_field_types(), type(msg).SLOT_TYPES, strict=True))
    for key, value in data.items():
        assert key in slots, f"{type(msg).__name__} has no field {key!r}"
        if isinstance(value, dict):
            _fill(getattr(msg, key), value)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            kind = slots[key].value_type
            cls = getattr(importlib.import_module(".".join(kind.namespaces)), kind.name)
            items = []
            for item in value:
                made = cls()
                _fill(made, item)
                items.append(made)
            setattr(msg, key, items)
        else:
            setattr(msg, key, value)


@pytest.mark.pybullet
def test_a_scene_file_is_a_select_context_request_and_a_camp_ros_scene(
    rig: Rig, namo_tiny: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The docs' example: `camp scene --request` writes what `ros2 service call
    /select_context camp_msgs/srv/SelectContext "$(cat request.yaml)"` sends, and `camp ros
    select-context --scene` reads the same file."""
    import json

    import yaml
    from lifecycle_msgs.msg import Transition

    from camp_msgs.srv import SelectContext
    from camp_planner.cli import main

    config, bundle = namo_tiny
    _planner(rig, tmp_path, selector_bundle=str(bundle), config_file=str(config))
    for transition in (Transition.TRANSITION_CONFIGURE, Transition.TRANSITION_ACTIVATE):
        assert rig.change("camp_planner", transition)
    request_file = tmp_path / "request.yaml"
    args = ["--domain", "namo", "--config", str(config), "--task", "1"]
    assert main(["scene", *args, "--request", "--out", str(request_file)]) == 0
    request = SelectContext.Request()
    _fill(request, yaml.safe_load(request_file.read_text()))
    answer = rig.call(SelectContext, "/select_context", request)
    assert answer.success, answer.error_message
    capsys.readouterr()
    assert main(["ros", "select-context", "--scene", str(request_file), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["success"] and said["context"]["id"] == answer.context.id
    # A broken file is refused before anything is sent, naming the field.
    broken = tmp_path / "broken.yaml"
    broken.write_text(request_file.read_text().replace("movable: false", "movable: maybe", 1))
    assert main(["ros", "select-context", "--scene", str(broken)]) == 2
    assert "movable: expected true or false" in capsys.readouterr().err
