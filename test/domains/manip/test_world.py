"""The manipulation domain's tasks as pure geometry (``camp_planner.domains.manip.world``):
seeded, train and test disjoint, and the constraints of issue 50 hold."""

import math
from pathlib import Path

import pytest

from camp_planner.domains.manip.render import render_scene
from camp_planner.domains.manip.world import (
    ManipSettings,
    generate_task,
    make_tasks,
    red_profile,
)

TRAIN = make_tasks("train", 50)
TEST = make_tasks("test", 10)


def test_tasks_are_seeded_and_identical_across_runs() -> None:
    again = make_tasks("train", 50)
    assert again == TRAIN
    assert generate_task(3, 77) == generate_task(3, 77)
    assert generate_task(3, 77) != generate_task(3, 78)


def test_the_first_tasks_are_pinned() -> None:
    """``random.Random(seed)`` gives the same draws in every process and Python 3 release;
    a change of the generator shows here (and means a new domain version)."""
    train, test = TRAIN[0], TEST[0]
    assert (train.seed, train.fat, train.occupied) == (0, False, (0, 1, 1, 0, 1, 0, 1, 1, 0))
    assert (train.reds[0].x, train.reds[0].y) == (-1.253958, 0.39605)
    assert (test.seed, test.fat, test.occupied) == (5000, True, (0, 1, 0, 0, 0, 1, 0, 0, 1))
    assert (test.reds[0].x, test.reds[0].y) == (-0.644559, 0.417046)


def test_a_task_shows_the_selector_the_same_features_whatever_its_distractors() -> None:
    for n in (30, 60):
        more = make_tasks("test", 10, settings=ManipSettings(n_distractors=n))
        assert [t.features() for t in more] == [t.features() for t in TEST]
        assert all(len(t.distractors) == n for t in more)


def test_train_and_test_are_disjoint() -> None:
    assert len(TRAIN) == 50 and len(TEST) == 10
    assert not {t.seed for t in TRAIN} & {t.seed for t in TEST}
    layouts = {(t.fat, t.objects, t.occupied) for t in TRAIN}
    assert not any((t.fat, t.objects, t.occupied) in layouts for t in TEST)


def test_every_task_keeps_the_issue_constraints() -> None:
    tasks = TRAIN + TEST
    for task in tasks:
        st = task.settings
        n = st.cells_per_side
        left = task.left_table
        cx, cy = left.centre
        reds, blues = task.reds, task.distractors
        assert len(reds) == 2 and len(blues) == 15
        # Reds in outer cells: the nearest cell centre lies on the grid's border.
        for red in reds:
            i = round((red.x - cx) / st.pitch + (n - 1) / 2)
            j = round((red.y - cy) / st.pitch + (n - 1) / 2)
            assert min(i, j) == 0 or max(i, j) == n - 1
        # Both reds alike, skinny or fat.
        assert len({r.sections for r in reds}) == 1
        assert reds[0].sections == red_profile(st, task.fat)
        # At least two free bins; greens only in occupied ones.
        assert len(task.free_bins) >= 2
        greens = {o.name for o in task.by_kind("green")}
        assert greens == {f"green_{k}" for k, occ in enumerate(task.occupied) if occ}
        # Everything on the left table stands on it and inside it.
        for obj in [*reds, *blues]:
            assert left.x0 < obj.x - obj.radius and obj.x + obj.radius < left.x1
            assert left.y0 < obj.y - obj.radius and obj.y + obj.radius < left.y1
            assert obj.z == st.table_height
        for a in [*reds, *blues]:
            for b in [*reds, *blues]:
                if a.name < b.name:
                    assert math.hypot(a.x - b.x, a.y - b.y) > a.radius + b.radius
    # Both kinds of reds and occupied and free bins occur.
    assert {t.fat for t in tasks} == {True, False}
    assert 0.3 < sum(sum(t.occupied) for t in tasks) / (9 * len(tasks)) < 0.6


def test_features_are_the_red_radius_and_the_bin_occupancy() -> None:
    for task in TEST:
        f = task.features()
        assert len(f) == 10
        assert f[0] == pytest.approx(0.08 if task.fat else 0.03)
        assert f[1:] == tuple(1.0 if occ else 0.0 for occ in task.occupied)


def test_bins_lie_on_the_right_table_inside_each_other_never() -> None:
    task = TEST[0]
    right = task.right_table
    bins = task.bins
    assert len(bins) == 9
    for b in bins:
        outer = b.inner / 2 + b.wall
        assert right.x0 < b.x - outer and b.x + outer < right.x1
        assert right.y0 < b.y - outer and b.y + outer < right.y1
        assert b.contains(b.x, b.y)
        for other in bins:
            if other.index != b.index:
                assert not b.contains(other.x, other.y)
    for x, y in task.staging_spots():
        assert right.x0 < x < right.x1 and not any(b.contains(x, y) for b in bins)


def test_the_distractor_count_scales_and_the_table_grows() -> None:
    for n in (15, 30, 60):
        st = ManipSettings(n_distractors=n)
        task = generate_task(0, 5, st)
        assert len(task.distractors) == n
        assert st.cells_per_side**2 >= n + 2
    with pytest.raises(ValueError):
        ManipSettings(min_free_bins=10)


def test_work_poses_face_their_table_and_stay_on_the_floor() -> None:
    task = TEST[0]
    for table in ("table_left", "table_right"):
        t = task.left_table if table == "table_left" else task.right_table
        cx, cy = t.centre
        poses = task.work_poses(table)
        assert len(poses) == 4 * 3 * len(task.settings.stand_offs)
        for x, y, yaw in poses:
            assert task.on_floor((x, y, yaw))
            # Facing the table: the heading points at its side (within 90 degrees).
            assert math.cos(math.atan2(cy - y, cx - x) - yaw) > 0.5


def test_a_render_is_a_png(tmp_path: Path) -> None:
    task = TEST[1]
    out = tmp_path / "scene.png"
    render_scene(
        task,
        out,
        dropped=[b.name for b in task.distractors],
        allowed_bins=task.free_bins[:2],
        chosen_bins=task.free_bins[:1],
        grasps={"red_0": "top", "red_1": "side"},
        base_poses=[task.start, task.work_poses("table_left")[0]],
        title="top grasps only",
    )
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
