"""Approximate context-specific independence learning (paper appendix A).

For a context (C, 𝒞) we sample ``k1`` state–action assignments inside the context and, for
every variable V^i outside C, up to ``k2`` alternative values v^i. V^j_{t+1} depends on V^i_t
when changing V^i to v^i changes the distribution of V^j_{t+1}. Distributions are exact when
the simulator can enumerate its outcomes (then any difference is a dependence) and empirical
otherwise (then the Jensen–Shannon divergence must exceed a threshold, as in the original
implementation). We return the *dependencies* (parent, child); the CSIs are their complement.
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from camp_planner.core.context import Context
from camp_planner.core.errors import CampError, reject_unknown
from camp_planner.core.mdp import Action, FactoredMDP, State

Marginals = list[dict[Hashable, float]]


@dataclass(frozen=True)
class CSIConfig:
    """Sample budgets and thresholds of CSI learning."""

    k1: int = 50
    k2: int = 50
    samples_per_test: int = 30
    js_threshold: float = 0.1
    exact_threshold: float = 1e-9
    max_rejections: int = 200
    seed: int = 0
    # Count a changed successor as a dependence only when both successors stay inside the
    # context (deterministic simulators, contexts over state variables). In the CAMP every
    # exit from the context ends in the sink, so how a dropped variable would have changed an
    # exit is never observed. This can make a CAMP optimistic about where exits lead; planners
    # using it must keep clear of the context's boundary (NAMO's TAMP keeps the robot's whole
    # body out of forbidden rooms). Beyond the paper; off by default.
    ignore_exits: bool = False
    # Spread the k1 samples evenly over the terms of a disjunctive context (sample k must
    # satisfy term k mod n; a term no draw satisfies within max_rejections is skipped). Plain
    # rejection sampling gives each term the share of the domain's sampler that lands in it,
    # and with k1 = 25 a term the sampler rarely meets can get no sample at all. Its
    # dependences then go unseen and the CAMP drops variables that matter there (NAMO: every
    # box of an allowed room). A domain may name its own classes of samples instead
    # (``FactoredMDP.csi_strata``: manipulation spreads them over the bins and grasps the
    # context allows). Beyond the paper; off by default.
    stratify: bool = False
    # Probe a state variable whose finite domain has at most k2 values at every value, not
    # only at k2 draws of ``sample_value``: 25 draws of a manipulation bin's 4 occupants once
    # missed "green", and the context dropped that bin. On for manipulation; gridworld's
    # enemy slots would gain probes of cells their draws miss, and its measured CSIs predate
    # this. Beyond the paper; off by default.
    complete_domains: bool = False

    @staticmethod
    def from_mapping(data: Mapping[str, Any]) -> CSIConfig:
        reject_unknown(data, CSIConfig.__dataclass_fields__, "CSI")
        cfg = CSIConfig(**data)
        if cfg.k1 < 1 or cfg.k2 < 1 or cfg.samples_per_test < 1:
            raise CampError("CSI budgets k1, k2 and samples_per_test must be positive")
        return cfg

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for flag in ("ignore_exits", "stratify", "complete_domains"):
            if not out[flag]:  # absent when off, so existing caches keep their keys
                del out[flag]
        return out


@dataclass(frozen=True)
class CSIResult:
    """Learned dependencies under one context: ``(parent, child)`` means V^child_{t+1}
    depends on V^parent_t. Pairs not listed are (approximately) independent."""

    context: Context
    variables: tuple[str, ...]
    dependencies: frozenset[tuple[str, str]]
    samples: int
    seconds: float

    def parents(self, child: str) -> frozenset[str]:
        return frozenset(p for p, c in self.dependencies if c == child)

    @property
    def independences(self) -> frozenset[tuple[str, str]]:
        """The CSIs proper: every (V^i, V^j) pair found independent under the context."""
        pairs = {(a, b) for a in self.variables for b in self.variables}
        return frozenset(pairs - self.dependencies)

    def to_json(self) -> dict[str, Any]:
        return {
            "context": self.context.to_json(),
            "context_id": self.context.id,
            "variables": list(self.variables),
            "dependencies": sorted([list(d) for d in self.dependencies]),
            "samples": self.samples,
            "seconds": round(self.seconds, 4),
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> CSIResult:
        try:
            deps = frozenset((str(p), str(c)) for p, c in data["dependencies"])
            return CSIResult(
                context=Context.from_json(data["context"]),
                variables=tuple(str(v) for v in data["variables"]),
                dependencies=deps,
                samples=int(data["samples"]),
                seconds=float(data["seconds"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CampError(f"malformed CSI record: {exc!r}") from exc


def js_divergence(p: Mapping[Hashable, float], q: Mapping[Hashable, float]) -> float:
    """Jensen–Shannon divergence in bits (0 for identical, 1 for disjoint distributions)."""
    total = 0.0
    for key in set(p) | set(q):
        pk, qk = p.get(key, 0.0), q.get(key, 0.0)
        mk = 0.5 * (pk + qk)
        if pk > 0:
            total += 0.5 * pk * math.log2(pk / mk)
        if qk > 0:
            total += 0.5 * qk * math.log2(qk / mk)
    return max(total, 0.0)


class _MarginalOracle:
    """Next-variable marginals of one MDP's simulator, exact when it can enumerate outcomes."""

    def __init__(self, mdp: FactoredMDP, config: CSIConfig, rng: random.Random) -> None:
        self.mdp = mdp
        self.config = config
        self.rng = rng
        self.n_state = len(mdp.state_vars)
        self.calls = 0

    def deterministic(self, state: State, action: Action) -> State | None:
        """The successor when the simulator says it is certain, else None."""
        outcomes = self.mdp.transition_distribution(state, action)
        if outcomes is not None and len(outcomes) == 1:
            self.calls += 1
            return outcomes[0].state
        return None

    def marginals(self, state: State, action: Action) -> tuple[Marginals, bool]:
        self.calls += 1
        outcomes = self.mdp.transition_distribution(state, action)
        margs: Marginals = [dict() for _ in range(self.n_state)]
        if outcomes is not None:
            for o in outcomes:
                for j, value in enumerate(o.state):
                    margs[j][value] = margs[j].get(value, 0.0) + o.probability
            return margs, True
        n = self.config.samples_per_test
        counts = [Counter[Hashable]() for _ in range(self.n_state)]
        for _ in range(n):
            nxt = self.mdp.sample_next_state(state, action, self.rng)
            for j, value in enumerate(nxt):
                counts[j][value] += 1
        return [{k: c / n for k, c in cnt.items()} for cnt in counts], False


def learn_csis(
    mdps: Sequence[FactoredMDP],
    context: Context,
    config: CSIConfig,
    progress: Callable[[int, int], None] | None = None,
) -> CSIResult:
    """Learn which (V^i_t → V^j_{t+1}) dependencies hold under ``context``.

    ``mdps`` are tasks sharing one factored variable layout (e.g. the training tasks): each
    sample is drawn from one of them, so CSIs reflect the whole task distribution.
    """
    if not mdps:
        raise CampError("CSI learning needs at least one MDP")
    layout = [v.name for v in mdps[0].variables]
    for m in mdps[1:]:
        if [v.name for v in m.variables] != layout:
            raise CampError("all MDPs given to CSI learning must share their variables")
    start = time.perf_counter()
    rng = random.Random(config.seed)
    oracles = [_MarginalOracle(m, config, rng) for m in mdps]
    members = [context.compile(m) for m in mdps]
    n_state = len(mdps[0].state_vars)
    state_names = layout[:n_state]

    strata = _strata(mdps, context) if config.stratify else None
    samples = _sample_in_context(mdps, members, config, rng, strata)
    # Per task and state variable, up to k2 distinct probe values v^i, drawn once (with
    # ``complete_domains``, a small finite domain whole, as action variables' in _variants).
    pools = [
        [_probe_pool(m, i, config.k2, rng, config.complete_domains) for i in range(n_state)]
        for m in mdps
    ]
    dependent: set[tuple[str, str]] = set()
    free = [i for i, name in enumerate(layout) if name not in context.variables]
    # Per parent, the children it may influence (all of them unless the MDP knows better).
    known = mdps[0].candidate_parents()
    children: dict[str, set[int]] = {}
    for i in free:
        parent = layout[i]
        children[parent] = {
            j
            for j, child in enumerate(state_names)
            if known is None or parent in known.get(child, frozenset())
        }
    free = [i for i in free if children[layout[i]]]
    exits_ignored = config.ignore_exits and context.variables <= set(state_names)
    for step, (task, s, a) in enumerate(samples):
        mdp, oracle, member = mdps[task], oracles[task], members[task]
        det = oracle.deterministic(s, a)
        base: Marginals | None = None
        exact = True
        for i in free:
            parent = layout[i]
            targets = children[parent]
            if all((parent, state_names[j]) in dependent for j in targets):
                continue
            for s2, a2 in _variants(mdp, s, a, i, config.k2, pools[task], rng):
                if (s2, a2) == (s, a) or not member(s2, a2):
                    continue
                det2 = oracle.deterministic(s2, a2) if det is not None else None
                if det is not None and det2 is not None:
                    # Deterministic simulators: compare successors directly (tuple
                    # comparisons run at C speed; this is what makes hundreds of fluents
                    # affordable).
                    if det2 == det:
                        continue
                    if exits_ignored and not (member(det, a) and member(det2, a2)):
                        continue
                    if i < n_state and det2[:i] == det[:i] and det2[i + 1 :] == det[i + 1 :]:
                        if i in targets:  # only the probed variable itself changed
                            dependent.add((parent, parent))
                        continue
                    for j in targets:
                        if det2[j] != det[j]:
                            dependent.add((parent, state_names[j]))
                    continue
                if base is None:
                    base, exact = oracle.marginals(s, a)
                other, _ = oracle.marginals(s2, a2)
                threshold = config.exact_threshold if exact else config.js_threshold
                for j in targets:
                    child = state_names[j]
                    if (parent, child) in dependent:
                        continue
                    if js_divergence(base[j], other[j]) > threshold:
                        dependent.add((parent, child))
        if progress is not None:
            progress(step + 1, len(samples))
    groups = [
        g
        for g in mdps[0].exchangeable_groups()
        if not {v for slot in g for v in slot} & context.variables
    ]
    if groups:
        dependent = tie_exchangeable(dependent, groups)
    return CSIResult(
        context=context,
        variables=tuple(layout),
        dependencies=frozenset(dependent),
        samples=sum(o.calls for o in oracles),
        seconds=time.perf_counter() - start,
    )


def tie_exchangeable(
    dependencies: set[tuple[str, str]], groups: Sequence[Sequence[tuple[str, ...]]]
) -> set[tuple[str, str]]:
    """Close ``dependencies`` under swapping exchangeable slots: if (p, c) holds and p's slot
    is exchangeable with another, so does (p, c) with the two slots' variables swapped
    position by position in both p and c. Evidence found for one member of a group then
    holds for all, which is what a finite sample budget misses."""
    slot_of: dict[str, tuple[Sequence[tuple[str, ...]], tuple[str, ...]]] = {}
    for group in groups:
        if len({len(slot) for slot in group}) > 1:
            raise CampError(f"exchangeable slots must have one length: {list(group)}")
        for slot in group:
            for v in slot:
                slot_of[v] = (group, slot)
    out = set(dependencies)
    frontier = list(dependencies)
    while frontier:
        p, c = frontier.pop()
        for v in {p, c}:
            if v not in slot_of:
                continue
            group, mine = slot_of[v]
            for other in group:
                if other == mine:
                    continue
                swap = dict(zip(mine, other, strict=True)) | dict(zip(other, mine, strict=True))
                tied = (swap.get(p, p), swap.get(c, c))
                if tied not in out:
                    out.add(tied)
                    frontier.append(tied)
    return out


def _strata(
    mdps: Sequence[FactoredMDP], context: Context
) -> list[Sequence[Callable[[State, Action], bool]]] | None:
    """Per task, the membership tests to spread the samples over: the domain's own
    (:meth:`FactoredMDP.csi_strata`), else the terms of a disjunction, else None."""
    own = [m.csi_strata(context) for m in mdps]
    if all(o is not None and len(o) > 1 for o in own):
        return [o for o in own if o is not None]
    if context.kind == "disjunction" and len(context.terms) > 1:
        return [[Context("single", (t,)).compile(m) for t in context.terms] for m in mdps]
    return None


def _sample_in_context(
    mdps: Sequence[FactoredMDP],
    members: Sequence[Callable[[State, Action], bool]],
    config: CSIConfig,
    rng: random.Random,
    strata: Sequence[Sequence[Callable[[State, Action], bool]]] | None = None,
) -> list[tuple[int, State, Action]]:
    """k1 (task, state, action) assignments inside the context, by rejection sampling; with
    ``strata`` (per task, a membership test per term of the context, or per class of samples
    the domain names) spread evenly over them."""
    if strata is not None:
        return _sample_stratified(mdps, members, strata, config, rng)
    out: list[tuple[int, State, Action]] = []
    attempts = 0
    limit = config.k1 * config.max_rejections
    while len(out) < config.k1:
        attempts += 1
        if attempts > limit:
            if out:
                break
            raise CampError("could not sample any state–action pair inside the context")
        task = rng.randrange(len(mdps))
        s, a = mdps[task].sample_state_action(rng)
        if mdps[task].is_terminal(s):
            continue
        if members[task](s, a):
            out.append((task, s, a))
    return out


def _sample_stratified(
    mdps: Sequence[FactoredMDP],
    members: Sequence[Callable[[State, Action], bool]],
    strata: Sequence[Sequence[Callable[[State, Action], bool]]],
    config: CSIConfig,
    rng: random.Random,
) -> list[tuple[int, State, Action]]:
    """k1 samples inside the context, the k-th satisfying term k mod n of those still live.

    A term that has a sample is given up the first time ``max_rejections`` draws in a row
    miss it: it is rare, and the other terms get its share. A term without a sample is given
    up only after ``max_rejections`` draws per term of the context. A term without samples
    is one whose dependences go unseen, so its boxes are dropped from every CAMP of the
    context. Every context also draws the same stream of samples (one seed), so one run of
    misses hits every context that tries the term at that point of the stream. In a 7×7
    NAMO world the robot stands in a given room on one draw in 50, and 200 draws in a row
    missed room 47 in all 5 route contexts that hold it; 2 of them then dropped every box of
    room 47, and their plans drove through those boxes."""
    out: list[tuple[int, State, Action]] = []
    n_terms = len(strata[0])
    live = list(range(n_terms))
    hits = [0] * n_terms
    misses = [0] * n_terms
    while len(out) < config.k1 and live:
        term = live[len(out) % len(live)]
        for _ in range(config.max_rejections):
            task = rng.randrange(len(mdps))
            s, a = mdps[task].sample_state_action(rng)
            if mdps[task].is_terminal(s):
                misses[term] += 1
                continue
            if members[task](s, a) and strata[task][term](s, a):
                out.append((task, s, a))
                hits[term] += 1
                break
            misses[term] += 1
        else:
            if hits[term] or misses[term] >= config.max_rejections * n_terms:
                live.remove(term)
    if not out:
        raise CampError("could not sample any state–action pair inside the context")
    return out


def _probe_pool(
    mdp: FactoredMDP, i: int, k2: int, rng: random.Random, complete: bool
) -> list[Hashable]:
    """k2 draws of state variable i's probe values, distinct; if ``complete``, with the rest
    of a domain of at most k2 values appended (after the draws: the same random stream)."""
    drawn = [mdp.sample_value(i, rng) for _ in range(k2)]
    domain = mdp.state_vars[i].domain
    if complete and domain is not None and len(domain) <= k2:
        drawn += list(domain)
    return list(dict.fromkeys(drawn))


def _variants(
    mdp: FactoredMDP,
    s: State,
    a: Action,
    i: int,
    k2: int,
    pool: Sequence[Sequence[Hashable]],
    rng: random.Random,
) -> list[tuple[State, Action]]:
    """Up to k2 copies of (s, a) with variable i changed: for action variables every value of
    a small domain, for state variables the task's pool of probe values."""
    n_state = len(mdp.state_vars)
    if i >= n_state:
        var = mdp.action_vars[i - n_state]
        if var.domain is not None and len(var.domain) <= k2:
            values = list(var.domain)
        else:
            values = [mdp.sample_action(s, rng)[i - n_state] for _ in range(k2)]
        return [(s, mdp.assign_action(a, i - n_state, v)) for v in dict.fromkeys(values)]
    return [(mdp.assign_state(s, i, v), a) for v in pool[i]]
