"""The CAMP runtime: one object owns a CAMP run from the task to the executed plan.

Every entry point plans through it: ``camp plan``, the CAMP methods of ``camp eval`` and
``camp sweep``, the planning service behind the ROS nodes, and racing. It holds

- the selection rule (:mod:`camp_planner.runtime.selection`) and its settings;
- the relevance source: the bundle's CSIs, the pipeline's CSI store (no bundle), or role
  relevance for a space of context templates;
- CAMP construction;
- planning and verification: every attempt is executed in the task's own MDP (the
  simulator, in the robot domains), so a plan that does not reach the goal there fails;
- the fallback order, and the budgets: ``camp.attempt_budget_s`` per planning call of every
  attempt but the last, and the attempt cap (:func:`camp_planner.core.objective.attempt_cap`)
  on every attempt's total compute, the last one's too where the domain may give up.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from camp_planner.core.camp import CAMP
from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.core.feasibility import screen
from camp_planner.core.mdp import FactoredMDP
from camp_planner.core.objective import Attempt, EpisodeResult, attempt_cap, run_with_fallbacks
from camp_planner.core.relevance import relevant_from_csis
from camp_planner.core.role_relevance import RoleRelevance
from camp_planner.learning.bundle import Bundle
from camp_planner.learning.gate import GainTable, GateConfig, decide
from camp_planner.learning.objective_model import ObjectiveModel
from camp_planner.learning.structural import selector_input
from camp_planner.planners import make_planner
from camp_planner.runtime.selection import (
    RULES,
    Candidate,
    Selection,
    SelectionSettings,
    bound_order,
)
from camp_planner.workflow import Pipeline

Progress = Callable[[str], None]


def attempt_budget(config: Mapping[str, Any]) -> float | None:
    """``camp.attempt_budget_s``: the seconds each planning call of an attempt other than
    the last may take before the next takes over (None: the call timeout). Heavy-tailed
    planners (NAMO's TAMP) sometimes run a small context for 10 s where the universal
    context needs 1.5 s."""
    value = config.get("camp", {}).get("attempt_budget_s")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise CampError(f"camp.attempt_budget_s must be a positive number or null, got {value!r}")
    return float(value)


@dataclass
class CampRun:
    """One task planned by the runtime: the episode, the selection (rule, candidates,
    fallback order), and the context and CAMP of the attempt that ended the episode (None:
    the robot gave up without planning)."""

    result: EpisodeResult
    selection: Selection
    context: Context | None
    camp: CAMP | None

    @property
    def first(self) -> Context | None:
        return self.selection.first


class CampRuntime:
    """Selection, relevance, CAMP construction, planning with fallbacks and budgets, for
    one pipeline (domain and configuration) and planner.

    ``bundle``: the trained selector with its CSIs and evidence (None: the universal context
    only, relevance from the pipeline's CSI store). ``ablation``: the paper's CAMP ablation
    (the sink only, no projection). ``rule`` overrides ``camp.selection.rule``.
    ``relevance``: where relevant variables come from, the bundle's CSIs (``bundle``) or the
    pipeline's CSI store (``store``: a benchmark that learns CSIs at another world size
    than the bundle was trained at)."""

    def __init__(
        self,
        pipe: Pipeline,
        planner: str,
        bundle: Bundle | None = None,
        *,
        ablation: bool = False,
        rule: str | None = None,
        max_fallbacks: int = 2,
        relevance: str = "bundle",
    ) -> None:
        if relevance not in ("bundle", "store"):
            raise CampError(f"relevance must be 'bundle' or 'store', got {relevance!r}")
        self.pipe = pipe
        self.from_store = relevance == "store" or bundle is None
        self.planner = planner
        self.settings = pipe.planner_settings(planner)  # unknown planner: a clear error now
        self.bundle = bundle
        self.ablation = ablation
        self.max_fallbacks = max_fallbacks
        selection = SelectionSettings.from_config(pipe.config, pipe.domain.gives_up(pipe.config))
        self.selection_settings = selection if rule is None else replace(selection, rule=rule)
        if self.rule not in RULES:
            raise CampError(f"the selection rule must be one of {', '.join(RULES)}, got {rule!r}")
        self.gate_config = GateConfig.from_config(pipe.config)
        meta = bundle.metadata if bundle is not None else {}
        stored = meta.get("gain_table")
        self.gain_table = GainTable.from_json(stored) if stored is not None else None
        model = meta.get("objective_model")
        self.model = ObjectiveModel.from_json(model) if model is not None else None
        roles = meta.get("role_relevance")
        self.roles = RoleRelevance.from_json(roles) if roles is not None else None
        if bundle is not None and self.roles is None and any(c.is_template for c in bundle.space):
            raise CampError("the bundle's space has context templates but no role relevance")
        if self.rule_in_use == "bound" and self.model is None:
            raise CampError(
                "camp.selection.rule: bound needs a bundle with an objective model (train it "
                "again with this version); 'auto' uses the gate for older bundles"
            )
        # A context's relevant set depends only on its CSIs and the reward variables, so a
        # service answering many scenes computes it once per context.
        self._relevant: dict[tuple[str, frozenset[str]], frozenset[str]] = {}
        if bundle is not None:
            # torch's first forward passes cost tens of milliseconds (allocator and kernel
            # set-up); a deployed selector pays that once at start-up, not in a task's budget.
            selector = bundle.selector
            for _ in range(3):
                selector.ranked(np.zeros(selector.input_shape, dtype=np.float32))

    @property
    def rule(self) -> str:
        return self.selection_settings.rule

    @property
    def rule_in_use(self) -> str:
        """The rule ``auto`` resolves to for this bundle."""
        if self.bundle is None:
            return "universal"
        if self.rule != "auto":
            return self.rule
        return "bound" if self.model is not None else "gate"

    def contexts(self) -> list[Context]:
        """Every context a request may name: the bundle's, or only the universal one."""
        return [Context.universal()] if self.bundle is None else list(self.bundle.space)

    # --- relevance and CAMPs ------------------------------------------------------------------
    def relevant(self, mdp: FactoredMDP, context: Context) -> frozenset[str]:
        """The relevant variables of a concrete ``context``: from the bundle's CSIs (cached),
        by role for a template's instance, or from the pipeline's CSI store (no bundle)."""
        if not self.pipe.needs_csis(context):
            return frozenset(v.name for v in mdp.variables)
        if self.from_store or self.bundle is None:
            return self.pipe.relevant(mdp, context)
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

    def kept(self, mdp: FactoredMDP, context: Context, task: Any) -> frozenset[str]:
        """What the CAMP of ``context`` keeps (its relevant variables and the context's own),
        without building it (a template: its instance on ``task``)."""
        context = self.pipe.domain.instantiate(context, task)
        return self.relevant(mdp, context) | context.variables

    def build(self, mdp: FactoredMDP, context: Context, task: Any) -> CAMP:
        """The CAMP of ``context`` (a template: its instance on ``task``)."""
        context = self.pipe.domain.instantiate(context, task)
        sink = float(self.pipe.config["camp"]["sink_reward"])
        relevant = None if self.ablation else self.relevant(mdp, context)
        return CAMP.build(mdp, context, relevant, sink)

    def planned_in(self, context: Context, camp: CAMP) -> CAMP | None:
        """What an attempt plans in: the CAMP, or (None) the task's own MDP when the CAMP is
        the universal context keeping every variable. That CAMP is the task itself, and
        planning it through the CAMP's state mapping only adds the mapping's cost: 20-40 %
        of BFS-replan's time in the gridworld, where pure planning made the same plan."""
        if context.is_universal and not self.ablation and not self.pipe.needs_csis(context):
            return None
        return camp

    # --- selection ----------------------------------------------------------------------------
    def selector_input(self, task: Any, mdp: FactoredMDP | None = None) -> np.ndarray:
        """What the selector (and the objective model) read for ``task``."""
        assert self.bundle is not None
        selector = self.bundle.selector
        return selector_input(
            self.pipe,
            task,
            selector.cfg.model,
            list(self.bundle.space),
            lambda m, context: self.relevant(m, context),
            mdp,
        )

    def rank(
        self, task: Any, mdp: FactoredMDP | None = None, x: np.ndarray | None = None
    ) -> tuple[list[tuple[Context, float]], list[Context], np.ndarray]:
        """(the selector's ranking kept by the screen, the contexts screened out, the input
        it read): ``x`` given (a request's own task features) or read from ``task``."""
        assert self.bundle is not None
        selector = self.bundle.selector
        if x is None:
            x = self.selector_input(task, mdp)
        ranked = [(self.bundle.space[i], p) for i, p in selector.ranked(x)]
        if not all(math.isfinite(p) for _, p in ranked):
            raise CampError(
                "the selector's probabilities are not finite for these task features: they are "
                "outside the range it was trained on"
            )
        if not selector.cfg.screen or task is None:
            return ranked, [], x
        kept, screened = screen(ranked, self.pipe.domain.region_graph(task))
        return kept, screened, x

    def select(
        self,
        task: Any,
        mdp: FactoredMDP | None = None,
        x: np.ndarray | None = None,
        named: Context | None = None,
    ) -> Selection:
        """The contexts to plan ``task`` in, in order, and why; ``named``: a context the
        request chose, tried first (the rule's order follows it)."""
        t0 = time.perf_counter()
        if self.bundle is None:
            order = [named] if named is not None and not named.is_universal else []
            order.append(Context.universal())
            reason = "no selector bundle: planning with the universal context"
            if named is not None:
                reason = f"the request named {named.name}"
            cands = [Candidate(c) for c in order]
            return Selection("universal", [], [], cands, order, False, reason, 0.0)
        ranked, screened, x = self.rank(task, mdp, x)
        rule = self.rule_in_use
        if rule == "bound":
            selection = self._by_bound(ranked, screened, x)
        else:
            selection = self._by_gate(ranked, screened, gated=rule == "gate")
        if named is not None:
            rest = [c for c in selection.order if c.id != named.id]
            order = [named, *rest[: self.max_fallbacks]]
            if not any(c.is_universal for c in order):
                order.append(Context.universal())
            selection = replace(
                selection, order=order, reason=f"the request named {named.name}; then by rule"
            )
        return replace(selection, latency_s=time.perf_counter() - t0)

    def _by_gate(
        self, ranked: list[tuple[Context, float]], screened: list[Context], gated: bool
    ) -> Selection:
        cfg = self.gate_config if gated else replace(self.gate_config, enabled=False)
        decision = decide(ranked, self.gain_table, cfg)
        order = [decision.context]
        if decision.committed and not decision.context.is_universal:
            for context, _ in ranked[1:]:
                if len(order) > self.max_fallbacks:
                    break
                if (
                    not context.is_universal
                    and decide([(context, 0.0)], self.gain_table, cfg).committed
                ):
                    order.append(context)
        if not any(c.is_universal for c in order):
            order.append(Context.universal())
        prob = {c.id: p for c, p in ranked}
        cands = [Candidate(c, prob.get(c.id)) for c in order]
        return Selection(
            "gate" if gated else "ungated",
            ranked,
            screened,
            cands,
            order,
            False,
            decision.reason,
            gate=decision,
        )

    def _by_bound(
        self, ranked: list[tuple[Context, float]], screened: list[Context], x: np.ndarray
    ) -> Selection:
        assert self.model is not None
        s = self.selection_settings
        top = [(c, p) for c, p in ranked if not c.is_universal][: s.top_k]
        universal = next((p for c, p in ranked if c.is_universal), None)
        options = [*top, (Context.universal(), universal)]
        scores = None
        if self.model.uses_scores:
            assert self.bundle is not None
            row = self.bundle.selector.scores(np.asarray(x)[None])[0]
            by_id = {c.id: float(v) for c, v in zip(self.bundle.space, row, strict=True)}
            scores = {c.id: by_id[c.id] for c, _ in options}
        predictions = self.model.predict(x, [c.id for c, _ in options], s.confidence, scores)
        cands = [
            Candidate(c, p, pred.predicted, pred.lower, pred.n)
            for (c, p), pred in zip(options, predictions, strict=True)
        ]
        if s.give_up:
            cands.append(Candidate(None, None, 0.0, 0.0, 0))
        ordered, order, gives_up = bound_order(cands, self.max_fallbacks)
        best = ordered[0]
        joint = f"{s.confidence:.0%} joint lower bound over {len(predictions)} contexts"
        if best.context is None:
            reason = f"giving up: no candidate's {joint} is above 0"
        else:
            runner = next((c for c in ordered[1:]), None)
            beat = (
                f", above {runner.name}'s {runner.lower_bound:+.1f}"
                if runner is not None
                and runner.lower_bound is not None
                and math.isfinite(runner.lower_bound)
                else ""
            )
            reason = (
                f"{best.name}: predicted objective {best.predicted_objective:+.1f}, "
                f"{joint} {best.lower_bound:+.1f}{beat}"
            )
        return Selection("bound", ranked, screened, ordered, order, gives_up, reason)

    # --- planning -----------------------------------------------------------------------------
    def run(
        self,
        task: Any,
        seed: int = 0,
        *,
        mdp: FactoredMDP | None = None,
        x: np.ndarray | None = None,
        named: Context | None = None,
        allow_fallback: bool = True,
        lam: float | None = None,
        timeout_s: float | None = None,
        progress: Progress | None = None,
    ) -> CampRun:
        """Select, build the CAMP, plan and execute ``task`` in its own MDP, moving down the
        fallback order whenever an attempt fails (no plan, timeout, capped, too long)."""
        say = progress or (lambda stage: None)
        mdp = mdp if mdp is not None else self.pipe.domain.make_mdp(task, self.pipe.config)
        lam = self.pipe.lam(self.planner) if lam is None else lam
        timeout = float(self.pipe.config["timeout_s"]) if timeout_s is None else timeout_s
        say("selection")
        t0 = time.perf_counter()
        selection = self.select(task, mdp, x, named)
        order = selection.order if allow_fallback else selection.order[:1]
        gives_up = selection.gives_up if allow_fallback else False
        selection = replace(selection, order=order, gives_up=gives_up)
        chosen_s = time.perf_counter() - t0
        budget = attempt_budget(self.pipe.config)
        give_up = self.selection_settings.give_up
        cap = attempt_cap(mdp, lam, give_up) if order else None
        built: list[tuple[Context, CAMP]] = []

        def attempts() -> Iterator[Attempt]:
            for i, context in enumerate(order):
                last = i + 1 == len(order)
                say("camp_construction")
                start = time.perf_counter()
                camp = self.build(mdp, context, task)
                built.append((context, camp))
                say("planning")
                yield Attempt(
                    context.id,
                    self.planned_in(context, camp),
                    make_planner(self.planner, seed=seed, **self.settings),
                    time.perf_counter() - start + (chosen_s if i == 0 else 0.0),
                    None if last else budget,
                    # A context whose plan cannot finish in the horizon hands over to the
                    # next; the last resort follows its plan as far as it goes.
                    horizon_fallback=not last,
                    # The last resort plans on unless the robot may give up instead.
                    cap_s=cap if (give_up or gives_up or not last) else None,
                )

        result = run_with_fallbacks(
            mdp, attempts(), lam=lam, timeout_s=timeout, rng=random.Random(seed)
        )
        if not order:
            result.outcome = "gave_up"
            result.compute_time_s += chosen_s
            result.objective -= lam * chosen_s
            result.stage_times_s["setup"] = chosen_s
        say("done")
        context, camp = built[-1] if built else (None, None)
        return CampRun(result, selection, context, camp)
