"""The methods compared in the paper (section 5.2), behind one interface.

CAMP (ours, with the do-no-harm gate of learning/gate.py and ranked fallbacks), the paper's
CAMP without the gate (``camp_ungated``), the CAMP ablation (sink only, no projection), pure
planning, plan transfer (majority vote over training plans), policy learning (state → action
imitation), task-conditioned policy learning (state + task features), and the oracle (best
context per test task in hindsight, the upper bound for context selection).
"""

from __future__ import annotations

import random
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from camp_planner.core.camp import CAMP
from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.core.feasibility import screen
from camp_planner.core.mdp import Action, FactoredMDP, State, freeze
from camp_planner.core.objective import Attempt, EpisodeResult, run_episode, run_with_fallbacks
from camp_planner.core.planner import Deadline, Planner
from camp_planner.core.relevance import relevant_from_csis
from camp_planner.core.role_relevance import RoleRelevance
from camp_planner.learning import ALL_METHODS
from camp_planner.learning.bundle import Bundle, load_bundle, shipped_bundle
from camp_planner.learning.gate import GainTable, GateConfig, GateDecision, decide
from camp_planner.learning.labels import Score, ScoreMatrix, score_of
from camp_planner.learning.selector import ContextSelector, SelectorConfig
from camp_planner.learning.structural import selector_input
from camp_planner.planners import make_planner
from camp_planner.workflow import Pipeline


def _as_tuple(value: object) -> tuple[Hashable, ...]:
    """A stored (JSON) state or action back as the tuple it was."""
    try:
        value = freeze(value)
    except TypeError as exc:
        raise CampError(f"unexpected value in a stored trajectory: {exc}") from exc
    if not isinstance(value, tuple):
        raise CampError(f"a stored state or action should be a list, got {value!r}")
    return value


@dataclass
class TrainingData:
    """What the learned methods may use: training tasks, their features and score matrix."""

    pipe: Pipeline
    planner: str
    matrix: ScoreMatrix
    features: np.ndarray
    seed: int

    def best_trajectories(self) -> list[tuple[int, list[State], list[Action]]]:
        """Per training task, the trajectory of its best context (the imitation targets)."""
        out = []
        for task in self.matrix.tasks:
            best = self.matrix.context_ids[self.matrix.best_index(task)]
            s = self.matrix.get(task, best)
            if s.states is None or s.actions is None:
                continue
            states = [_as_tuple(x) for x in s.states]
            actions = [_as_tuple(x) for x in s.actions]
            out.append((task, states, actions))
        return out


class Method(ABC):
    """Something that acts in a test task and is scored by the objective."""

    name: str = "method"

    def fit(self, data: TrainingData) -> None:  # noqa: B027 (optional hook)
        """Use the training data (default: nothing to learn)."""

    @abstractmethod
    def evaluate(self, pipe: Pipeline, planner: str, task_index: int, seed: int) -> Score:
        """Run on test task ``task_index`` and return its score."""


class Pure(Method):
    name = "pure"

    def evaluate(self, pipe: Pipeline, planner: str, task_index: int, seed: int) -> Score:
        result, _ = pipe.run(pipe.task("test", task_index), planner, None, seed=seed)
        return score_of(task_index, "pure", result)


class OtherPlanner(Method):
    """A baseline that is its own planner, in the full task (e.g. Stilman's NAMO algorithm),
    charged with its own λ from the configuration."""

    def __init__(self, name: str, planner: str) -> None:
        self.name = name
        self.planner = planner

    def evaluate(self, pipe: Pipeline, planner: str, task_index: int, seed: int) -> Score:
        result, _ = pipe.run(pipe.task("test", task_index), self.planner, None, seed=seed)
        return score_of(task_index, self.name, result)


class CampMethod(Method):
    """Select a context with the bundle's selector, build the CAMP, plan, execute; on failure
    fall back to the next-ranked contexts and finally the universal context."""

    def __init__(
        self,
        bundle: Bundle,
        ablation: bool = False,
        max_fallbacks: int = 2,
        gate: bool | None = None,
    ) -> None:
        self.bundle = bundle
        self.ablation = ablation
        self.max_fallbacks = max_fallbacks
        # None: as ``camp.gate.enabled`` says; False: the paper's CAMP, which always plans in
        # the selector's choice (the ``camp_ungated`` method, to measure what the gate does).
        self.gate = gate
        self.name = "camp_ablation" if ablation else "camp" if gate is not False else "camp_ungated"
        stored = bundle.metadata.get("gain_table")
        self.gain_table = GainTable.from_json(stored) if stored is not None else None
        roles = bundle.metadata.get("role_relevance")
        self.roles = RoleRelevance.from_json(roles) if roles is not None else None
        if self.roles is None and any(c.is_template for c in bundle.space):
            raise CampError("the bundle's space has context templates but no role relevance")
        # A context's relevant set depends only on its CSIs and the reward variables, so a
        # service answering many scenes computes it once per context.
        self._relevant: dict[tuple[str, frozenset[str]], frozenset[str]] = {}
        # torch's first forward passes cost tens of milliseconds (allocator and kernel
        # set-up); a deployed selector pays that once at start-up, not in a task's budget.
        selector = bundle.selector
        for _ in range(3):
            selector.ranked(np.zeros(selector.input_shape, dtype=np.float32))

    def ranked_contexts(
        self, pipe: Pipeline, task: Any, mdp: FactoredMDP | None = None
    ) -> list[tuple[Context, float]]:
        """The selector's ranking, without the contexts screened out as unable to reach the
        goal (when the selector screens)."""
        return self.selection(pipe, task, mdp)[0]

    def selection(
        self, pipe: Pipeline, task: Any, mdp: FactoredMDP | None = None
    ) -> tuple[list[tuple[Context, float]], list[Context]]:
        """(ranked contexts kept, contexts screened out); ``mdp``: the task's MDP when the
        caller already built it (a structural selector reads it)."""
        selector = self.bundle.selector
        x = selector_input(
            pipe,
            task,
            selector.cfg.model,
            list(self.bundle.space),
            lambda m, context: self.relevant(pipe, m, context),
            mdp,
        )
        ranked = [(self.bundle.space[i], p) for i, p in selector.ranked(x)]
        if not selector.cfg.screen:
            return ranked, []
        return screen(ranked, pipe.domain.region_graph(task))

    def gate_config(self, pipe: Pipeline) -> GateConfig:
        """The configuration's ``camp.gate``, switched off for the ungated method."""
        cfg = GateConfig.from_config(pipe.config)
        return replace(cfg, enabled=False) if self.gate is False else cfg

    def decide(self, pipe: Pipeline, ranked: Sequence[tuple[Context, float]]) -> GateDecision:
        """The do-no-harm gate's decision on the selector's ranking (learning/gate.py)."""
        return decide(ranked, self.gain_table, self.gate_config(pipe))

    def plan_order(
        self, pipe: Pipeline, ranked: Sequence[tuple[Context, float]], decision: GateDecision
    ) -> list[Context]:
        """The contexts to try, in order: the gate's choice, then (if it committed to a
        context) the next-ranked contexts the gate would also commit to, up to
        ``max_fallbacks``, and finally the universal context."""
        order = [decision.context]
        if decision.committed and not decision.context.is_universal:
            for context, _ in ranked[1:]:
                if len(order) > self.max_fallbacks:
                    break
                if context.is_universal:
                    continue
                if self.decide(pipe, [(context, 0.0)]).committed:
                    order.append(context)
        if not any(c.is_universal for c in order):
            order.append(Context.universal())
        return order

    def relevant(self, pipe: Pipeline, mdp: FactoredMDP, context: Context) -> frozenset[str]:
        """The relevant variables of a concrete ``context`` from the bundle's CSIs (cached),
        or by role for a template's instance."""
        if not pipe.needs_csis(context):
            return frozenset(v.name for v in mdp.variables)
        if self.roles is not None:
            return self.roles.relevant(mdp, context)
        key = (context.id, frozenset(mdp.reward_vars))
        found = self._relevant.get(key)
        if found is None:
            csis = self.bundle.csis.get(context.id)
            if csis is None:
                raise CampError(f"the bundle has no CSIs for context {context.name}")
            found = self._relevant[key] = relevant_from_csis(csis, mdp.reward_vars)
        return found

    def build(self, pipe: Pipeline, mdp: FactoredMDP, context: Context, task: Any) -> CAMP:
        """The CAMP of ``context`` (a template: its instance on ``task``)."""
        context = pipe.domain.instantiate(context, task)
        sink = float(pipe.config["camp"]["sink_reward"])
        if self.ablation:
            return CAMP.build(mdp, context, None, sink)
        return CAMP.build(mdp, context, self.relevant(pipe, mdp, context), sink)

    def planned_in(self, pipe: Pipeline, context: Context, camp: CAMP) -> CAMP | None:
        """What an attempt plans in: the CAMP, or (None) the task's own MDP when the CAMP is
        the universal context keeping every variable. That CAMP is the task itself, and
        planning it through the CAMP's state mapping only adds the mapping's cost: 20-40 %
        of BFS-replan's time in the gridworld, where pure planning made the same plan."""
        if context.is_universal and not self.ablation and not pipe.needs_csis(context):
            return None
        return camp

    def evaluate(self, pipe: Pipeline, planner: str, task_index: int, seed: int) -> Score:
        run = self.run(pipe, planner, pipe.task("test", task_index), seed)
        return score_of(task_index, run.first.id, run.result)

    def run(self, pipe: Pipeline, planner: str, task: Any, seed: int) -> CampRun:
        """Select, build the CAMP, plan and execute ``task``, falling back down the ranking
        (and finally to the universal context) whenever planning fails."""
        mdp = pipe.domain.make_mdp(task, pipe.config)
        settings = pipe.planner_settings(planner)
        t0 = time.perf_counter()
        ranked = self.ranked_contexts(pipe, task, mdp)
        decision = self.decide(pipe, ranked)
        order = self.plan_order(pipe, ranked, decision)
        selection = time.perf_counter() - t0
        built: list[tuple[Context, CAMP]] = []
        budget = attempt_budget(pipe.config)

        def attempts() -> Iterator[Attempt]:
            for i, context in enumerate(order):
                start = time.perf_counter()
                camp = self.build(pipe, mdp, context, task)
                built.append((context, camp))
                setup = time.perf_counter() - start + (selection if i == 0 else 0.0)
                yield Attempt(
                    context.id,
                    self.planned_in(pipe, context, camp),
                    make_planner(planner, seed=seed, **settings),
                    setup,
                    # The universal context is the last resort: it keeps the full timeout
                    # and follows its plan even when the horizon cuts it short.
                    None if context.is_universal else budget,
                    horizon_fallback=not context.is_universal,
                )

        result = run_with_fallbacks(
            mdp,
            attempts(),
            lam=pipe.lam(planner),
            timeout_s=float(pipe.config["timeout_s"]),
            rng=random.Random(seed),
        )
        context, camp = built[-1]
        return CampRun(result, ranked, selection, order[0], context, camp, decision)


def bundled_camp_method(
    pipe: Pipeline,
    planner: str,
    bundle: Path | None = None,
    settings: Mapping[str, Any] | None = None,
    timeout_s: float | None = None,
) -> CampMethod:
    """The CAMP method with ``bundle``'s selector (default: the one the package ships for the
    pipeline's domain and ``planner``), planning with the configuration's planner settings
    updated by ``settings`` and its timeout replaced by ``timeout_s`` (the method reads both
    from the configuration)."""
    world = pipe.domain.world_name(pipe.config)
    path = bundle if bundle is not None else shipped_bundle(pipe.domain.name, planner, world)
    if path is None:
        where = f" in the {world} world" if world else ""
        raise CampError(
            f"the package ships no selector bundle for {pipe.domain.name} with {planner}"
            f"{where}: give one with --bundle"
        )
    method = CampMethod(load_bundle(path, pipe.domain.name, pipe.domain.version))
    pipe.config["planners"][planner] = {**pipe.planner_settings(planner), **(settings or {})}
    if timeout_s is not None:
        pipe.config["timeout_s"] = timeout_s
    return method


def attempt_budget(config: Mapping[str, Any]) -> float | None:
    """``camp.attempt_budget_s``: the seconds a non-universal context may plan before the
    next fallback takes over (None: the call timeout). Heavy-tailed planners (NAMO's TAMP)
    sometimes run a small context for 10 s where the universal context needs 1.5 s."""
    value = config.get("camp", {}).get("attempt_budget_s")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise CampError(f"camp.attempt_budget_s must be a positive number or null, got {value!r}")
    return float(value)


@dataclass
class CampRun:
    """One task planned the CAMP way: the episode, the selector's ranking (probabilities),
    the selection time, the context tried first, the context and CAMP of the attempt that
    ended the episode (a fallback's, if the first failed), and the gate's decision."""

    result: EpisodeResult
    ranked: list[tuple[Context, float]]
    selection_s: float
    first: Context
    context: Context
    camp: CAMP
    gate: GateDecision | None = None


class Oracle(Method):
    """The best context of each test task in hindsight, read from the test score matrix."""

    name = "oracle"

    def __init__(self, test_matrix: ScoreMatrix) -> None:
        self.matrix = test_matrix

    def evaluate(self, pipe: Pipeline, planner: str, task_index: int, seed: int) -> Score:
        best = self.matrix.context_ids[self.matrix.best_index(task_index)]
        return self.matrix.get(task_index, best)


# Added to the run's seed when the oracle's context is planned again, so that the rerun draws
# randomness independent of the run that made the context look best.
RERUN_SEED_OFFSET = 7919


class OracleRerun(Oracle):
    """The oracle's context of each test task, planned again with fresh randomness.

    With a randomised planner (TAMP's samplers, MCTS's time budget) the oracle's figure is
    the best of one noisy run per context: the maximum of noisy scores overstates what the
    best choice earns on average (the winner's curse). Planning the chosen context once more,
    independently of the run that chose it, estimates what a perfect selector would earn."""

    name = "oracle_rerun"

    def evaluate(self, pipe: Pipeline, planner: str, task_index: int, seed: int) -> Score:
        best = self.matrix.context_ids[self.matrix.best_index(task_index)]
        context = next((c for c in pipe.space if c.id == best), None)
        if context is None:
            raise CampError(f"the oracle's context {best} is not in this run's context space")
        result, _ = pipe.run(
            pipe.task("test", task_index), planner, context, seed=seed + RERUN_SEED_OFFSET
        )
        return score_of(task_index, best, result)


class _Scripted(Planner):
    """Adapts a reactive policy (state → action) to the planner interface."""

    def __init__(self, choose: Any) -> None:
        super().__init__()
        self.choose = choose
        self.mdp: FactoredMDP | None = None
        self.t = 0

    def prepare(self, mdp: FactoredMDP, deadline: Deadline) -> None:
        self.mdp = mdp
        self.t = 0

    def act(self, state: State, deadline: Deadline) -> Action:
        assert self.mdp is not None
        action: Action = self.choose(self.mdp, state, self.t)
        self.t += 1
        return action


class PlanTransfer(Method):
    """At step t, the action most training plans took at step t (open loop)."""

    name = "plan_transfer"

    def fit(self, data: TrainingData) -> None:
        self.votes: list[Counter[Action]] = []
        for _, _, actions in data.best_trajectories():
            for t, a in enumerate(actions):
                if t >= len(self.votes):
                    self.votes.append(Counter())
                self.votes[t][a] += 1

    def evaluate(self, pipe: Pipeline, planner: str, task_index: int, seed: int) -> Score:
        def choose(mdp: FactoredMDP, state: State, t: int) -> Action:
            legal = list(mdp.applicable_actions(state))
            if t < len(self.votes):
                for action, _ in self.votes[t].most_common():
                    if action in legal:
                        return action
            return legal[0]

        return _run_policy(pipe, planner, task_index, seed, self.name, choose)


class StateEncoder:
    """One-hot per discrete state variable (numbers as themselves for continuous ones)."""

    def __init__(self, mdp: FactoredMDP, max_domain: int = 512) -> None:
        self.slots: list[dict[Hashable, int] | None] = []
        size = 0
        for var in mdp.state_vars:
            if var.domain is not None and len(var.domain) <= max_domain:
                self.slots.append({v: size + i for i, v in enumerate(var.domain)})
                size += len(var.domain)
            else:
                self.slots.append(None)
                size += 1
        self.size = size

    def encode(self, state: State) -> np.ndarray:
        out = np.zeros(self.size, dtype=np.float32)
        offset = 0
        for value, slot in zip(state, self.slots, strict=True):
            if slot is None:
                out[offset] = float(value) if isinstance(value, (int, float)) else 0.0
                offset += 1
            else:
                index = slot.get(value)
                if index is not None:
                    out[index] = 1.0
                offset += len(slot)
        return out


class PolicyLearning(Method):
    """Imitation: a classifier from the state (and, task-conditioned, the task features) to
    the action the best context's plan took."""

    def __init__(self, task_conditioned: bool) -> None:
        self.task_conditioned = task_conditioned
        self.name = "task_policy" if task_conditioned else "policy"

    def _inputs(self, state: State, features: np.ndarray) -> np.ndarray:
        x = self.encoder.encode(state)
        if self.task_conditioned:
            x = np.concatenate([x, features.ravel().astype(np.float32)])
        return x

    def fit(self, data: TrainingData) -> None:
        pipe = data.pipe
        probe = pipe.domain.make_mdp(pipe.task("train", 0), pipe.config)
        self.encoder = StateEncoder(probe)
        xs: list[np.ndarray] = []
        ys: list[int] = []
        vocab: dict[Action, int] = {}
        for task, states, actions in data.best_trajectories():
            for s, a in zip(states, actions, strict=False):
                xs.append(self._inputs(s, data.features[task]))
                ys.append(vocab.setdefault(a, len(vocab)))
        if not xs:
            raise CampError("no training trajectories to imitate")
        self.actions = list(vocab)
        # The paper's network and optimiser; imitation targets are always single actions.
        settings = {
            **pipe.config["selector"],
            "seed": data.seed,
            "labels": "hard",
            "model": "net",
        }
        cap = pipe.config.get("baselines", {}).get("policy_max_iterations")
        if cap is not None:  # a domain may bound training that its stopping rule never ends
            settings["max_iterations"] = min(int(settings["max_iterations"]), int(cap))
        cfg = SelectorConfig.from_mapping(settings)
        self.net = ContextSelector((len(xs[0]),), len(self.actions), cfg)
        self.report = self.net.fit(np.stack(xs), np.asarray(ys))

    def evaluate(self, pipe: Pipeline, planner: str, task_index: int, seed: int) -> Score:
        features = pipe.domain.features(pipe.task("test", task_index))

        def choose(mdp: FactoredMDP, state: State, t: int) -> Action:
            legal = list(mdp.applicable_actions(state))
            ranked = self.net.ranked(self._inputs(state, features))
            for i, _ in ranked:
                action: Action = self.actions[i]
                if action in legal:
                    return action
            return legal[0]

        return _run_policy(pipe, planner, task_index, seed, self.name, choose)


def _run_policy(
    pipe: Pipeline, planner: str, task_index: int, seed: int, label: str, choose: Any
) -> Score:
    task = pipe.task("test", task_index)
    mdp = pipe.domain.make_mdp(task, pipe.config)
    result: EpisodeResult = run_episode(
        mdp,
        _Scripted(choose),
        lam=pipe.lam(planner),
        timeout_s=float(pipe.config["timeout_s"]),
        rng=random.Random(seed),
    )
    return score_of(task_index, label, result)


def make_methods(
    names: Sequence[str], bundle: Bundle | None, test_matrix: ScoreMatrix | None
) -> list[Method]:
    """Method objects by name (bundle needed for camp*, the test matrix for the oracle)."""
    out: list[Method] = []
    for name in names:
        if name not in ALL_METHODS:
            raise CampError(f"unknown method '{name}'; choose from: {', '.join(ALL_METHODS)}")
        if name in ("camp", "camp_ablation"):
            if bundle is None:
                raise CampError(f"method {name} needs a trained selector bundle")
            out.append(CampMethod(bundle, ablation=name == "camp_ablation"))
        elif name == "camp_ungated":
            if bundle is None:
                raise CampError(f"method {name} needs a trained selector bundle")
            out.append(CampMethod(bundle, gate=False))
        elif name in ("oracle", "oracle_rerun"):
            if test_matrix is None:
                raise CampError("the oracle needs the test-task score matrix")
            out.append(Oracle(test_matrix) if name == "oracle" else OracleRerun(test_matrix))
        elif name == "pure":
            out.append(Pure())
        elif name == "stilman":
            out.append(OtherPlanner("stilman", "stilman"))
        elif name == "plan_transfer":
            out.append(PlanTransfer())
        else:
            out.append(PolicyLearning(task_conditioned=name == "task_policy"))
    return out
