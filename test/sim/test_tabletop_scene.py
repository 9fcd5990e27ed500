"""The tabletop PyBullet scene (``camp_planner.sim.tabletop_scene``), built from the
manipulation domain's tasks: grasps from geometry, IK and collision checks, holding,
placing into bins and regrasping."""

import itertools
import math
import random
from collections.abc import Callable

import pytest

from camp_planner.domains.manip.world import ManipTask, generate_task
from camp_planner.sim.pybullet_servers import direct_client
from camp_planner.sim.tabletop_geometry import SIDE, TOP, swept_width
from camp_planner.sim.tabletop_scene import ArmCheck, Grasp, Pose2D, TabletopScene

pytestmark = pytest.mark.pybullet

SKINNY = generate_task(0, 0)
FAT = generate_task(1, 1)
assert not SKINNY.fat and FAT.fat


def _first(
    scene: TabletopScene, poses: list[Pose2D], make: Callable[[], Grasp], place: bool = False
) -> tuple[Pose2D, Grasp, ArmCheck] | None:
    """The first free base pose from which the grasp (or placement) ``make`` builds works."""
    for pose in poses:
        if not scene.base_free(pose):
            continue
        scene.set_base(pose)
        g = make()
        check = scene.check_place(g) if place else scene.check_grasp(g)
        if check.ok:
            return pose, g, check
    return None


def test_the_start_and_the_work_poses_are_free_and_a_table_is_not() -> None:
    with direct_client() as client:
        scene = TabletopScene(SKINNY, client)
        assert scene.base_free(SKINNY.start)
        assert any(scene.base_free(p) for p in SKINNY.work_poses("table_left"))
        assert "table_left" in scene.base_collisions((*SKINNY.left_table.centre, 0.0))


def test_a_skinny_red_has_top_and_side_grasps_in_a_clear_scene() -> None:
    red = SKINNY.reds[0].name
    with direct_client() as client:
        scene = TabletopScene(SKINNY, client, objects=[red])
        poses = SKINNY.work_poses("table_left")
        for style in (TOP, SIDE):
            found = _first(scene, poses, lambda style=style: scene.grasp(red, style))
            assert found is not None, style
            _, grasp, check = found
            assert grasp.width < SKINNY.settings.gripper_max_opening
            # IK was verified: the joints put the gripper at the grasp.
            scene.set_arm(check.goal_q or ())
            pos, _ = scene.gripper_pose()
            assert math.dist(pos, grasp.position) < 0.005


def test_a_fat_red_is_too_wide_for_a_top_grasp_but_not_for_a_side_grasp() -> None:
    red = FAT.reds[0]
    opening = FAT.settings.gripper_max_opening
    pad = FAT.settings.finger_pad
    # The widths come from the profile alone: the cap from above, the stem from the side.
    assert swept_width(TOP, red.sections, red.height - 0.03, pad) == pytest.approx(0.16)
    assert swept_width(SIDE, red.sections, 0.07, pad) == pytest.approx(0.06)
    with direct_client() as client:
        scene = TabletopScene(FAT, client, objects=[red.name])
        poses = FAT.work_poses("table_left")
        for pose in poses:
            scene.set_base(pose)
            check = scene.check_grasp(scene.grasp(red.name, TOP))
            assert not check.ok and check.reason == "too_wide"
        assert scene.grasp(red.name, SIDE).width < opening
        assert _first(scene, poses, lambda: scene.grasp(red.name, SIDE)) is not None


def test_a_distractor_on_the_side_approach_blocks_the_grasp() -> None:
    red = SKINNY.reds[0].name
    blue = SKINNY.distractors[0].name
    with direct_client() as client:
        scene = TabletopScene(SKINNY, client, objects=[red, blue])
        scene.remove_object(blue)
        found = _first(scene, SKINNY.work_poses("table_left"), lambda: scene.grasp(red, SIDE))
        assert found is not None
        _, grasp, _ = found
        # Stand the blue object where the gripper passes on its way in (half way from the
        # approach pose to the grasp, on the table).
        (ax, ay, _), (gx, gy, _) = grasp.approach, grasp.position
        scene.place_object(blue, (ax + gx) / 2, (ay + gy) / 2, SKINNY.settings.table_height)
        blocked = scene.check_grasp(grasp)
        assert not blocked.ok and blocked.reason == "collision" and blue in blocked.hits
        scene.remove_object(blue)
        assert scene.check_grasp(grasp).ok


def test_a_held_object_moves_with_the_robot_until_it_is_let_go() -> None:
    red = SKINNY.reds[0].name
    with direct_client() as client:
        scene = TabletopScene(SKINNY, client, objects=[red])
        found = _first(scene, SKINNY.work_poses("table_left"), lambda: scene.grasp(red, TOP))
        assert found is not None
        pose, grasp, check = found
        scene.pick(grasp, check)
        assert scene.held == red
        (hx, hy, hz), _ = scene.object_pose(red)
        assert hz > SKINNY.settings.table_height + 0.05  # lifted off the table
        x, y, yaw = pose
        scene.set_base((x + 0.3, y - 0.2, yaw))
        (mx, my, mz), _ = scene.object_pose(red)
        assert (mx - hx, my - hy, mz - hz) == pytest.approx((0.3, -0.2, 0.0), abs=1e-5)
        scene.detach()
        scene.set_base(pose)
        assert scene.object_pose(red)[0] == pytest.approx((mx, my, mz), abs=1e-9)


def _holding(task: ManipTask, scene: TabletopScene, style: str) -> None:
    red = task.reds[0].name
    found = _first(scene, task.work_poses("table_left"), lambda: scene.grasp(red, style))
    assert found is not None
    _, grasp, check = found
    scene.pick(grasp, check)


def _place_somewhere(
    scene: TabletopScene, task: ManipTask, spots: list[tuple[float, float, float]]
) -> tuple[int, Grasp, ArmCheck]:
    """The first of ``spots`` the held object can be put down at, from a right-table work
    pose: (its index, the placement, the check)."""
    poses = task.work_poses("table_right")
    for k, (x, y, z) in enumerate(spots):
        placed = _first(scene, poses, lambda x=x, y=y, z=z: scene.place_pose(x, y, z), True)
        if placed is not None:
            return k, placed[1], placed[2]
    raise AssertionError("no spot takes the held object")


def test_a_place_into_a_free_bin_puts_the_object_inside_it() -> None:
    task = SKINNY
    red = task.reds[0].name
    with direct_client() as client:
        scene = TabletopScene(task, client)
        _holding(task, scene, SIDE)
        free = [task.bins[k] for k in task.free_bins]
        k, where, check = _place_somewhere(scene, task, [(b.x, b.y, b.floor_z) for b in free])
        b = free[k]
        scene.place(where, check)
        assert scene.held is None
        (x, y, z), orn = scene.object_pose(red)
        assert b.contains(x, y) and z == pytest.approx(b.floor_z, abs=0.005)
        assert orn == pytest.approx((0.0, 0.0, 0.0, 1.0))  # upright
        assert not scene.arm_collisions()


def test_a_side_placement_withdraws_clear_of_a_red_let_go_a_few_millimetres_off() -> None:
    """The empty hand's way out of a side placement clears the red released a few
    millimetres off the planned spot (IK's tolerance is 5 mm at the grasp and at the place):
    lifting the palm up the red's side grazed it as planned, and hit it on the robot."""
    task = SKINNY
    red = task.reds[0].name
    with direct_client() as client:
        scene = TabletopScene(task, client)
        _holding(task, scene, SIDE)
        free = [task.bins[k] for k in task.free_bins]
        _, where, check = _place_somewhere(scene, task, [(b.x, b.y, b.floor_z) for b in free])
        scene.set_arm(check.goal_q or ())
        scene.detach()
        x, y, z = where.position
        # Planned, as a plan's program is, with the red where the plan lets it go ...
        scene.place_object(red, x, y, z - where.height)
        scene.set_arm(check.goal_q or (), task.settings.gripper_max_opening)
        retreat, hits = scene.withdrawal(where, check, holding=False)
        assert retreat and not hits
        way = [check.goal_q or (), *retreat]
        c, s = math.cos(where.yaw), math.sin(where.yaw)
        # ... and clear of it let go beside that spot or farther from the palm (a hand that
        # stopped short of the red held it there; one past it would have pushed into it).
        for off in (
            (0.0, 0.0),
            (0.004 * s, -0.004 * c),
            (-0.004 * s, 0.004 * c),
            (0.004 * c, 0.004 * s),
        ):
            scene.place_object(red, x + off[0], y + off[1], z - where.height)
            for a, b in itertools.pairwise(way):
                assert red not in scene.motion_collisions(a, b), off


def test_a_place_into_an_occupied_bin_collides_with_its_occupant() -> None:
    task = SKINNY
    with direct_client() as client:
        scene = TabletopScene(task, client)
        _holding(task, scene, SIDE)
        k = task.occupied.index(True)
        b = task.bins[k]
        reached = 0
        for pose in task.work_poses("table_right"):
            if not scene.base_free(pose):
                continue
            scene.set_base(pose)
            check = scene.check_place(scene.place_pose(b.x, b.y, b.floor_z))
            assert not check.ok
            if check.reason == "collision":
                assert f"green_{k}" in check.hits
                reached += 1
        assert reached  # the bin is within reach: the occupant is what refuses it


def test_a_regrasp_puts_a_top_grasped_object_down_and_picks_it_from_the_side() -> None:
    task = SKINNY
    red = task.reds[0].name
    with direct_client() as client:
        scene = TabletopScene(task, client)
        _holding(task, scene, TOP)
        z = task.settings.table_height
        _, where, check = _place_somewhere(
            scene, task, [(x, y, z) for x, y in task.staging_spots()]
        )
        scene.place(where, check)
        poses = task.work_poses("table_right")
        assert scene.object_pose(red)[0][2] == pytest.approx(z, abs=0.005)
        again = _first(scene, poses, lambda: scene.grasp(red, SIDE))
        assert again is not None
        scene.pick(again[1], again[2])
        assert scene.held == red and scene.held_grasp is not None
        assert scene.held_grasp.style == SIDE


def test_pooled_scenes_go_back_to_the_pool() -> None:
    scene = TabletopScene.open(SKINNY)
    arm = scene.arm
    scene.close()
    again = TabletopScene.open(FAT)
    try:
        assert again.arm == arm and set(again.objects) == {o.name for o in FAT.objects}
    finally:
        again.close()


def test_a_remembered_ik_answer_is_the_one_a_fresh_solve_finds() -> None:
    """IK answers are remembered per base pose, target and seed: asked again, in any order
    and with the arm anywhere, from poses that reach a grasp and poses that do not, the
    answer is a fresh solve's (a scene that never solved before)."""
    rng = random.Random(3)
    red = SKINNY.reds[0].name
    with direct_client() as client:
        scene = TabletopScene(SKINNY, client, objects=[red])
        poses = [p for p in SKINNY.work_poses("table_left") if scene.base_free(p)][:4]
        poses.append(SKINNY.start)
        questions = []
        for pose in poses:
            scene.set_base(pose)
            for style in (TOP, SIDE):
                g = scene.grasp(red, style)
                questions += [(pose, g.position, g.orientation), (pose, g.approach, g.orientation)]
        questions *= 2
        rng.shuffle(questions)
        answers = {True: 0, False: 0}
        for pose, position, orientation in questions:
            scene.set_base(pose)
            scene.set_arm([rng.uniform(-1, 1) for _ in range(7)])
            found = scene.solve_ik(position, orientation)
            with direct_client() as fresh_client:
                fresh = TabletopScene(SKINNY, fresh_client, objects=[red])
                fresh.set_base(pose)
                assert found == fresh.solve_ik(position, orientation)
            answers[found is not None] += 1
        assert answers[True] > 0 and answers[False] > 0
        assert len(scene._ik_memo) == len(questions) // 2
