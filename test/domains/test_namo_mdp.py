import math
import pickle
import random

import pytest

from camp_planner.domains.namo.mdp import ABSENT, HELD, NONE, SLOT_NAMES, NamoMDP
from camp_planner.domains.namo.world import generate_task
from camp_planner.sim.floor_scene import idle_servers, warm_up
from camp_planner.sim.pybullet_servers import connected_clients

pytestmark = pytest.mark.pybullet
TASK = generate_task(0, 1000)
BOX = TASK.boxes[0]


@pytest.fixture(scope="module")
def mdp() -> NamoMDP:
    return NamoMDP.from_task(TASK)


def test_initial_state_layout(mdp: NamoMDP) -> None:
    s0 = mdp.initial_state()
    assert s0[1] == 0 and s0[2] == NONE
    present = {b.name for b in TASK.boxes}
    for name in SLOT_NAMES:
        value = s0[mdp.state_index(name)]
        assert (value != ABSENT) == (name in present)


def test_drive_stops_before_a_box_and_pick_and_place_move_it(mdp: NamoMDP) -> None:
    s0 = mdp.initial_state()
    i = mdp.state_index(BOX.name)
    s1 = mdp.step(s0, ("move", (BOX.x - 0.5, BOX.y, 0.0), NONE))
    assert s1[0][:2] == pytest.approx((BOX.x - 0.5, BOX.y), abs=1e-3)
    s2 = mdp.step(s1, ("pick", None, BOX.name))
    assert s2[2] == BOX.name and s2[i] == HELD
    back = mdp.step(s2, ("move", (BOX.x - 0.9, BOX.y, 0.0), NONE))
    s3 = mdp.step(back, ("place", (back[0][0] + 0.5, back[0][1]), NONE))
    assert s3[2] == NONE
    assert s3[i] == pytest.approx((back[0][0] + 0.5, back[0][1]), abs=1e-3)
    # Out of reach: nothing happens.
    assert mdp.step(s1, ("pick", None, SLOT_NAMES[-1])) == s1
    assert mdp.step(s0, ("place", (1.0, 1.0), NONE)) == s0


def test_after_putting_a_box_down_collision_checks_see_the_bare_robot_again() -> None:
    """A carried box widens the scene's broadphase; after the MDP puts it down the robot's
    extent is the bare robot's again (checks stay exact either way: this is about cost)."""
    mdp = NamoMDP.from_task(TASK)  # its own: the module's MDP remembers these steps
    s1 = mdp.step(mdp.initial_state(), ("move", (BOX.x - 0.5, BOX.y, 0.0), NONE))
    s2 = mdp.step(s1, ("pick", None, BOX.name))
    back = mdp.step(s2, ("move", (BOX.x - 0.9, BOX.y, 0.0), NONE))
    carrying = mdp.sync(back)._radius
    s3 = mdp.step(back, ("place", (back[0][0] + 0.5, back[0][1]), NONE))
    assert s3[2] == NONE
    scene = mdp.sync(s3)
    after = scene._radius
    scene._measure_robot()
    assert after == pytest.approx(scene._radius)
    assert after < carrying - 0.1


def test_reaching_the_goal_pays_once_and_ends(mdp: NamoMDP) -> None:
    s0 = mdp.initial_state()
    gx, gy = TASK.goal
    at_goal = mdp.assign_state(s0, 0, (gx - 0.6, gy, 0.0))
    assert mdp.is_terminal(at_goal) and at_goal[1] == 8
    assert mdp.reward(s0, ("none", None, NONE), at_goal) == TASK.settings.goal_reward
    assert mdp.reward(at_goal, ("none", None, NONE), at_goal) == 0.0


def test_transitions_are_deterministic_and_survive_pickling(mdp: NamoMDP) -> None:
    rng = random.Random(0)
    pairs = []
    for _ in range(30):
        s = mdp.sample_state(rng)
        pairs.append((s, mdp.sample_action(s, rng)))
    first = [mdp.step(s, a) for s, a in pairs]
    clone = pickle.loads(pickle.dumps(mdp))
    assert [clone.step(s, a) for s, a in pairs] == first
    assert [o.state for s, a in pairs for o in mdp.transition_distribution(s, a)] == first
    clone.close()


def test_dropped_boxes_are_absent_from_the_simulated_world(mdp: NamoMDP) -> None:
    s0 = mdp.initial_state()
    go = ("move", (BOX.x + 0.8, BOX.y, 0.0), NONE)
    with_box = mdp.step(mdp.assign_state(s0, 0, (BOX.x - 0.8, BOX.y, 0.0)), go)
    without = mdp.assign_state(s0, mdp.state_index(BOX.name), ABSENT)
    without_box = mdp.step(mdp.assign_state(without, 0, (BOX.x - 0.8, BOX.y, 0.0)), go)
    assert with_box[0][0] < BOX.x < without_box[0][0]
    # Driving into the box stopped short of it, never inside it.
    mdp.sync(with_box)
    assert not mdp.scene().collisions(with_box[0])


def test_a_box_put_down_never_overlaps_the_robot_once_the_scene_is_rebuilt(mdp: NamoMDP) -> None:
    # The state records a box by its (x, y) and every resync stands it axis-aligned, so the
    # put-down check must use that box, not one turned to the robot's heading.
    s0 = mdp.initial_state()
    s1 = mdp.step(s0, ("move", (BOX.x - 0.5, BOX.y, 0.0), NONE))
    held = mdp.step(s1, ("pick", None, BOX.name))
    assert held[2] == BOX.name
    rng = random.Random(0)
    placed = 0
    for _ in range(40):
        yaw = rng.uniform(-3.1, 3.1)
        turned = mdp.step(held, ("move", (held[0][0], held[0][1], yaw), NONE))
        x, y, t = turned[0]
        d, b = rng.uniform(0.35, 0.7), rng.uniform(-1.2, 1.2)
        point = (x + d * math.cos(t + b), y + d * math.sin(t + b))
        after = mdp.step(turned, ("place", point, NONE))
        if after[2] != NONE:
            continue
        placed += 1
        scene = mdp.sync(after)
        assert not scene.collisions(after[0]), (after[0], point)
    assert placed >= 5


def test_csi_samples_put_the_robot_where_it_stands_free(mdp: NamoMDP) -> None:
    """A move from a pose inside a wall or a box goes nowhere whatever the other boxes do:
    such samples teach CSI learning nothing."""
    rng = random.Random(3)
    for _ in range(150):
        state, _action = mdp.sample_state_action(rng)
        assert mdp.sync(state).is_free(state[0]), state[:3]


def test_the_step_memo_stays_within_its_element_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    import camp_planner.domains.namo.mdp as namo_mdp

    mdp = NamoMDP.from_task(TASK)
    s0 = mdp.initial_state()
    per_entry = 2 * len(s0)
    monkeypatch.setattr(namo_mdp, "MEMO_ELEMENTS", 3 * per_entry)
    successors = []
    for k in range(8):
        action = ("move", (s0[0][0] + 0.05 * (k + 1), s0[0][1], 0.0), NONE)
        successors.append(mdp.step(s0, action))
        assert len(mdp._memo) * per_entry <= 4 * per_entry  # the budget and the new entry
    # Forgetting changes nothing but time: the same steps again give the same successors.
    for k, nxt in enumerate(successors):
        action = ("move", (s0[0][0] + 0.05 * (k + 1), s0[0][1], 0.0), NONE)
        assert mdp.step(s0, action) == nxt


def test_after_a_pick_or_a_place_the_next_step_sees_every_box_where_its_state_has_it() -> None:
    """A pick leaves the box carried and a place leaves it wherever it was carried; the
    scene is then synced incrementally, so the box (and only it) must go back down."""
    mdp = NamoMDP.from_task(TASK)
    s0 = mdp.initial_state()
    s1 = mdp.step(s0, ("move", (BOX.x - 0.5, BOX.y, 0.0), NONE))
    across = ("move", (BOX.x + 0.8, BOX.y, 0.0), NONE)
    stopped = mdp._step(s1, across)
    assert stopped[0][0] < BOX.x  # the box on the floor stops the drive
    s2 = mdp.step(s1, ("pick", None, BOX.name))
    assert s2[2] == BOX.name
    assert mdp._step(s1, across) == stopped
    back = mdp.step(s2, ("move", (BOX.x - 0.9, BOX.y, 0.0), NONE))
    s3 = mdp.step(back, ("place", (back[0][0] + 0.5, back[0][1]), NONE))
    assert s3[2] == NONE
    assert mdp._step(s1, across) == stopped
    # A state that holds the box and also gives its slot a floor position (a CSI variant
    # probing that slot): the scene carries the box, and the next state gets it back.
    i = mdp.state_index(BOX.name)
    odd = mdp.assign_state(s2, i, s1[i])
    odd = mdp.assign_state(odd, 0, (BOX.x - 1.0, BOX.y - 0.8, -math.pi / 2))  # carried away
    mdp.sync(odd)
    assert mdp.scene().held == BOX.name
    assert mdp._step(s1, across) == stopped


def test_incremental_syncs_give_the_successors_of_a_scene_rebuilt_every_step() -> None:
    """The steps CSI learning asks for (samples, and each with one variable changed), some
    of them picks and places, on one MDP whose scene moves only what changed, against an
    MDP whose scene is rebuilt from the state before every step."""
    fast, full = NamoMDP.from_task(TASK), NamoMDP.from_task(TASK)
    rng = random.Random(11)
    ops: dict[str, int] = {}
    for _ in range(60):
        s, a = fast.sample_state_action(rng)
        asks = [(s, a)]
        for _ in range(3):
            i = rng.randrange(len(s))
            asks.append((fast.assign_state(s, i, fast.sample_value(i, rng)), a))
        if s[2] != NONE:  # carrying: put it down somewhere near
            x, y, yaw = s[0]
            asks.append((s, ("place", (x + 0.5 * math.cos(yaw), y + 0.5 * math.sin(yaw)), NONE)))
        for state, action in asks:
            full._synced = None
            nxt = fast._step(state, action)
            assert nxt == full._step(state, action), (state[:3], action)
            if nxt != state:
                ops[action[0]] = ops.get(action[0], 0) + 1
    # Picks and places that succeeded are among them (each leaves the scene out of step
    # with its state).
    assert ops.get("pick", 0) >= 3 and ops.get("place", 0) >= 3, ops


def test_a_namo_mdp_loads_the_robot_before_any_planning_clock_starts() -> None:
    from camp_planner.domains.namo.domain import NamoDomain

    domain = NamoDomain()
    warm_up.cache_clear()
    before = connected_clients() - idle_servers()
    mdp = domain.make_mdp(TASK, domain.default_config())
    # One server with the arm loaded waits in the pool, and the scene takes it.
    assert warm_up.cache_info().currsize == 1 and idle_servers() >= 1
    idle = idle_servers()
    mdp.scene()
    assert idle_servers() == idle - 1
    mdp.close()
    assert idle_servers() == idle
    assert connected_clients() - idle_servers() == before
