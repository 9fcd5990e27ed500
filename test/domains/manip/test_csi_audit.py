"""An audit of the manipulation domain's CSIs: learned from the PyBullet simulator at the
configured budget (k1 = k2 = 25, samples spread by ``ManipMDP.csi_strata``), each context's
CAMP drops exactly what the context makes irrelevant:

* ``grasp ∈ {none, top}``: only side grasps meet the blue distractors, so every blue goes;
* ``bin ∈ {none, 2, 5}``: a bin's occupant matters only to places into it (or beside it), so
  the seven other bins go, and bins 2 and 5 and the grasp style a place needs stay;
* their set conjunction: both;
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

BLUES = {f"blue_{k}" for k in range(15)}
BINS = {f"bin_{j}" for j in range(9)}
KEPT_BINS = {"bin_2", "bin_5"}
# Fewer training tasks than the configuration's 10 keep the audit short; the budget per
# context (k1 = k2 = 25 and its stratified samples) is the configured one.
TASKS = 3
WORKERS = 2

NONE_OR_TOP = (Term("grasp", "none"), Term("grasp", "top"))
BINS_2_5 = (Term("bin", "none"), Term("bin", 2), Term("bin", 5))
# The slowest first, so that the two workers finish together.
CONTEXTS = {
    "universal": Context.universal(),
    "top": Context("disjunction", NONE_OR_TOP),
    "bins": Context("disjunction", BINS_2_5),
    "both": Context("set_conjunction", NONE_OR_TOP + BINS_2_5),
}


@pytest.fixture(scope="module")
def dropped(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """Per context, the state variables its CAMP drops (the CSIs learned in forked workers,
    so this process never starts PyBullet)."""
    domain = get_domain("manip")
    config = load_config(domain, None)
    assert config["csi"]["k1"] == 25 and config["csi"]["k2"] == 25
    config["csi"] = {**config["csi"], "tasks": TASKS}
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


def test_top_grasps_drop_every_blue_and_nothing_else(dropped: dict[str, set[str]]) -> None:
    assert dropped["top"] == BLUES


def test_a_bin_context_drops_the_other_bins_and_nothing_else(
    dropped: dict[str, set[str]],
) -> None:
    assert dropped["bins"] == BINS - KEPT_BINS


def test_a_set_conjunction_drops_both(dropped: dict[str, set[str]]) -> None:
    assert dropped["both"] == (BINS - KEPT_BINS) | BLUES


def test_the_universal_context_drops_nothing(dropped: dict[str, set[str]]) -> None:
    assert dropped["universal"] == set()
