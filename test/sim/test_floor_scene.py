"""The PyBullet scene of a floor world (``camp_planner.sim.floor_scene``), built from NAMO's
tasks."""

import math
import random

import pybullet as pb
import pytest

from camp_planner.domains.namo.world import generate_task
from camp_planner.sim.floor_scene import POOL_SIZE, FloorScene, idle_servers
from camp_planner.sim.pybullet_servers import connected_clients, direct_client

pytestmark = pytest.mark.pybullet
TASK = generate_task(0, 1000)


def test_start_is_free_and_every_box_is_detected_by_name() -> None:
    with direct_client() as client:
        scene = FloorScene(TASK, client)
        assert scene.collisions(TASK.start) == set()
        for box in TASK.boxes:
            assert box.name in scene.collisions((box.x, box.y, 0.3))


def test_walls_and_the_goal_object_collide() -> None:
    with direct_client() as client:
        scene = FloorScene(TASK, client, boxes=[])
        assert "wall" in scene.collisions((0.05, 4.5, 0.0))
        assert "goal" in scene.collisions((*TASK.goal, 0.0))
        # A margin reports near misses that the exact check does not.
        x, y = TASK.goal
        near = (x - TASK.settings.base_half_extent - TASK.settings.goal_radius - 0.03, y, 0.0)
        assert "goal" not in scene.collisions(near)
        assert "goal" in scene.collisions(near, margin=0.05)


def test_a_scene_with_a_subset_of_boxes_ignores_the_others() -> None:
    keep = TASK.boxes[0].name
    other = TASK.boxes[1]
    with direct_client() as client:
        scene = FloorScene(TASK, client, boxes=[keep])
        assert set(scene.boxes) == {keep}
        assert other.name not in scene.collisions((other.x, other.y, 0.0))
    with direct_client() as client, pytest.raises(KeyError, match="box_nope"):
        FloorScene(TASK, client, boxes=["box_nope"])


def test_moving_a_box_moves_its_collision_geometry() -> None:
    box = TASK.boxes[0]
    with direct_client() as client:
        scene = FloorScene(TASK, client)
        scene.place_box(box.name, 4.5, 4.5)
        assert scene.box_position(box.name) == pytest.approx((4.5, 4.5))
        assert box.name not in scene.collisions((box.x, box.y, 0.0))
        assert box.name in scene.collisions((4.5, 4.5, 0.0))


def test_clients_are_independent() -> None:
    with direct_client() as a, direct_client() as b:
        full = FloorScene(TASK, a)
        empty = FloorScene(TASK, b, boxes=[])
        box = TASK.boxes[0]
        assert box.name in full.collisions((box.x, box.y, 0.0))
        assert empty.collisions((box.x, box.y, 0.0)) == set()


def _brute_force(
    scene: FloorScene, pose: tuple[float, float, float], margin: float, ignore: frozenset[str]
) -> set[str]:
    """Every named body's exact distance to every robot part: no broadphase, no filters."""
    import pybullet as pb

    scene.set_base(pose)
    hits = set()
    own = set(scene.robot_parts())
    for body, name in scene._names.items():
        if name in ignore or name in hits or body in own:
            continue
        for part in scene.robot_parts():
            points = pb.getClosestPoints(part, body, margin, physicsClientId=scene.client)
            if any(p[8] < margin - 1e-6 for p in points):
                hits.add(name)
                break
    return hits


def test_both_queries_agree_with_brute_force_everywhere() -> None:
    """collisions, collisions_at (broadphase box, disc test for static bodies, robot moved
    only when something is near) and blocked_at (also a floor-plan shortcut for sure hits)
    report exactly what checking every body does, at random poses, with margins, ignored
    boxes, zones and a held box, with boxes moved, turned and taken away between queries,
    whatever order queries come in."""
    import random

    rng = random.Random(7)
    size = TASK.settings.world_size
    ignore = frozenset(b.name for b in TASK.boxes[:5])
    with direct_client() as lazy_client, direct_client() as ref_client:
        lazy, ref = FloorScene(TASK, lazy_client), FloorScene(TASK, ref_client)
        for scene in (lazy, ref):
            scene.set_zones([(6.0, 0.0, 9.0, 3.0)])
        nonempty = 0
        for k in range(1500):
            if k == 750:  # carry a box for the second half
                box = TASK.boxes[0]
                for scene in (lazy, ref):
                    scene.set_base((box.x - 0.5, box.y, 0.0))
                    scene.grasp(box.name)
            if k % 50 == 25:  # boxes moved, taken away, turned, and tried elsewhere
                name = rng.choice([b.name for b in TASK.boxes[1:]])
                spot = (rng.uniform(0.5, size - 0.5), rng.uniform(0.5, size - 0.5))
                yaw = rng.choice((0.0, 0.0, 0.4))
                trial = (rng.uniform(1, 8), rng.uniform(1, 8))
                for scene in (lazy, ref):
                    if k % 200 == 125:
                        scene.box_collisions(name, *trial)
                    elif k % 150 == 25:
                        scene.remove_box(name)
                    else:
                        scene.place_box(name, *spot, yaw)
            pose = (rng.uniform(0, size), rng.uniform(0, size), rng.uniform(-3.2, 3.2))
            margin = rng.choice((0.0, 0.05))
            skip = ignore if k % 3 == 0 else frozenset()
            expected = _brute_force(ref, pose, margin, skip)
            # blocked_at first on odd queries: it may leave the arm behind the base.
            if k % 2:
                assert lazy.blocked_at(pose, margin, skip) == bool(expected), (k, pose, margin)
            assert lazy.collisions_at(pose, margin, skip) == expected, (k, pose, margin)
            assert lazy.blocked_at(pose, margin, skip) == bool(expected), (k, pose, margin)
            if k % 5 == 0:
                assert lazy.collisions(pose, margin, skip) == expected, (k, pose, margin)
            nonempty += bool(expected)
        assert 100 < nonempty < 1400  # both free and colliding poses were exercised


def test_the_floor_plan_shortcut_settles_poses_inside_walls_boxes_and_the_goal() -> None:
    """blocked_at claims a hit without the simulator only where the base's inscribed disc
    overlaps a body; a pose just outside that, still colliding by a corner, goes to PyBullet
    and is still reported."""
    import math

    box = TASK.boxes[0]
    hb = TASK.settings.base_half_extent
    with direct_client() as client:
        scene = FloorScene(TASK, client)
        for pose in ((box.x, box.y, 0.0), (0.05, 4.5, 0.0), (*TASK.goal, 0.7)):
            moved_before = scene.pose
            assert scene.blocked_at(pose)
            assert scene.pose == moved_before  # settled on the floor plan: nothing moved
        # Turned 45 degrees beside the box: the base's corner reaches into it, its inscribed
        # disc does not.
        half = TASK.settings.box_size[0] / 2
        corner = (box.x - half - hb * math.sqrt(2) + 0.02, box.y, math.pi / 4)
        assert box.name in scene.collisions(corner)
        assert scene.blocked_at(corner)
        assert scene.pose == corner  # decided by PyBullet, with the robot moved there


def test_putting_a_box_down_shrinks_the_broadphase_back() -> None:
    """Carrying a box widens the broadphase disc; letting go must narrow it again, or every
    later check looks at several times the floor area it needs."""
    box = TASK.boxes[0]
    with direct_client() as client:
        scene = FloorScene(TASK, client)
        bare = scene._radius
        scene.set_base((box.x - 0.5, box.y, 0.0))
        scene.grasp(box.name)
        assert scene._radius > bare + 0.1
        scene.release(box.x, box.y)
        assert scene._radius == pytest.approx(bare)
        scene.grasp(box.name)
        scene.let_go()  # as the MDP does before checking where the box would stand
        assert scene.held is None
        assert scene._radius == pytest.approx(bare)


def test_the_broadphase_radius_does_not_depend_on_the_heading_it_was_measured_at() -> None:
    """Measured at any heading, the radius is the one measured at heading 0 (the tightest);
    that it still holds the whole robot is what the brute-force agreement test checks."""
    import math

    box = TASK.boxes[0]
    with direct_client() as client:
        scene = FloorScene(TASK, client)
        for carrying in (False, True):
            if carrying:
                scene.set_base((box.x - 0.5, box.y, 0.0))
                scene.grasp(box.name)
            radii = []
            for yaw in (0.0, 0.4, math.pi / 4, 2.0, -2.8):
                scene.set_base((4.5, 4.5, yaw))
                scene._measured.clear()  # measure again, not recall
                scene._measure_robot()
                radii.append(scene._radius)
                assert scene.pose == (4.5, 4.5, yaw)  # measuring leaves the robot where it was
            assert max(radii) == pytest.approx(min(radii))
            assert TASK.settings.base_half_extent * math.sqrt(2) < radii[0]


def test_the_robot_measured_once_per_held_box_is_the_robot_measured_afresh() -> None:
    """The broadphase radius, height and part discs recalled after a pick or a drop are
    what measuring the robot there again finds, for every box carried and none."""
    rng = random.Random(5)
    with direct_client() as client, direct_client() as ref_client:
        scene, ref = FloorScene(TASK, client), FloorScene(TASK, ref_client)
        for box in rng.sample(TASK.boxes, 4) * 2:
            for carrying in (True, False):
                pose = (rng.uniform(1, 8), rng.uniform(1, 8), rng.uniform(-3, 3))
                scene.set_base(pose)
                ref.set_base(pose)
                ref._measured.clear()  # the reference measures afresh every time
                if carrying:
                    scene.grasp(box.name)
                    ref.grasp(box.name)
                else:
                    scene.let_go()
                    ref.let_go()
                assert scene._radius == pytest.approx(ref._radius, abs=1e-9)
                assert scene._top == pytest.approx(ref._top, abs=1e-9)
                assert scene._part_discs.keys() == ref._part_discs.keys()
                for part, disc in scene._part_discs.items():
                    assert disc == pytest.approx(ref._part_discs[part], abs=1e-9)
        assert len(scene._measured) == 5  # four boxes and none, each measured once


def test_a_remembered_arm_solution_is_the_one_ik_finds_from_that_pose() -> None:
    """IK answers are remembered per base pose and target: asked again, in any order, from
    poses that reach a target and poses that do not, the answer is a fresh solve's."""
    rng = random.Random(8)
    box = TASK.boxes[1]
    top = TASK.settings.box_size[2] + 0.02
    with direct_client() as client:
        scene = FloorScene(TASK, client)
        poses = [
            (box.x - d * math.cos(h), box.y - d * math.sin(h), h + rng.choice((0.0, 0.5, 2.5)))
            for d, h in ((rng.uniform(0.4, 0.8), rng.uniform(-3, 3)) for _ in range(12))
        ]
        targets = [(box.x, box.y, top), (box.x + 0.2, box.y - 0.1, top)]
        questions = [(p, t) for p in poses for t in targets] * 3
        rng.shuffle(questions)
        answers = {True: 0, False: 0}
        for pose, target in questions:
            scene.set_base(pose)
            found = scene.arm_solution(*target)
            assert found == scene._arm_solution(*target)
            answers[found is not None] += 1
        assert answers[True] > 0 and answers[False] > 0
        assert len(scene._ik_memo) == len(poses) * len(targets)


def test_bodies_beyond_every_part_of_the_robot_are_not_asked_of_pybullet() -> None:
    """A box diagonally off the robot is inside PyBullet's broadphase square but outside the
    robot's disc (so the floor index does not list it) and the disc of every robot part:
    blocked_at answers free without moving the robot."""
    box = TASK.boxes[0]
    hx, hy = TASK.settings.box_size[0] / 2, TASK.settings.box_size[1] / 2
    with direct_client() as client:
        scene = FloorScene(TASK, client)
        r = scene._radius
        # Off the box's lower-left corner by 0.9 r along each axis: within the square
        # around the robot's disc, 1.27 r from the robot's centre.
        pose = (box.x - hx - 0.9 * r, box.y - hy - 0.9 * r, 0.0)
        assert (scene._box_rect(scene.boxes[box.name]) is not None) and any(
            name == box.name
            for _, name in scene._near_broadphase(pose[0], pose[1], 0.0, frozenset())
        )
        assert all(name != box.name for _, name in scene._near(*pose[:2], 0.0, frozenset()))
        before = scene.pose
        expected = scene.collisions(pose)  # moves the robot there and back below
        scene.set_base(before)
        assert expected == set()
        assert not scene.blocked_at(pose)
        assert scene.pose == before


def test_a_pooled_scene_checks_as_a_fresh_one_after_other_tasks_used_its_server() -> None:
    rng = random.Random(3)
    other = generate_task(1, 2000)
    for task in (other, TASK):  # the second scene reuses the first one's server
        scene = FloorScene.open(task)
        scene.grasp(task.boxes[0].name)  # a held box and zones must not outlive the scene
        scene.set_zones([(0.0, 0.0, 1.0, 1.0)])
        scene.close()
    pooled = FloorScene.open(TASK)
    poses = [(rng.uniform(0, 9), rng.uniform(0, 9), rng.uniform(-3.1, 3.1)) for _ in range(400)]
    with direct_client() as client:
        fresh = FloorScene(TASK, client)
        assert set(pooled.boxes) == set(fresh.boxes)
        # Nothing of the earlier tasks is left (unnamed leftovers would only slow checks).
        assert pb.getNumBodies(physicsClientId=pooled.client) == pb.getNumBodies(
            physicsClientId=client
        )
        assert pooled.held is None and pooled.robot_parts() == [pooled.base, pooled.arm]
        for pose in poses:
            for margin in (0.0, 0.05):
                assert pooled.collisions_at(pose, margin) == fresh.collisions_at(pose, margin)
        assert pooled.arm_solution(1.0, 1.2, 0.3) == fresh.arm_solution(1.0, 1.2, 0.3)
    pooled.close()
    with pytest.raises(RuntimeError, match="pool"):
        pooled.close()


def test_the_pool_keeps_at_most_its_size_of_idle_servers() -> None:
    scenes = [FloorScene.open(TASK) for _ in range(POOL_SIZE + 2)]
    alive = connected_clients()
    for scene in scenes:
        scene.close()
    assert idle_servers() == POOL_SIZE
    assert connected_clients() <= alive  # the servers beyond the pool's size are gone


def test_every_collision_query_is_counted_and_timed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planners' stage ``collision_checks`` is the scene's clock: each of the four
    queries adds one check and the time between its start and its end, nothing else."""
    import camp_planner.sim.floor_scene as floor_scene

    ticks = iter(range(1000))
    monkeypatch.setattr(floor_scene, "_now", lambda: float(next(ticks)))
    box = TASK.boxes[0]
    with direct_client() as client:
        scene = FloorScene(TASK, client)
        queries = [
            lambda: scene.collisions(TASK.start),
            lambda: scene.collisions_at((box.x, box.y, 0.3)),
            lambda: scene.blocked_at((box.x, box.y, 0.3), 0.03),
            lambda: scene.box_collisions(box.name, box.x + 0.05, box.y),
        ]
        for k, query in enumerate(queries, start=1):
            query()
            # The fake clock ticks once per reading: one second per query.
            assert (scene.checks, scene.check_seconds) == (k, float(k))
        scene.place_box(box.name, box.x, box.y)
        assert (scene.checks, scene.check_seconds) == (4, 4.0)


def test_the_arm_follows_the_base_whenever_something_asks_about_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """blocked_at moves the arm (12 links, 6 µs) only when it asks PyBullet about the arm;
    whatever asks next (collisions, IK, a box's overlaps, the robot's parts) finds the arm
    on the base, as in a scene that moved both every time."""

    from camp_planner.sim import floor_scene

    rng = random.Random(11)
    moves: list[int] = []
    reset = pb.resetBasePositionAndOrientation

    def counted(body: int, *args: object, **kwargs: object) -> None:
        moves.append(body)
        reset(body, *args, **kwargs)

    monkeypatch.setattr(floor_scene.pb, "resetBasePositionAndOrientation", counted)
    box = TASK.boxes[2]
    with direct_client() as lazy_client, direct_client() as ref_client:
        lazy, ref = FloorScene(TASK, lazy_client), FloorScene(TASK, ref_client)
        asked = 0
        for k in range(300):
            # Poses near a box or a wall, where checks need PyBullet.
            pose = (
                box.x + rng.uniform(-0.9, 0.9),
                box.y + rng.uniform(-0.9, 0.9),
                rng.uniform(-3, 3),
            )
            before = lazy.pose
            moves.clear()
            lazy.blocked_at(pose, 0.03)
            asked += lazy.base in moves
            ref.set_base(lazy.pose)
            query = k % 4
            if query == 0:
                assert lazy.collisions() == ref.collisions()
            elif query == 1:
                target = (box.x, box.y, 0.3)
                assert lazy.arm_solution(*target) == ref.arm_solution(*target)
            elif query == 2:
                # Where the robot stood before: an arm left there would be in the way.
                spot = before[:2]
                assert lazy.box_collisions(box.name, *spot) == ref.box_collisions(box.name, *spot)
            else:
                parts = lazy.robot_parts()
                assert pb.getBasePositionAndOrientation(
                    parts[1], physicsClientId=lazy_client
                ) == pb.getBasePositionAndOrientation(ref.arm, physicsClientId=ref_client)
        # Most checks that moved the robot settled without the arm.
        moves.clear()
        for _ in range(300):
            pose = (
                box.x + rng.uniform(-0.9, 0.9),
                box.y + rng.uniform(-0.9, 0.9),
                rng.uniform(-3, 3),
            )
            lazy.blocked_at(pose, 0.03)
        arm_moves, base_moves = moves.count(lazy.arm), moves.count(lazy.base)
        assert asked > 20 and base_moves > 20 and arm_moves < base_moves / 2


def test_the_floor_index_lists_exactly_the_bodies_near_the_robots_disc() -> None:
    """``_near`` answers from a floor index kept up to date as boxes move, turn, go, are
    tried elsewhere, picked up and let go, and as keep-out zones come and go: at every query
    it lists exactly the named bodies, not held and not ignored, whose floor rectangle (a
    turned box's AABB) comes within the robot's disc grown by the margin."""
    from camp_planner.sim.floor_index import rect_dist2

    rng = random.Random(5)
    size = TASK.settings.world_size
    names = [b.name for b in TASK.boxes]
    with direct_client() as client:
        scene = FloorScene(TASK, client)

        def expected(x: float, y: float, margin: float, ignore: frozenset[str]) -> set[int]:
            r = scene._radius + margin
            held = None if scene.held is None else scene.boxes[scene.held]
            out = set()
            for body, name in scene._names.items():
                if body == held or name in ignore:
                    continue
                rect = scene._static_rects.get(body)
                if rect is None:
                    lo, hi = pb.getAABB(body, -1, physicsClientId=client)
                    rect = scene._box_rect(body) or (lo[0], lo[1], hi[0], hi[1])
                if rect_dist2(rect, x, y) <= r * r:
                    out.add(body)
            return out

        listed = lazy = 0
        for k in range(600):
            step = k % 60
            name = rng.choice(names[1:])
            if step == 5:
                scene.set_zones([(6.0, 0.0, 9.0, 3.0), (0.0, 6.0, 3.0, 9.0)])
            elif step == 35:
                scene.clear_zones()
            elif step == 10:
                scene.place_box(name, rng.uniform(0.5, size - 0.5), rng.uniform(0.5, size - 0.5))
            elif step == 15:
                scene.place_box(name, rng.uniform(1, 8), rng.uniform(1, 8), 0.5)  # turned
            elif step == 20:
                scene.remove_box(name)
            elif step == 25:
                scene.box_collisions(name, rng.uniform(1, 8), rng.uniform(1, 8))
            elif step == 30 and scene.held is None:
                box = next(b for b in TASK.boxes if b.name == names[0])
                scene.set_base((box.x - 0.5, box.y, 0.0))
                scene.grasp(box.name)  # a larger disc: the index is built again
            elif step == 45 and scene.held is not None:
                scene.let_go()  # back on the floor, where it was carried to
            elif step == 50:
                # More boxes moved at once than the index takes in at once (a new state put
                # in the scene): the next queries test them one by one.
                for other in names[1:]:
                    scene.place_box(
                        other, rng.uniform(0.5, size - 0.5), rng.uniform(0.5, size - 0.5)
                    )
            pose = (rng.uniform(0, size), rng.uniform(0, size), rng.uniform(-3, 3))
            if step % 3 == 0:
                scene.set_base(pose)  # a held box moves with the robot
            margin = rng.choice((0.0, 0.03, 0.05))
            ignore = frozenset(names[:4]) if k % 4 == 0 else frozenset()
            got = scene._near(pose[0], pose[1], margin, ignore)
            lazy += scene._lazy_queries > 0
            assert len(got) == len({b for b, _ in got}), k  # each body once
            assert {b for b, _ in got} == expected(pose[0], pose[1], margin, ignore), (k, pose)
            listed += len(got)
        assert listed > 300
        assert lazy >= 50  # answered without re-indexing the moved boxes, then folded in
        # Outside the world the index has no cell: PyBullet's broadphase answers.
        assert scene._near(-0.5, 1.0, 0.0, frozenset()) == scene._near_broadphase(
            -0.5, 1.0, 0.0, frozenset()
        )


def test_many_boxes_taken_away_at_once_are_reindexed_within_a_fixed_number_of_queries() -> None:
    # A CAMP of a large world takes most of its boxes out of the scene at once. Checking
    # each of them on every query until half as many queries as boxes had passed cost a
    # 20×20 CAMP seconds; testing them costs the same per query whatever their number, so
    # they are folded into the index after a fixed number of queries.
    from camp_planner.domains.namo.world import NamoSettings
    from camp_planner.sim.floor_scene import _FOLD_QUERIES

    task = generate_task(0, 3, NamoSettings(grid=8))
    assert len(task.boxes) > 4 * _FOLD_QUERIES
    rng = random.Random(3)
    size = task.settings.world_size
    with direct_client() as client:
        scene = FloorScene(task, client)
        scene.blocked_at(task.start)  # the index is built and up to date
        for _ in range(_FOLD_QUERIES + 1):
            scene.blocked_at(task.start)
        assert not scene._stale
        for box in task.boxes:
            scene.remove_box(box.name)
        for _ in range(_FOLD_QUERIES + 1):
            pose = (rng.uniform(0, size), rng.uniform(0, size), 0.0)
            scene.blocked_at(pose)
        assert not scene._stale
        assert not scene.collisions((task.boxes[0].x, task.boxes[0].y, 0.0)) & {
            b.name for b in task.boxes
        }
