"""Set conjunctions (issue 50): conjunctions of per-variable value sets, as D4's contexts
("bin ∈ {none,2,5} ∧ grasp ∈ {none,top}"), through the core: parsing, ids and names, JSON,
the generator, CSI learning, relevance and CAMP construction on a toy pick-and-place MDP."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

import pytest

from camp_planner.core.camp import CAMP, SINK
from camp_planner.core.context import Context, Term
from camp_planner.core.context_space import ContextSpace, ContextSpaceSpec, generate_context_space
from camp_planner.core.csi import CSIConfig, CSIResult, learn_csis
from camp_planner.core.errors import CampError
from camp_planner.core.mdp import Action, FactoredMDP, Outcome, State, Variable
from camp_planner.core.relevance import relevant_from_csis

BINS = (0, 1, 2)


class _Bins(FactoredMDP):
    """One object to put into one of three bins, the D4 world in miniature.

    A top grasp always succeeds; a side grasp fails while the ``blue`` distractor stands in
    the way. Placing into a free bin occupies it and ends the task (``done``, the reward
    variable). So ``blue`` matters only to side grasps and bin k's occupant only to placing
    into bin k: exactly what "top grasps only" and "bin ∈ {…}" contexts make irrelevant."""

    def __init__(self) -> None:
        super().__init__(
            name="bins",
            state_vars=(
                Variable("held", (0, 1)),
                Variable("done", (0, 1)),
                Variable("blue", (0, 1)),
                *(Variable(f"occ{b}", (0, 1)) for b in BINS),
            ),
            action_vars=(
                Variable("grasp", ("none", "top", "side"), default="none"),
                Variable("bin", ("none", *BINS), default="none"),
            ),
            reward_vars=frozenset({"done"}),
            horizon=6,
        )

    def _next(self, s: State, a: Action) -> State:
        held, done, blue, *occ = s
        grasp, target = a
        if held == 0 and done == 0 and (grasp == "top" or (grasp == "side" and blue == 0)):
            held = 1
        elif held == 1 and target != "none":
            assert isinstance(target, int)
            if occ[target] == 0:
                held, done, occ[target] = 0, 1, 1
        return (held, done, blue, *occ)

    def initial_state(self) -> State:
        return (0, 0, 1, 1, 0, 0)

    def reward(self, s: State, a: Action, s2: State) -> float:
        return 1.0 if s2[1] == 1 and s[1] == 0 else 0.0

    def is_terminal(self, s: State) -> bool:
        return s[1] == 1

    def applicable_actions(self, s: State) -> Sequence[Action]:
        return [(g, b) for g in ("none", "top", "side") for b in ("none", *BINS)]

    def sample_next_state(self, s: State, a: Action, rng: random.Random) -> State:
        return self._next(s, a)

    def transition_distribution(self, s: State, a: Action) -> Sequence[Outcome]:
        return [Outcome(self._next(s, a), 1.0)]

    def sample_state(self, rng: random.Random) -> State:
        return (rng.randrange(2), 0, *(rng.randrange(2) for _ in range(1 + len(BINS))))


def _top_into_bin_1() -> Context:
    return Context(
        "set_conjunction",
        (Term("grasp", "none"), Term("grasp", "top"), Term("bin", "none"), Term("bin", 1)),
    )


# --- the representation ------------------------------------------------------------------------
def test_canonical_form_name_and_id_do_not_depend_on_term_order() -> None:
    a = Context(
        "set_conjunction",
        (Term("grasp", "top"), Term("bin", 5), Term("bin", "none"), Term("bin", 2)),
    )
    b = Context(
        "set_conjunction",
        (Term("bin", 2), Term("grasp", "top"), Term("bin", 5), Term("bin", "none"), Term("bin", 2)),
    )
    assert a == b and a.id == b.id and a.id.startswith("c") and len(a.id) == 9
    # Values in canonical (repr) order, as disjunctions name theirs: strings first.
    assert a.name == "bin ∈ {none,2,5} ∧ grasp=top"
    assert a.variables == {"bin", "grasp"}
    assert a.allowed_values() == {"bin": ["none", 2, 5], "grasp": ["top"]}
    assert a.allowed("bin") == ("none", 2, 5) and a.allowed("weather") == ()
    # Pinned: the id hashes the canonical JSON, so it must never drift.
    assert _top_into_bin_1().id == "c387eb9d3"
    assert _top_into_bin_1().name == "bin ∈ {none,1} ∧ grasp ∈ {none,top}"


def test_a_set_conjunction_differs_from_the_disjunction_and_conjunction_of_its_terms() -> None:
    terms = _top_into_bin_1().terms
    assert Context("disjunction", terms).id != _top_into_bin_1().id
    assert Context("disjunction", terms).name != _top_into_bin_1().name


@pytest.mark.parametrize(
    ("terms", "match"),
    [
        ((Term("bin", 1), Term("bin", 2)), "at least two variables"),
        ((Term("bin", 1), Term("grasp", "top")), "several values"),
        ((), "at least two variables"),
    ],
)
def test_degenerate_set_conjunctions_are_refused(terms: tuple[Term, ...], match: str) -> None:
    with pytest.raises(CampError, match=match):
        Context("set_conjunction", terms)


def test_json_round_trip_is_exact() -> None:
    ctx = _top_into_bin_1()
    data = json.loads(json.dumps(ctx.to_json()))
    assert data["kind"] == "set_conjunction"
    back = Context.from_json(data)
    assert back == ctx and back.id == ctx.id and back.name == ctx.name
    assert back.canonical_json() == ctx.canonical_json()
    space = ContextSpace((Context.universal(), ctx))
    again = ContextSpace.from_json(json.loads(json.dumps(space.to_json())))
    assert [c.id for c in again] == [c.id for c in space]


def test_resolve_accepts_the_name_back_also_typed_in_ascii() -> None:
    ctx = _top_into_bin_1()
    space = ContextSpace((Context.universal(), Context("single", (Term("bin", 1),)), ctx))
    assert space.resolve(ctx.name) == ctx
    assert space.resolve(ctx.id) == ctx
    assert space.resolve("bin in {none,1} and grasp in {none, top}") == ctx
    assert space.resolve("bin ∈ {none, 1} & grasp ∈ {none, top}") == ctx
    assert space.resolve("bin=1").kind == "single"
    with pytest.raises(CampError, match="unknown context"):
        space.resolve("bin in {none,2} and grasp in {none,top}")


def test_membership_and_violations() -> None:
    mdp, ctx = _Bins(), _top_into_bin_1()
    s = mdp.initial_state()
    inside = ctx.compile(mdp)
    assert inside(s, ("top", "none")) and inside(s, ("none", 1)) and inside(s, ("top", 1))
    assert not inside(s, ("side", "none")) and not inside(s, ("top", 0))
    assert ctx.violations(mdp, s, ("top", 1)) == ()
    assert ctx.violations(mdp, s, ("side", 1)) == ("grasp",)
    assert ctx.violations(mdp, s, ("side", 0)) == ("bin", "grasp")
    # A disjunction is violated only when all of its variables are.
    either = Context("disjunction", (Term("grasp", "top"), Term("bin", 1)))
    assert either.violations(mdp, s, ("side", 1)) == ()
    assert either.violations(mdp, s, ("side", 0)) == ("bin", "grasp")
    with pytest.raises(CampError, match="unknown variable"):
        Context("set_conjunction", (Term("x", 1), Term("x", 2), Term("grasp", "top"))).violations(
            mdp, s, ("top", 1)
        )


# --- CSIs, relevance and the CAMP ------------------------------------------------------------
def _learned(ctx: Context) -> CSIResult:
    return learn_csis([_Bins()], ctx, CSIConfig(k1=60, k2=10, seed=0))


def test_camp_drops_the_distractor_and_the_other_bins_and_sinks_violations() -> None:
    mdp, ctx = _Bins(), _top_into_bin_1()
    csis = _learned(ctx)
    assert CSIResult.from_json(json.loads(json.dumps(csis.to_json()))).context == ctx
    relevant = relevant_from_csis(csis, mdp.reward_vars)
    camp = CAMP.build(mdp, ctx, relevant)
    # Under "top grasps only, into bin 1": the distractor only blocks side grasps and bins
    # 0 and 2 are never placed into, so exactly they go; both action variables stay (the
    # context constrains them) and so does bin 1's occupant.
    assert set(camp.dropped_variables) == {"blue", "occ0", "occ2"}
    assert [v.name for v in camp.action_vars] == ["grasp", "bin"]
    s0 = camp.initial_state()
    assert s0 == (0, 0, 0)  # held, done, occ1
    assert camp.most_likely_next_state(s0, ("top", "none")) == (1, 0, 0)
    assert camp.most_likely_next_state((1, 0, 0), ("none", 1)) == (0, 1, 1)
    # A violating action goes to the sink, whichever of its variables is out of its set.
    for bad in (("side", "none"), ("top", 0), ("side", 2)):
        assert camp.most_likely_next_state(s0, bad) == SINK
        assert camp.transition_distribution(s0, bad) == [Outcome(SINK, 1.0)]
        assert camp.reward(s0, bad, SINK) == camp.sink_reward
    # Under the universal context every variable matters.
    universal = _learned(Context.universal())
    assert relevant_from_csis(universal, mdp.reward_vars) == {v.name for v in mdp.variables}


def test_a_violating_state_goes_to_the_sink() -> None:
    mdp = _Bins()
    # "bin 1 must stay free, and place only into it (or nowhere)".
    ctx = Context("set_conjunction", (Term("occ1", 0), Term("bin", "none"), Term("bin", 1)))
    camp = CAMP.build(mdp, ctx, frozenset({"held", "done"}))
    assert {"occ1", "held", "done"} <= {v.name for v in camp.state_vars}
    occupied = camp.sigma(mdp.assign_state(mdp.initial_state(), mdp.state_index("occ1"), 1))
    assert camp.most_likely_next_state(occupied, camp.tau(("top", "none"))) == SINK
    free = camp.initial_state()
    assert camp.most_likely_next_state(free, camp.tau(("top", "none"))) != SINK


# --- the generator -----------------------------------------------------------------------------
def _spec(**kw: object) -> ContextSpaceSpec:
    base: dict[str, object] = {
        "variables": ("grasp", "bin"),
        "include_single": False,
        "max_disjunction_length": 0,
        "max_set_conjunction_variables": 2,
    }
    return ContextSpaceSpec.from_mapping({**base, **kw})


def test_generator_keeps_the_required_value_in_every_set() -> None:
    spec = _spec(max_set_size=3, required_values=["none"])
    space = generate_context_space(_Bins(), spec)
    sets = [c for c in space if not c.is_universal]
    assert all(c.kind == "set_conjunction" for c in sets)
    # grasp: {none,top}, {none,side} (all three would not constrain it); bin: "none" and one
    # or two of the three bins (3 + 3).
    assert len(sets) == 2 * 6
    assert all("none" in c.allowed("grasp") and "none" in c.allowed("bin") for c in sets)
    assert "bin ∈ {none,1,2} ∧ grasp ∈ {none,top}" in {c.name for c in sets}
    assert len({c.id for c in space}) == len(space)
    assert generate_context_space(_Bins(), spec).contexts == space.contexts
    assert ContextSpaceSpec.from_mapping(spec.to_json()) == spec


def test_generator_without_required_values_skips_all_singleton_products() -> None:
    space = generate_context_space(_Bins(), _spec(max_set_size=2))
    sets = [c for c in space if not c.is_universal]
    # grasp: 3 singletons + 3 pairs, bin: 4 + 6; products of two singletons are conjunctions.
    assert len(sets) == 6 * 10 - 3 * 4
    assert all(max(len(v) for v in c.allowed_values().values()) == 2 for c in sets)


def test_set_conjunctions_are_off_by_default_and_leave_the_spec_json_alone() -> None:
    spec = ContextSpaceSpec(variables=("grasp", "bin"))
    assert all(c.kind != "set_conjunction" for c in generate_context_space(_Bins(), spec))
    assert "max_set_conjunction_variables" not in spec.to_json()
    assert "max_set_size" not in spec.to_json()
    sized = ContextSpaceSpec(max_set_size=3)
    assert ContextSpaceSpec.from_mapping(sized.to_json()) == sized
    with pytest.raises(CampError):
        ContextSpaceSpec.from_mapping({"max_set_variables": 2})


def test_generated_set_conjunctions_learn_csis_and_build_camps() -> None:
    space = generate_context_space(_Bins(), _spec(max_set_size=2, required_values=["none"]))
    mdp = _Bins()
    for ctx in space:
        if ctx.is_universal:
            continue
        csis = _learned(ctx)
        camp = CAMP.build(mdp, ctx, relevant_from_csis(csis, mdp.reward_vars))
        # The distractor matters only when side grasps are allowed.
        assert ("blue" in camp.dropped_variables) == ("side" not in ctx.allowed("grasp"))
        bins = {v for v in ctx.allowed("bin") if isinstance(v, int)}
        for b in BINS:
            assert (f"occ{b}" in camp.dropped_variables) == (b not in bins)


def test_screening_reads_a_set_conjunctions_region_set() -> None:
    from camp_planner.core.feasibility import RegionGraph

    graph = RegionGraph.from_edges("room", (0, 1, 2), ((0, 1), (1, 2)), 0, (2,))
    short = Context("set_conjunction", (Term("room", 0), Term("room", 1), Term("grasp", "top")))
    whole = Context(
        "set_conjunction", (*(Term("room", r) for r in (0, 1, 2)), Term("grasp", "top"))
    )
    # Every variable must hold, so the room set confines the robot whatever the grasp.
    assert graph.allowed_regions(short) == frozenset({0, 1}) and not graph.can_reach_goal(short)
    assert graph.can_reach_goal(whole)
