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
