"""Managed (lifecycle) nodes: what the planner and the TAMP server share.

A :class:`ManagedNode` declares its parameters when it is constructed (so ``ros2 param``
lists and describes them before anything is loaded), loads its bundle, configuration and
simulator on *configure*, serves only while *active*, and releases everything on *cleanup*.
A configure that fails (a broken bundle, a missing file) logs one line saying why, leaves
the node ``unconfigured`` and alive, and shows the reason on ``/diagnostics``, where every
managed node reports its state, what it loaded and its error counts once a second.

Parameters are declared with descriptors: ranges where a number has bounds, and
``read_only`` for the ones read only at start-up (changing the world of a running planner
would silently do nothing, so ``ros2 param set`` refuses it).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.node import Node

from camp_planner.core.errors import CampError
from camp_planner.ros.common import DIAGNOSTICS_TOPIC

# Parameter → (lowest, highest, what the bounds mean).
Ranges = dict[str, tuple[float, float, str]]

DIAGNOSTICS_PERIOD_S = 1.0


def out_of_range(ranges: Ranges, name: str, value: Any) -> str:
    """Why ``value`` is not allowed for the parameter ``name`` ("" when it is)."""
    if name not in ranges:
        return ""
    low, high, meaning = ranges[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{name} must be a number ({meaning}), got {value!r}"
    if not (math.isfinite(value) and low <= value <= high):
        return (
            f"{name} = {value!r} is out of range: give a value in [{low:g}, {high:g}] ({meaning})"
        )
    return ""


def declare(
    node: Node,
    name: str,
    default: Any,
    description: str,
    *,
    read_only: bool = False,
    ranges: Ranges | None = None,
) -> Any:
    """Declare ``name`` with a descriptor (its range from ``ranges``, if listed there) and
    return its value. A start-up value outside the range is a :class:`CampError` naming the
    parameter and the range, as :func:`camp_planner.ros.bringup.start_node` reports it."""
    # Declared without its range first: a start-up value out of range gets this message,
    # naming the range and what it means, rather than rclpy's exception.
    value = node.declare_parameter(
        name, default, ParameterDescriptor(description=description)
    ).value
    problem = out_of_range(ranges or {}, name, value)
    if problem:
        raise CampError(f"parameter {problem}")
    descriptor = ParameterDescriptor(
        description=description,
        read_only=read_only,
        type=node.get_parameter(name).type_.value,  # a descriptor must keep the type
    )
    if ranges and name in ranges:
        low, high, meaning = ranges[name]
        descriptor.description = f"{description} [{low:g}, {high:g}]: {meaning}"
        if isinstance(default, int) and not isinstance(default, bool):
            descriptor.integer_range = [IntegerRange(from_value=int(low), to_value=int(high))]
        else:
            descriptor.floating_point_range = [FloatingPointRange(from_value=low, to_value=high)]
    node.set_descriptor(name, descriptor)
    return value


class ManagedNode(LifecycleNode):
    """A lifecycle node with diagnostics. Subclasses implement :meth:`load` (configure) and
    :meth:`release` (cleanup, also after a partial load), and serve only while
    :attr:`active`."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.active = False
        self.state_label = "unconfigured"
        self.configure_error = ""
        self.errors: Counter[str] = Counter()
        # What /diagnostics reports besides the state: the bundle, the world, the last outcome.
        self.facts: dict[str, str] = {}
        self.pub_diagnostics = self.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC, 10)
        self.create_timer(DIAGNOSTICS_PERIOD_S, self.publish_diagnostics)

    # --- what a subclass provides --------------------------------------------------------------
    def load(self) -> None:
        """Load what serving needs (configure); raise to stay unconfigured."""

    def release(self) -> None:
        """Release what :meth:`load` made, also when it stopped half-way (cleanup)."""

    # --- the transitions ----------------------------------------------------------------------
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        try:
            self.load()
        except Exception as exc:
            why = str(exc) if isinstance(exc, CampError) else f"{exc.__class__.__name__}: {exc}"
            self.configure_error = why
            self.errors["configure"] += 1
            self.get_logger().error(f"configure failed, staying unconfigured: {why}")
            try:
                self.release()
            except Exception as again:  # the node must stay up to be configured again
                self.get_logger().error(f"and releasing what was loaded failed: {again!r}")
            self.publish_diagnostics()
            return TransitionCallbackReturn.FAILURE
        self.configure_error = ""
        self._entered("inactive")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        result = super().on_activate(state)  # enables the lifecycle publishers
        self.active = True
        self._entered("active")
        return result

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.active = False
        self._entered("inactive")
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.release()
        self._entered("unconfigured")
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.active = False
        self.release()
        self._entered("finalized")
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.active = False
        self.errors["transition"] += 1
        try:
            self.release()
        except Exception as exc:
            self.get_logger().error(f"releasing after an error failed: {exc!r}")
        self._entered("unconfigured")
        return TransitionCallbackReturn.SUCCESS

    def _entered(self, label: str) -> None:
        self.state_label = label
        self.get_logger().info(f"lifecycle: {label}")
        self.publish_diagnostics()

    # --- diagnostics --------------------------------------------------------------------------
    def diagnostic_status(self) -> DiagnosticStatus:
        """This node's state, what it loaded, its last outcome and its error counts."""
        status = DiagnosticStatus(name=self.get_fully_qualified_name(), hardware_id="camp_planner")
        if self.configure_error:
            status.level, status.message = (
                DiagnosticStatus.ERROR,
                (f"configure failed: {self.configure_error}"),
            )
        elif not self.active:
            status.level, status.message = DiagnosticStatus.WARN, self.state_label
        else:
            outcome = self.facts.get("last_outcome", "")
            failed = bool(outcome) and not outcome.startswith("OK")
            status.level = DiagnosticStatus.WARN if failed else DiagnosticStatus.OK
            status.message = f"active; last: {outcome}" if outcome else "active"
        values = {"state": self.state_label, **self.facts}
        values.update({f"errors.{kind}": str(n) for kind, n in sorted(self.errors.items())})
        status.values = [KeyValue(key=k, value=v) for k, v in values.items()]
        return status

    def publish_diagnostics(self) -> None:
        if not self.context.ok():
            return
        array = DiagnosticArray(status=[self.diagnostic_status()])
        array.header.stamp = self.get_clock().now().to_msg()
        self.pub_diagnostics.publish(array)
