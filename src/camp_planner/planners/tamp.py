"""Task and motion planning through an interface layer (after Srivastava et al., ICRA 2014).

The planner is domain-independent: a domain offers a :class:`TampInterface` for an MDP (the
full task or a CAMP), which describes the current symbolic state as PDDL and refines
symbolic actions into executable MDP actions with its geometric machinery (motion planning,
grasp and placement sampling). The loop:

1. Fast Downward plans on the symbolic problem of the current state.
2. Each symbolic step is refined in turn; a refinement executes its actions in the domain's
   simulator, so the plan is verified step by step as it is built.
3. A step that cannot be refined reports what stands in the way (e.g. the objects obstructing
   every path, found by planning again while ignoring movable objects); those facts are added
   to the symbolic state and the task planner replans from where refinement stopped.

Time is tracked per stage (task planning, refinement and the domain's own stages such as
motion planning) in :attr:`Planner.stage_times`; every call honours its :class:`Deadline`.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from camp_planner.core.camp import CAMP
from camp_planner.core.mdp import Action, FactoredMDP, State
from camp_planner.core.planner import (
    Deadline,
    NoPlanFound,
    Planner,
    PlanningError,
    PlanningTimeout,
    Unsolvable,
)
from camp_planner.planners.fast_downward import FDRunner

# How a domain's interface names obstructions (see ``TAMP``'s ``relaxed`` setting).
RELAXED_MODES = ("grid", "ompl", "ompl_doors")
# How a domain's interface splits base motions (see ``TAMP``'s ``guide`` setting).
GUIDES = ("doors", "none", "rooms")
FAILED_MOTIONS = ("retry", "give_up")
# What TAMP's budgets (restart cutoffs, motion-planning budgets) are measured on.
BUDGET_CLOCKS = ("wall", "work")
# How the motion planner's random numbers are seeded: the values of
# ``motion.ompl_se2.SEEDINGS``, named here because planners do not load OMPL (only the
# domain's interface does); a test keeps the two the same.
MOTION_SEEDS = ("process", "query")
# ``budget_clock: work``: the nominal cost of one Fast Downward call, a fixed part and a part
# per character of the problem, which its translator reads (fitted to 79 calls in the paper's
# world and the 10×10 one on the machine of record, 2026-11-28: 12 ms and 48 ms medians).
FD_CALL_WORK_S = 0.015
FD_CHAR_WORK_S = 7e-5


def fd_work(problem: str) -> float:
    """The nominal seconds of work one Fast Downward call on ``problem`` counts for."""
    return FD_CALL_WORK_S + FD_CHAR_WORK_S * len(problem)


class AttemptCutoff(Deadline):
    """One attempt's budget inside a planning call's ``outer`` deadline, whose clock can be
    turned back by the time the attempt spent making progress (see ``restart_clock``).

    ``clock``: what the cutoff is measured on, the outer deadline's clock unless given (a
    clock of work done: see ``budget_clock``). It never reaches past ``outer``: on the same
    clock credit beyond what the call has left is not given; on another, the cutoff is
    expired once ``outer`` is."""

    def __init__(
        self, cutoff: float, outer: Deadline, clock: Callable[[], float] | None = None
    ) -> None:
        super().__init__(cutoff, outer.clock if clock is None else clock)
        self.outer = outer
        self._own_clock = clock is not None and clock is not outer.clock

    @property
    def call(self) -> Deadline:
        return self.outer.call

    def expired(self) -> bool:
        return super().expired() or (self._own_clock and self.outer.expired())

    def credit(self, seconds: float) -> None:
        """Give back ``seconds`` the attempt spent on work that succeeded."""
        assert self.seconds is not None
        self.seconds += seconds
        if not self._own_clock:
            self.seconds = min(self.seconds, self.elapsed + self.outer.remaining)


class Stuck(NoPlanFound):
    """An attempt went round in a loop: after forgetting everything, the interface relearnt
    the same facts and reached the same unsolvable symbolic problem from the same state. Going on
    would only repeat it until ``max_replans``; starting over with fresh samples may not."""


@dataclass
class Refinement:
    """The outcome of refining one symbolic step.

    On success ``actions`` (MDP actions, already executed in the interface's simulator) and
    ``states`` (the state after each) are set. On failure ``facts`` holds what was learnt
    (added to the symbolic state before replanning) and ``reason`` says why; no facts means
    the failure cannot be explained and the plan is abandoned."""

    ok: bool
    actions: list[Action] = field(default_factory=list)
    states: list[State] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    reason: str = ""


class TampInterface(Protocol):
    """What a domain provides for one planning call, starting from a given state."""

    def pddl(self) -> tuple[str, str]:
        """The symbolic domain and problem for the current state and every learnt fact."""

    def refine(self, step: tuple[str, ...], deadline: Deadline) -> Refinement:
        """Refine symbolic ``step`` (name, *arguments) from the current state; on success
        the interface's current state advances past it."""

    def learn(self, facts: list[str]) -> None:
        """Add facts (e.g. ``(blocks box_r3_1 goal)``) to the symbolic state."""

    def forget(self) -> bool:
        """Drop learnt facts, keeping the geometric state reached so far; False if there
        was nothing to drop. Called when the learnt facts made the symbolic problem
        unsolvable: each fact is true of one sampled path, not of every way. An interface
        may drop its weakest facts first (NAMO: inferred orders of clearing, before the
        obstructions it observed) and the rest on the next call."""

    def at_goal(self) -> bool:
        """Whether the current state achieves the task."""

    def close(self) -> None:
        """Undo any planning-only change to the domain's simulator."""

    @property
    def stage_times(self) -> dict[str, float]:
        """Seconds spent per stage of the domain's own refinement work."""


def tamp_base(mdp: FactoredMDP) -> tuple[Any, CAMP | None]:
    """The domain MDP offering a TAMP interface, and the CAMP wrapped around it if any.

    The domain MDP provides ``tamp_interface(state, camp, seed, settings)`` returning a
    :class:`TampInterface` for one planning call (e.g. ``NamoMDP``)."""
    camp = mdp if isinstance(mdp, CAMP) else None
    base: Any = camp.base if camp is not None else mdp
    if not hasattr(base, "tamp_interface"):
        raise PlanningError(
            f"the TAMP planner needs a domain with a task-and-motion interface; "
            f"{base.name} has none (use it on --domain namo)"
        )
    return base, camp


class InterfacePlanner(Planner):
    """What planners over a domain's TAMP interface share: motion settings, the verified plan
    (actions and the states they lead to, mapped into the CAMP if there is one) and the
    interface's stage times."""

    def __init__(
        self,
        seed: int,
        motion_timeout_s: float,
        motion_planner: str,
        detour_timeout_s: float,
        relaxed: str = "grid",
        guide: str = "doors",
        restart_s: float | None = None,
        restart_growth: float = 2.0,
        stuck_restarts: int = 0,
        restart_clock: str = "wall",
        edge_step_m: float | None = None,
        failed_motions: str = "retry",
        budget_clock: str = "wall",
        motion_seeds: str = "process",
        goal_en_route: bool = True,
    ) -> None:
        super().__init__(seed)
        if not isinstance(goal_en_route, bool):
            raise ValueError(f"goal_en_route must be true or false, got {goal_en_route!r}")
        if motion_seeds not in MOTION_SEEDS:
            raise ValueError(
                f"motion_seeds must be one of {', '.join(MOTION_SEEDS)}, got {motion_seeds!r}"
            )
        if budget_clock not in BUDGET_CLOCKS:
            raise ValueError(
                f"budget_clock must be one of {', '.join(BUDGET_CLOCKS)}, got {budget_clock!r}"
            )
        self.budget_clock = budget_clock
        if failed_motions not in FAILED_MOTIONS:
            raise ValueError(
                f"failed_motions must be one of {', '.join(FAILED_MOTIONS)}, got {failed_motions!r}"
            )
        if edge_step_m is not None and not edge_step_m > 0:
            raise ValueError(f"edge_step_m must be positive (or null), got {edge_step_m}")
        if restart_clock not in ("wall", "stalled"):
            raise ValueError(f"restart_clock must be 'wall' or 'stalled', got {restart_clock!r}")
        self.restart_clock = restart_clock
        if stuck_restarts < 0:
            raise ValueError(f"stuck_restarts must be non-negative, got {stuck_restarts}")
        self.stuck_restarts = int(stuck_restarts)
        self.stucks = 0  # attempts that ended in a loop (see Stuck) in the last planning call
        if not motion_timeout_s > 0:
            raise ValueError(f"motion_timeout_s must be positive, got {motion_timeout_s}")
        if restart_s is not None and not restart_s > 0:
            raise ValueError(f"restart_s must be positive (or null: off), got {restart_s}")
        if not restart_growth >= 1:
            raise ValueError(f"restart_growth must be at least 1, got {restart_growth}")
        self.restart_s = None if restart_s is None else float(restart_s)
        self.restart_growth = float(restart_growth)
        self.cutoffs = 0  # attempts abandoned at their cutoff in the last planning call
        self._attempt_seed = seed
        if relaxed not in RELAXED_MODES:
            raise ValueError(f"relaxed must be one of {', '.join(RELAXED_MODES)}, got {relaxed!r}")
        if guide not in GUIDES:
            raise ValueError(f"guide must be one of {', '.join(GUIDES)}, got {guide!r}")
        self.settings: dict[str, Any] = {
            "motion_timeout_s": motion_timeout_s,
            "motion_planner": motion_planner,
            "detour_timeout_s": detour_timeout_s,
            "relaxed": relaxed,
            "guide": guide,
            "edge_step_m": None if edge_step_m is None else float(edge_step_m),
            "failed_motions": failed_motions,
            "budget_clock": budget_clock,
            "motion_seeds": motion_seeds,
            "goal_en_route": bool(goal_en_route),
        }
        # Work done in this planning call, in nominal seconds (``budget_clock: work``): what
        # closed interfaces and task planning did, and the interface at work now.
        self._work_done = 0.0
        self._live: Any = None
        self._mdp: FactoredMDP | None = None
        self._plan: list[Action] = []
        self._expected: list[State] = []
        self._step = 0
        self.last_stats: dict[str, Any] = {}

    def prepare(self, mdp: FactoredMDP, deadline: Deadline) -> None:
        tamp_base(mdp)  # a clear error for domains without an interface, before any work
        self._mdp = mdp
        self.stage_times = {}
        self.work_total = 0.0
        self._solve_restarting(mdp.initial_state(), deadline)

    def _solve_restarting(self, state: State, deadline: Deadline) -> None:
        """``_solve`` with restarts: with ``restart_s`` set, an attempt that has not finished
        after its cutoff is abandoned and planning starts over from ``state`` with fresh
        randomness (target poses, placements, OMPL's trees), the cutoff growing by
        ``restart_growth`` each time; the attempt the deadline would end anyway gets all
        that is left.

        Why: the refiners sample, and a few early draws (a box put down where it blocks
        the next way, a cramped approach pose) send a run into a long series of replans.
        Run times of the same task then spread over an order of magnitude (NAMO training
        task 15, universal context, 8 seeds: median 0.7 s, slowest 13.5 s), the heavy
        tail for which restarting randomised search is the standard cure (Gomes, Selman
        and Kautz, AAAI 1998). A geometric schedule bounds what a task that truly needs a
        long run loses. With ``restart_clock: stalled`` the cutoff counts only the time an
        attempt is stalled: the time of every refinement that succeeded is given back (see
        :meth:`_progress`), so a task that needs many steps is not cut off for its length,
        only for its failures and replans. Attempts that fail (no plan, unsolvable) are not
        restarted: they end the call, so a CAMP whose context cannot work still fails
        fast. The exception is an attempt caught in a loop (:class:`Stuck`): it starts over
        at once, whatever ``restart_s``, up to ``stuck_restarts`` times per call."""
        self.cutoffs = 0
        self.stucks = 0
        self._work_done, self._live = 0.0, None
        try:
            self._attempts(state, deadline)
        finally:  # a call that fails did its work too
            self.work_total = (self.work_total or 0.0) + self.work()

    def _attempts(self, state: State, deadline: Deadline) -> None:
        """The attempts of one planning call (see :meth:`_solve_restarting`)."""
        cutoff = self.restart_s
        attempt = 0
        work = self.budget_clock == "work"
        while True:
            # Attempt 0 keeps the planner's seed: without a cutoff nothing changes.
            self._attempt_seed = self.seed + 104_729 * attempt
            # On the work clock the attempt that the deadline would end anyway is not
            # foreseen (that would read the wall clock): every attempt gets its cutoff, and
            # the deadline ends whichever runs when it passes.
            last = cutoff is None or (not work and deadline.remaining <= cutoff)
            try:
                attempt_deadline = deadline
                if cutoff is not None and not last:
                    attempt_deadline = AttemptCutoff(cutoff, deadline, self.work if work else None)
                self._solve(state, attempt_deadline)
                return
            except PlanningTimeout:
                if last or cutoff is None:  # (cutoff is None implies last; for mypy)
                    raise
                deadline.check()
                if work and not attempt_deadline.expired():
                    # Not the attempt's cutoff but the call's time running short (Fast
                    # Downward does not start in too little of it): a restart would not
                    # have more.
                    raise
                self.cutoffs += 1
                cutoff *= self.restart_growth
            except Stuck:
                if self.stucks >= self.stuck_restarts:
                    raise
                deadline.check()
                self.stucks += 1
            attempt += 1

    def _solve(self, state: State, deadline: Deadline) -> None:
        raise NotImplementedError

    def work(self) -> float:
        """Work done in this planning call so far, in nominal seconds: the clock of
        ``budget_clock: work``. It counts what the interfaces report (NAMO: collision
        checks, IK solves, grid cells searched; see ``NamoTampInterface.work``) and task
        planning, each at a fixed cost, so it reads the same on any machine."""
        live = self._live
        return self._work_done + (float(live.work()) if live is not None else 0.0)

    def _open(self, interface: Any) -> Any:
        """Make ``interface`` the one whose work :meth:`work` counts (until it is closed)."""
        self._live = interface if hasattr(interface, "work") else None
        return interface

    def _progress(self, deadline: Deadline, seconds: float) -> None:
        """Record ``seconds`` of work that succeeded (a refined step) in an attempt: under
        ``restart_clock: stalled`` they do not count toward its cutoff."""
        if self.restart_clock == "stalled" and isinstance(deadline, AttemptCutoff):
            deadline.credit(seconds)

    def _add_time(self, stage: str, seconds: float) -> None:
        self.stage_times[stage] = self.stage_times.get(stage, 0.0) + seconds

    def _finish(self, interface: TampInterface) -> None:
        """Close the interface and take over its stage times and work."""
        if self._live is interface:
            self._work_done, self._live = self.work(), None
        interface.close()
        for stage, seconds in interface.stage_times.items():
            self._add_time(stage, seconds)

    def _adopt(self, camp: CAMP | None, actions: list[Action], states: list[State]) -> None:
        """Make ``actions`` (executed in the interface's simulator, visiting ``states``) the
        plan, in the CAMP's own variables if planning happened in one."""
        if camp is not None:
            self._plan = [camp.tau(a) for a in actions]
            self._expected = [camp.sigma(s) for s in states]
        else:
            self._plan, self._expected = list(actions), list(states)
        self._step = 0


class TAMP(InterfacePlanner):
    """Interface-layer TAMP: Fast Downward for tasks, the domain's refiners for motions.

    Settings:
        search: Fast Downward's ``--search`` for the symbolic layer.
        max_replans: give up (no plan) after this many refinement failures.
        max_resamples: how many unexplained refinement failures (nothing learnt) are retried
            with fresh samples before giving up.
        motion_timeout_s: the budget of one motion-planning query (capped by the deadline).
        motion_planner: the OMPL planner for base motions (e.g. RRTConnect).
        detour_timeout_s: the budget for looking for a way around known obstructions.
        relaxed: how obstructions are named: ``grid`` (a path through the fewest movable
            objects), ``ompl`` (one motion plan through movable objects, whichever it
            crosses: the paper's interface layer) or ``ompl_doors`` (the same, planned
            doorway to doorway along the shortest route that ignores movable objects).
        guide: ``doors`` splits a base motion that crosses rooms into OMPL queries from
            doorway to doorway, each within one room (the route from a grid search), and
            falls back to one whole query if a piece fails; ``none`` always plans whole;
            ``rooms`` is ``doors`` with motions inside one room planned in that room's
            bounds first (the whole world's if that fails).
        fd_mode: ``driver`` or ``resident`` (see the Fast Downward planner).
        restart_s: cutoff (seconds) of the first attempt of a planning call, after which
            planning starts over with fresh samples; null (the default) never restarts.
        restart_growth: each further attempt's cutoff is the last one's times this.
        stuck_restarts: how many times a call starts over with fresh samples when an
            attempt goes round in a loop (the same unsolvable symbolic problem from the same
            state, after forgetting: see :class:`Stuck`); 0 ends the call there instead.
        restart_clock: what counts toward ``restart_s``: ``wall`` every second of the
            attempt; ``stalled`` only the seconds not spent refining steps that succeeded
            (task planning, failed refinements), so long plans are not cut off for length.
        edge_step_m: OMPL checks a base motion's edges every this many metres of SE(2)
            distance, in every query's bounds alike; null (the default) keeps the domain's
            own resolution (NAMO: 0.4 % of the query's extent, so 2.8 cm in one room and
            17.6 cm across a 10×10 world).
        failed_motions: ``retry`` (the default) plans a motion in the whole world's bounds
            when its guided or in-room OMPL search fails, and searches again whenever a
            refiner asks for the same motion; ``give_up`` takes such a failed search as the
            motion's answer, and answers a motion that already failed in this planning call
            (same poses, same boxes, no larger budget) at once.
        budget_clock: what ``restart_s``, ``motion_timeout_s`` and ``detour_timeout_s`` are
            measured on. ``wall`` (the default): seconds, so a slower or busier machine gives
            up sooner and plans differently. ``work``: work done in nominal seconds (each
            collision check, IK solve, grid cell searched and Fast Downward call at a fixed
            cost, about its time on the machine of record), so the same command makes the
            same plans on any machine; OMPL then stops after a number of validity checks.
            The planning call's timeout stays on the wall clock either way.
        motion_seeds: how the motion planner's random numbers are seeded. ``process`` (the
            default): once per process, so a query's samples carry on from every query the
            process made before, and the same task planned twice in one process (or after
            another task) gets another plan. ``query``: before every query, from the
            planning call's own random numbers, so a call's plan depends on its task,
            context, seed and settings alone.
        goal_en_route: when a motion to somewhere else reaches the goal on its way, the
            plan ends there (the default); false keeps the earlier behaviour, where such a
            motion failed because it ended short of where it was going.
    """

    name = "tamp"
    # 2: relaxed grid searches run on the free cells only (the same paths, in less time).
    version = "2"

    def __init__(
        self,
        seed: int = 0,
        search: str = "astar(lmcut())",
        max_replans: int = 30,
        motion_timeout_s: float = 1.0,
        motion_planner: str = "RRTConnect",
        detour_timeout_s: float = 0.5,
        fd_mode: str = "driver",
        relaxed: str = "grid",
        max_resamples: int = 3,
        guide: str = "doors",
        restart_s: float | None = None,
        restart_growth: float = 2.0,
        stuck_restarts: int = 2,
        restart_clock: str = "wall",
        edge_step_m: float | None = None,
        failed_motions: str = "retry",
        budget_clock: str = "wall",
        motion_seeds: str = "process",
        goal_en_route: bool = True,
    ) -> None:
        super().__init__(
            seed,
            motion_timeout_s,
            motion_planner,
            detour_timeout_s,
            relaxed,
            guide,
            restart_s,
            restart_growth,
            stuck_restarts,
            restart_clock,
            edge_step_m,
            failed_motions,
            budget_clock,
            motion_seeds,
            goal_en_route,
        )
        if max_replans < 0:
            raise ValueError(f"max_replans must be non-negative, got {max_replans}")
        self.runner = FDRunner(search=search, mode=fd_mode)
        self.max_replans = max_replans
        if max_resamples < 0:
            raise ValueError(f"max_resamples must be non-negative, got {max_resamples}")
        self.max_resamples = max_resamples
        self.deviations = 0
        self.restarts = 0
        self.resamples = 0

    def prepare(self, mdp: FactoredMDP, deadline: Deadline) -> None:
        self.deviations = 0
        self.restarts = 0
        self.resamples = 0
        super().prepare(mdp, deadline)

    def act(self, state: State, deadline: Deadline) -> Action:
        mdp = self._mdp
        if mdp is None:
            raise PlanningError("TAMP.act called before prepare")
        if self._step < len(self._plan) and self._expected[self._step] != state:
            # The plan was verified in the simulator of the MDP planned in; if the real world
            # disagrees, a CAMP dropped something that matters (e.g. a box its CSIs missed).
            # Replanning in the same CAMP would repeat the mistake, so give up on it and let
            # the caller fall back to another abstraction.
            self.deviations += 1
            if isinstance(mdp, CAMP) or self.deviations > 1:
                raise NoPlanFound(
                    f"execution left the verified plan at step {self._step}: the "
                    "abstraction misses something that matters here"
                )
        if self._step >= len(self._plan) or self._expected[self._step] != state:
            self._solve_restarting(state, deadline)
        action = self._plan[self._step]
        self._step += 1
        return action

    def _solve(self, state: State, deadline: Deadline) -> None:
        mdp = self._mdp
        assert mdp is not None
        base, camp = tamp_base(mdp)
        full = camp.sigma_inv(state) if camp is not None else state
        interface = self._open(base.tamp_interface(full, camp, self._attempt_seed, self.settings))
        actions: list[Action] = []
        states: list[State] = [full]
        replans = 0
        symbolic_steps = 0
        # How often Fast Downward proved each (symbolic problem, state) unsolvable in this
        # attempt.
        dead_ends: Counter[tuple[str, str]] = Counter()
        try:
            while True:
                deadline.check()
                domain, problem = interface.pddl()
                t0 = time.perf_counter()
                # Counted at a nominal cost whatever the budgets' clock (``work_total``).
                self._work_done += fd_work(problem)
                try:
                    if self.budget_clock == "work":
                        # Fast Downward is killed only at the call's deadline: killed at an
                        # attempt's cutoff, it would end a different attempt on a slower
                        # machine.
                        lines = self.runner.solve(domain, problem, deadline.call)
                    else:
                        lines = self.runner.solve(domain, problem, deadline)
                except Unsolvable:
                    # The obstructions learnt so far, each read off one sampled path, cannot
                    # all hold of the ways the plan needs (e.g. A blocks the way to B and B
                    # the way to A). Forget them and rediscover from the state reached: the
                    # boxes already moved stay moved.
                    replans += 1
                    dead_end = (problem, repr(states[-1]))
                    dead_ends[dead_end] += 1
                    if dead_ends[dead_end] > 2:
                        # Once back is how a two-step forget works (NAMO drops its inferred
                        # orders, relearns them with the same obstructions, then drops
                        # everything), and tasks solved that way do recur once. A third
                        # time, forgetting everything led back here too (NAMO: the robot has
                        # put boxes down around itself and every way out names the same two
                        # boxes as blocking each other): it would go round until max_replans.
                        raise Stuck(
                            f"went round in a loop after {replans} replans: the same "
                            "obstructions were relearnt from the same state"
                        ) from None
                    if not interface.forget() or replans > self.max_replans:
                        raise
                    self.restarts += 1
                    continue
                finally:
                    self._add_time("task_planning", time.perf_counter() - t0)
                steps = [tuple(line.strip("() ").split()) for line in lines if line.startswith("(")]
                failed: Refinement | None = None
                for step in steps:
                    deadline.check()
                    t0, c0 = time.perf_counter(), deadline.clock()
                    outcome = interface.refine(step, deadline)
                    self._add_time("refinement", time.perf_counter() - t0)
                    symbolic_steps += 1
                    if not outcome.ok:
                        failed = outcome
                        break
                    self._progress(deadline, deadline.clock() - c0)
                    actions += outcome.actions
                    states += outcome.states
                    if interface.at_goal():
                        break  # reached on the way (``goal_en_route``): the rest is moot
                if failed is None:
                    if not interface.at_goal():
                        raise NoPlanFound("the refined plan does not reach the goal")
                    break
                if not failed.facts:
                    # Nothing to learn, but refinement samples (target poses, placements,
                    # OMPL's random trees): the same step may refine on another draw, as
                    # Srivastava et al.'s interface layer resamples before giving up.
                    if self.resamples >= self.max_resamples or replans >= self.max_replans:
                        raise NoPlanFound(f"refinement failed: {failed.reason}")
                    self.resamples += 1
                    replans += 1
                    continue
                replans += 1
                if replans > self.max_replans:
                    raise NoPlanFound(f"gave up after {self.max_replans} replans: {failed.reason}")
                interface.learn(failed.facts)
        finally:
            self._finish(interface)
        # The interface executed every action in the simulator of the MDP being planned in:
        # these are the states execution will visit.
        self._adopt(camp, actions, states)
        self.last_stats = {
            "actions": len(actions),
            "symbolic_steps": symbolic_steps,
            "replans": replans,
            "restarts": self.restarts,
            "resamples": self.resamples,
            "cutoffs": self.cutoffs,
            "stuck": self.stucks,
            "collision_checks": int(getattr(interface, "checks", 0)),
            "failed_motions_remembered": int(getattr(interface, "failures_remembered", 0)),
        }
        if not self._plan:
            raise NoPlanFound("the task planner returned an empty plan outside the goal")
