from pathlib import Path

import pytest

from camp_planner.core.context import Context, Term
from camp_planner.domains import get_domain
from camp_planner.workflow import Pipeline

D = get_domain("namo")
CFG = D.default_config()


def test_tasks_features_and_region_graph() -> None:
    train, test = D.make_tasks(CFG, "train"), D.make_tasks(CFG, "test")
    assert len(train) == 50 and len(test) == 10
    assert not {t.seed for t in train} & {t.seed for t in test}
    img = D.features(train[0])
    assert img.shape == (4, 50, 50)
    assert img[0].sum() > 0 and img[1].sum() > 0 and img[2].sum() > 0 and img[3].sum() > 0
    graph = D.region_graph(train[0])
    assert graph.start == 0 and graph.goals == frozenset({8})


def test_context_space_is_the_papers_size_and_keeps_start_and_goal_rooms(tmp_path: Path) -> None:
    pipe = Pipeline.from_config("namo", D.default_config(), tmp_path)
    space = list(pipe.space)
    assert len(space) == 51 and space[0].is_universal
    for ctx in space[1:]:
        rooms = {int(str(v)) for v in ctx.allowed_values()["robot_room"]}
        assert {0, 8} <= rooms
    # Screening keeps only contexts whose rooms join start and goal through doorways.
    task = pipe.task("test", 0)
    graph = D.region_graph(task)
    reachable = [c for c in space if graph.can_reach_goal(c)]
    assert space[0] in reachable and 1 < len(reachable) < len(space)


@pytest.mark.pybullet
@pytest.mark.slow
def test_learned_csis_drop_exactly_the_boxes_of_forbidden_rooms(tmp_path: Path) -> None:
    cfg = D.default_config()
    cfg["csi"]["tasks"] = 4
    pipe = Pipeline.from_config("namo", cfg, tmp_path)
    ctx = Context("disjunction", tuple(Term("robot_room", r) for r in (0, 1, 2, 5, 8)))
    task = pipe.task("test", 0)
    mdp = D.make_mdp(task, cfg)
    relevant = pipe.relevant(mdp, ctx)
    for name in ("robot_pose", "robot_room", "held", "op", "target", "obj"):
        assert name in relevant
    boxes = {v for v in relevant if v.startswith("box_")}
    rooms = {int(v.split("_")[1][1:]) for v in boxes}
    assert {0, 1, 2, 5} <= rooms <= {0, 1, 2, 3, 4, 5, 7}
    assert not rooms & {6}  # two rooms away from every allowed room


@pytest.mark.pybullet
@pytest.mark.slow
@pytest.mark.parametrize(
    ("fill", "allowed"), [(0.8, (0, 3, 4, 6, 7, 8)), (0.8, (0, 1, 2, 5, 6, 8))]
)
def test_learned_csis_keep_the_boxes_of_every_allowed_room_in_a_cluttered_world(
    tmp_path: Path, fill: float, allowed: tuple[int, ...]
) -> None:
    """With most slots filled, CSI samples that put the robot inside a wall or a box (where
    no move goes anywhere) once hid whole allowed rooms' boxes from the learner, and the
    CAMP planned through them."""
    cfg = D.default_config()
    cfg["world"]["fill_prob"] = fill
    pipe = Pipeline.from_config("namo", cfg, tmp_path)
    ctx = Context("disjunction", tuple(Term("robot_room", r) for r in allowed))
    mdp = D.make_mdp(pipe.task("test", 0), cfg)
    relevant = pipe.relevant(mdp, ctx)
    rooms = {int(v.split("_")[1][1:]) for v in relevant if v.startswith("box_")}
    assert set(allowed) - {8} <= rooms


@pytest.mark.pybullet
@pytest.mark.slow
def test_the_paper_worlds_csis_are_those_the_shipped_selector_was_trained_with(
    tmp_path: Path,
) -> None:
    """The shipped bundle's labels were scored with CAMPs built from these CSIs. A change to
    CSI learning that alters them (for the paper's world) needs new labels and a retrained
    bundle, not only a new csi_version. Four of its 50 room contexts, spread over the space."""
    from camp_planner.learning.bundle import load_bundle, shipped_bundle

    path = shipped_bundle("namo", "tamp")
    assert path is not None
    shipped = [r for r in load_bundle(path).csis.values() if not r.context.is_universal]
    pipe = Pipeline.from_config("namo", D.default_config(), tmp_path)
    for old in shipped[:: len(shipped) // 4][:4]:
        assert pipe.store.get(old.context).dependencies == old.dependencies, old.context.name


def test_the_shipped_selector_was_trained_with_the_domains_default_selector_settings() -> None:
    """`camp plan` and the ROS nodes use the shipped bundle under the domain's defaults: a
    change to those (labels, their cost, the network) needs the bundle retrained with
    `camp train --domain namo --planner tamp --seed 0`, or the package ships a selector of
    another setting than it documents."""
    from camp_planner.learning.bundle import load_bundle, shipped_bundle
    from camp_planner.learning.selector import SelectorConfig

    path = shipped_bundle("namo", "tamp")
    assert path is not None
    cfg = load_bundle(path, "namo", D.version).selector.cfg
    assert cfg == SelectorConfig.from_mapping({**D.default_config()["selector"], "seed": 0})
    # The paper's hard labels valued on the planner's work (docs/results/history.md, eval v20).
    assert (cfg.labels, cfg.label_cost) == ("hard", "work")


def test_learned_csis_are_keyed_by_the_csi_version_not_the_planners(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A change to the TAMP refiners bumps the domain version (planning results change) but
    # not the CSIs, which the transition model alone determines.
    path = Pipeline.from_config("namo", D.default_config(), tmp_path).store.path
    monkeypatch.setattr(type(D), "version", "planner-changed")
    assert Pipeline.from_config("namo", D.default_config(), tmp_path).store.path == path
    monkeypatch.setattr(type(D), "csi_version", "model-changed")
    assert Pipeline.from_config("namo", D.default_config(), tmp_path).store.path != path


def test_a_larger_grid_has_its_own_variables_region_graph_and_features(tmp_path: Path) -> None:
    from camp_planner.config import load_config

    config = load_config(D, Path(__file__).parents[2] / "config" / "namo" / "grid5.yaml")
    task = D.make_tasks(config, "test")[0]
    assert task.settings.grid == 5
    mdp = D.make_mdp(task, config)
    slots = [v.name for v in mdp.state_vars if v.name.startswith("box_")]
    assert len(slots) == 24 * 5 and "box_r23_4" in slots and "box_r24_0" not in slots
    assert mdp.state_vars[1].domain == tuple(range(25))
    state = mdp.initial_state()
    assert state[1] == 0 and sum(isinstance(v, tuple) for v in state[3:]) == len(task.boxes)
    graph = D.region_graph(task)
    assert graph.start == 0 and graph.goals == frozenset({24})
    assert D.features(task).shape == (4, 50, 50)
    # Beyond 7×7 the image grows with the world, keeping the 7×7 world's pixels per room.
    config["world"]["grid"], config["contexts"]["required_values"] = 10, [0, 99]
    big = D.make_tasks(config, "test")[0]
    img = D.features(big)
    assert img.shape == (4, 72, 72) and img[1].sum() > 0 and img[0].sum() > 0
    # The paper's world keeps its own (smaller) layout alongside.
    small = D.make_mdp(D.make_tasks(CFG, "test")[0], CFG)
    assert len(small.state_vars) == 3 + 8 * 5


def test_a_grid_whose_goal_room_the_contexts_do_not_require_is_a_clear_error() -> None:
    from camp_planner.core.errors import CampError

    config = D.default_config()
    config["world"]["grid"] = 4  # the default contexts still require room 8 as the goal
    with pytest.raises(CampError, match=r"required_values to \[0, 15\]"):
        D.make_tasks(config, "test")
    config["world"]["grid"] = 12
    with pytest.raises(CampError, match=r"world\.grid"):
        D.make_tasks(config, "test")


@pytest.mark.parametrize(
    ("grid", "path"),
    [
        (3, "research/config/namo-grid3.yaml"),
        (4, "config/namo/grid4.yaml"),
        (5, "config/namo/grid5.yaml"),
        (6, "research/config/namo-grid6.yaml"),
        (7, "research/config/namo-grid7.yaml"),
    ],
)
def test_the_shipped_grid_configurations_load_and_name_their_goal_room(
    grid: int, path: str
) -> None:
    from camp_planner.config import load_config

    config = load_config(D, Path(__file__).parents[2] / path)
    task = D.make_tasks(config, "test")[0]
    assert task.settings.grid == grid and task.room_of(*task.goal) == grid * grid - 1
    assert config["csi"]["k1"] >= 75


@pytest.mark.parametrize("planner", ["tamp", "stilman"])
def test_default_planner_settings_are_accepted(planner: str) -> None:
    from camp_planner.planners.registry import make_planner

    settings = CFG["planners"][planner]
    make_planner(planner, seed=0, **settings)  # raises on a setting it does not know
    # TAMP restarts a stalled attempt after 2 s of work; Stilman's algorithm never does.
    assert settings == ({"restart_s": 2.0} if planner == "tamp" else {})
