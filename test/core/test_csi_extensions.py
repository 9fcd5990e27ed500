"""CSI learning beyond the paper: exits from the context, and exchangeable variables."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence

import pytest

from camp_planner.core.context import Context, Term
from camp_planner.core.csi import CSIConfig, learn_csis, tie_exchangeable
from camp_planner.core.errors import CampError
from camp_planner.core.mdp import Action, FactoredMDP, Outcome, State, Variable


class _Corridor(FactoredMDP):
    """``pos`` 0..5 along a corridor, zone = pos >= 3 ("far"). A gate variable only matters
    at the step from 2 to 3 (it blocks entering the far zone); ``noise`` never matters."""

    def __init__(self) -> None:
        super().__init__(
            name="corridor",
            state_vars=(
                Variable("pos", tuple(range(6))),
                Variable("zone", ("near", "far")),
                Variable("gate", (0, 1)),
                Variable("noise", (0, 1)),
            ),
            action_vars=(Variable("go", (0, 1), default=0),),
            reward_vars=frozenset({"pos"}),
            horizon=10,
        )

    def _next(self, s: State, a: Action) -> State:
        pos, _, gate, noise = s
        assert isinstance(pos, int)
        nxt = pos + 1 if a[0] == 1 and pos < 5 else pos
        if pos == 2 and nxt == 3 and gate == 1:
            nxt = 2
        return (nxt, "far" if nxt >= 3 else "near", gate, noise)

    def initial_state(self) -> State:
        return (0, "near", 0, 0)

    def reward(self, s: State, a: Action, s2: State) -> float:
        return 0.0

    def is_terminal(self, s: State) -> bool:
        return False

    def applicable_actions(self, s: State) -> Sequence[Action]:
        return [(0,), (1,)]

    def sample_next_state(self, s: State, a: Action, rng: random.Random) -> State:
        return self._next(s, a)

    def transition_distribution(self, s: State, a: Action) -> Sequence[Outcome]:
        return [Outcome(self._next(s, a), 1.0)]

    def sample_state(self, rng: random.Random) -> State:
        pos = rng.randrange(6)
        return (pos, "far" if pos >= 3 else "near", rng.randrange(2), rng.randrange(2))

    def assign_state(self, state: State, index: int, value: Hashable) -> State:
        if index == 0:
            assert isinstance(value, int)
            return (value, "far" if value >= 3 else "near", *state[2:])
        return super().assign_state(state, index, value)


NEAR = Context("single", (Term("zone", "near"),))


def test_dependences_that_only_change_exits_are_ignored_on_request() -> None:
    mdp = _Corridor()
    plain = learn_csis([mdp], NEAR, CSIConfig(k1=60, k2=4, seed=0))
    exits = learn_csis([mdp], NEAR, CSIConfig(k1=60, k2=4, seed=0, ignore_exits=True))
    # The gate only decides whether the agent leaves the near zone.
    assert ("gate", "pos") in plain.dependencies
    assert ("gate", "pos") not in exits.dependencies
    assert ("pos", "pos") in exits.dependencies
    assert not any(p == "noise" and c != "noise" for p, c in plain.dependencies)
    assert "ignore_exits" not in CSIConfig().to_json()
    assert CSIConfig(ignore_exits=True).to_json()["ignore_exits"] is True


def test_exchangeable_variables_share_their_dependences() -> None:
    deps = {("a1", "x"), ("a1", "a1"), ("x", "b")}
    groups = [[("a1",), ("a2",), ("a3",)]]
    tied = tie_exchangeable(deps, groups)
    assert {("a2", "x"), ("a3", "x"), ("a2", "a2"), ("a3", "a3")} <= tied
    assert ("a1", "a2") not in tied  # a self-dependence stays a self-dependence
    assert ("x", "b") in tied
    assert tie_exchangeable(deps, []) == deps


def test_exchangeable_slots_swap_their_variables_together() -> None:
    # Two objects, each a slot of (location, pose): what the action's object does to one
    # object's location it does to the other's, and one's location drives its own pose.
    deps = {("obj", "r0_loc"), ("r0_loc", "r0_pose")}
    tied = tie_exchangeable(deps, [[("r0_loc", "r0_pose"), ("r1_loc", "r1_pose")]])
    assert tied == deps | {("obj", "r1_loc"), ("r1_loc", "r1_pose")}
    with pytest.raises(CampError, match="one length"):
        tie_exchangeable(deps, [[("r0_loc", "r0_pose"), ("r1_loc",)]])


class _RarelyAtTheGate(_Corridor):
    """The corridor, with the sampler seldom putting the agent at the gate (pos 2)."""

    def sample_state(self, rng: random.Random) -> State:
        pos = 2 if rng.random() < 0.02 else rng.randrange(2)
        return (pos, "near", rng.randrange(2), rng.randrange(2))


def test_stratified_samples_cover_every_term_of_a_disjunction() -> None:
    mdp = _RarelyAtTheGate()
    ctx = Context("disjunction", tuple(Term("pos", p) for p in (0, 1, 2)))
    plain = learn_csis([mdp], ctx, CSIConfig(k1=12, k2=4, seed=0))
    spread = learn_csis([mdp], ctx, CSIConfig(k1=12, k2=4, seed=0, stratify=True))
    # The gate matters only at pos 2, which plain rejection sampling almost never draws.
    assert ("gate", "pos") not in plain.dependencies
    assert ("gate", "pos") in spread.dependencies
    assert "stratify" not in CSIConfig().to_json()


def test_a_term_the_sampler_never_meets_is_given_up() -> None:
    mdp = _RarelyAtTheGate()
    ctx = Context("disjunction", tuple(Term("pos", p) for p in (0, 5)))  # never samples 5
    result = learn_csis([mdp], ctx, CSIConfig(k1=6, k2=4, seed=0, stratify=True))
    assert ("go", "pos") in result.dependencies  # learnt from the samples at pos 0


class _SeldomAtTheGate(_Corridor):
    """The corridor, with the sampler putting the agent at the gate on one draw in 100."""

    def sample_state(self, rng: random.Random) -> State:
        pos = 2 if rng.random() < 0.01 else rng.randrange(2)
        return (pos, "near", rng.randrange(2), rng.randrange(2))


def test_a_rare_term_is_not_given_up_before_it_has_a_sample() -> None:
    # pos 2 comes up on one draw in 100. Given up after one run of 20 misses, the term keeps
    # a sample on 1 - 0.99**20 = 18 % of seeds; with 20 draws per term of the context (3) before
    # a term without a sample is given up, on 1 - 0.99**60 = 45 %.
    from camp_planner.core.csi import _sample_stratified

    mdp = _SeldomAtTheGate()
    ctx = Context("disjunction", tuple(Term("pos", p) for p in (0, 1, 2)))
    config = CSIConfig(k1=9, k2=4, seed=0, stratify=True, max_rejections=20)
    strata = [[Context("single", (t,)).compile(mdp) for t in ctx.terms]]
    member = [ctx.compile(mdp)]
    found = [
        any(s[0] == 2 for _, s, _ in _sample_stratified([mdp], member, strata, config, rng))
        for rng in (random.Random(seed) for seed in range(200))
    ]
    assert 0.33 < sum(found) / len(found) < 0.6
    # Seed 0 misses pos 2 in its first 20 draws: given up then, the gate's dependence goes unseen.
    config = CSIConfig(k1=9, k2=4, seed=0, stratify=True, max_rejections=20)
    assert ("gate", "pos") in learn_csis([mdp], ctx, config).dependencies
