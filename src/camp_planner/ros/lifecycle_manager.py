"""camp_lifecycle_manager: brings the managed nodes up, in order, as Nav2's lifecycle manager
does.

It configures every node of ``node_names`` (the TAMP server first: its warm workers take the
longest to load), then activates them, through each node's ``lifecycle_msgs`` services
(``<node>/change_state``, resolved in this node's namespace, so a namespaced system manages
its own nodes). A transition that fails stops the bring-up: the node stays where it is
(``unconfigured`` after a failed configure, and alive), and the manager says which node failed
and why, reading the reason from the node's own ``/diagnostics`` status. With ``autostart``
(the default) it brings the system up as soon as it starts; :meth:`LifecycleManager.startup`
and :meth:`LifecycleManager.shutdown` do it on demand (``camp bringup`` calls them).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from camp_planner.ros.bringup import spin_nodes, start_node
from camp_planner.ros.common import DIAGNOSTICS_TOPIC, OPEN_LOOP_MANAGED

NAME = "camp_lifecycle_manager"
ASK_AGAIN_S = 2.0  # seconds before an unanswered state question is asked again

_LABELS = {
    Transition.TRANSITION_CONFIGURE: "configure",
    Transition.TRANSITION_ACTIVATE: "activate",
    Transition.TRANSITION_DEACTIVATE: "deactivate",
    Transition.TRANSITION_CLEANUP: "clean up",
}


class LifecycleManager(Node):
    """Drives the managed nodes of its namespace through their transitions."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NAME, **kwargs)
        self.declare_parameter(
            "node_names",
            # The open-loop system's; a closed loop names camp_executor too.
            list(OPEN_LOOP_MANAGED),
            ParameterDescriptor(description="the managed nodes, in bring-up order", read_only=True),
        )
        self.declare_parameter(
            "autostart",
            True,
            ParameterDescriptor(description="configure and activate them at start", read_only=True),
        )
        self.declare_parameter(
            "transition_timeout_s",
            300.0,
            ParameterDescriptor(
                description="seconds a node may take to appear and to finish a transition "
                "(configure loads the selector and starts the planning workers)"
            ),
        )
        self.names = [str(n) for n in self.get_parameter("node_names").value]
        group = ReentrantCallbackGroup()
        self._change = {
            n: self.create_client(ChangeState, f"{n}/change_state", callback_group=group)
            for n in self.names
        }
        self._get = {
            n: self.create_client(GetState, f"{n}/get_state", callback_group=group)
            for n in self.names
        }
        self._diagnostics: dict[str, DiagnosticStatus] = {}
        self.create_subscription(
            DiagnosticArray, DIAGNOSTICS_TOPIC, self._on_diagnostics, 50, callback_group=group
        )
        self.result: tuple[bool, str] | None = None
        if bool(self.get_parameter("autostart").value):
            threading.Thread(target=self._autostart, name=NAME, daemon=True).start()

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            self._diagnostics[status.name] = status

    def _fqn(self, name: str) -> str:
        return f"{self.get_namespace().rstrip('/')}/{name}"

    def _autostart(self) -> None:
        self.result = ok, why = self.startup()
        if ok:
            self.get_logger().info(f"active: {', '.join(self.names)}")
        else:
            self.get_logger().error(f"bring-up stopped: {why}")

    def startup(self) -> tuple[bool, str]:
        """Configure every node, then activate every node: (True, "") or (False, why)."""
        for transition in (Transition.TRANSITION_CONFIGURE, Transition.TRANSITION_ACTIVATE):
            for name in self.names:
                ok, why = self.transition(name, transition)
                if not ok:
                    return False, why
        return True, ""

    def shutdown(self) -> tuple[bool, str]:
        """Deactivate, then clean up, every node, in reverse order."""
        for transition in (Transition.TRANSITION_DEACTIVATE, Transition.TRANSITION_CLEANUP):
            for name in reversed(self.names):
                ok, why = self.transition(name, transition)
                if not ok:
                    return False, why
        return True, ""

    def state(self, name: str, timeout: float | None = None) -> str:
        """``name``'s lifecycle state label ("" if it does not answer within ``timeout``,
        by default ``transition_timeout_s``).

        Asked again every :data:`ASK_AGAIN_S` until answered: a service the graph still
        lists for a node that has gone (one run's node, the next run starting) takes the
        question and never answers, and a node that has just started may not have matched
        this client yet. Asking is harmless; a transition is not, so it is asked once, after
        this has found the node answering."""
        client = self._get[name]
        limit = (
            float(self.get_parameter("transition_timeout_s").value) if timeout is None else timeout
        )
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if not client.wait_for_service(timeout_sec=max(0.0, deadline - time.monotonic())):
                break
            left = min(ASK_AGAIN_S, deadline - time.monotonic())
            response = self._wait(client.call_async(GetState.Request()), left)
            if response is not None:
                return str(response.current_state.label)
        return ""

    def transition(self, name: str, transition: int) -> tuple[bool, str]:
        """Ask ``name`` to take ``transition``: (True, "") or (False, why)."""
        label = _LABELS.get(transition, str(transition))
        timeout = float(self.get_parameter("transition_timeout_s").value)
        client = self._change[name]
        if not self.state(name) or not client.wait_for_service(timeout_sec=timeout):
            return False, f"{name} did not answer within {timeout:g} s (no {client.srv_name})"
        asked = time.monotonic()
        request = ChangeState.Request(transition=Transition(id=transition))
        response = self._wait(client.call_async(request), timeout)
        if response is None:
            return False, f"{name} did not {label} within {timeout:g} s"
        if response.success:
            self.get_logger().info(f"{name}: {label}d")
            return True, ""
        return False, f"{name} could not {label}: {self._reason(name, asked)}"

    def _reason(self, name: str, since: float) -> str:
        """The node's own word on its failure: its diagnostics message, which it publishes
        as the transition fails (waited for briefly, as it may arrive after the answer)."""
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            status = self._diagnostics.get(self._fqn(name))
            if status is not None and status.level == DiagnosticStatus.ERROR:
                return str(status.message)
            time.sleep(0.05)
        return f"see {name}'s log"

    @staticmethod
    def _wait(future: Any, timeout: float) -> Any:
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        if not done.wait(timeout):
            future.cancel()
            return None
        return future.result()


def main(args: list[str] | None = None) -> None:
    rclpy.init(args=args)
    spin_nodes([start_node(LifecycleManager)], kind="multi")


if __name__ == "__main__":
    main()
