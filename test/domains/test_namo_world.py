import math
from pathlib import Path

import pytest

from camp_planner.domains.namo.render import render_scene
from camp_planner.domains.namo.world import GOAL_ROOM, START_ROOM, NamoTask, generate_task


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_tasks_are_seeded() -> None:
    assert generate_task(3, 42) == generate_task(3, 42)
    assert generate_task(3, 42) != generate_task(3, 43)


@pytest.mark.parametrize("seed", range(8))
def test_layout_is_sane(seed: int) -> None:
    task = generate_task(seed, 1000 + seed)
    graph = task.door_graph()
    seen, stack = {START_ROOM}, [START_ROOM]
    while stack:
        for nb in graph[stack.pop()] - seen:
            seen.add(nb)
            stack.append(nb)
    assert seen == set(range(9))
    assert task.room_of(*task.start[:2]) == START_ROOM
    assert task.room_of(*task.goal) == GOAL_ROOM
    assert 8 <= len(task.boxes) <= 40
    walls = task.walls()
    rects = {b.name: task.box_rect(b.x, b.y) for b in task.boxes}
    for name, rect in rects.items():
        assert not any(_overlap(rect, w) for w in walls), name
        box = task.box(name)
        assert task.room_of(box.x, box.y) == box.room
    names = sorted(rects)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not _overlap(rects[a], rects[b]), (a, b)
    h = task.settings.base_half_extent
    sx, sy, _ = task.start
    start = (sx - h, sy - h, sx + h, sy + h)
    assert not any(_overlap(start, r) for r in [*walls, *rects.values()])


def test_every_doorway_has_a_slot_in_front_of_it_on_some_seed() -> None:
    # Boxes in front of doorways are what make NAMO hard: check the generator produces them.
    blocked = 0
    for seed in range(10):
        task = generate_task(seed, 2000 + seed)
        for d in task.doors:
            near = [b for b in task.boxes if math.dist((b.x, b.y), (d.x, d.y)) < 0.6]
            blocked += bool(near)
    assert blocked >= 20


def test_unknown_box_is_a_clear_error() -> None:
    with pytest.raises(KeyError, match="no box"):
        generate_task(0, 1).box("box_r9_9")


def test_render_writes_a_png(tmp_path: Path) -> None:
    task: NamoTask = generate_task(0, 1000)
    out = tmp_path / "scene.png"
    render_scene(
        task,
        out,
        allowed_rooms={0, 1, 2, 5, 8},
        dropped=[b.name for b in task.boxes if b.room in (3, 4, 6, 7)],
        base_path=[task.start, (4.5, 4.5, 0.0)],
        moved={task.boxes[0].name: (0.5, 0.5)},
        title="t",
    )
    assert out.stat().st_size > 10_000
