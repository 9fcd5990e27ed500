"""CSI learning, relevance and CAMP construction, proven on the gridworld."""

from __future__ import annotations

import itertools
import json
import random

import pytest

from camp_planner.core.camp import CAMP, SINK
from camp_planner.core.context import Context, Term
from camp_planner.core.csi import CSIConfig, CSIResult, js_divergence, learn_csis
from camp_planner.core.relevance import relevant_from_csis, relevant_variables
from camp_planner.domains.gridworld.domain import GridworldDomain

DOMAIN = GridworldDomain()
CONFIG = DOMAIN.default_config()
TRAIN = DOMAIN.make_tasks(CONFIG, "train")
MDPS = [DOMAIN.make_mdp(t, CONFIG) for t in TRAIN[:10]]


def _avoid(rooms: set[int]) -> Context:
    return Context("disjunction", tuple(Term("agent_room", r) for r in range(9) if r not in rooms))


def test_js_divergence_bounds() -> None:
    assert js_divergence({"a": 1.0}, {"a": 1.0}) == 0.0
    assert js_divergence({"a": 1.0}, {"b": 1.0}) == pytest.approx(1.0)
    assert 0 < js_divergence({"a": 0.9, "b": 0.1}, {"a": 0.5, "b": 0.5}) < 1


def test_avoiding_a_room_makes_its_enemies_irrelevant() -> None:
    result = learn_csis(MDPS, _avoid({4, 5}), CSIConfig(k1=80, k2=30))
    relevant = relevant_from_csis(result, {"agent_pos"})
    for slot in range(3):
        assert f"enemy_r4_{slot}" not in relevant
        assert f"enemy_r5_{slot}" not in relevant
        assert f"remove_r5_{slot}" not in relevant
    # Enemies of rooms the agent may enter still matter to where it ends up.
    assert {"agent_pos", "agent_room", "move"} <= relevant
    assert any(v.startswith("enemy_r1_") or v.startswith("enemy_r3_") for v in relevant)


@pytest.mark.slow
def test_under_the_universal_context_every_variable_is_relevant() -> None:
    mdps = [DOMAIN.make_mdp(t, CONFIG) for t in TRAIN]
    result = learn_csis(mdps, Context.universal(), CSIConfig(k1=400, k2=20))
    relevant = relevant_from_csis(result, {"agent_pos"})
    assert relevant == {v.name for v in MDPS[0].variables}


def test_enemy_dynamics_are_found_dependent_on_their_own_position() -> None:
    result = learn_csis(MDPS, Context.universal(), CSIConfig(k1=40, k2=20))
    assert ("enemy_r1_0", "enemy_r1_0") in result.dependencies or (
        "enemy_r2_0",
        "enemy_r2_0",
    ) in result.dependencies
    # An enemy never moves another room's enemy.
    assert ("enemy_r1_0", "enemy_r7_0") not in result.dependencies


def test_csi_results_round_trip_through_json() -> None:
    result = learn_csis(MDPS[:2], _avoid({3}), CSIConfig(k1=10, k2=5))
    back = CSIResult.from_json(json.loads(json.dumps(result.to_json(), default=str)))
    assert back.dependencies == result.dependencies
    assert back.context == result.context
    assert back.independences == result.independences


def test_relevance_is_a_backward_closure() -> None:
    deps = [("b", "a"), ("c", "b"), ("d", "e"), ("a", "a")]
    assert relevant_variables("abcdef", {"a"}, set(), deps) == {"a", "b", "c"}
    assert relevant_variables("abcdef", {"a"}, {"e"}, deps) == {"a", "b", "c", "d", "e"}


def _camp(rooms: set[int], ablation: bool = False) -> tuple[CAMP, object]:
    mdp = MDPS[0]
    ctx = _avoid(rooms)
    relevant = (
        None
        if ablation
        else relevant_from_csis(learn_csis(MDPS, ctx, CSIConfig(k1=60, k2=30)), mdp.reward_vars)
    )
    return CAMP.build(mdp, ctx, relevant, sink_reward=-500.0), mdp


def test_camp_projects_and_right_inverse_round_trips() -> None:
    rooms = {e.room for e in MDPS[0].task.enemies}
    camp, mdp = _camp(rooms)
    assert len(camp.state_vars) < len(mdp.state_vars)
    assert any(v.startswith("enemy_") for v in camp.dropped_variables)
    s0 = mdp.initial_state()
    abstract = camp.sigma(s0)
    assert camp.sigma(camp.sigma_inv(abstract)) == abstract
    a = camp.applicable_actions(abstract)[0]
    assert camp.tau(camp.tau_inv(a)) == a


def test_leaving_the_context_goes_to_an_absorbing_sink() -> None:
    camp, mdp = _camp({1, 3})
    # A state in forbidden room 1: every action goes to ⊥ with the sink penalty.
    inside = mdp.assign_state(mdp.initial_state(), 0, mdp.task.room_cells(1)[0])
    s = camp.sigma(inside)
    a = camp.applicable_actions(s)[0]
    assert camp.sample_next_state(s, a, random.Random(0)) == SINK
    assert camp.reward(s, a, SINK) == -500.0
    assert camp.is_terminal(SINK) and not camp.is_goal(SINK)
    assert camp.transition_distribution(SINK, a) is not None


def test_camp_distribution_is_normalised() -> None:
    camp, _ = _camp({4})
    s = camp.initial_state()
    for a in camp.applicable_actions(s):
        outcomes = camp.transition_distribution(s, a)
        assert outcomes is not None
        assert sum(o.probability for o in outcomes) == pytest.approx(1.0)


def test_ablation_keeps_every_variable_but_still_sinks() -> None:
    camp, mdp = _camp({1, 3}, ablation=True)
    assert camp.dropped_variables == ()
    inside = mdp.assign_state(mdp.initial_state(), 0, mdp.task.room_cells(3)[0])
    a = camp.applicable_actions(inside)[0]
    assert camp.sample_next_state(inside, a, random.Random(0)) == SINK


def test_relevance_chains_explain_exactly_the_relevant_variables_by_shortest_chains() -> None:
    from camp_planner.core.relevance import relevance_chains

    names = [f"v{i}" for i in range(30)]
    rng = random.Random(7)
    deps = [(rng.choice(names), rng.choice(names)) for _ in range(45)]
    deps += [("far", "mid1"), ("mid1", "mid2"), ("mid2", "goal"), ("far", "goal")]
    variables = [*names, "far", "mid1", "mid2", "goal", "ctx", "alone"]
    chains = relevance_chains(variables, ["goal"], ["ctx"], deps)
    assert set(chains) == relevant_variables(variables, ["goal"], ["ctx"], deps)
    assert "alone" not in chains and chains["goal"] == ("goal",) and chains["ctx"] == ("ctx",)
    pairs = set(deps)
    for var, chain in chains.items():
        assert chain[0] == var and chain[-1] in ("goal", "ctx")
        # Each variable of a chain influences the next, by a learned dependency.
        assert all((a, b) in pairs for a, b in itertools.pairwise(chain))
    # Breadth first: "far" reaches the goal directly, not through mid1 and mid2.
    assert chains["far"] == ("far", "goal")
    assert chains["mid1"] == ("mid1", "mid2", "goal")
