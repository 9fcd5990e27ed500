from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from camp_planner.core.context import Term
from camp_planner.core.context_space import (
    ContextSpaceSpec,
    _covering_combinations,
    generate_context_space,
)
from camp_planner.core.errors import CampError
from camp_planner.domains.gridworld.domain import GridworldDomain


def _mdp():
    d = GridworldDomain()
    cfg = d.default_config()
    return d.make_mdp(d.make_tasks(cfg, "train")[0], cfg)


def test_universal_first_and_threshold_excludes_large_domains() -> None:
    space = generate_context_space(_mdp(), ContextSpaceSpec(max_domain_size=10))
    assert space[0].is_universal
    variables = set().union(*(c.variables for c in space))
    # agent_pos has 81 values, enemies 11: both above the threshold of 10.
    assert "agent_pos" not in variables
    assert not any(v.startswith("enemy_") for v in variables)
    assert {"agent_room", "move"} <= variables


def test_gridworld_default_space_avoids_one_or_two_rooms() -> None:
    d = GridworldDomain()
    spec = ContextSpaceSpec.from_mapping(d.default_config()["contexts"])
    space = generate_context_space(_mdp(), spec)
    assert len(space) == 1 + 9 + 36
    sizes = {len(c.terms) for c in space if not c.is_universal}
    assert sizes == {7, 8}


def test_conjunctions_use_distinct_variables() -> None:
    spec = ContextSpaceSpec(
        max_domain_size=100,
        variables=("agent_room", "move"),
        include_single=False,
        min_disjunction_length=3,
        max_disjunction_length=2,
        max_conjunction_length=2,
    )
    space = generate_context_space(_mdp(), spec)
    conj = [c for c in space if c.kind == "conjunction"]
    assert len(conj) == 9 * 5
    assert all(len(c.variables) == 2 for c in conj)


def test_subsampling_is_seeded_and_keeps_universal() -> None:
    spec = ContextSpaceSpec(
        max_domain_size=10,
        variables=("agent_room",),
        max_disjunction_length=3,
        max_contexts=12,
        seed=3,
    )
    a = generate_context_space(_mdp(), spec)
    b = generate_context_space(_mdp(), spec)
    assert len(a) == 12 and a[0].is_universal
    assert [c.id for c in a] == [c.id for c in b]


def test_resolve_by_index_id_and_name_and_errors() -> None:
    space = generate_context_space(_mdp(), ContextSpaceSpec(variables=("agent_room",)))
    c = space[3]
    assert space.resolve("3") == c and space.resolve(c.id) == c and space.resolve(c.name) == c
    with pytest.raises(CampError, match="unknown context"):
        space.resolve("nope")
    with pytest.raises(CampError):
        ContextSpaceSpec.from_mapping({"max_len": 3})


def test_required_values_appear_in_every_disjunction() -> None:
    spec = ContextSpaceSpec(
        variables=("agent_room",),
        required_values=(0, 8),
        include_single=False,
        min_disjunction_length=3,
        max_disjunction_length=4,
    )
    space = generate_context_space(_mdp(), spec)
    # Choose 1 or 2 of the 7 other rooms to go with rooms 0 and 8.
    assert len(space) == 1 + 7 + 21
    assert all({0, 8} <= {t.value for t in c.terms} for c in space if not c.is_universal)
    assert spec.to_json()["required_values"] == [0, 8]
    assert "required_values" not in ContextSpaceSpec().to_json()
    assert ContextSpaceSpec.from_mapping(spec.to_json()) == spec


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.integers(0, 5), min_size=0, max_size=9),
    length=st.integers(1, 4),
    required=st.lists(st.integers(0, 6), max_size=3),
)
def test_covering_combinations_are_the_filtered_combinations_in_order(
    values: list[int], length: int, required: list[int]
) -> None:
    # Terms of two variables may share a value, and a required value may be missing.
    terms = [Term(f"v{k % 2}", value) for k, value in enumerate(values)]
    expected = [
        combo
        for combo in itertools.combinations(terms, length)
        if set(required) <= {t.value for t in combo}
    ]
    assert list(_covering_combinations(terms, length, required)) == expected
