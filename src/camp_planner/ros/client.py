"""CampClient: script against the camp_planner nodes (in the spirit of nav2_simple_commander).

client = CampClient()
answer = client.select_context(scene_msg)          # what `ros2 service call` would do
result = client.plan(scene_msg, timeout=60.0)       # what `ros2 action send_goal` would do
report = client.publish_scene(scene_msg) and client.wait_for_execution(120.0)
result = client.execute(plan=None, timeout=600.0)  # camp_executor: plan, execute, replan
client.close()
"""

from __future__ import annotations

import array
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from visualization_msgs.msg import MarkerArray

from camp_msgs.action import ExecutePlan, PlanTask
from camp_msgs.msg import ExecutionReport, Plan, SceneObservation, Status
from camp_msgs.srv import SelectContext
from camp_planner.ros.bringup import make_executor, spin_executor
from camp_planner.ros.common import (
    EVENTS,
    EXECUTE_ACTION,
    EXECUTION_TOPIC,
    LATCHED,
    MARKERS_TOPIC,
    PLAN_ACTION,
    PLAN_TOPIC,
    SCENE_TOPIC,
    SELECT_QOS,
    SELECT_SERVICE,
    STATUS_TOPIC,
    ActionClient,
)

SELECT_RETRY_S = 3.0  # a selection takes milliseconds; an unanswered one is sent again


class ClientError(RuntimeError):
    """A server that is not there or did not answer in time."""


class CampClient:
    """A node of its own, spun in a background thread; every call blocks until answered."""

    def __init__(self, name: str = "camp_client", select_service: str = SELECT_SERVICE) -> None:
        self._owns_context = not rclpy.ok()
        if self._owns_context:
            rclpy.init()
        # A client needs no parameter services; without them its executor wakes faster.
        self.node = Node(name, start_parameter_services=False)
        # /select_context is called from the caller's thread on a node and executor of its
        # own: no hand-off to the spinning thread, about 1 ms less per call.
        self._select_node = Node(f"{name}_select", start_parameter_services=False)
        self._select = self._select_node.create_client(
            SelectContext, select_service, qos_profile=SELECT_QOS
        )
        self._select_name = select_service
        self._select_lock = threading.Lock()
        self._select_executor = SingleThreadedExecutor()
        self._select_executor.add_node(self._select_node)
        self._plan = ActionClient(self.node, PlanTask, PLAN_ACTION)
        self._execute = ActionClient(self.node, ExecutePlan, EXECUTE_ACTION)
        self._scene_pub = self.node.create_publisher(SceneObservation, SCENE_TOPIC, LATCHED)
        self._reports: list[ExecutionReport] = []
        self._report_event = threading.Condition()
        self.node.create_subscription(ExecutionReport, EXECUTION_TOPIC, self._on_report, LATCHED)
        self.statuses: list[Status] = []
        self.plans: list[Plan] = []
        self.node.create_subscription(Status, STATUS_TOPIC, self.statuses.append, EVENTS)
        self.node.create_subscription(Plan, PLAN_TOPIC, self.plans.append, LATCHED)
        self.markers: list[MarkerArray] = []
        self.node.create_subscription(MarkerArray, MARKERS_TOPIC, self.markers.append, LATCHED)
        self._executor = make_executor("single")
        self._executor.add_node(self.node)
        self._thread = threading.Thread(target=spin_executor, args=(self._executor,), daemon=True)
        self._thread.start()
        self._goal: Any = None

    def _on_report(self, msg: ExecutionReport) -> None:
        with self._report_event:
            self._reports.append(msg)
            self._report_event.notify_all()

    @staticmethod
    def _wait(future: Any, timeout: float, what: str) -> Any:
        done = threading.Event()
        future.add_done_callback(lambda f: done.set())
        if not done.wait(timeout):
            raise ClientError(f"{what} did not answer within {timeout:.1f} s")
        return future.result()

    def select_context(
        self,
        scene: SceneObservation | None = None,
        features: Sequence[float] = (),
        timeout: float = 10.0,
        retry_s: float = SELECT_RETRY_S,
    ) -> Any:
        """Call ``/select_context``; returns the response (check ``success``).

        A request unanswered after ``retry_s`` is sent again, until ``timeout``: the DDS
        layer drops a response when the server has not yet matched this client's response
        reader ("failed to send response (timeout)" on the server's side), which a busy
        machine showed once in a fresh-clone CI run. Selection has no side effects, so the
        first answer to any of the copies is the answer."""
        if not self._select.wait_for_service(timeout_sec=timeout):
            raise ClientError(f"no /{self._select_name} service")
        request = SelectContext.Request()
        if scene is not None:
            request.scene = scene
        request.task_features = array.array("d", features)  # the fast path of rosidl
        deadline = time.monotonic() + timeout
        with self._select_lock:
            sent: list[Any] = []
            try:
                while True:
                    # Sent now: a server refuses a request older than its select_deadline_s.
                    request.stamp = self._select_node.get_clock().now().to_msg()
                    sent.append(self._select.call_async(request))
                    left = deadline - time.monotonic()
                    self._select_executor.spin_until_future_complete(
                        sent[-1], timeout_sec=max(min(retry_s, left), 0.0)
                    )
                    answered = next((f for f in sent if f.done()), None)
                    if answered is not None:
                        return answered.result()
                    if time.monotonic() >= deadline:
                        raise ClientError(
                            f"/{self._select_name} did not answer within {timeout:.1f} s "
                            f"({len(sent)} requests sent)"
                        )
            finally:
                for future in sent:
                    if not future.done():
                        self._select.remove_pending_request(future)

    def select_burst(
        self, scenes: Sequence[SceneObservation], n: int, clients: int = 3, limit_s: float = 120.0
    ) -> dict[str, Any]:
        """Send ``n`` ``select_context`` requests at once, round robin over ``clients``
        service clients and ``scenes``, and wait up to ``limit_s`` (past it an answer counts
        as lost): how many were selected, refused as busy, answered otherwise or never, the
        codes seen, and when the last answer came (seconds after the first was sent)."""
        made = [
            self.node.create_client(SelectContext, self._select_name, qos_profile=SELECT_QOS)
            for _ in range(clients)
        ]
        try:
            for c in made:
                if not c.wait_for_service(timeout_sec=limit_s):
                    raise ClientError(f"no /{self._select_name} service")
            futures = []
            t0 = time.perf_counter()
            last = [t0]
            for k in range(n):
                request = SelectContext.Request(scene=scenes[k % len(scenes)])
                request.stamp = self.node.get_clock().now().to_msg()
                future = made[k % clients].call_async(request)
                future.add_done_callback(lambda _f: last.__setitem__(0, time.perf_counter()))
                futures.append(future)
            deadline = t0 + limit_s
            while time.perf_counter() < deadline and not all(f.done() for f in futures):
                time.sleep(0.01)
            answers = [f.result() for f in futures if f.done()]
        finally:
            for c in made:
                self.node.destroy_client(c)
        busy = SelectContext.Response.ERROR_BUSY
        return {
            "sent": n,
            "clients": clients,
            "selected": sum(a.success for a in answers),
            "busy": sum(a.error_code == busy for a in answers),
            "other": sum(not a.success and a.error_code != busy for a in answers),
            "codes": sorted({int(a.error_code) for a in answers}),
            "unanswered": n - len(answers),
            "last_answer_s": last[0] - t0,
        }

    def plan(
        self,
        scene: SceneObservation,
        context_id: str = "",
        allow_fallback: bool = True,
        lambda_cost: float = 0.0,
        timeout: float = 60.0,
        feedback: Callable[[str, float], None] | None = None,
        wait_s: float | None = None,
    ) -> Any:
        """Send a ``PlanTask`` goal and wait for its result (``PlanTask.Result``)."""
        if not self._plan.wait_for_server(timeout_sec=30.0):
            raise ClientError(f"no /{PLAN_ACTION} action server")
        goal = PlanTask.Goal(
            scene=scene,
            context_id=context_id,
            allow_fallback=allow_fallback,
            lambda_cost=float(lambda_cost),
            timeout=float(timeout),
        )
        cb = (
            None if feedback is None else (lambda m: feedback(m.feedback.stage, m.feedback.elapsed))
        )
        handle = self._wait(self._plan.send_goal_async(goal, feedback_callback=cb), 30.0, "goal")
        if not handle.accepted:
            raise ClientError("the PlanTask goal was rejected")
        self._goal = handle
        limit = wait_s if wait_s is not None else (4 if allow_fallback else 1) * timeout + 60.0
        try:
            return self._wait(handle.get_result_async(), limit, "the PlanTask goal").result
        finally:
            self._goal = None

    def send_plan_goal(self, scene: SceneObservation, **kwargs: Any) -> Any:
        """Send a goal without waiting; returns the goal handle (for cancelling)."""
        if not self._plan.wait_for_server(timeout_sec=30.0):
            raise ClientError(f"no /{PLAN_ACTION} action server")
        goal = PlanTask.Goal(scene=scene, **kwargs)
        handle = self._wait(self._plan.send_goal_async(goal), 30.0, "goal")
        return handle

    def cancel(self, handle: Any, timeout: float = 10.0) -> Any:
        return self._wait(handle.cancel_goal_async(), timeout, "cancel")

    def result(self, handle: Any, timeout: float) -> Any:
        return self._wait(handle.get_result_async(), timeout, "the PlanTask goal").result

    def send_execute_goal(
        self,
        plan: Plan | None = None,
        replan: bool = True,
        max_replans: int = 0,
        feedback: Callable[[Any], None] | None = None,
        wait_s: float = 30.0,
    ) -> Any:
        """Send an ``ExecutePlan`` goal to ``camp_executor`` (``plan`` None: it plans for the
        latest scene first); returns the goal handle, accepted or not."""
        if not self._execute.wait_for_server(timeout_sec=wait_s):
            raise ClientError(f"no /{EXECUTE_ACTION} action server")
        goal = ExecutePlan.Goal(replan=replan, max_replans=int(max_replans))
        if plan is not None:
            goal.plan = plan
        cb = None if feedback is None else (lambda m: feedback(m.feedback))
        return self._wait(self._execute.send_goal_async(goal, feedback_callback=cb), wait_s, "goal")

    def execute(self, plan: Plan | None = None, timeout: float = 600.0, **kwargs: Any) -> Any:
        """Execute ``plan`` (or plan first) and wait for the ``ExecutePlan.Result``."""
        handle = self.send_execute_goal(plan, **kwargs)
        return self._wait(handle.get_result_async(), timeout, "the ExecutePlan goal").result

    def publish_scene(self, scene: SceneObservation) -> None:
        self._scene_pub.publish(scene)

    def wait_for_execution(self, timeout: float) -> ExecutionReport:
        """The next execution report (or the newest one already received)."""
        deadline = time.monotonic() + timeout
        with self._report_event:
            while not self._reports:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ClientError(f"no execution report within {timeout:.1f} s")
                self._report_event.wait(left)
            return self._reports.pop(0)

    def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Poll ``predicate`` (e.g. on ``statuses`` or ``plans``) until true or ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.05)
        return predicate()

    def close(self) -> None:
        if self._owns_context and rclpy.ok():
            rclpy.shutdown()
        self._thread.join(2.0)
        self._executor.shutdown()
        self._select_executor.shutdown()
        self._select_node.destroy_node()
        self.node.destroy_node()
