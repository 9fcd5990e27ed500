"""The TAMP planner (``planners/tamp.py``): its loop over a domain's interface (replans,
resamples, forgetting, loops), restarts on the work clock, its shared settings, and NAMO
planned end to end."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from namo_worlds import CHAIN, replay_is_collision_free
from toy_mdps import FakeClock, GridMDP, ScriptedInterface, ScriptedMDP

from camp_planner.core.camp import CAMP
from camp_planner.core.context import Context, Term
from camp_planner.core.mdp import State
from camp_planner.core.objective import run_episode
from camp_planner.core.planner import Deadline, NoPlanFound, PlanningError, PlanningTimeout
from camp_planner.domains.namo.mdp import NONE, SLOT_NAMES, NamoMDP
from camp_planner.planners.registry import make_planner
from camp_planner.planners.stilman import Stilman
from camp_planner.planners.tamp import (
    TAMP,
    AttemptCutoff,
    InterfaceSettings,
    Refinement,
    Stuck,
    fd_work,
)

pytestmark = [pytest.mark.fast_downward]

_WORK_DOMAIN = (
    "(define (domain d) (:requirements :strips) (:predicates (free) (done))\n"
    "  (:action finish :parameters () :precondition (free) :effect (done)))"
)
_PROBLEM = "(define (problem p) (:domain d) (:init (free)) (:goal (done)))"


@pytest.mark.pybullet
@pytest.mark.slow
def test_tamp_clears_the_doorway_and_the_plan_replays_in_the_full_world() -> None:
    mdp = NamoMDP.from_task(CHAIN)
    planner = TAMP(seed=0, motion_timeout_s=5.0)  # generous: only a loaded machine needs it
    result = run_episode(mdp, planner, lam=0.0, timeout_s=60, rng=random.Random(0))
    assert result.success, result.outcome
    picked = [a[2] for a in result.actions if a[0] == "pick"]
    assert "box_r1_0" in picked
    stages = result.stage_times_s
    assert {"task_planning", "motion_planning"} <= set(stages)
    # The collision queries' time is a part of refinement's (motion planning, grasps and
    # placements, and the simulated execution of what was refined).
    assert 0 < stages["collision_checks"] < stages["refinement"] <= stages["prepare"]
    replay_is_collision_free(CHAIN, result.actions, set())
    mdp.close()
    # The planner counts its work (nominal seconds).
    assert result.work_s is not None and result.work_s > 0


@pytest.mark.pybullet
@pytest.mark.slow
def test_the_same_plan_made_again_counts_the_same_work() -> None:
    # Budgets on the work clock and OMPL seeded per query: a plan does not depend on the
    # machine's speed, and neither does the work it counts.
    runs = []
    for _ in range(2):
        mdp = NamoMDP.from_task(CHAIN)
        planner = TAMP(seed=0)
        runs.append(run_episode(mdp, planner, lam=0.0, timeout_s=60, rng=random.Random(0)))
        mdp.close()
    first, second = runs
    assert first.success and second.actions == first.actions
    assert first.work_s is not None and first.work_s > 0 and second.work_s == first.work_s


@pytest.mark.pybullet
@pytest.mark.slow
def test_a_camp_drops_forbidden_rooms_boxes_and_never_touches_them() -> None:
    mdp = NamoMDP.from_task(CHAIN)
    context = Context("disjunction", tuple(Term("robot_room", r) for r in (0, 1, 2, 5, 8)))
    dropped = {n for n in SLOT_NAMES if n.startswith(("box_r3_", "box_r4_", "box_r6_"))}
    relevant = frozenset(v.name for v in mdp.variables) - dropped
    camp = CAMP.build(mdp, context, relevant)
    assert set(camp.dropped_variables) == dropped
    result = run_episode(
        mdp,
        TAMP(seed=1, motion_timeout_s=5.0),
        lam=0.0,
        timeout_s=60,
        rng=random.Random(0),
        camp=camp,
    )
    assert result.success, result.outcome
    assert result.context_violations == 0
    # Verified by execution in the full world: no contact, no forbidden room entered.
    replay_is_collision_free(CHAIN, result.actions, {3, 4, 6, 7})
    final = result.states[-1]
    for name in ("box_r3_0", "box_r4_0", "box_r4_1"):
        box = CHAIN.box(name)
        assert final[mdp.state_index(name)] == (round(box.x, 4), round(box.y, 4))
    assert final[2] == NONE
    mdp.close()


@pytest.mark.pybullet
@pytest.mark.slow
def test_tamp_solves_a_default_training_task_whose_learnt_facts_can_cycle() -> None:
    from camp_planner.domains.namo.world import generate_task

    task = generate_task(11, 11)  # training task 11 of the default configuration
    mdp = NamoMDP.from_task(task)
    result = run_episode(mdp, TAMP(seed=0), lam=0.0, timeout_s=60, rng=random.Random(0))
    assert result.success, result.failures
    mdp.close()


def test_tamp_refuses_domains_without_an_interface() -> None:
    with pytest.raises(PlanningError, match="task-and-motion"):
        TAMP().prepare(GridMDP(("S.G",)), Deadline(None))
    with pytest.raises(ValueError, match="motion_timeout_s"):
        TAMP(motion_timeout_s=0)


class _ScriptedInterface(ScriptedInterface):
    """A TAMP interface whose symbolic problem is unsolvable until its facts are forgotten
    (``unsolvable``), or whose one step fails without explanation the first ``flaky`` times."""

    DOMAIN = (
        "(define (domain d) (:requirements :strips) (:predicates (free) (done))\n"
        "  (:action finish :parameters () :precondition (free) :effect (done)))"
    )

    def __init__(self, unsolvable: bool, flaky: int, can_forget: bool = True) -> None:
        super().__init__()
        self.unsolvable, self.flaky, self.can_forget = unsolvable, flaky, can_forget

    def pddl(self) -> tuple[str, str]:
        init = "" if self.unsolvable else "(free)"
        return self.DOMAIN, f"(define (problem p) (:domain d) (:init {init}) (:goal (done)))"

    def refine(self, step: tuple[str, ...], deadline: Deadline) -> Refinement:
        if self.flaky > 0:
            self.flaky -= 1
            return Refinement(False, reason="no sample worked this time")
        self.done = True
        return Refinement(True, [("up",)], [(2, 0)])

    def forget(self) -> bool:
        if not (self.unsolvable and self.can_forget):
            return False
        self.unsolvable = False
        return True


_ScriptedMDP = ScriptedMDP


def test_tamp_forgets_learnt_facts_when_they_make_the_task_unsolvable() -> None:
    planner = TAMP()
    planner.prepare(_ScriptedMDP(_ScriptedInterface(unsolvable=True, flaky=0)), Deadline(60))
    assert planner.last_stats["restarts"] == 1
    # Nothing left to forget: the proof of unsolvability stands.
    stuck = _ScriptedMDP(_ScriptedInterface(unsolvable=True, flaky=0, can_forget=False))
    with pytest.raises(NoPlanFound, match="unsolvable"):
        TAMP().prepare(stuck, Deadline(60))


def test_tamp_resamples_unexplained_refinement_failures_up_to_its_budget() -> None:
    planner = TAMP(max_resamples=2)
    planner.prepare(_ScriptedMDP(_ScriptedInterface(unsolvable=False, flaky=2)), Deadline(60))
    assert planner.last_stats["resamples"] == 2
    with pytest.raises(NoPlanFound, match="no sample worked"):
        TAMP(max_resamples=2).prepare(
            _ScriptedMDP(_ScriptedInterface(unsolvable=False, flaky=3)), Deadline(60)
        )
    with pytest.raises(ValueError, match="max_resamples"):
        TAMP(max_resamples=-1)
    with pytest.raises(ValueError, match="relaxed must be one of grid, ompl"):
        TAMP(relaxed="straight")


class _PastTheGoal(ScriptedInterface):
    """A TAMP interface whose symbolic plan has two steps; refining the first reaches the
    goal (the way to a box passed it), and the second would fail from there."""

    DOMAIN = (
        "(define (domain d) (:requirements :strips) (:predicates (free) (near) (done))\n"
        "  (:action go_near :parameters () :precondition (free) :effect (near))\n"
        "  (:action finish :parameters () :precondition (near) :effect (done)))"
    )

    def __init__(self) -> None:
        super().__init__()
        self.refined: list[str] = []

    def pddl(self) -> tuple[str, str]:
        return self.DOMAIN, "(define (problem p) (:domain d) (:init (free)) (:goal (done)))"

    def refine(self, step: tuple[str, ...], deadline: Deadline) -> Refinement:
        self.refined.append(step[0])
        if step[0] == "go_near":
            self.done = True
            return Refinement(True, [("right",), ("right",)], [(1, 0), (2, 0)])
        return Refinement(False, reason=f"{step[0]} is not possible from the goal")


def test_tamp_ends_the_plan_where_a_step_reached_the_goal() -> None:
    iface = _PastTheGoal()
    planner = TAMP()
    planner.prepare(ScriptedMDP(iface), Deadline(60))
    assert iface.refined == ["go_near"]  # "finish" was never asked of the goal state
    assert planner.last_stats["actions"] == 2


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
        return _WORK_DOMAIN, _PROBLEM

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
    """A fresh interface per attempt, stuck for the planner seeds in ``stuck`` (None: all),
    each try doing ``work`` nominal seconds of work in ``wall`` seconds of the fake clock."""

    def __init__(
        self, clock: FakeClock, work: float, wall: float, stuck: set[int] | None = None
    ) -> None:
        super().__init__(("S.G",))
        self.clock, self.step_work, self.step_wall = clock, work, wall
        self.stuck = {0} if stuck is None else stuck
        self.all_stuck = stuck is not None and not stuck
        self.seeds: list[int] = []
        self.interfaces: list[_Working] = []

    def tamp_interface(self, state: State, camp: object, seed: int, settings: object) -> object:
        self.seeds.append(seed)
        stuck = self.all_stuck or seed in self.stuck
        iface = _Working(self.clock, stuck, self.step_work, self.step_wall)
        self.interfaces.append(iface)
        return iface


def _stuck_first_attempt(wall_per_try: float) -> tuple[TAMP, _WorkingMDP]:
    clock = FakeClock()
    mdp = _WorkingMDP(clock, work=1.0, wall=wall_per_try)
    planner = TAMP(seed=0, restart_s=10.0, max_resamples=10**6, max_replans=10**6)
    planner.prepare(mdp, Deadline(10_000, clock))
    return planner, mdp


@pytest.mark.parametrize("wall_per_try", [0.01, 3.0])
def test_an_attempt_is_cut_off_after_the_same_work_at_any_speed_and_restarts_afresh(
    wall_per_try: float,
) -> None:
    planner, mdp = _stuck_first_attempt(wall_per_try)
    assert planner.cutoffs == 1 and planner.last_stats["cutoffs"] == 1
    assert len(mdp.interfaces) == 2 and mdp.seeds[0] == 0 and mdp.seeds[1] != 0
    # Each try is 1 s of work plus one Fast Downward call's nominal work; the cutoff is 10 s.
    per_try = 1.0 + fd_work(_PROBLEM)
    assert mdp.interfaces[0].tries == math.ceil(10.0 / per_try)
    # The call's work: the stuck attempt's, then one call and one step that succeeded.
    stuck = mdp.interfaces[0].tries * per_try
    assert planner.work() == pytest.approx(stuck + fd_work(_PROBLEM) + 1.0)


def test_without_a_cutoff_a_stuck_attempt_runs_on_to_the_calls_deadline() -> None:
    clock = FakeClock()
    mdp = _WorkingMDP(clock, work=1.0, wall=3.0)
    with pytest.raises(PlanningTimeout):
        TAMP(seed=0, max_resamples=10**6, max_replans=10**6).prepare(mdp, Deadline(100, clock))
    assert mdp.seeds == [0] and clock.now >= 99.0


def test_restart_cutoffs_grow_and_the_call_deadline_still_holds() -> None:
    clock = FakeClock()
    mdp = _WorkingMDP(clock, work=1.0, wall=1.0, stuck=set())  # every attempt stalls
    planner = TAMP(restart_s=10.0, restart_growth=2.0, max_resamples=10**6, max_replans=10**6)
    with pytest.raises(PlanningTimeout):
        planner.prepare(mdp, Deadline(100, clock))
    # Cutoffs after 10, 20 and 40 s of work (70 s on this clock); the fourth attempt's 80 s
    # do not fit, and the call times out on schedule, in seconds.
    assert planner.cutoffs == 3 and len(set(mdp.seeds)) == 4
    assert 99.0 <= clock.now <= 101.0


def test_the_calls_timeout_still_holds_in_seconds() -> None:
    # A machine so slow that the call's 100 s pass before an attempt's 10 s of work.
    clock = FakeClock()
    mdp = _WorkingMDP(clock, work=0.001, wall=10.0)
    planner = TAMP(seed=0, restart_s=10.0, max_resamples=10**6, max_replans=10**6)
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


class _ChainInterface(_ScriptedInterface):
    """A plan of ``length`` steps, each refined successfully in ``step_s`` (fake) seconds and
    as many seconds of work."""

    def __init__(self, clock: FakeClock, length: int, step_s: float) -> None:
        super().__init__(unsolvable=False, flaky=0)
        self.clock, self.length, self.step_s = clock, length, step_s
        self.reached = 0
        self._work = 0.0

    def work(self) -> float:
        return self._work

    def pddl(self) -> tuple[str, str]:
        facts = " ".join(f"(at{k})" for k in range(self.length + 1))
        actions = "".join(
            f"(:action step{k} :parameters () :precondition (at{k - 1}) :effect (at{k}))"
            for k in range(1, self.length + 1)
        )
        domain = f"(define (domain c) (:requirements :strips) (:predicates {facts}) {actions})"
        problem = (
            f"(define (problem p) (:domain c) (:init (at{self.reached})) (:goal (at{self.length})))"
        )
        return domain, problem

    def refine(self, step: tuple[str, ...], deadline: Deadline) -> Refinement:
        self.clock.now += self.step_s
        self._work += self.step_s
        self.reached = int(step[0].removeprefix("step"))
        return Refinement(True, [("up",)], [(2, 0)])

    def at_goal(self) -> bool:
        return self.reached == self.length


class _ChainMDP(GridMDP):
    def __init__(self, clock: FakeClock) -> None:
        super().__init__(("S.G",))
        self.clock = clock
        self.seeds: list[int] = []

    def tamp_interface(self, state: State, camp: object, seed: int, settings: object) -> object:
        self.seeds.append(seed)
        return _ChainInterface(self.clock, length=5, step_s=4.0)


def test_the_cutoff_does_not_cut_off_a_long_plan_that_keeps_succeeding() -> None:
    # Five steps of 4 s each under a 10 s cutoff: the work of the steps refined successfully
    # is given back, so the attempt is not abandoned after three good steps and redone (a
    # NAMO task that must clear seven boxes in a cluttered world lost its work that way).
    clock = FakeClock()
    mdp = _ChainMDP(clock)
    planner = TAMP(seed=0, restart_s=10.0)
    planner.prepare(mdp, Deadline(100, clock))
    assert planner.cutoffs == 0 and mdp.seeds == [0] and clock.now == pytest.approx(20.0)
    # The call's own deadline still holds: the 20 s plan does not fit in 15 s.
    clock.now = 0.0
    with pytest.raises(PlanningTimeout):
        TAMP(seed=0, restart_s=10.0).prepare(_ChainMDP(clock), Deadline(15, clock))
    assert clock.now <= 16.0 + 1e-9


class _FailingMDP(GridMDP):
    """Hands out an interface whose problem is unsolvable, whatever the attempt."""

    def __init__(self) -> None:
        super().__init__(("S.G",))
        self.seeds: list[int] = []

    def tamp_interface(self, state: State, camp: object, seed: int, settings: object) -> object:
        self.seeds.append(seed)
        return _ScriptedInterface(unsolvable=True, flaky=0, can_forget=False)


def test_an_attempt_that_fails_is_not_restarted() -> None:
    mdp = _FailingMDP()
    with pytest.raises(NoPlanFound):
        TAMP(restart_s=10.0).prepare(mdp, Deadline(100))
    assert mdp.seeds == [0]  # a CAMP that cannot work still fails fast


class _LoopingInterface(_ScriptedInterface):
    """Its one step always fails naming an obstruction; the learnt fact makes the problem
    unsolvable, forgetting it makes it solvable again: the loop of NAMO's trap (boxes put
    down around the robot, each way out blocked by the same two)."""

    def __init__(self) -> None:
        super().__init__(unsolvable=False, flaky=0)
        self.refinements = 0

    def refine(self, step: tuple[str, ...], deadline: Deadline) -> Refinement:
        self.refinements += 1
        return Refinement(False, facts=["(blocks a b)"], reason="a blocks the way")

    def learn(self, facts: list[str]) -> None:
        self.unsolvable = True


class _LoopingMDP(GridMDP):
    """Hands out a looping interface for the seeds in ``looping``, a working one otherwise."""

    def __init__(self, looping: set[int]) -> None:
        super().__init__(("S.G",))
        self.looping = looping
        self.seeds: list[int] = []
        self.interfaces: list[_ScriptedInterface] = []

    def tamp_interface(self, state: State, camp: object, seed: int, settings: object) -> object:
        self.seeds.append(seed)
        interface = (
            _LoopingInterface()
            if seed in self.looping
            else _ScriptedInterface(unsolvable=False, flaky=0)
        )
        self.interfaces.append(interface)
        return interface


def test_an_attempt_going_round_in_a_loop_is_cut_short() -> None:
    mdp = _LoopingMDP(looping={0})
    with pytest.raises(Stuck, match="loop"):
        TAMP(seed=0, stuck_restarts=0, max_replans=30).prepare(mdp, Deadline(60))
    # Caught the third time the same unsolvable problem came back from the same state, not
    # after max_replans: a two-step forget legitimately meets the same dead end twice.
    first = mdp.interfaces[0]
    assert isinstance(first, _LoopingInterface) and first.refinements == 3
    assert mdp.seeds == [0]


def test_an_attempt_going_round_in_a_loop_starts_over_with_fresh_samples() -> None:
    mdp = _LoopingMDP(looping={0})
    planner = TAMP(seed=0)  # stuck_restarts defaults to 2, with or without restart_s
    planner.prepare(mdp, Deadline(60))
    assert planner.last_stats["stuck"] == 1 and mdp.seeds[0] == 0 and len(mdp.seeds) == 2
    assert planner.cutoffs == 0
    # Every attempt loops: the call ends after stuck_restarts fresh starts.
    always = _LoopingMDP(looping={0 + 104_729 * k for k in range(10)})
    with pytest.raises(Stuck):
        TAMP(seed=0, stuck_restarts=2).prepare(always, Deadline(60))
    assert len(always.seeds) == 3
    with pytest.raises(ValueError, match="stuck_restarts"):
        TAMP(stuck_restarts=-1)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"restart_s": 0.0}, "restart_s"),
        ({"restart_s": 1.0, "restart_growth": 0.5}, "growth"),
        ({"motion_timeout_s": 0.0}, "motion_timeout_s"),
        ({"relaxed": "straight"}, "relaxed must be one of grid, ompl"),
    ],
)
def test_bad_shared_settings_are_refused(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TAMP(**settings)
    with pytest.raises(ValueError, match=message):
        Stilman(**settings)
    with pytest.raises(ValueError, match=message):
        InterfaceSettings(**settings)  # type: ignore[arg-type]


def test_the_shared_settings_are_one_object_given_whole_or_by_name() -> None:
    given = InterfaceSettings(motion_timeout_s=5.0, relaxed="ompl")
    planner = TAMP(settings=given, detour_timeout_s=2)
    assert planner.settings == InterfaceSettings(5.0, "RRTConnect", 2.0, "ompl")
    assert isinstance(planner.settings.detour_timeout_s, float)
    assert Stilman(settings=given).settings == given
    # The registry builds planners from a configuration's settings, by name.
    built = make_planner("tamp", seed=3, restart_s=2, max_replans=5)
    assert isinstance(built, TAMP) and built.settings.restart_s == 2.0 and built.max_replans == 5
    assert built.restart_s == 2.0 and built.seed == 3


@pytest.mark.parametrize(
    "retired",
    [
        "guide",
        "failed_motions",
        "budget_clock",
        "motion_seeds",
        "restart_clock",
        "goal_en_route",
        "fd_mode",
        "edge_step_m",
    ],
)
def test_settled_experiments_are_settings_no_more(retired: str) -> None:
    for name in ("tamp", "stilman"):
        with pytest.raises(ValueError, match=f"unknown setting.*'{retired}'.*accepts: "):
            make_planner(name, **{retired: None})


# Plans one NAMO test task with TAMP in a process whose wall clock runs ``factor`` times
# too fast, as a machine that much slower would see it, and prints the plan.
_SLOW_MACHINE = """
import json, sys, tempfile, time
factor = float(sys.argv[1])
real = time.perf_counter
t0 = real()
time.perf_counter = lambda: t0 + (real() - t0) * factor
from pathlib import Path
from camp_planner.workflow import Pipeline
with tempfile.TemporaryDirectory() as scratch:
    pipe = Pipeline.create("namo", None, Path(scratch) / "artifacts")
    pipe.config["tasks"]["test"] = 4
    task = pipe.tasks("test")[3]
    result, _ = pipe.run(task, "tamp", None, seed=1, timeout_s=1e6)
    print(json.dumps({"success": result.success, "actions": repr(result.actions)}))
"""


def _plan_on(factor: float, hash_seed: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    out = subprocess.run(
        [sys.executable, "-c", _SLOW_MACHINE, str(factor)],
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
    here = _plan_on(1.0, "1")
    slow = _plan_on(200.0, "2")
    assert here["success"] is True and here == slow
