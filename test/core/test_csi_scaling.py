"""CSI learning at scale: probing only the variables a step can feel (``csi.local_probes``)
and sharing a disjunction's terms across contexts (``csi.shared_terms``), against direct
learning on a synthetic world of rooms whose steps are local."""

from __future__ import annotations

import random
from collections.abc import Collection, Hashable, Mapping, Sequence

import pytest

from camp_planner.core import csi as csi_module
from camp_planner.core.context import Context, Term
from camp_planner.core.csi import (
    ContextSymmetry,
    CSIConfig,
    LocalDynamics,
    TermSampler,
    learn_csis,
)
from camp_planner.core.errors import CampError
from camp_planner.core.mdp import Action, FactoredMDP, Outcome, State, Variable
from camp_planner.core.relevance import relevant_from_csis
from camp_planner.core.role_relevance import RoleRelevance

CELLS = 12  # a corridor of cells, two per room: room = cell // 2
ROOMS = CELLS // 2


class _Rooms(FactoredMDP):
    """An agent in a corridor of ``CELLS`` cells; every cell has a box slot (0 free, 1 a
    box) that blocks stepping into that cell. ``pos`` is the reward variable and ``room``
    follows from it. A step feels only the box of the cell it steps into: every other slot
    is copied to the successor (the locality ``csi_footprint`` names)."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__(
            name=f"rooms-{seed}",
            state_vars=(
                Variable("pos", tuple(range(CELLS))),
                Variable("room", tuple(range(ROOMS))),
                *(Variable(f"box{k}", (0, 1), default=0) for k in range(CELLS)),
            ),
            action_vars=(Variable("go", (-1, 0, 1), default=0),),
            reward_vars=frozenset({"pos"}),
            horizon=20,
        )
        self.seed = seed
        self.calls = 0

    def _next(self, s: State, a: Action) -> State:
        self.calls += 1
        pos, go = s[0], a[0]
        assert isinstance(pos, int) and isinstance(go, int)
        to = pos + go
        if go == 0 or not 0 <= to < CELLS or s[2 + to] == 1:
            return s
        return (to, to // 2, *s[2:])

    def initial_state(self) -> State:
        rng = random.Random(self.seed)
        return (0, 0, *(int(rng.random() < 0.3) for _ in range(CELLS)))

    def reward(self, s: State, a: Action, s2: State) -> float:
        return 0.0

    def is_terminal(self, s: State) -> bool:
        return False

    def applicable_actions(self, s: State) -> Sequence[Action]:
        return [(-1,), (0,), (1,)]

    def sample_next_state(self, s: State, a: Action, rng: random.Random) -> State:
        return self._next(s, a)

    def transition_distribution(self, s: State, a: Action) -> Sequence[Outcome]:
        return [Outcome(self._next(s, a), 1.0)]

    def sample_state(self, rng: random.Random) -> State:
        pos = rng.randrange(CELLS)
        return (pos, pos // 2, *(rng.randrange(2) for _ in range(CELLS)))

    def sample_value(self, index: int, rng: random.Random) -> Hashable:
        return rng.randrange(CELLS) if index == 0 else rng.randrange(2)

    def assign_state(self, state: State, index: int, value: Hashable) -> State:
        if index == 0:  # the room follows the position
            assert isinstance(value, int)
            return (value, value // 2, *state[2:])
        return super().assign_state(state, index, value)


class _LocalRooms(_Rooms):
    """The same world, naming what each step feels."""

    def csi_footprint(self, state: State, action: Action) -> Collection[int]:
        pos, go = state[0], action[0]
        assert isinstance(pos, int) and isinstance(go, int)
        felt = {0, 1}
        if go != 0 and 0 <= pos + go < CELLS:
            felt.add(2 + pos + go)
        return felt


class _SamplingRooms(_LocalRooms):
    """The same world again, drawing a room's samples directly."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self.direct_draws = 0

    def sample_state_action_where(
        self, index: int, value: Hashable, rng: random.Random
    ) -> tuple[State, Action] | None:
        if index != 1 or not isinstance(value, int):
            return None
        self.direct_draws += 1
        pos = 2 * value + rng.randrange(2)
        state = (pos, value, *(rng.randrange(2) for _ in range(CELLS)))
        return state, (rng.choice((-1, 0, 1)),)


def _rooms(*values: int) -> Context:
    return Context("disjunction", tuple(Term("room", v) for v in values))


CONTEXTS = [_rooms(0, 1), _rooms(1, 2, 3), _rooms(0, 2, 5), _rooms(2, 3, 4, 5)]
SINGLE = Context("single", (Term("room", 2),))


@pytest.fixture(autouse=True)
def _fresh_term_cache() -> None:
    csi_module._TERM_CACHE = None


def test_the_protocols_recognise_the_domains_that_offer_them() -> None:
    assert not isinstance(_Rooms(), LocalDynamics)
    assert isinstance(_LocalRooms(), LocalDynamics)
    assert not isinstance(_LocalRooms(), TermSampler)
    assert isinstance(_SamplingRooms(), TermSampler)


def test_both_switches_are_off_by_default_and_absent_from_the_cache_key() -> None:
    cfg = CSIConfig()
    assert not cfg.local_probes and not cfg.shared_terms
    assert "local_probes" not in cfg.to_json() and "shared_terms" not in cfg.to_json()
    on = CSIConfig.from_mapping({"local_probes": True, "shared_terms": True}).to_json()
    assert on["local_probes"] is True and on["shared_terms"] is True


@pytest.mark.parametrize("exits", [False, True])
@pytest.mark.parametrize("context", [*CONTEXTS, SINGLE, Context.universal()])
def test_local_probes_find_exactly_the_direct_dependences_with_fewer_simulator_calls(
    context: Context, exits: bool
) -> None:
    """Outside the footprint a slot's successors are built, not simulated: the samples,
    probe values and random stream are those of direct learning, and so is the result."""
    base = CSIConfig(k1=12, k2=4, seed=3, ignore_exits=exits, stratify=True)
    plain, local = [_LocalRooms(0), _LocalRooms(1)], [_LocalRooms(0), _LocalRooms(1)]
    direct = learn_csis(plain, context, base)
    fast = learn_csis(local, context, CSIConfig(**{**base.__dict__, "local_probes": True}))
    assert fast.dependencies == direct.dependencies
    assert fast.samples < direct.samples
    assert sum(m.calls for m in local) < sum(m.calls for m in plain)


def test_a_domain_without_a_footprint_is_probed_in_full() -> None:
    cfg = CSIConfig(k1=10, k2=4, seed=1, stratify=True)
    direct = learn_csis([_Rooms()], CONTEXTS[0], cfg)
    again = learn_csis([_Rooms()], CONTEXTS[0], CSIConfig(**{**cfg.__dict__, "local_probes": True}))
    assert again.dependencies == direct.dependencies and again.samples == direct.samples


# With this many samples per room both methods see every dependence the world has under a
# context, so where the structure holds (terms of one variable, local steps) they must agree.
SATURATED = {"k1": 240, "k2": 4, "seed": 0, "stratify": True}


@pytest.mark.parametrize("exits", [False, True])
@pytest.mark.parametrize("mdp_type", [_Rooms, _LocalRooms, _SamplingRooms])
def test_shared_terms_give_the_direct_result_where_the_samples_saturate(
    mdp_type: type[_Rooms], exits: bool
) -> None:
    direct_cfg = CSIConfig(**SATURATED, ignore_exits=exits)
    shared_cfg = CSIConfig(**SATURATED, ignore_exits=exits, shared_terms=True, local_probes=True)
    mdps = [mdp_type(0), mdp_type(1)]
    for context in CONTEXTS:
        direct = learn_csis([_Rooms(0), _Rooms(1)], context, direct_cfg)
        shared = learn_csis(mdps, context, shared_cfg)
        assert shared.dependencies == direct.dependencies, context.name
        rel = relevant_from_csis(shared, ["pos"])
        assert rel == relevant_from_csis(direct, ["pos"])
    if exits:
        # A box next to the allowed rooms only blocks an exit, which the CAMP never takes.
        last = learn_csis(mdps, _rooms(0, 1), shared_cfg)
        assert ("box4", "pos") not in last.dependencies
        assert ("box3", "pos") in last.dependencies


def test_a_context_whose_terms_are_known_costs_no_simulator_call() -> None:
    cfg = CSIConfig(k1=30, k2=4, seed=0, stratify=True, shared_terms=True, local_probes=True)
    mdps = [_LocalRooms(0)]
    first = learn_csis(mdps, _rooms(0, 1, 2), cfg)
    assert first.samples > 0
    again = learn_csis(mdps, _rooms(0, 1, 2), cfg)
    assert again.samples == 0 and again.dependencies == first.dependencies
    # Rooms 0 and 1 are known (10 samples each); room 3 is new, and 0 and 1 need 10 each.
    mixed = learn_csis(mdps, _rooms(0, 1, 3), cfg)
    alone = learn_csis([_LocalRooms(0)], _rooms(3), cfg)  # new MDPs: a fresh cache
    assert mixed.samples > 0 and alone.samples > 0


def test_shared_results_do_not_depend_on_the_order_contexts_are_learned_in() -> None:
    cfg = CSIConfig(k1=9, k2=3, seed=5, stratify=True, shared_terms=True, local_probes=True)
    mdps = [_LocalRooms(0), _LocalRooms(1)]
    forward = {c.id: learn_csis(mdps, c, cfg).dependencies for c in CONTEXTS}
    csi_module._TERM_CACHE = None
    mdps = [_LocalRooms(0), _LocalRooms(1)]
    backward = {c.id: learn_csis(mdps, c, cfg).dependencies for c in reversed(CONTEXTS)}
    assert forward == backward


def test_a_domain_sampler_draws_the_terms_samples() -> None:
    cfg = CSIConfig(k1=12, k2=4, seed=0, stratify=True, shared_terms=True)
    mdp = _SamplingRooms(0)
    learn_csis([mdp], _rooms(0, 4), cfg)
    assert mdp.direct_draws >= 12


def test_other_contexts_are_learned_directly_under_shared_terms() -> None:
    base = CSIConfig(k1=12, k2=4, seed=2, stratify=True)
    shared = CSIConfig(**{**base.__dict__, "shared_terms": True})
    for context in (SINGLE, Context("conjunction", (Term("room", 1), Term("box3", 0)))):
        assert (
            learn_csis([_Rooms()], context, shared).dependencies
            == learn_csis([_Rooms()], context, base).dependencies
        )
    assert csi_module._TERM_CACHE is None


class _SymmetricRooms(_LocalRooms):
    """The world, naming the boxes of the cells just outside a room context as one class."""

    def csi_context_roles(self, context: Context) -> Mapping[str, Sequence[tuple[str, ...]]]:
        allowed = {t.value for t in context.terms if t.variable == "room"}
        cells = {c for c in range(CELLS) if c // 2 in allowed}
        beside = sorted({c + d for c in cells for d in (-1, 1)} - cells)
        return {"beside": [(f"box{c}",) for c in beside if 0 <= c < CELLS]}


def test_context_ties_share_evidence_within_the_domains_classes() -> None:
    assert isinstance(_SymmetricRooms(), ContextSymmetry)
    assert not isinstance(_LocalRooms(), ContextSymmetry)
    # Rooms 1 and 2 (cells 2-5): the boxes just outside are those of cells 1 and 6.
    ctx = _rooms(1, 2)
    base = CSIConfig(k1=200, k2=4, seed=0, stratify=True)
    plain = learn_csis([_SymmetricRooms()], ctx, base)
    assert ("box1", "pos") in plain.dependencies and ("box6", "pos") in plain.dependencies
    # Ties only add dependences, and without the switch nothing changes.
    tied_cfg = CSIConfig(**{**base.__dict__, "context_ties": True})
    tied = learn_csis([_SymmetricRooms()], ctx, tied_cfg)
    assert tied.dependencies >= plain.dependencies
    few = CSIConfig(k1=6, k2=4, seed=0, stratify=True)
    sparse = learn_csis([_SymmetricRooms()], ctx, few)
    sparse_tied = learn_csis(
        [_SymmetricRooms()], ctx, CSIConfig(**{**few.__dict__, "context_ties": True})
    )
    found = {p for p, c in sparse.dependencies if p in ("box1", "box6") and c == "pos"}
    if found:  # evidence for one neighbour's box holds for the other
        assert {("box1", "pos"), ("box6", "pos")} <= sparse_tied.dependencies
    assert (
        learn_csis([_LocalRooms()], ctx, tied_cfg).dependencies
        == learn_csis([_LocalRooms()], ctx, base).dependencies
    )


class _RoleRooms(_LocalRooms):
    """The world, naming the boxes of a room context's cells (``inside``) and of the cells
    just outside them (``beside``)."""

    def csi_context_roles(self, context: Context) -> Mapping[str, Sequence[tuple[str, ...]]]:
        allowed = {t.value for t in context.terms if t.variable == "room"}
        if not allowed:
            return {}
        cells = {c for c in range(CELLS) if c // 2 in allowed}
        beside = sorted({c + d for c in cells for d in (-1, 1)} - cells)
        return {
            "inside": [(f"box{c}",) for c in sorted(cells)],
            "beside": [(f"box{c}",) for c in beside if 0 <= c < CELLS],
        }


def test_role_relevance_keeps_what_direct_learning_keeps_for_a_context_outside_its_basis() -> None:
    mdp = _RoleRooms()
    cfg = CSIConfig(**{**SATURATED, "local_probes": True, "context_ties": True})
    roles = RoleRelevance.learn(mdp, [learn_csis([mdp], c, cfg) for c in CONTEXTS])
    assert roles.basis == len(CONTEXTS) and ("inside", 0) in roles.roles
    # The reward variable and the action; ``room`` is the context's own, kept anyway.
    assert roles.free == {"pos", "go"}
    for new in (_rooms(3, 4), _rooms(0, 5), _rooms(4)):
        assert new not in CONTEXTS
        direct = relevant_from_csis(learn_csis([mdp], new, CSIConfig(**SATURATED)), mdp.reward_vars)
        kept = roles.relevant(mdp, new)
        assert direct <= kept, (new.name, sorted(direct - kept))
        # Nothing beyond the cells next to the allowed ones: a box farther away never matters.
        cells = {c for c in range(CELLS) if c // 2 in new.allowed("room")}
        near = {f"box{c + d}" for c in cells for d in (-1, 0, 1)}
        assert {v for v in kept if v.startswith("box")} <= near
    assert RoleRelevance.from_json(roles.to_json()) == roles


def test_role_relevance_refuses_contexts_outside_the_family() -> None:
    mdp = _RoleRooms()
    with pytest.raises(CampError, match="at least one basis context"):
        RoleRelevance.learn(mdp, [])
    roles = RoleRelevance.learn(mdp, [learn_csis([mdp], CONTEXTS[0], CSIConfig(**SATURATED))])
    with pytest.raises(CampError, match="gives no variable a role"):
        roles.relevant(mdp, SINGLE_BOX)
    with pytest.raises(CampError, match="not of the family"):
        RoleRelevance.learn(mdp, [learn_csis([mdp], SINGLE_BOX, CSIConfig(**SATURATED))])
    with pytest.raises(CampError, match="names no roles"):
        RoleRelevance.learn(_LocalRooms(), [learn_csis([mdp], CONTEXTS[0], CSIConfig(**SATURATED))])
    with pytest.raises(CampError, match="malformed role relevance"):
        RoleRelevance.from_json({"roles": [["inside"]], "free": [], "basis": 1})


SINGLE_BOX = Context("single", (Term("box3", 0),))
