"""The methods compared in the paper (section 5.2), behind one interface.

CAMP (ours: the CAMP runtime, with its selection rule and fallbacks), the paper's CAMP
(``camp_ungated``: the selector's first choice, then the next-ranked), the CAMP ablation
(sink only, no projection), pure planning, plan transfer (majority vote over training
plans), policy learning (state → action imitation), task-conditioned policy learning (state
+ task features), and the oracle (best context per test task in hindsight, the upper bound
for context selection).
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from camp_planner.core.errors import CampError
from camp_planner.core.mdp import Action, FactoredMDP, State, freeze
from camp_planner.core.objective import EpisodeResult, run_episode
from camp_planner.core.planner import Deadline, Planner
from camp_planner.learning import ALL_METHODS
from camp_planner.learning.bundle import Bundle, load_bundle, shipped_bundle
from camp_planner.learning.labels import Score, ScoreMatrix, score_of
from camp_planner.learning.selector import ContextSelector, SelectorConfig
from camp_planner.runtime.camp_runtime import CampRuntime
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
    """The CAMP way, through the CAMP runtime (:mod:`camp_planner.runtime`): select with
    the bundle's selector and rule, build the CAMP, plan, execute, fall back.

    ``rule``: the selection rule (None: ``camp.selection.rule``); ``ungated`` is the paper's
    CAMP (the ``camp_ungated`` method, to measure what the rule does)."""

    def __init__(
        self,
        bundle: Bundle,
        ablation: bool = False,
        max_fallbacks: int = 2,
        rule: str | None = None,
    ) -> None:
        self.bundle = bundle
        self.ablation = ablation
        self.max_fallbacks = max_fallbacks
        self.rule = rule
        self.name = "camp_ablation" if ablation else "camp" if rule != "ungated" else "camp_ungated"
        self._runtimes: dict[tuple[int, str], tuple[Pipeline, CampRuntime]] = {}

    def runtime(self, pipe: Pipeline, planner: str) -> CampRuntime:
        """The runtime for ``pipe`` and ``planner`` (one per pipeline, kept warm)."""
        key = (id(pipe), planner)
        found = self._runtimes.get(key)
        if found is None or found[0] is not pipe:
            runtime = CampRuntime(
                pipe,
                planner,
                self.bundle,
                ablation=self.ablation,
                rule=self.rule,
                max_fallbacks=self.max_fallbacks,
            )
            found = self._runtimes[key] = (pipe, runtime)
        return found[1]

    def __getstate__(self) -> dict[str, Any]:
        # Runtimes hold a process's pipeline (simulators): a worker builds its own.
        return {**self.__dict__, "_runtimes": {}}

    def evaluate(self, pipe: Pipeline, planner: str, task_index: int, seed: int) -> Score:
        run = self.runtime(pipe, planner).run(pipe.task("test", task_index), seed)
        first = run.first
        return score_of(task_index, "give_up" if first is None else first.id, run.result)


def bundled_camp_method(
    pipe: Pipeline,
    planner: str,
    bundle: Path | None = None,
    settings: Mapping[str, Any] | None = None,
    timeout_s: float | None = None,
) -> CampMethod:
    """The CAMP method with ``bundle``'s selector (default: the one the package ships for the
    pipeline's domain and ``planner``), planning with the configuration's planner settings
    updated by ``settings`` and its timeout replaced by ``timeout_s`` (the runtime reads both
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
            out.append(CampMethod(bundle, rule="ungated"))
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
