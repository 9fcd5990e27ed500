"""Audit of NAMO's CSI learning at building scale (``csi.local_probes``, ``shared_terms``,
``context_ties``) against direct learning (all three off) in the 5×5 world of
config/namo/grid5.yaml, where direct learning is affordable: the fast method must keep every
variable direct learning keeps, and every box of the allowed rooms; so must role relevance
(what a template's instance keeps), summarised from a basis the audited contexts are not in."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest

from camp_planner.config import load_config
from camp_planner.core import csi as csi_module
from camp_planner.core.context import Context, Term
from camp_planner.core.csi import CSIConfig, learn_csis
from camp_planner.core.relevance import relevant_from_csis
from camp_planner.core.role_relevance import RoleRelevance
from camp_planner.domains import get_domain
from camp_planner.domains.namo.domain import route_context
from camp_planner.workflow import csi_config

pytestmark = [pytest.mark.pybullet, pytest.mark.slow]

D = get_domain("namo")
GRID5 = Path(__file__).parents[3] / "config" / "namo" / "grid5.yaml"
FAST = ("local_probes", "shared_terms", "context_ties")


def _direct(cfg: CSIConfig) -> CSIConfig:
    return dataclasses.replace(cfg, **dict.fromkeys(FAST, False))


def _rooms_of(variables: frozenset[str]) -> set[int]:
    return {int(v.split("_")[1][1:]) for v in variables if v.startswith("box_")}


def _next_to(rooms: set[int], grid: int) -> set[int]:
    out = set()
    for r in rooms:
        row, col = divmod(r, grid)
        for a, b in ((row - 1, col), (row + 1, col), (row, col - 1), (row, col + 1)):
            if 0 <= a < grid and 0 <= b < grid:
                out.add(a * grid + b)
    return out - rooms


def test_the_footprint_margin_covers_the_robot_carrying_a_box() -> None:
    """A box farther than FOOTPRINT_MARGIN from a step's floor points can touch neither the
    robot nor the box it carries (their measured radius plus a box's half-diagonal)."""
    from camp_planner.domains.namo.mdp import FOOTPRINT_MARGIN, HELD, NamoMDP

    config = load_config(D, GRID5)
    task = D.make_tasks(config, "train")[0]
    mdp = D.make_mdp(task, config)
    assert isinstance(mdp, NamoMDP)
    try:
        state = mdp.initial_state()
        name = task.boxes[0].name
        carrying = mdp.assign_state(state, 2, name)
        assert carrying[mdp.layout.slot_index[name]] == HELD
        scene = mdp.sync(carrying)
        sx, sy, _ = task.settings.box_size
        reach = scene._radius + math.hypot(sx, sy) / 2
        assert reach < FOOTPRINT_MARGIN
    finally:
        mdp.close()


def test_local_probes_learn_exactly_the_direct_csis_of_the_5x5_world() -> None:
    """Probing only the boxes a step can feel is exact: same samples, same dependences."""
    config = load_config(D, GRID5)
    base = _direct(csi_config(config))
    base = dataclasses.replace(base, k1=12)
    mdps = [D.make_mdp(t, config) for t in D.make_tasks(config, "train")[:3]]
    ctx = route_context(D.make_tasks(config, "test")[0])
    try:
        direct = learn_csis(mdps, ctx, base)
        local = learn_csis(mdps, ctx, dataclasses.replace(base, local_probes=True))
    finally:
        for m in mdps:
            m.close()  # type: ignore[attr-defined]
    assert local.dependencies == direct.dependencies
    assert local.samples * 3 < direct.samples


def test_fast_csi_learning_keeps_every_variable_direct_learning_keeps_in_the_5x5_world(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Two test tasks' route contexts (9 rooms or more) and one of the space's room
    contexts, learned with grid5.yaml's budget (k1 = 75 over the 10 CSI tasks) both ways."""
    config = load_config(D, GRID5)
    fast_cfg = dataclasses.replace(csi_config(config), **dict.fromkeys(FAST, True))
    grid = int(config["world"]["grid"])
    tasks = D.make_tasks(config, "train")[: int(config["csi"]["tasks"])]
    mdps = [D.make_mdp(t, config) for t in tasks]
    tests = D.make_tasks(config, "test")
    contexts = list(dict.fromkeys(route_context(t) for t in tests[:4]))[:2]
    contexts.append(Context("disjunction", tuple(Term("robot_room", r) for r in (0, 12, 24))))
    rows: list[dict[str, Any]] = []
    csi_module._TERM_CACHE = None
    try:
        # Role relevance (what template instances keep) from a basis none of the audited
        # contexts is in: three-room contexts of the space's family, learned the fast way.
        basis = [
            Context("disjunction", tuple(Term("robot_room", r) for r in (0, x, grid * grid - 1)))
            for x in (6, 7, 13, 17)
        ]
        roles = RoleRelevance.learn(mdps[0], [learn_csis(mdps, b, fast_cfg) for b in basis])
        for ctx in contexts:
            direct = learn_csis(mdps, ctx, _direct(fast_cfg))
            fast = learn_csis(mdps, ctx, fast_cfg)
            kept_direct = relevant_from_csis(direct, mdps[0].reward_vars)
            kept_fast = relevant_from_csis(fast, mdps[0].reward_vars)
            kept_roles = roles.relevant(mdps[0], ctx)
            allowed = {int(str(t.value)) for t in ctx.terms}
            rows.append(
                {
                    "context": ctx.name,
                    "variables": len(direct.variables),
                    "kept_direct": len(kept_direct),
                    "kept_fast": len(kept_fast),
                    "kept_roles": len(kept_roles),
                    "kept_both": len(kept_direct & kept_fast),
                    "dropped_both": len(set(direct.variables) - kept_direct - kept_fast),
                    "only_direct": sorted(kept_direct - kept_fast),
                    "only_fast_rooms": sorted(_rooms_of(kept_fast - kept_direct)),
                    "direct_s": round(direct.seconds, 1),
                    "fast_s": round(fast.seconds, 1),
                }
            )
            # Conservative: nothing direct learning keeps is dropped.
            assert kept_direct <= kept_fast, (ctx.name, sorted(kept_direct - kept_fast))
            assert kept_direct <= kept_roles, (ctx.name, sorted(kept_direct - kept_roles))
            # Every allowed room's boxes stay; none of a room beyond the rooms next door.
            with_slots = allowed - {grid * grid - 1}
            assert with_slots <= _rooms_of(kept_fast), ctx.name
            assert _rooms_of(kept_fast) <= allowed | _next_to(allowed, grid), ctx.name
            assert _rooms_of(kept_roles) <= allowed | _next_to(allowed, grid), ctx.name
    finally:
        for m in mdps:
            m.close()  # type: ignore[attr-defined]
    with capsys.disabled():
        for row in rows:
            print(row)
