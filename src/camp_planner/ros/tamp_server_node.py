"""tamp_server: the ``PlanTask`` action server, backed by OMPL + PyBullet TAMP.

Plans run in a warm worker process (:mod:`camp_planner.service.worker`) so that a cancel or a
timeout returns at once. One goal runs at a time; a goal that arrives meanwhile is answered
at once with ``ERROR_BUSY`` instead of being interleaved. A goal's numbers are range-checked
before any work (``ERROR_INVALID_REQUEST``), and feedback goes out at least every
``heartbeat_s`` while a goal runs, so a client notices within seconds when this server is
gone (a killed process announces nothing).

With the parameter ``race`` = K > 0 a goal that allows fallbacks is planned by a race
(:mod:`camp_planner.service.race`) instead: the goal's context (or, if it names none, the
selector's first) and the selector's next ones, K in all, and the universal context, each in
one of K + 1 warm workers; the first plan verified in the simulator is the result, and the
other workers are stopped (and started again in the background for the next goal). A goal
without fallbacks is planned by one worker, as with ``race`` = 0. A cancel stops the whole race.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from typing import Any

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.lifecycle import LifecycleState, TransitionCallbackReturn
from rclpy.node import Node

from camp_msgs.action import PlanTask
from camp_planner.core.errors import CampError
from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.ros.bringup import RCLError, spin_nodes, start_node
from camp_planner.ros.common import PLAN_ACTION, declare_service_params, service_params
from camp_planner.ros.convert import plan_to_msg, scene_from_msg
from camp_planner.ros.managed import ManagedNode, Ranges, declare
from camp_planner.service.limits import MAX_TIMEOUT_S, check_plan_request
from camp_planner.service.race import MAX_RACE, RacePool, worker_timeout
from camp_planner.service.types import PlanResult
from camp_planner.service.worker import PlanRequest, PlanWorker


class TampServerNode(ManagedNode):
    """A managed node: *configure* starts the warm planning workers (the selector, the CSIs
    and PyBullet loaded in each), *activate* accepts goals, *cleanup* stops the workers."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("tamp_server", **kwargs)
        try:
            declare_service_params(self)
            for name, (default, what) in PARAMETERS.items():
                declare(self, name, default, what, read_only=True, ranges=PARAMETER_RANGES)
            # Any type here, so that a wrong one gets this node's error rather than rclpy's.
            self.declare_parameter(
                "race",
                0,
                ParameterDescriptor(
                    dynamic_typing=True,
                    read_only=True,
                    description=f"race K contexts and the universal one (0: no racing; at most "
                    f"{MAX_RACE})",
                ),
            )
            self.race = _race_parameter(self.get_parameter("race").value)
            if self.race < 0:
                raise CampError(
                    f"parameter race = {self.get_parameter('race').value!r} is out of range: give "
                    f"a whole number in [0, {MAX_RACE}] (0: no racing; K: race K contexts and the "
                    "universal one)"
                )
        except CampError:
            Node.destroy_node(self)
            raise
        self.heartbeat = max(0.05, float(self.get_parameter("heartbeat_s").value))
        self.grace = float(self.get_parameter("timeout_grace_s").value)
        self.default_timeout = float(self.get_parameter("default_timeout_s").value)
        self.pool: RacePool | None = None
        self.worker: PlanWorker | None = None
        self._busy = threading.Lock()
        self._group = ReentrantCallbackGroup()
        self.server: ActionServer | None = None

    # --- lifecycle ----------------------------------------------------------------------------
    def load(self) -> None:
        service_kwargs = service_params(self)
        self.facts.update(
            domain=str(service_kwargs["domain"]),
            world=str(self.get_parameter("world").value) or "default",
            bundle=str(service_kwargs["bundle_path"] or "none"),
            race=str(self.race),
        )
        # race = K: K + 1 warm workers, the first of which also plans the goals not raced.
        if self.race:
            self.pool = RacePool(service_kwargs, self.race + 1)
            self.worker = self.pool.workers[0]
            self.pool.start()  # loads the selector, CSIs and PyBullet before the first goal
        else:
            self.worker = PlanWorker(service_kwargs)
            self.worker.start()

    def release(self) -> None:
        pool, worker = self.pool, self.worker
        self.pool = self.worker = None
        if pool is not None:
            pool.close()
        elif worker is not None:
            worker.stop()

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        result = super().on_activate(state)
        # Offered only while active, so a client's wait_for_server means "ready".
        self.server = ActionServer(
            self,
            PlanTask,
            PLAN_ACTION,
            execute_callback=self._execute,
            goal_callback=lambda goal: GoalResponse.ACCEPT,
            cancel_callback=lambda handle: CancelResponse.ACCEPT,
            callback_group=self._group,
        )
        self.get_logger().info(f"PlanTask action server ready on {PLAN_ACTION}")
        return result

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._withdraw()
        return super().on_deactivate(state)

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._withdraw()
        return super().on_shutdown(state)

    def _withdraw(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            # rclpy's ActionServer.destroy() removes the futures of finished goals a second
            # time (list.remove raises ValueError); the handle is released all the same.
            with contextlib.suppress(ValueError):
                server.destroy()

    def _execute(self, handle: Any) -> PlanTask.Result:
        if not self.active or self.worker is None:
            handle.abort()
            return self._result(
                PlanResult.failure(
                    ErrorCode.INACTIVE,
                    f"tamp_server is {self.state_label}: configure and activate it",
                ),
                "",
                None,
            )
        if not self._busy.acquire(blocking=False):
            handle.abort()
            return self._result(
                PlanResult.failure(
                    ErrorCode.BUSY, "another goal is being planned; send this one when it is done"
                ),
                "",
                None,
            )
        try:
            result = self._plan(handle)
        finally:
            self._busy.release()
        self.facts["last_outcome"] = "OK" if result.success else ErrorCode(result.error_code).name
        if not result.success:
            self.errors[ErrorCode(result.error_code).name.lower()] += 1
        return result

    def _plan(self, handle: Any) -> PlanTask.Result:
        goal = handle.request
        t0 = time.monotonic()
        try:
            check_plan_request(goal.lambda_cost, goal.timeout)
        except ServiceError as exc:
            handle.abort()
            self.get_logger().warning(f"goal refused: {exc.message}")
            return self._result(PlanResult.failure(exc.code, exc.message), "", None)
        timeout = goal.timeout if goal.timeout > 0 else self.default_timeout
        request = PlanRequest(
            scene=scene_from_msg(goal.scene),
            context_id=goal.context_id,
            allow_fallback=goal.allow_fallback,
            lam=goal.lambda_cost if goal.lambda_cost > 0 else None,
            timeout_s=timeout,
        )
        stage = ["selection"]
        sent = threading.Lock()

        def feedback(now: str | None = None) -> None:
            with sent:
                stage[0] = now or stage[0]
                try:
                    handle.publish_feedback(
                        PlanTask.Feedback(stage=stage[0], elapsed=time.monotonic() - t0)
                    )
                except RCLError:
                    if self.context.ok():
                        raise  # a shutdown ends the publisher under the goal; nothing else may

        stop_beat = threading.Event()

        def beat() -> None:
            while not stop_beat.wait(self.heartbeat):
                feedback()

        beating = threading.Thread(target=beat, name="tamp_server-heartbeat", daemon=True)
        beating.start()
        # Fallbacks each get the per-call timeout; the whole goal gets them all plus a grace.
        attempts = 4 if goal.allow_fallback else 1

        def cancelled() -> bool:
            # A shutdown (Ctrl-C, SIGINT from launch) stops the goal too, so the node exits.
            return bool(handle.is_cancel_requested) or not self.context.ok()

        pool, worker = self.pool, self.worker
        assert worker is not None  # _execute checked
        try:
            if pool is not None and goal.allow_fallback:
                # Racing replaces the fallbacks: one (stretched) timeout per worker, at once.
                race = pool.plan(
                    request.scene,
                    self.race,
                    lam=request.lam,
                    timeout_s=timeout,
                    cancelled=cancelled,
                    limit_s=worker_timeout(timeout, self.race + 1) + self.grace,
                    progress=feedback,
                    first=request.context_id,
                )
                result = race.result
                if self.context.ok():
                    self.get_logger().info(
                        f"race: winner {race.winner.name if race.winner else 'none'}, "
                        f"wall {race.wall_s:.2f} s, CPU {race.cpu_s:.2f} s; "
                        + "; ".join(f"{w.context_name}: {w.outcome}" for w in race.workers)
                        + (f" ({race.note})" if race.note else "")
                    )
            else:
                result = worker.run(
                    request,
                    cancelled=cancelled,
                    limit_s=attempts * timeout + self.grace,
                    progress=feedback,
                )
        finally:
            stop_beat.set()
            beating.join()
        if result.code == ErrorCode.CANCELED and not handle.is_cancel_requested:
            # Stopped by this server's own shutdown, not by its client: the client should
            # send the goal again to the next server, as after a lost one.
            result = PlanResult.failure(
                ErrorCode.SERVER_LOST, "tamp_server shut down while planning this goal"
            )
        try:
            if result.code == ErrorCode.CANCELED:
                handle.canceled()
            elif result.success:
                handle.succeed()
            else:
                handle.abort()
        except RCLError:
            if self.context.ok():
                raise
            # Shut down under the goal: its client cannot be told any more, and notices the
            # silence (camp_planner's server_lost_s).
        frame = goal.scene.header.frame_id or "map"
        first_line = result.message.splitlines()[0] if result.message else ""
        # ErrorCode.NONE is success; "NONE reached the goal" read as a failure in the log.
        status = "OK" if result.code == ErrorCode.NONE else result.code.name
        if self.context.ok():  # after a shutdown rosout is gone too
            self.get_logger().info(f"goal done: {status} {first_line}")
        return self._result(result, frame, goal.scene)

    def _result(self, result: PlanResult, frame: str, scene: Any) -> PlanTask.Result:
        out = PlanTask.Result()
        out.success = result.success
        out.error_code = int(result.code)
        out.error_message = result.message
        # An id no other plan has had, here or in another run: an executor refuses an id it
        # has executed, so a replayed plan never runs twice.
        plan_id = f"{self.get_name()}-{uuid.uuid4().hex[:12]}" if result.success else ""
        stamp = self.get_clock().now().to_msg()
        out.plan = plan_to_msg(result, frame or "map", stamp, plan_id, scene)
        return out

    def destroy_node(self) -> None:
        self.release()
        self._withdraw()
        super().destroy_node()


# Parameter → (default, what it is); all read at start-up.
PARAMETERS: dict[str, tuple[Any, str]] = {
    "timeout_grace_s": (10.0, "seconds a goal may run past its timeouts before it is stopped"),
    "default_timeout_s": (60.0, "seconds per planning call when a goal gives none"),
    "heartbeat_s": (1.0, "seconds between feedback messages while a goal runs"),
}
PARAMETER_RANGES: Ranges = {
    "timeout_grace_s": (0.0, MAX_TIMEOUT_S, "seconds"),
    "default_timeout_s": (0.001, MAX_TIMEOUT_S, "seconds"),
    "heartbeat_s": (0.05, 60.0, "seconds"),
}


def _race_parameter(value: Any) -> int:
    """The ``race`` parameter as K ≥ 0, or -1 when it is not a whole number in range."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RACE:
        return -1
    return value


def main(args: list[str] | None = None) -> None:
    rclpy.init(args=args)
    spin_nodes([start_node(TampServerNode)])


if __name__ == "__main__":
    main()
