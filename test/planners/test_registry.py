import pytest

from camp_planner.core.planner import Planner
from camp_planner.planners import make_planner, planner_names
from camp_planner.planners.bfs_replan import BFSReplan
from camp_planner.planners.mcts import MCTS
from camp_planner.planners.value_iteration import ValueIteration


def test_names_are_sorted_and_complete() -> None:
    assert planner_names() == ["bfs_replan", "fast_downward", "mcts", "stilman", "tamp", "vi"]


@pytest.mark.parametrize(
    ("name", "cls"), [("mcts", MCTS), ("bfs_replan", BFSReplan), ("vi", ValueIteration)]
)
def test_make_planner_builds_the_named_class(name: str, cls: type[Planner]) -> None:
    planner = make_planner(name, seed=5)
    assert type(planner) is cls
    assert planner.name == name
    assert planner.seed == 5


def test_settings_are_passed_to_the_constructor() -> None:
    planner = make_planner("mcts", max_iterations=12, exploration=2.0)
    assert isinstance(planner, MCTS)
    assert planner.max_iterations == 12
    assert planner.exploration == 2.0
    assert planner.seed == 0
    vi = make_planner("vi", tolerance=1e-6, max_states=10)
    assert isinstance(vi, ValueIteration)
    assert (vi.tolerance, vi.max_states) == (1e-6, 10)


def test_unknown_name_lists_the_choices() -> None:
    with pytest.raises(ValueError) as error:
        make_planner("astar")
    assert (
        str(error.value) == "unknown planner 'astar'; choose one of: "
        "bfs_replan, fast_downward, mcts, stilman, tamp, vi"
    )


def test_unknown_setting_is_named() -> None:
    with pytest.raises(ValueError, match="max_iteration") as error:
        make_planner("mcts", max_iteration=5)
    assert "exploration" in str(error.value)  # the accepted settings are listed too
    with pytest.raises(ValueError, match="replan"):
        make_planner("vi", replan="always")


def test_invalid_setting_values_still_fail_in_the_constructor() -> None:
    with pytest.raises(ValueError, match="replan"):
        make_planner("bfs_replan", replan="never")
