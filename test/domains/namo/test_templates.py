"""NAMO's context templates: route rules instantiated per task, their CAMPs by role
relevance, and the CAMP method planning in a template's instance."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from camp_planner.config import load_config
from camp_planner.core.context import Context
from camp_planner.core.context_space import ContextSpace
from camp_planner.core.errors import CampError
from camp_planner.domains import get_domain
from camp_planner.domains.namo.domain import TEMPLATES, room_graph
from camp_planner.domains.namo.world import NamoTask
from camp_planner.workflow import Pipeline

D = get_domain("namo")
GRID10 = Path(__file__).parents[3] / "config" / "namo" / "grid10.yaml"


def _boxes(task: NamoTask, context: Context) -> int:
    rooms = set(context.allowed("robot_room"))
    return sum(1 for b in task.boxes if b.room in rooms)


def test_every_template_instance_joins_start_and_goal_in_the_10x10_world() -> None:
    config = load_config(D, GRID10)
    assert config["contexts"]["templates"] == list(TEMPLATES)
    for task in D.make_tasks(config, "test")[:10]:
        graph = room_graph(task)
        made = {name: D.instantiate(Context.template(name), task) for name in TEMPLATES}
        for name, context in made.items():
            assert context.kind == "disjunction", name
            assert context.variables == {"robot_room"}, name
            assert graph.can_reach_goal(context), name
            assert 0 < len(context.terms) < task.settings.n_rooms, name
        lightest, shortest, wide = (
            made["lightest_route"],
            made["shortest_route"],
            made["wide_route"],
        )
        assert len(shortest.terms) <= len(lightest.terms)
        assert _boxes(task, lightest) <= _boxes(task, shortest)
        assert set(lightest.terms) < set(wide.terms)
        # Every room the wide route adds has a doorway into the lightest route.
        route = set(lightest.allowed("robot_room"))
        doors = task.door_graph()
        for term in set(wide.terms) - set(lightest.terms):
            assert doors[int(str(term.value))] & route


def test_an_unknown_template_is_a_clear_error() -> None:
    task = D.make_tasks(D.default_config(), "test")[0]
    with pytest.raises(CampError, match="unknown NAMO context template 'doorway'"):
        D.instantiate(Context.template("doorway"), task)
    assert D.instantiate(Context.universal(), task).is_universal


def _config(**contexts: Any) -> dict[str, Any]:
    """The paper's 3 × 3 world with templates over a basis of three room contexts, learned
    the building-scale way on two tasks (a few seconds)."""
    config = copy.deepcopy(D.default_config())
    config["contexts"].update({"max_contexts": 4, **contexts})
    config["csi"].update({"k1": 9, "k2": 4, "tasks": 2, "local_probes": True, "shared_terms": True})
    config["csi"]["context_ties"] = True
    return config


@pytest.mark.pybullet
def test_templates_name_the_space_and_their_instances_keep_variables_by_role(
    tmp_path: Path,
) -> None:
    with pytest.raises(CampError, match="distinct templates of namo"):
        Pipeline.from_config("namo", _config(templates=["lightest_route", "doorway"]), tmp_path)
    with pytest.raises(CampError, match="distinct templates of namo"):
        Pipeline.from_config("namo", _config(templates=["wide_route", "wide_route"]), tmp_path)
    pipe = Pipeline.from_config("namo", _config(templates=list(TEMPLATES)), tmp_path)
    assert [c.name for c in pipe.space] == ["universal", *(f"template {t}" for t in TEMPLATES)]
    assert pipe.basis is not None and len(pipe.basis) == 4
    assert pipe.space.resolve("wide_route") == Context.template("wide_route")
    task = pipe.task("test", 0)
    template = Context.template("lightest_route")
    result, camp = pipe.run(task, "tamp", template, seed=0)
    assert camp is not None and camp.context == D.instantiate(template, task)
    assert result.success
    roles = pipe.role_relevance()
    assert roles.basis == 3 and ("inside", 0) in roles.roles
    # The CAMP keeps the boxes of the route's rooms and of the rooms next to them, no others.
    allowed = {int(str(r)) for r in camp.context.allowed("robot_room")}
    kept_rooms = {int(v.name.split("_")[1][1:]) for v in camp.state_vars if v.name[:4] == "box_"}
    grid = task.settings.grid
    near = {
        a * grid + b
        for r in allowed
        for a, b in (
            (r // grid + da, r % grid + db) for da, db in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1))
        )
        if 0 <= a < grid and 0 <= b < grid
    }
    boxed = {b.room for b in task.boxes} & allowed
    assert boxed <= kept_rooms <= near


@pytest.mark.pybullet
def test_the_camp_method_plans_in_the_instance_of_the_selected_template(tmp_path: Path) -> None:
    from camp_planner.eval.methods import CampMethod
    from camp_planner.learning.bundle import Bundle
    from camp_planner.learning.selector import ContextSelector, SelectorConfig

    pipe = Pipeline.from_config("namo", _config(templates=["shortest_route"]), tmp_path)
    template = Context.template("shortest_route")
    space = ContextSpace((Context.universal(), template))
    features = np.stack([pipe.domain.features(t) for t in pipe.tasks("train")[:4]])
    selector = ContextSelector(features.shape[1:], 2, SelectorConfig(learning_rate=1e-2))
    selector.fit(features, np.ones(4, dtype=int))
    with pytest.raises(CampError, match="templates but no role relevance"):
        CampMethod(Bundle("namo", D.version, space, {}, selector, {})).runtime(pipe, "tamp")
    meta = {"role_relevance": pipe.role_relevance().to_json()}
    method = CampMethod(Bundle("namo", D.version, space, {}, selector, meta), rule="ungated")
    task = pipe.task("test", 1)
    run = method.runtime(pipe, "tamp").run(task, seed=0)
    assert run.first == template and run.result.used[0] == template.id
    assert run.camp is not None and run.camp.context == D.instantiate(template, task)
    assert run.result.success
