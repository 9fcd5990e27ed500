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

Budgets (restart cutoffs, motion-planning budgets) are measured on the work the planning
call has done, in nominal seconds, so the same call makes the same plan on any machine; the
call's own timeout stays on the wall clock. Time is tracked per stage (task planning,
refinement and the domain's own stages such as motion planning) in
:attr:`Planner.stage_times`; every call honours its :class:`Deadline`.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
from collections import Counter
from collections.abc import Callable, Mapping
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

# How a domain's interface names obstructions (see :class:`InterfaceSettings`).
RELAXED_MODES = ("grid", "ompl")
# The nominal cost of one Fast Downward call, a fixed part and a part per character of the
# problem, which its translator reads (fitted to 79 calls in the paper's world and the
# 10×10 one on the machine of record, 2026-11-28: 12 ms and 48 ms medians).
FD_CALL_WORK_S = 0.015
FD_CHAR_WORK_S = 7e-5


def fd_work(problem: str) -> float:
    """The nominal seconds of work one Fast Downward call on ``problem`` counts for."""
    return FD_CALL_WORK_S + FD_CHAR_WORK_S * len(problem)


@dataclass(frozen=True)
class InterfaceSettings:
    """The settings every planner over a domain's TAMP interface shares (TAMP and Stilman's
    algorithm), declared once and handed to the interface as they are.

    Attributes:
        motion_timeout_s: the budget of one motion-planning query, in nominal seconds of
            work (capped by the call's deadline).
        motion_planner: the OMPL planner for base motions (e.g. RRTConnect).
        detour_timeout_s: the budget for looking for a way around known obstructions.
        relaxed: how obstructions are named. ``grid`` (the default): a path through the
            fewest movable objects. ``ompl``: one motion plan through movable objects,
            whichever it crosses, as Srivastava et al.'s interface layer does (the paper's
            setting: slower, kept for comparison with the paper).
        restart_s: the first attempt's cutoff, in nominal seconds of work not spent on
            steps refined successfully; past it planning starts over with fresh samples.
            None (the default) never restarts.
        restart_growth: each further attempt's cutoff is the last one's times this.
    """

    motion_timeout_s: float = 1.0
    motion_planner: str = "RRTConnect"
    detour_timeout_s: float = 0.5
    relaxed: str = "grid"
    restart_s: float | None = None
    restart_growth: float = 2.0

    def __post_init__(self) -> None:
        if not self.motion_timeout_s > 0:
            raise ValueError(f"motion_timeout_s must be positive, got {self.motion_timeout_s}")
        if self.relaxed not in RELAXED_MODES:
            raise ValueError(
                f"relaxed must be one of {', '.join(RELAXED_MODES)}, got {self.relaxed!r}"
            )
        if self.restart_s is not None and not self.restart_s > 0:
            raise ValueError(f"restart_s must be positive (or null: off), got {self.restart_s}")
        if not self.restart_growth >= 1:
            raise ValueError(f"restart_growth must be at least 1, got {self.restart_growth}")
        # Configuration files and ``--set`` give whole numbers where seconds are meant.
        for name in ("motion_timeout_s", "detour_timeout_s", "restart_growth"):
            object.__setattr__(self, name, float(getattr(self, name)))
        if self.restart_s is not None:
            object.__setattr__(self, "restart_s", float(self.restart_s))


SETTING_NAMES = tuple(f.name for f in dataclasses.fields(InterfaceSettings))


class AttemptCutoff(Deadline):
    """One attempt's budget inside a planning call's ``outer`` deadline, measured on
    ``clock`` (the planner's work done) and turned back by the work the attempt spent
    making progress (:meth:`credit`). It is expired once ``outer`` is."""

    def __init__(self, cutoff: float, outer: Deadline, clock: Callable[[], float]) -> None:
        super().__init__(cutoff, clock)
        self.outer = outer

    @property
    def call(self) -> Deadline:
        return self.outer.call

    def expired(self) -> bool:
        return super().expired() or self.outer.expired()

    def credit(self, seconds: float) -> None:
        """Give back ``seconds`` the attempt spent on work that succeeded."""
        assert self.seconds is not None
        self.seconds += seconds


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

    def snapshot(self) -> object:
        """What :meth:`restore` needs to bring the interface back to where it is now: its
        current state and symbolic knowledge, not its random numbers (a search that backs
        up draws fresh samples)."""

    def restore(self, snapshot: object) -> None:
        """Go back to a :meth:`snapshot` of this interface."""

    def close(self) -> None:
        """Undo any planning-only change to the domain's simulator."""

    @property
    def stage_times(self) -> dict[str, float]:
        """Seconds spent per stage of the domain's own refinement work."""


def tamp_base(mdp: FactoredMDP) -> tuple[Any, CAMP | None]:
    """The domain MDP offering a TAMP interface, and the CAMP wrapped around it if any.

    The domain MDP provides ``tamp_interface(state, camp, seed, settings)`` returning a
    :class:`TampInterface` for one planning call (e.g. ``NamoMDP``), ``settings`` being the
    planner's :class:`InterfaceSettings`."""
    camp = mdp if isinstance(mdp, CAMP) else None
    base: Any = camp.base if camp is not None else mdp
    if not hasattr(base, "tamp_interface"):
        raise PlanningError(
            f"the TAMP planner needs a domain with a task-and-motion interface; "
            f"{base.name} has none (use it on --domain namo)"
        )
    return base, camp


class InterfacePlanner(Planner):
    """What planners over a domain's TAMP interface share: their :class:`InterfaceSettings`,
    restarts, the work clock, the verified plan (actions and the states they lead to, mapped
    into the CAMP if there is one) and the interface's stage times.

    A subclass takes its own settings as parameters and the shared ones by name (``named``),
    or as one ``settings`` object that the named ones then override."""

    def __init__(
        self, seed: int, settings: InterfaceSettings | None, named: Mapping[str, Any]
    ) -> None:
        super().__init__(seed)
        unknown = sorted(set(named) - set(SETTING_NAMES))
        if unknown:
            raise ValueError(
                f"unknown setting(s) {', '.join(repr(k) for k in unknown)} for planner "
                f"'{self.name}'; it accepts: {', '.join(self.accepted_settings())}"
            )
        self.settings = dataclasses.replace(settings or InterfaceSettings(), **named)
        self.restart_s = self.settings.restart_s
        self.restart_growth = self.settings.restart_growth
        self.stuck_restarts = 0  # TAMP's loops (see Stuck); Stilman's algorithm has none
        self.stucks = 0  # attempts that ended in a loop (see Stuck) in the last planning call
        self.cutoffs = 0  # attempts abandoned at their cutoff in the last planning call
        self._attempt_seed = seed
        # Work done in this planning call, in nominal seconds: what closed interfaces and
        # task planning did, and the interface at work now.
        self._work_done = 0.0
        self._live: Any = None
        self._mdp: FactoredMDP | None = None
        self._plan: list[Action] = []
        self._expected: list[State] = []
        self._step = 0
        self.last_stats: dict[str, Any] = {}

    def steps_to_go(self) -> int | None:
        # ``_step`` already points past the action the last ``act`` returned.
        return len(self._plan) - self._step + 1 if self._plan else None

    @classmethod
    def accepted_settings(cls) -> list[str]:
        """Every setting the planner takes by name: its own, then the shared ones."""
        own = [
            p.name
            for p in inspect.signature(cls.__init__).parameters.values()
            if p.name not in ("self", "seed", "settings")
            and p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        ]
        return [*own, *SETTING_NAMES]

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
        ``restart_growth`` each time.

        Why: the refiners sample, and a few early draws (a box put down where it blocks
        the next way, a cramped approach pose) send a run into a long series of replans.
        Run times of the same task then spread over an order of magnitude (NAMO training
        task 15, universal context, 8 seeds: median 0.7 s, slowest 13.5 s), the heavy
        tail for which restarting randomised search is the standard cure (Gomes, Selman
        and Kautz, AAAI 1998). A geometric schedule bounds what a task that truly needs a
        long run loses. The cutoff counts only the work an attempt does while stalled:
        the work of every refinement that succeeded is given back (see :meth:`_progress`),
        so a task that needs many steps is not cut off for its length, only for its
        failures and replans. Attempts that fail (no plan, unsolvable) are not
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
        while True:
            # Attempt 0 keeps the planner's seed: without a cutoff nothing changes.
            self._attempt_seed = self.seed + 104_729 * attempt
            # Which attempt the call's deadline will end is not foreseen (that would read
            # the wall clock): every attempt gets its cutoff, and the deadline ends
            # whichever runs when it passes.
            attempt_deadline = deadline
            if cutoff is not None:
                attempt_deadline = AttemptCutoff(cutoff, deadline, self.work)
            try:
                self._solve(state, attempt_deadline)
                return
            except PlanningTimeout:
                if cutoff is None:
                    raise
                deadline.check()
                if not attempt_deadline.expired():
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
        """Work done in this planning call so far, in nominal seconds: the clock budgets
        are measured on. It counts what the interfaces report (NAMO: collision checks, IK
        solves, grid cells searched; see ``NamoTampInterface.work``) and task planning,
        each at a fixed cost, so it reads the same on any machine."""
        live = self._live
        return self._work_done + (float(live.work()) if live is not None else 0.0)

    def _open(self, interface: Any) -> Any:
        """Make ``interface`` the one whose work :meth:`work` counts (until it is closed)."""
        self._live = interface if hasattr(interface, "work") else None
        return interface

    def _progress(self, deadline: Deadline, work: float) -> None:
        """Record ``work`` that succeeded (a refined step) in an attempt: it does not count
        toward the attempt's cutoff."""
        if isinstance(deadline, AttemptCutoff):
            deadline.credit(work)

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
    """Interface-layer TAMP: Fast Downward (its translator kept resident) for tasks, the
    domain's refiners for motions.

    Settings, besides the shared :class:`InterfaceSettings` (by name or as ``settings``):
        search: Fast Downward's ``--search`` for the symbolic layer.
        max_replans: give up (no plan) after this many refinement failures.
        max_resamples: how many unexplained refinement failures (nothing learnt) are retried
            with fresh samples before giving up.
        stuck_restarts: how many times a call starts over with fresh samples when an
            attempt goes round in a loop (the same unsolvable symbolic problem from the same
            state, after forgetting: see :class:`Stuck`); 0 ends the call there instead.
    """

    name = "tamp"
    # Bumped whenever the same call would plan differently (CHANGELOG.md).
    version = "3"

    def __init__(
        self,
        seed: int = 0,
        search: str = "astar(lmcut())",
        max_replans: int = 30,
        max_resamples: int = 3,
        stuck_restarts: int = 2,
        settings: InterfaceSettings | None = None,
        **named: Any,
    ) -> None:
        super().__init__(seed, settings, named)
        if stuck_restarts < 0:
            raise ValueError(f"stuck_restarts must be non-negative, got {stuck_restarts}")
        self.stuck_restarts = int(stuck_restarts)
        if max_replans < 0:
            raise ValueError(f"max_replans must be non-negative, got {max_replans}")
        # TAMP calls Fast Downward at every replan: the driver's interpreter start-up cost
        # 0.6-0.8 s of task planning per NAMO episode, which the resident translator saves.
        self.runner = FDRunner(search=search, mode="resident")
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
        # A plan made by ``prepare`` starts where the task starts; a fallback taking over in
        # mid-episode is first asked to act elsewhere. That is a new start, not a deviation
        # (treated as one, every fallback after a partly executed plan gave up at once).
        if self._step == 0 and self._plan and self._expected[0] != state:
            self._plan = []
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
                self._work_done += fd_work(problem)
                try:
                    # Fast Downward is killed only at the call's deadline: killed at an
                    # attempt's cutoff, it would end a different attempt on a slower machine.
                    lines = self.runner.solve(domain, problem, deadline.call)
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
                        break  # reached on the way to somewhere else: the rest is moot
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
        }
        if not self._plan:
            raise NoPlanFound("the task planner returned an empty plan outside the goal")
