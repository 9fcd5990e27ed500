"""The ids, names and JSON of existing contexts never change (issue 50 added a context kind).

Cached CSIs, trained selector bundles (the shipped NAMO one included) and results refer to
contexts by id, so a change of canonical form would orphan all of them. The values here were
computed with the code before set conjunctions existed."""

from __future__ import annotations

import hashlib
import json

import pytest

from camp_planner.core.context import Context
from camp_planner.core.context_space import ContextSpaceSpec, generate_context_space
from camp_planner.domains import get_domain

# Per default space: its length, a digest of its ids in order, and (index, id, name) samples.
PINNED = {
    "gridworld": (
        46,
        "feadc70e3135",
        [
            (1, "c401dd33c", "agent_room ∈ {0,1,2,3,4,5,6}"),
            (45, "cd229f6fc", "agent_room ∈ {1,2,3,4,5,6,7,8}"),
        ],
    ),
    "dinner": (
        16,
        "92814ad8e4ee",
        [
            (1, "cb2a92ab1", "agent-at(garage)=0"),
            (
                15,
                "c074688ea",
                "agent-at(garage)=0 ∧ agent-at(hall)=0 ∧ agent-at(kitchen)=0 ∧ agent-at(store)=0",
            ),
        ],
    ),
    "namo": (
        51,
        "27df3afb28db",
        [
            (1, "c1ba129ec", "robot_room ∈ {0,6,8}"),
            (50, "cbe4a7ba6", "robot_room ∈ {0,1,2,3,4,5,6,8}"),
        ],
    ),
}


@pytest.mark.parametrize("domain_name", sorted(PINNED))
def test_default_spaces_keep_their_ids_and_names(domain_name: str) -> None:
    domain = get_domain(domain_name)
    config = domain.default_config()
    mdp = domain.make_mdp(domain.make_tasks(config, "train")[0], config)
    space = generate_context_space(mdp, ContextSpaceSpec.from_mapping(config["contexts"]))
    length, digest, samples = PINNED[domain_name]
    ids = [c.id for c in space]
    assert len(space) == length
    assert hashlib.sha1(json.dumps(ids).encode()).hexdigest()[:12] == digest
    for index, ident, name in samples:
        assert (space[index].id, space[index].name) == (ident, name)
        # The JSON form is unchanged too: it rebuilds the same context, id and name.
        data = json.loads(json.dumps(space[index].to_json()))
        assert set(data) == {"kind", "terms"}
        back = Context.from_json(data)
        assert (back.id, back.name) == (ident, name)
    assert space[0].to_json() == {"kind": "universal", "terms": []}


def test_a_conjunction_keeps_its_canonical_json() -> None:
    ctx = Context.from_json(
        {
            "kind": "conjunction",
            "terms": [{"variable": "move", "value": "up"}, {"variable": "agent_room", "value": 0}],
        }
    )
    assert ctx.canonical_json() == (
        '{"kind": "conjunction", "terms": [{"value": 0, "variable": "agent_room"}, '
        '{"value": "up", "variable": "move"}]}'
    )
    assert ctx.name == "agent_room=0 ∧ move=up"
