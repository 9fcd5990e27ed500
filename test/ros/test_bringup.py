"""Stopping node processes: one that ignores SIGINT leaves its threads' stacks in the log
before it is killed, so a shutdown hang can be diagnosed from a CI log."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = [pytest.mark.ros]

# Stands in for a node stuck in shutdown: SIGINT ignored, a thread blocked in a named function.
STUCK = """
import signal, threading, time
from camp_planner.ros.bringup import enable_stack_dumps
enable_stack_dumps()
signal.signal(signal.SIGINT, signal.SIG_IGN)
def blocked_in_teardown():
    time.sleep(600)
threading.Thread(target=blocked_in_teardown, daemon=True).start()
print("ready", flush=True)
time.sleep(600)
"""

# Stops on SIGINT. It sets Python's handler itself: a shell that runs a job in the
# background (as CI may) starts it with SIGINT ignored, and Python keeps that.
POLITE = """
import signal, time
signal.signal(signal.SIGINT, signal.default_int_handler)
print("ready", flush=True)
time.sleep(600)
"""


def test_a_process_that_ignores_sigint_prints_its_stacks_and_is_killed() -> None:
    from camp_planner.ros.bringup import stop_processes

    stuck = subprocess.Popen(
        [sys.executable, "-c", STUCK], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    polite = subprocess.Popen([sys.executable, "-c", POLITE], stdout=subprocess.PIPE)
    assert stuck.stdout is not None and stuck.stdout.readline() == b"ready\n"
    assert polite.stdout is not None and polite.stdout.readline() == b"ready\n"
    stop_processes([stuck, polite], grace_s=1.0)
    assert polite.returncode in (-2, 130)  # KeyboardInterrupt
    assert stuck.returncode == -9
    assert stuck.stderr is not None
    stacks = stuck.stderr.read().decode()
    assert "blocked_in_teardown" in stacks and "Thread 0x" in stacks


class _Context:
    def __init__(self) -> None:
        self.up = True

    def ok(self) -> bool:
        return self.up


class _Executor:
    """Its context is shut down (as SIGINT's handler does) just before ``spin_once`` makes
    its wait's timer, which then fails as rclpy's does."""

    def __init__(self, shut_down: bool) -> None:
        self.context = _Context()
        self.shut_down = shut_down
        self.spins = 0
        self.stopped = False

    def add_node(self, node: object) -> None:
        pass

    def spin_once(self, timeout_sec: float) -> None:
        from camp_planner.ros.bringup import RCLError

        self.spins += 1
        if self.shut_down:
            self.context.up = False
        raise RCLError("failed to create timer: the given context is not valid")

    def shutdown(self, timeout_sec: float) -> None:
        self.stopped = True


class _Node:
    destroyed = False

    def destroy_node(self) -> None:
        self.destroyed = True


@pytest.mark.parametrize("shut_down", [True, False])
def test_a_shutdown_racing_the_wait_ends_the_spin_quietly_and_only_then(
    monkeypatch: pytest.MonkeyPatch, shut_down: bool
) -> None:
    from camp_planner.ros import bringup

    executor = _Executor(shut_down)
    monkeypatch.setattr(bringup, "make_executor", lambda kind, threads: executor)
    node = _Node()
    if shut_down:
        bringup.spin_nodes([node])  # type: ignore[list-item]
    else:  # the context is still up: a real error, not a race
        with pytest.raises(bringup.RCLError):
            bringup.spin_nodes([node])  # type: ignore[list-item]
    assert executor.spins == 1 and executor.stopped and node.destroyed
