"""RViz markers of a planned CAMP: allowed rooms tinted, every object drawn where the scene
has it, the dropped ones apart, the base path and the context's label."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.ros


def test_markers_show_rooms_objects_dropped_ones_path_and_label() -> None:
    from geometry_msgs.msg import PoseStamped
    from nav_msgs.msg import Path as PathMsg
    from visualization_msgs.msg import Marker

    from camp_planner.domains.namo.scene_io import scene_from_task
    from camp_planner.domains.namo.world import generate_task
    from camp_planner.ros.convert import MARKER_RGBA, pose_of, scene_markers, scene_to_msg

    task = generate_task(4, 4)
    msg = scene_to_msg(scene_from_task(task))
    rooms = [(r, task.room_rect(r)) for r in (0, 1, 2)]
    movable = [o.id for o in msg.objects if o.movable]
    dropped = set(movable[:3])
    path = PathMsg()
    for x, y in ((0.5, 0.5), (1.0, 0.7), (2.0, 1.5)):
        path.poses.append(PoseStamped(pose=pose_of((x, y, 0.0))))

    out = scene_markers(
        msg, allowed_rooms=rooms, dropped=dropped, base_path=path, label="robot_room ∈ {0,1,2}"
    ).markers
    assert out[0].action == Marker.DELETEALL  # a new plan replaces the last one in RViz
    assert {m.header.frame_id for m in out} == {msg.header.frame_id}
    by_ns: dict[str, list[Marker]] = {}
    for m in out[1:]:
        by_ns.setdefault(m.ns, []).append(m)

    tints = by_ns["allowed_rooms"]
    assert sorted(m.id for m in tints) == [0, 1, 2]
    for m in tints:
        x0, y0, x1, y1 = task.room_rect(m.id)
        assert m.pose.position.x == pytest.approx((x0 + x1) / 2)
        assert m.scale.x == pytest.approx(x1 - x0) and m.scale.y == pytest.approx(y1 - y0)

    drawn = [m for ns in ("objects", "dropped", "walls", "goal") for m in by_ns.get(ns, [])]
    assert len(drawn) == len(msg.objects)
    for m in drawn:
        o = msg.objects[m.id]
        assert m.text == o.id and m.pose.position.x == pytest.approx(o.pose.position.x)
    assert {m.text for m in by_ns["dropped"]} == dropped
    assert {m.text for m in by_ns["objects"]} == set(movable) - dropped
    assert all(m.color.a == pytest.approx(MARKER_RGBA["dropped"][3]) for m in by_ns["dropped"])
    assert all(m.color.a == 1.0 for m in by_ns["objects"])

    (robot,) = by_ns["robot"]
    assert robot.type == Marker.ARROW and robot.pose == msg.robot_pose
    (line,) = by_ns["base_path"]
    assert line.type == Marker.LINE_STRIP
    assert [(p.x, p.y) for p in line.points] == [(0.5, 0.5), (1.0, 0.7), (2.0, 1.5)]
    (label,) = by_ns["label"]
    assert label.type == Marker.TEXT_VIEW_FACING and label.text == "robot_room ∈ {0,1,2}"


def test_markers_without_a_plan_have_no_path_and_a_goal_pose_gets_a_marker() -> None:
    from camp_planner.domains.namo.scene_io import scene_from_task
    from camp_planner.domains.namo.world import generate_task
    from camp_planner.ros.convert import pose_of, scene_markers, scene_to_msg

    msg = scene_to_msg(scene_from_task(generate_task(0, 0)))
    goal = next(o for o in msg.objects if o.object_class == "goal")
    msg.objects = [o for o in msg.objects if o.object_class != "goal"]
    msg.goal_object_id = ""
    msg.goal_pose.header.frame_id = msg.header.frame_id
    msg.goal_pose.pose = pose_of((goal.pose.position.x, goal.pose.position.y, 0.0))
    out = scene_markers(msg).markers
    assert not [m for m in out if m.ns in ("base_path", "label", "allowed_rooms")]
    (g,) = [m for m in out if m.ns == "goal"]
    assert g.pose.position.x == pytest.approx(goal.pose.position.x)
