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
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

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
    # Probe only the state variables the domain says a sample's step can feel
    # (``LocalDynamics.csi_footprint``): every other one is *inert* at that sample, its change
    # carried through to the successor and nothing else, so its successors are built without
    # the simulator. The dependences found are exactly those of probing every variable when
    # the domain's footprint is right (test/core/test_csi_scaling.py; NAMO's audit:
    # test/domains/namo/test_csi_scale_audit.py), and the samples and probe values are the
    # same random stream. NAMO: a step feels only the boxes near the robot's path, about 20
    # of a 10×10 world's 495 slots. Beyond the paper; off by default.
    local_probes: bool = False
    # Learn a disjunction over one state variable term by term, and share the terms across
    # contexts: each term's samples (the variable at that value) are drawn from a stream
    # seeded by the term alone, probed once, and what every probe changed is kept together
    # with the context variable's value before and after (``_TermCache``). A context's
    # dependences are then the union over its terms' first k1 / n samples of the changes
    # its own membership tests admit: exactly what ``stratify`` finds on those samples, for
    # every context that holds the term, at the cost of probing them once. The samples
    # differ from ``stratify``'s (per term, not one stream), so its results differ by
    # sampling noise (the NAMO audit measures how much). A domain may draw a term's samples
    # directly (``TermSampler``) instead of by rejection. Beyond the paper; off by default.
    shared_terms: bool = False
    # Also tie the slots the domain names as exchangeable *under the context*
    # (``ContextSymmetry.csi_context_roles``), as ``exchangeable_groups`` ties slots under
    # every context: evidence found for one member then holds for all. NAMO: the boxes of
    # the rooms a room context allows, and those of the rooms next to them, each a class.
    # Only adds dependences, so CAMPs keep more; it makes ``shared_terms`` keep every box
    # that direct learning keeps (evidence for a room next to the allowed ones is rare, and
    # each method finds some of those rooms by chance). Beyond the paper; off by default.
    context_ties: bool = False

    @staticmethod
    def from_mapping(data: Mapping[str, Any]) -> CSIConfig:
        reject_unknown(data, CSIConfig.__dataclass_fields__, "CSI")
        cfg = CSIConfig(**data)
        if cfg.k1 < 1 or cfg.k2 < 1 or cfg.samples_per_test < 1:
            raise CampError("CSI budgets k1, k2 and samples_per_test must be positive")
        return cfg

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for flag in (
            "ignore_exits",
            "stratify",
            "complete_domains",
            "local_probes",
            "shared_terms",
            "context_ties",
        ):
            if not out[flag]:  # absent when off, so existing caches keep their keys
                del out[flag]
        return out


@runtime_checkable
class LocalDynamics(Protocol):
    """An MDP whose steps are local: what one step does depends on a few state variables
    only, which the MDP can name per (state, action) (``csi.local_probes``)."""

    def csi_footprint(self, state: State, action: Action) -> Collection[int] | None:
        """A superset of the state variables (by index) that can change the deterministic
        successor of (``state``, ``action``) other than by carrying their own change through,
        or None (no claim: probe every variable). For every state variable i outside it and
        every probe value v of i (:meth:`FactoredMDP.sample_value`'s values, as
        ``assign_state(state, i, v)`` sets them), the successor of the changed state must be
        the successor of ``state`` with variable i set to v, and that assignment must change
        no other variable. CSI learning then builds those successors without the
        simulator."""
        ...


@runtime_checkable
class ContextSymmetry(Protocol):
    """An MDP whose slots play named roles under some contexts (``csi.context_ties``, and
    :class:`camp_planner.core.role_relevance.RoleRelevance`)."""

    def csi_context_roles(self, context: Context) -> Mapping[str, Sequence[tuple[str, ...]]]:
        """Per role, the slots (as :meth:`FactoredMDP.exchangeable_groups`) that play it
        under ``context``, interchangeably, e.g. by how their room relates to the rooms the
        context allows (NAMO: ``inside``, ``beside``); empty for a context the domain knows
        no symmetry of. Slots of one role have one length, position by position alike."""
        ...


@runtime_checkable
class TermSampler(Protocol):
    """An MDP that can draw CSI samples with one state variable at a given value
    (``csi.shared_terms``), where rejection sampling would waste most draws (NAMO: the robot
    in one room of a hundred)."""

    def sample_state_action_where(
        self, index: int, value: Hashable, rng: random.Random
    ) -> tuple[State, Action] | None:
        """A draw of :meth:`FactoredMDP.sample_state_action`'s distribution conditioned on
        state variable ``index`` being ``value`` (as close as the domain can make it), or
        None when this draw missed (the caller tries again, ``max_rejections`` times)."""
        ...


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
    if config.shared_terms:
        shared = _learn_shared(mdps, context, config, progress)
        if shared is not None:
            dependencies, calls = shared
            return CSIResult(
                context=context,
                variables=tuple(layout),
                dependencies=dependencies,
                samples=calls,
                seconds=time.perf_counter() - start,
            )
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
    footprints = [m if config.local_probes and isinstance(m, LocalDynamics) else None for m in mdps]
    for step, (task, s, a) in enumerate(samples):
        mdp, oracle, member = mdps[task], oracles[task], members[task]
        det = oracle.deterministic(s, a)
        base: Marginals | None = None
        exact = True
        local = footprints[task]
        felt = local.csi_footprint(s, a) if local is not None and det is not None else None
        for i in free:
            parent = layout[i]
            targets = children[parent]
            if all((parent, state_names[j]) in dependent for j in targets):
                continue
            if felt is not None and i < n_state and i not in felt:
                # Inert (``LocalDynamics``): a probe v changes variable i alone, in the state
                # and in its successor, so it stays in the context (i is not a context
                # variable) and is a self-dependence when v differs from both s[i] and the
                # successor's. What the loop below would find, without the simulator and
                # without building the states (probe values of a state variable come from
                # its pool, so the random stream is the same).
                assert det is not None
                stays = not (exits_ignored and not member(det, a))
                if (
                    i in targets
                    and stays
                    and any(v != s[i] and v != det[i] for v in pools[task][i])
                ):
                    dependent.add((parent, parent))
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
    return CSIResult(
        context=context,
        variables=tuple(layout),
        dependencies=_tie_context(mdps[0], context, dependent, config),
        samples=sum(o.calls for o in oracles),
        seconds=time.perf_counter() - start,
    )


def _tie_context(
    mdp: FactoredMDP, context: Context, dependent: set[tuple[str, str]], config: CSIConfig
) -> frozenset[tuple[str, str]]:
    """``dependent`` tied over the MDP's exchangeable groups the context does not mention,
    then (``context_ties``) over the groups the MDP names for this context."""
    groups = [
        g
        for g in mdp.exchangeable_groups()
        if not {v for slot in g for v in slot} & context.variables
    ]
    if groups:
        dependent = tie_exchangeable(dependent, groups)
    if config.context_ties and isinstance(mdp, ContextSymmetry):
        own = [
            g
            for g in mdp.csi_context_roles(context).values()
            if len(g) > 1 and not {v for slot in g for v in slot} & context.variables
        ]
        if own:
            dependent = tie_exchangeable(dependent, own)
    return frozenset(dependent)


# --- shared terms (csi.shared_terms) -----------------------------------------------------------
# What one probe changed, kept with the context variable's value in the probed state and in
# the two successors (``_ANY`` for the last two: no successor to test, sampled marginals).
_Change = tuple[Hashable, Hashable, Hashable]
_Evidence = dict[tuple[str, str], set[_Change]]


class _Any:
    """Stands for every value of the context variable (a change no exit test applies to)."""

    def __repr__(self) -> str:
        return "ANY"


_ANY = _Any()


@dataclass
class _TermSamples:
    """One term's samples so far, each with its evidence, and the stream that draws more."""

    rng: random.Random
    evidence: list[_Evidence]
    exhausted: bool = False


class _TermCache:
    """Evidence per term of disjunctions over one state variable, for one set of MDPs and
    one CSI configuration (apart from k1, which only says how many samples a context uses).
    Held for the process's latest such set: a CSI store (or worker) learns the contexts of
    one space with one list of training MDPs."""

    def __init__(self, mdps: Sequence[FactoredMDP], config: CSIConfig, var: int) -> None:
        self.mdps = tuple(mdps)
        self.key = (var, _evidence_key(config))
        self.var = var
        self.config = config
        self.calls = 0
        rng = random.Random(f"csi-pools:{config.seed}")
        n_state = len(mdps[0].state_vars)
        self.pools = [
            [_probe_pool(m, i, config.k2, rng, config.complete_domains) for i in range(n_state)]
            for m in mdps
        ]
        self.oracles = [_MarginalOracle(m, config, rng) for m in mdps]
        layout = [v.name for v in mdps[0].variables]
        self.state_names = layout[:n_state]
        self.layout = layout
        known = mdps[0].candidate_parents()
        self.children: dict[int, list[int]] = {}
        for i, parent in enumerate(layout):
            if i == var:
                continue
            kids = [
                j
                for j, child in enumerate(self.state_names)
                if known is None or parent in known.get(child, frozenset())
            ]
            if kids:
                self.children[i] = kids
        self.footprints = [
            m if config.local_probes and isinstance(m, LocalDynamics) else None for m in mdps
        ]
        self.terms: dict[Hashable, _TermSamples] = {}

    def matches(self, mdps: Sequence[FactoredMDP], config: CSIConfig, var: int) -> bool:
        return (
            len(mdps) == len(self.mdps)
            and all(a is b for a, b in zip(mdps, self.mdps, strict=True))
            and self.key == (var, _evidence_key(config))
        )

    def samples(self, value: Hashable, n: int) -> list[_Evidence]:
        """The first ``n`` samples' evidence of term ``value`` (fewer if its sampler gives
        out: ``max_rejections`` draws in a row that miss, four times that for the first)."""
        term = self.terms.get(value)
        if term is None:
            seed = f"csi-term:{self.config.seed}:{self.layout[self.var]}:{value!r}"
            term = self.terms[value] = _TermSamples(random.Random(seed), [])
        while len(term.evidence) < n and not term.exhausted:
            tries = self.config.max_rejections * (4 if not term.evidence else 1)
            drawn = self._draw(value, term.rng, tries)
            if drawn is None:
                term.exhausted = True
                break
            task, s, a = drawn
            term.evidence.append(self._probe(task, s, a, term.rng))
        return term.evidence[:n]

    def _draw(
        self, value: Hashable, rng: random.Random, tries: int
    ) -> tuple[int, State, Action] | None:
        for _ in range(tries):
            task = rng.randrange(len(self.mdps))
            mdp = self.mdps[task]
            if isinstance(mdp, TermSampler):
                drawn = mdp.sample_state_action_where(self.var, value, rng)
                if drawn is None:
                    continue
                s, a = drawn
            else:
                s, a = mdp.sample_state_action(rng)
            if s[self.var] == value and not mdp.is_terminal(s):
                return task, s, a
        return None

    def _probe(self, task: int, s: State, a: Action, rng: random.Random) -> _Evidence:
        """Every change that probing (s, a) finds, as the direct loop of :func:`learn_csis`
        would (without its shortcut for parents already known to matter everywhere)."""
        mdp, oracle, v = self.mdps[task], self.oracles[task], self.var
        oracle.rng = rng  # sampled marginals from the term's own stream
        n_state = len(self.state_names)
        calls = oracle.calls
        det = oracle.deterministic(s, a)
        local = self.footprints[task]
        felt = local.csi_footprint(s, a) if local is not None and det is not None else None
        found: _Evidence = {}
        base: Marginals | None = None
        exact = True
        for i, targets in self.children.items():
            parent = self.layout[i]
            if felt is not None and i < n_state and i not in felt:
                # Inert (LocalDynamics): only variable i changes, in the successor too.
                assert det is not None
                if i in targets and any(
                    value != s[i] and value != det[i] for value in self.pools[task][i]
                ):
                    found.setdefault((parent, parent), set()).add((s[v], det[v], det[v]))
                continue
            for s2, a2 in _variants(mdp, s, a, i, self.config.k2, self.pools[task], rng):
                if (s2, a2) == (s, a):
                    continue
                det2 = oracle.deterministic(s2, a2) if det is not None else None
                if det is not None and det2 is not None:
                    if det2 == det:
                        continue
                    change = (s2[v], det[v], det2[v])
                    if i < n_state and det2[:i] == det[:i] and det2[i + 1 :] == det[i + 1 :]:
                        if i in targets:
                            found.setdefault((parent, parent), set()).add(change)
                        continue
                    for j in targets:
                        if det2[j] != det[j]:
                            found.setdefault((parent, self.state_names[j]), set()).add(change)
                    continue
                if base is None:
                    base, exact = oracle.marginals(s, a)
                other, _ = oracle.marginals(s2, a2)
                threshold = self.config.exact_threshold if exact else self.config.js_threshold
                for j in targets:
                    if js_divergence(base[j], other[j]) > threshold:
                        key = (parent, self.state_names[j])
                        found.setdefault(key, set()).add((s2[v], _ANY, _ANY))
        self.calls += oracle.calls - calls
        return found


_TERM_CACHE: _TermCache | None = None


def _evidence_key(config: CSIConfig) -> tuple[Any, ...]:
    """The settings a term's evidence depends on (not k1, nor the exit and sampling rules a
    context applies to it)."""
    return (
        config.seed,
        config.k2,
        config.samples_per_test,
        config.js_threshold,
        config.exact_threshold,
        config.max_rejections,
        config.complete_domains,
        config.local_probes,
    )


def _learn_shared(
    mdps: Sequence[FactoredMDP],
    context: Context,
    config: CSIConfig,
    progress: Callable[[int, int], None] | None,
) -> tuple[frozenset[tuple[str, str]], int] | None:
    """The dependences of a disjunction over one state variable from its terms' shared
    evidence (``csi.shared_terms``), and the simulator calls made for it; None for any other
    context (learned directly)."""
    global _TERM_CACHE
    names = [v.name for v in mdps[0].state_vars]
    variables = {t.variable for t in context.terms}
    if context.kind != "disjunction" or len(variables) != 1:
        return None
    (name,) = variables
    if name not in names:
        return None
    var = names.index(name)
    cache = _TERM_CACHE
    if cache is None or not cache.matches(mdps, config, var):
        cache = _TERM_CACHE = _TermCache(mdps, config, var)
    calls = cache.calls
    values = list(dict.fromkeys(t.value for t in context.terms))
    allowed = frozenset(values)
    # As ``stratify`` spreads k1 samples over the terms: sample k to term k mod n, over the
    # terms that have a sample at all.
    live = [value for value in values if cache.samples(value, 1)]
    if not live:
        raise CampError("could not sample any state–action pair inside the context")
    exits = config.ignore_exits
    dependent: set[tuple[str, str]] = set()
    for k, value in enumerate(live):
        quota = config.k1 // len(live) + (1 if k < config.k1 % len(live) else 0)
        for evidence in cache.samples(value, quota):
            for pair, changes in evidence.items():
                if pair in dependent:
                    continue
                for probe_in, base_out, probe_out in changes:
                    if probe_in not in allowed:
                        continue  # the probed state lies outside the context
                    leaves = base_out not in allowed or probe_out not in allowed
                    if exits and base_out is not _ANY and leaves:
                        continue  # a change of an exit only (``ignore_exits``)
                    dependent.add(pair)
                    break
        if progress is not None:
            progress(k + 1, len(live))
    return _tie_context(mdps[0], context, dependent, config), cache.calls - calls


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
