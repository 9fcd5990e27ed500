"""TAMP's budgets on the work clock (``budget_clock: work``): restart cutoffs and motion
budgets that end at the same point of the search on any machine, with the planning call's
timeout still on the wall clock."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from toy_mdps import FakeClock, GridMDP, ScriptedInterface

from camp_planner.core.mdp import State
from camp_planner.core.planner import Deadline, PlanningTimeout
from camp_planner.planners.stilman import Stilman
from camp_planner.planners.tamp import TAMP, AttemptCutoff, Refinement, fd_work

pytestmark = [pytest.mark.fast_downward]

_DOMAIN = (
    "(define (domain d) (:requirements :strips) (:predicates (free) (done))\n"
    "  (:action finish :parameters () :precondition (free) :effect (done)))"
)
_PROBLEM = "(define (problem p) (:domain d) (:init (free)) (:goal (done)))"


class _Working(ScriptedInterface):
    """A TAMP interface whose one step fails without explanation while ``stuck``, each try
    doing ``work`` nominal seconds of work in ``wall`` seconds of the (fake) wall clock: a
    machine that is slower or busier takes more seconds for the same work."""

    def __init__(self, clock: FakeClock, stuck: bool, work: float, wall: float) -> None:
        super().__init__()
        self.clock, self.stuck, self.step_work, self.step_wall = clock, stuck, work, wall
        self.tries = 0
        self._work = 0.0

    def pddl(self) -> tuple[str, str]:
        return _DOMAIN, _PROBLEM

    def refine(self, step: tuple[str, ...], deadline: Deadline) -> Refinement:
        self.tries += 1
        self._work += self.step_work
        self.clock.now += self.step_wall
        if self.stuck:
            return Refinement(False, reason="no sample worked this time")
        self.done = True
        return Refinement(True, [("up",)], [(2, 0)])

    def work(self) -> float:
        return self._work


class _WorkingMDP(GridMDP):
    """A fresh interface per attempt: the first (planner seed 0) stuck, the rest not."""

    def __init__(self, clock: FakeClock, work: float, wall: float) -> None:
        super().__init__(("S.G",))
        self.clock, self.step_work, self.step_wall = clock, work, wall
        self.interfaces: list[_Working] = []

    def tamp_interface(self, state: State, camp: object, seed: int, settings: object) -> object:
        iface = _Working(self.clock, not self.interfaces, self.step_work, self.step_wall)
        self.interfaces.append(iface)
        return iface


def _stuck_first_attempt(budget_clock: str, wall_per_try: float) -> tuple[TAMP, _WorkingMDP]:
    clock = FakeClock()
    mdp = _WorkingMDP(clock, work=1.0, wall=wall_per_try)
    planner = TAMP(
        seed=0,
        restart_s=10.0,
        max_resamples=10**6,
        max_replans=10**6,
        budget_clock=budget_clock,
    )
    planner.prepare(mdp, Deadline(10_000, clock))
    return planner, mdp


@pytest.mark.parametrize("wall_per_try", [0.01, 3.0])
def test_on_the_work_clock_an_attempt_is_cut_off_after_the_same_work_at_any_speed(
    wall_per_try: float,
) -> None:
    planner, mdp = _stuck_first_attempt("work", wall_per_try)
    assert planner.cutoffs == 1 and len(mdp.interfaces) == 2
    # Each try is 1 s of work plus one Fast Downward call's nominal work; the cutoff is 10 s.
    per_try = 1.0 + fd_work(_PROBLEM)
    assert mdp.interfaces[0].tries == math.ceil(10.0 / per_try)
    # The call's work: the stuck attempt's, then one call and one step that succeeded.
    stuck = mdp.interfaces[0].tries * per_try
    assert planner.work() == pytest.approx(stuck + fd_work(_PROBLEM) + 1.0)


def test_on_the_wall_clock_the_same_attempt_is_cut_off_after_more_or_less_work() -> None:
    fast, fast_mdp = _stuck_first_attempt("wall", 0.5)
    slow, slow_mdp = _stuck_first_attempt("wall", 3.0)
    assert fast.cutoffs == slow.cutoffs == 1
    assert fast_mdp.interfaces[0].tries >= 4 * slow_mdp.interfaces[0].tries


def test_on_the_work_clock_the_calls_timeout_still_holds_in_seconds() -> None:
    # A machine so slow that the call's 100 s pass before an attempt's 10 s of work.
    clock = FakeClock()
    mdp = _WorkingMDP(clock, work=0.001, wall=10.0)
    planner = TAMP(
        seed=0, restart_s=10.0, max_resamples=10**6, max_replans=10**6, budget_clock="work"
    )
    with pytest.raises(PlanningTimeout):
        planner.prepare(mdp, Deadline(100, clock))
    # (Fast Downward is not started with less than a second of the call left.)
    assert 90.0 <= clock.now <= 100.0 and planner.cutoffs == 0


def test_a_cutoff_on_its_own_clock_ends_with_the_call_and_is_credited_in_full() -> None:
    wall, work = FakeClock(), FakeClock()
    outer = Deadline(30, wall)
    attempt = AttemptCutoff(10.0, outer, work)
    assert attempt.call is outer and attempt.remaining == pytest.approx(10.0)
    work.now = 9.0
    attempt.credit(100.0)  # not capped by the seconds the call has left: another clock
    assert attempt.remaining == pytest.approx(101.0) and not attempt.expired()
    wall.now = 30.0
    assert attempt.expired()
    with pytest.raises(PlanningTimeout):
        attempt.check()
    # On the call's own clock, nothing changed: credit stops at the call's deadline.
    wall.now = 0.0
    same = AttemptCutoff(10.0, Deadline(30, wall))
    same.credit(100.0)
    assert same.remaining == pytest.approx(30.0)


def test_an_unknown_budget_clock_is_refused() -> None:
    with pytest.raises(ValueError, match="budget_clock"):
        TAMP(budget_clock="cpu")
    with pytest.raises(ValueError, match="budget_clock"):
        Stilman(budget_clock="cpu")


@pytest.mark.pybullet
def test_namo_work_counts_checks_ik_and_grid_cells_and_sets_ompls_budget_in_checks() -> None:
    from camp_planner.domains.namo import tamp as namo_tamp
    from camp_planner.domains.namo.mdp import NamoMDP
    from camp_planner.domains.namo.world import generate_task

    task = generate_task(0, 1000)
    mdp = NamoMDP.from_task(task)
    try:
        iface = namo_tamp.NamoTampInterface(
            mdp, mdp.initial_state(), None, seed=0, settings={"budget_clock": "work"}
        )
        assert iface.work() == 0.0
        scene = iface._scene()
        for k in range(5):
            scene.blocked_at((1.0 + 0.1 * k, 1.0, 0.0), 0.0, ())
        scene.arm_solution(1.5, 1.0, 0.3)
        scene.arm_solution(1.5, 1.0, 0.3)  # remembered, and still counted: the same work
        # Reachability is tested on the grid: its cells count too.
        assert iface._connected(task.start, (1.5, 1.5, 0.0), False, "")
        assert iface.grid_cells > 0
        expected = (
            5 * namo_tamp.CHECK_WORK_S
            + 2 * namo_tamp.IK_WORK_S
            + iface.grid_cells * namo_tamp.GRID_CELL_WORK_S
        )
        assert iface.work() == pytest.approx(expected)
        limits = iface._ompl_limits(0.5, Deadline(60.0))
        assert limits["max_checks"] == math.ceil(0.5 / namo_tamp.CHECK_WORK_S)
        assert 59.0 < limits["timeout_s"] <= 60.0
        iface.work_budgets = False
        assert iface._ompl_limits(0.5, Deadline(60.0)) == {"timeout_s": 0.5}
        iface.close()
    finally:
        mdp.close()


# Plans one NAMO test task with TAMP in a process whose wall clock runs ``factor`` times
# too fast, as a machine that much slower would see it, and prints the plan.
_SLOW_MACHINE = """
import json, sys, tempfile, time
factor, budget_clock = float(sys.argv[1]), sys.argv[2]
real = time.perf_counter
t0 = real()
time.perf_counter = lambda: t0 + (real() - t0) * factor
from pathlib import Path
from camp_planner.workflow import Pipeline
with tempfile.TemporaryDirectory() as scratch:
    pipe = Pipeline.create("namo", None, Path(scratch) / "artifacts")
    pipe.config["tasks"]["test"] = 4
    task = pipe.tasks("test")[3]
    result, _ = pipe.run(
        task, "tamp", None, seed=1, timeout_s=1e6, overrides={"budget_clock": budget_clock}
    )
    print(json.dumps({"success": result.success, "actions": repr(result.actions)}))
"""


def _plan_on(factor: float, budget_clock: str, hash_seed: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    out = subprocess.run(
        [sys.executable, "-c", _SLOW_MACHINE, str(factor), budget_clock],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


@pytest.mark.pybullet
@pytest.mark.slow
def test_the_work_clock_makes_the_same_namo_plan_on_a_machine_200_times_slower() -> None:
    # Test task 3 with planner seed 1 takes a restart cutoff on this machine, and when each
    # second is 1/200 as long, budgets of seconds cut off attempts and OMPL searches that
    # would have succeeded (either alone changes this plan). Each plan is made in a fresh
    # process, whose clock is replaced before anything reads it (with another hash seed
    # each, too: no plan may depend on the order of a set of names).
    here = _plan_on(1.0, "work", "1")
    slow = _plan_on(200.0, "work", "2")
    assert here["success"] is True and here == slow
    wall_here = _plan_on(1.0, "wall", "1")
    wall_slow = _plan_on(200.0, "wall", "1")
    assert wall_here["success"] is True and wall_here != wall_slow
