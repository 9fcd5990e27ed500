"""Stilman's ResolveSpatialConstraints (``planners/stilman.py``): obstructions cleared in the
order the way meets them, placements searched and undone through the interface's
snapshots, a long way cleared to its end, and NAMO planned end to end."""

from __future__ import annotations

import random

import pytest
from namo_worlds import TWO_BLOCKED, replay_is_collision_free
from toy_mdps import ScriptedInterface, ScriptedMDP

from camp_planner.core.mdp import State
from camp_planner.core.objective import run_episode
from camp_planner.core.planner import Deadline, NoPlanFound
from camp_planner.domains.namo.mdp import NamoMDP
from camp_planner.planners.stilman import Stilman
from camp_planner.planners.tamp import Refinement

_ScriptedMDP = ScriptedMDP


class _Snapshots:
    """``snapshot`` and ``restore`` of a scripted interface's world: its state, where it is
    and what it knows, as NAMO's interface keeps them."""

    state: object
    at: str
    moved: set[str]
    blocks: dict[str, set[str]]
    near: set[str]
    keep_out: list[object]

    def snapshot(self) -> object:
        self.snapshots = getattr(self, "snapshots", 0) + 1
        blocks = {k: set(v) for k, v in self.blocks.items()}
        return (self.state, self.at, set(self.moved), blocks, set(self.near), list(self.keep_out))

    def restore(self, snapshot: object) -> None:
        assert isinstance(snapshot, tuple)
        state, at, moved, blocks, near, keep_out = snapshot
        self.state, self.at, self.moved = state, at, set(moved)
        self.blocks = {k: set(v) for k, v in blocks.items()}
        self.near, self.keep_out = set(near), list(keep_out)


@pytest.mark.pybullet
@pytest.mark.fast_downward
def test_stilman_clears_a_chain_of_two_obstructions() -> None:
    mdp = NamoMDP.from_task(TWO_BLOCKED)
    # Generous motion budgets: RRT-Connect returns as soon as it finds a path, so they only
    # matter on a loaded machine, where the default 1 s made queries fail spuriously.
    planner = Stilman(seed=0, motion_timeout_s=5.0, detour_timeout_s=2.0)
    result = run_episode(mdp, planner, lam=0.0, timeout_s=60, rng=random.Random(0))
    assert result.success, result.outcome
    picked = [a[2] for a in result.actions if a[0] == "pick"]
    assert picked.index("box_r1_0") < picked.index("box_r2_0")  # in the order the way meets them
    assert planner.last_stats["obstacles_moved"] >= 2
    replay_is_collision_free(TWO_BLOCKED, result.actions, set())
    mdp.close()


@pytest.mark.pybullet
@pytest.mark.slow
def test_stilman_solves_the_eval_task_where_its_first_placement_blocked_the_next_box() -> None:
    from camp_planner.domains.namo.world import generate_task

    # Test task 0 of `camp eval` seed 2, where a first placement of box_r3_1 in front of
    # box_r3_2 is a trap only a search over placements gets out of: the task is solved and
    # the plan replays, whichever way the search goes.
    task = generate_task(0, 2 * 10_000 + 1_000_000)
    mdp = NamoMDP.from_task(task)
    planner = Stilman(seed=2)
    result = run_episode(mdp, planner, lam=0.0, timeout_s=60, rng=random.Random(2))
    assert result.success, result.failures
    replay_is_collision_free(task, result.actions, set())
    mdp.close()


class _PlacementTrapInterface(_Snapshots):
    """Box ``a`` blocks the way to the goal and box ``b`` stands behind it. The first place
    ``a`` is put down blocks the approach to ``b``, without a box to blame (the motion just
    fails); any later placement is fine. Only a search that puts ``a`` down elsewhere
    reaches the goal. The world lives in ``state`` so that Stilman's snapshots restore it."""

    def __init__(self) -> None:
        self.state: tuple[str, bool] = ("way", False)  # where a stands; whether b is moved
        self.at = "here"
        self.moved: set[str] = set()
        self.blocks: dict[str, set[str]] = {}
        self.near: set[str] = set()
        self.keep_out: list[object] = []
        self.stage_times: dict[str, float] = {}
        self.a_placements = 0  # fresh samples, so not restored by a snapshot

    def refine(self, step: tuple[str, ...], deadline: Deadline) -> Refinement:
        a_at, b_moved = self.state
        if step[0] == "move_to_goal":
            if a_at == "way":
                return Refinement(False, facts=["(blocks a goal)"], reason="a in the way")
            if not b_moved:
                return Refinement(False, facts=["(blocks b goal)"], reason="b in the way")
            return self._done(step, self.state, "goal")
        if step[0] == "move_to_near_b" and a_at == "bad":
            return Refinement(False, reason="no motion to near_b")
        if step[0].startswith("move_to_near_"):
            return self._done(step, self.state, step[0][len("move_to_") :])
        if step[0] == "pick":
            return self._done(step, self.state, self.at)
        if step == ("place", "a"):
            self.a_placements += 1
            return self._done(step, ("bad" if self.a_placements == 1 else "aside", b_moved))
        return self._done(step, (a_at, True))

    def _done(self, step: tuple[str, ...], state: tuple[str, bool], at: str = "") -> Refinement:
        self.state, self.at = state, at or self.at
        return Refinement(True, [step], [state])

    def learn(self, facts: list[str]) -> None:
        for fact in facts:
            _, box, loc = fact.strip("()").split()
            self.blocks.setdefault(loc, set()).add(box)

    def at_goal(self) -> bool:
        return self.at == "goal"

    def close(self) -> None:
        pass


def test_stilman_puts_a_box_down_elsewhere_when_its_first_placement_blocks_the_next() -> None:
    planner = Stilman()
    planner.prepare(_ScriptedMDP(_PlacementTrapInterface()), Deadline(60))  # type: ignore[arg-type]
    plan = planner._plan
    assert plan[-1] == ("move_to_goal", "near_b")
    # The branch that put a in the bad spot was undone: a is placed once in the plan.
    assert plan.count(("place", "a")) == 1 and ("place", "b") in plan
    assert planner.last_stats["backtracks"] == planner.backtracks == 1
    assert planner.last_stats["obstacles_moved"] == 2
    # The search backs up through the interface's own snapshots.
    assert getattr(planner._interface, "snapshots", 0) >= 2


@pytest.mark.parametrize("settings", [{"placements": 1}, {"max_backtracks": 0}])
def test_stilman_without_placement_search_gives_up_on_the_trap(settings: dict[str, int]) -> None:
    with pytest.raises(NoPlanFound, match="no way to the goal"):
        Stilman(**settings).prepare(_ScriptedMDP(_PlacementTrapInterface()), Deadline(60))  # type: ignore[arg-type]


class _LongWayInterface(_PlacementTrapInterface):
    """``n`` boxes stand one after the other on the way to the goal, each free to reach,
    pick and put down. The first ``comes_back`` placements of box b0 land on the way again
    (it blocks the goal once more); any later placement is fine."""

    def __init__(self, n: int, comes_back: int = 0) -> None:
        super().__init__()
        self.n = n
        self.comes_back = comes_back
        self.state = (0, False)  # type: ignore[assignment]  # boxes moved; b0 back on the way
        self.b0_placements = 0  # fresh samples, so not restored by a snapshot

    def refine(self, step: tuple[str, ...], deadline: Deadline) -> Refinement:
        moved, back = self.state  # type: ignore[misc]
        if step[0] == "move_to_goal":
            if back:
                return Refinement(False, facts=["(blocks b0 goal)"], reason="b0 back")
            if moved < self.n:
                return Refinement(False, facts=[f"(blocks b{moved} goal)"], reason="blocked")
            return self._done(step, self.state, "goal")  # type: ignore[arg-type]
        if step[0] == "pick":
            return self._done(step, self.state, self.at)  # type: ignore[arg-type]
        if step[0].startswith("move_to_near_"):
            return self._done(step, self.state, step[0][len("move_to_") :])  # type: ignore[arg-type]
        if step == ("place", "b0"):
            self.b0_placements += 1
            lands_back = self.b0_placements <= self.comes_back
            return self._done(step, (max(moved, 1), lands_back))  # type: ignore[arg-type]
        return self._done(step, (moved + 1, back))  # type: ignore[arg-type]


def test_stilman_clears_as_many_boxes_off_one_way_as_stand_on_it() -> None:
    """A way across a large world meets more obstructors than the paper's; the search
    clears every one of them."""
    planner = Stilman()
    planner.prepare(_ScriptedMDP(_LongWayInterface(15)), Deadline(60))  # type: ignore[arg-type]
    assert planner._plan[-1][0] == "move_to_goal"
    assert [a[1] for a in planner._plan if a[0] == "place"] == [f"b{i}" for i in range(15)]
    assert planner.last_stats["obstacles_moved"] == 15
    assert planner.last_stats["backtracks"] == 0


@pytest.mark.parametrize("comes_back", [1, 2])
def test_stilman_clears_a_box_found_in_its_way_again(comes_back: int) -> None:
    """A box put down where the way runs is carried off again, without undoing anything."""
    iface = _LongWayInterface(3, comes_back=comes_back)
    planner = Stilman()
    planner.prepare(_ScriptedMDP(iface), Deadline(60))  # type: ignore[arg-type]
    places = [a[1] for a in planner._plan if a[0] == "place"]
    assert places == ["b0"] * (comes_back + 1) + ["b1", "b2"]
    assert planner.last_stats["backtracks"] == 0


def test_stilman_gives_up_on_a_box_that_always_comes_back() -> None:
    """The clears along one way are bounded: a box that lands on the way wherever it is put
    fails the search in a bounded number of placements, not at the deadline."""
    iface = _LongWayInterface(3, comes_back=10**9)
    with pytest.raises(NoPlanFound, match="no way to the goal"):
        Stilman().prepare(_ScriptedMDP(iface), Deadline(60))  # type: ignore[arg-type]
    assert iface.b0_placements < 200


@pytest.mark.parametrize(
    ("settings", "message"),
    [({"placements": 0}, "placements"), ({"max_backtracks": -1}, "max_backtracks")],
)
def test_bad_placement_search_settings_are_refused(settings: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Stilman(**settings)


class _PastTheGoal(_Snapshots, ScriptedInterface):
    """The way to the goal is blocked by box ``b``, and the way to ``b`` passes the goal."""

    def __init__(self) -> None:
        super().__init__()
        self.refined: list[str] = []
        self.state: State = (0, 0)
        self.at = "here"
        self.moved: set[str] = set()
        self.blocks: dict[str, set[str]] = {}
        self.near: set[str] = set()
        self.keep_out: list[object] = []

    def refine(self, step: tuple[str, ...], deadline: Deadline) -> Refinement:
        self.refined.append(step[0])
        if step[0] == "move_to_near_b":
            self.done = True
            self.state = (2, 0)
            return Refinement(True, [("right",), ("right",)], [(1, 0), (2, 0)])
        if step[0] == "move_to_goal":
            return Refinement(False, reason="b is in the way", facts=["(blocks b goal)"])
        return Refinement(False, reason=f"{step[0]} is not possible from the goal")


def test_stilman_ends_the_plan_where_the_way_to_an_obstructor_reached_the_goal() -> None:
    iface = _PastTheGoal()
    planner = Stilman()
    planner.prepare(ScriptedMDP(iface), Deadline(60))
    # No pick of b from the goal, which would fail and undo the way there.
    assert iface.refined == ["move_to_goal", "move_to_near_b"]
    assert planner.last_stats["actions"] == 2
