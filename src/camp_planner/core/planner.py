"""The planner interface every solver implements, and the deadline it must honour.

A planner is given whatever MDP it should plan in (the full task or a CAMP); it never knows
which. ``prepare`` is where offline planners do their work; ``act`` is called at every step.
Both receive a :class:`Deadline` and must raise :class:`PlanningTimeout` once it passes.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

from camp_planner.core.mdp import Action, FactoredMDP, State


class PlanningError(RuntimeError):
    """A planner could not produce an action."""


class PlanningTimeout(PlanningError):
    """A planning call ran out of time."""


class NoPlanFound(PlanningError):
    """The planner proved (or concluded) that no rewarding plan exists."""


class Unsolvable(NoPlanFound):
    """A search proved its (symbolic) problem has no solution: callers that built the
    problem from assumptions, such as a TAMP layer's learnt obstructions, may revise them."""


@dataclass
class Deadline:
    """A wall-clock budget for one planning call; ``seconds=None`` means unlimited."""

    seconds: float | None
    clock: Callable[[], float] = time.perf_counter

    def __post_init__(self) -> None:
        if self.seconds is not None and math.isnan(self.seconds):
            # NaN compares false with everything: the budget would never expire.
            raise ValueError("a deadline of NaN seconds")
        self.start = self.clock()

    @property
    def elapsed(self) -> float:
        return self.clock() - self.start

    @property
    def remaining(self) -> float:
        if self.seconds is None:
            return float("inf")
        return self.seconds - self.elapsed

    def expired(self) -> bool:
        return self.seconds is not None and self.elapsed >= self.seconds

    @property
    def call(self) -> Deadline:
        """The whole planning call's deadline (this one, unless it is a part of one)."""
        return self

    def check(self) -> None:
        """Raise :class:`PlanningTimeout` if the budget is spent."""
        if self.expired():
            raise PlanningTimeout(f"planning call exceeded its {self.seconds:.3g} s budget")


class Planner(ABC):
    """A solver for factored MDPs, constructed from keyword settings and a seed."""

    name: str = "planner"
    # Bump when a change makes the planner return other plans or take other times: cached
    # evaluations that ran it as a baseline are keyed by it, so a baseline's fix reruns the
    # evaluation without throwing away the scores (labels) of the planner being abstracted,
    # which the domain's version keys. 1: unless a planner says otherwise.
    version: str = "1"
    # Nominal seconds of work done by the planning calls since ``prepare``, for planners that
    # count their work (TAMP and Stilman's algorithm count collision checks, IK solves, grid
    # cells searched and task-planner calls, each at a fixed cost): a measure of compute that
    # reads the same on any machine and at any load, where wall-clock time varies by 15-60 %
    # for the same plan. None: the planner does not count its work.
    work_total: float | None = None

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        # Seconds per named stage of this planner's own work (e.g. task planning, motion
        # planning), summed over calls; episode results report them next to the totals.
        self.stage_times: dict[str, float] = {}

    @abstractmethod
    def prepare(self, mdp: FactoredMDP, deadline: Deadline) -> None:
        """Start a new episode in ``mdp`` (offline planners compute their policy here)."""

    @abstractmethod
    def act(self, state: State, deadline: Deadline) -> Action:
        """The action to take in ``state`` of the MDP given to :meth:`prepare`."""

    def steps_to_go(self) -> int | None:
        """How many steps the plan being followed still needs, counting the action the last
        :meth:`act` returned, to reach what it plans for; None when the planner follows no
        plan of known length (a policy, a tree search). The episode loop falls back from an
        abstraction whose plan cannot finish in the steps the horizon leaves."""
        return None
