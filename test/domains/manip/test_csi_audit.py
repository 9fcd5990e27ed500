"""An audit of the manipulation domain's CSIs: learned from the PyBullet simulator at the
configured budget (k1 = k2 = 25, samples spread by ``ManipMDP.csi_strata``), with 15 and with
30 distractors, each context's CAMP drops exactly what the context makes irrelevant:

* ``grasp ∈ {none, top}``: only side grasps meet the blue distractors, so every blue goes;
* ``bin ∈ {none, 2, 5}``: a bin's occupant matters only to places into it (or beside it), so
  the seven other bins go, and bins 2 and 5 and the grasp style a place needs stay;
* their set conjunction: both;
* the bins with side grasps only: the seven other bins, and never the action's object (at 30
  distractors it once went: every side pick sampled was blocked);
* the universal context: nothing (side picks meet blues, places meet every bin).
"""

from pathlib import Path

import pytest

from camp_planner.config import load_config
from camp_planner.core.context import Context, Term
from camp_planner.core.relevance import relevant_from_csis
from camp_planner.domains import get_domain
from camp_planner.workflow import Pipeline

pytestmark = [pytest.mark.slow, pytest.mark.pybullet]

BINS = {f"bin_{j}" for j in range(9)}
KEPT_BINS = {"bin_2", "bin_5"}
# Fewer training tasks than the configuration's 10 keep the audit short; the budget per
# context (k1 = k2 = 25 and its stratified samples) is the configured one.
TASKS = 3
WORKERS = 2

NONE_OR_TOP = (Term("grasp", "none"), Term("grasp", "top"))
NONE_OR_SIDE = (Term("grasp", "none"), Term("grasp", "side"))
BINS_2_5 = (Term("bin", "none"), Term("bin", 2), Term("bin", 5))
# The slowest first, so that the two workers finish together.
CONTEXTS = {
    "universal": Context.universal(),
    "top": Context("disjunction", NONE_OR_TOP),
    "bins": Context("disjunction", BINS_2_5),
    "both": Context("set_conjunction", NONE_OR_TOP + BINS_2_5),
    "side_bins": Context("set_conjunction", NONE_OR_SIDE + BINS_2_5),
}


@pytest.fixture(scope="module", params=[15, 30], ids=["15-blues", "30-blues"])
def world(request: pytest.FixtureRequest) -> int:
    n: int = request.param
    return n


@pytest.fixture(scope="module")
def dropped(world: int, tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """Per context, the variables its CAMP drops (the CSIs learned in forked workers, so
    this process never starts PyBullet)."""
    domain = get_domain("manip")
    config = load_config(domain, None)
    assert config["csi"]["k1"] == 25 and config["csi"]["k2"] == 25
    config["csi"] = {**config["csi"], "tasks": TASKS}
    config["world"] = {**config["world"], "n_distractors": world}
    artifacts: Path = tmp_path_factory.mktemp("artifacts")
    pipe = Pipeline.from_config("manip", config, artifacts)
    pipe.store.learn(list(CONTEXTS.values()), workers=WORKERS)
    reward_vars = domain.make_mdp(pipe.tasks("train")[0], config).reward_vars
    out: dict[str, set[str]] = {}
    for key, context in CONTEXTS.items():
        result = pipe.store.get(context)
        relevant = relevant_from_csis(result, reward_vars)
        out[key] = {v for v in result.variables if v not in relevant}
    return out


def blues(n: int) -> set[str]:
    return {f"blue_{k}" for k in range(n)}


def test_top_grasps_drop_every_blue_and_nothing_else(
    dropped: dict[str, set[str]], world: int
) -> None:
    assert dropped["top"] == blues(world)


def test_a_bin_context_drops_the_other_bins_and_nothing_else(
    dropped: dict[str, set[str]],
) -> None:
    assert dropped["bins"] == BINS - KEPT_BINS


def test_a_set_conjunction_drops_both(dropped: dict[str, set[str]], world: int) -> None:
    assert dropped["both"] == (BINS - KEPT_BINS) | blues(world)


def test_side_grasps_into_two_bins_keep_the_object_to_pick(
    dropped: dict[str, set[str]],
) -> None:
    assert dropped["side_bins"] == BINS - KEPT_BINS


def test_the_universal_context_drops_nothing(dropped: dict[str, set[str]]) -> None:
    assert dropped["universal"] == set()
