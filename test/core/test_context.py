from __future__ import annotations

import json

import pytest

from camp_planner.core.context import Context, Term
from camp_planner.core.errors import CampError
from camp_planner.domains.gridworld.domain import GridworldDomain


def _mdp():
    d = GridworldDomain()
    cfg = d.default_config()
    return d.make_mdp(d.make_tasks(cfg, "train")[0], cfg)


def test_disjunction_membership_follows_the_room_label() -> None:
    mdp = _mdp()
    ctx = Context("disjunction", tuple(Term("agent_room", r) for r in (0, 1, 2)))
    s0 = mdp.initial_state()
    a = mdp.applicable_actions(s0)[0]
    assert ctx.contains(mdp, s0, a)  # the agent starts in room 0
    outside = mdp.assign_state(s0, 0, mdp.task.room_cells(8)[0])
    assert not ctx.contains(mdp, outside, a)


def test_conjunction_over_state_and_action_variables() -> None:
    mdp = _mdp()
    ctx = Context("conjunction", (Term("agent_room", 0), Term("move", "up")))
    s0 = mdp.initial_state()
    up = next(a for a in mdp.applicable_actions(s0) if a[0] == "up")
    down = next(a for a in mdp.applicable_actions(s0) if a[0] == "down")
    assert ctx.contains(mdp, s0, up)
    assert not ctx.contains(mdp, s0, down)


def test_ids_are_stable_and_order_independent() -> None:
    a = Context("disjunction", (Term("agent_room", 1), Term("agent_room", 2)))
    b = Context("disjunction", (Term("agent_room", 2), Term("agent_room", 1)))
    assert a == b and a.id == b.id and a.id.startswith("c")
    assert a.id != Context("disjunction", (Term("agent_room", 1), Term("agent_room", 3))).id
    assert Context.universal().id == "universal"
    assert a.name == "agent_room ∈ {1,2}"


def test_json_round_trip_keeps_tuple_values() -> None:
    ctx = Context("single", (Term("agent_pos", (2, 3)),))
    back = Context.from_json(json.loads(json.dumps(ctx.to_json())))
    assert back == ctx and back.id == ctx.id


@pytest.mark.parametrize(
    "bad",
    [
        {"kind": "sometimes", "terms": []},
        {"kind": "single", "terms": []},
        {"kind": "universal", "terms": [{"variable": "x", "value": 1}]},
        {
            "kind": "conjunction",
            "terms": [{"variable": "x", "value": 1}, {"variable": "x", "value": 2}],
        },
        {"terms": []},
    ],
)
def test_malformed_contexts_are_clear_errors(bad: dict) -> None:
    with pytest.raises(CampError):
        Context.from_json(bad)


def test_unknown_variable_is_reported_when_compiled() -> None:
    with pytest.raises(CampError, match="unknown variable"):
        Context("single", (Term("weather", "rain"),)).compile(_mdp())


def test_a_template_names_a_rule_and_constrains_nothing_until_instantiated() -> None:
    mdp = _mdp()
    route = Context.template("lightest_route")
    assert route.is_template and route.template_name == "lightest_route"
    assert route.name == "template lightest_route" and not route.is_universal
    assert Context.from_json(json.loads(route.canonical_json())) == route
    assert route.id != Context.template("shortest_route").id
    s0 = mdp.initial_state()
    a = mdp.applicable_actions(s0)[0]
    with pytest.raises(CampError, match="until the domain instantiates it"):
        route.contains(mdp, s0, a)
    with pytest.raises(CampError, match="until the domain instantiates it"):
        route.violations(mdp, s0, a)
    with pytest.raises(CampError, match="exactly one term template=<name>"):
        Context("template", (Term("agent_room", 0),))
    with pytest.raises(CampError, match="not a template"):
        _ = Context.universal().template_name
    # A domain without templates refuses to instantiate one, and keeps any other context.
    d = GridworldDomain()
    task = d.make_tasks(d.default_config(), "train")[0]
    assert d.instantiate(Context.universal(), task) == Context.universal()
    with pytest.raises(CampError, match="has no context templates"):
        d.instantiate(route, task)
