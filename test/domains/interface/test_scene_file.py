"""Scene files: a task's scene survives the file in both domains, a request file is read as
its scene, and a wrong field is refused by its path in the file."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.interface.scene_file import (
    read_scene_file,
    scene_from_dict,
    scene_to_dict,
    scene_yaml,
)

pytestmark = [pytest.mark.pybullet]


@pytest.mark.parametrize("domain", ["namo", "manip"])
def test_a_task_s_scene_survives_its_file(domain: str, tmp_path: Path) -> None:
    from camp_planner.domains import get_plugin
    from camp_planner.workflow import Pipeline

    pipe = Pipeline.create(domain, None, tmp_path)
    scene = get_plugin(domain).scene_from_task(pipe.task("test", 1), None, "map")
    for request in (False, True):
        path = tmp_path / f"scene-{request}.yaml"
        path.write_text(scene_yaml(scene, request))
        assert read_scene_file(path) == scene
    # What the file says is what the planner reads: the same task as from the scene itself.
    plugin = get_plugin(domain)
    (read, ids), (direct, direct_ids) = (
        plugin.task_from_scene(s, pipe.config, "map") for s in (read_scene_file(path), scene)
    )
    assert ids == direct_ids
    if domain == "namo":
        # A file holds the quaternion, whose yaw comes back to within a few ulps.
        assert read.start == pytest.approx(direct.start, abs=1e-12)
        read = dataclasses.replace(read, start=direct.start)
    assert read == direct


def test_a_wrong_field_is_refused_by_its_path() -> None:
    from camp_planner.domains.interface.scene import Pose, Scene, SceneObject

    box = SceneObject("b", "box", Pose.planar(1.0, 1.0, 0.0), (0.3, 0.3, 0.7), True)
    good = scene_to_dict(Scene("namo", Pose.planar(0.5, 0.5, 0.0), (box, box)))
    cases = [
        (("objects", 1, "pose", "position", "x"), "far", "objects[1].pose.position.x"),
        (("objects", 0, "movable"), "yes", "objects[0].movable"),
        (("robot_pose", "orientation"), [0, 0, 0, 1], "robot_pose.orientation"),
        (("objects", 0, "colour"), "red", "unknown field 'colour'"),
        (("task_features",), [1.0, "x"], "task_features[1]"),
    ]
    for path, value, said in cases:
        data = yaml.safe_load(yaml.safe_dump(good))
        here = data
        for key in path[:-1]:
            here = here[key]
        here[path[-1]] = value
        with pytest.raises(ServiceError) as caught:
            scene_from_dict(data)
        assert caught.value.code == ErrorCode.INVALID_SCENE and said in caught.value.message


def test_a_file_that_is_not_a_scene_says_so(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("objects: [unclosed")
    with pytest.raises(ServiceError, match="not valid YAML"):
        read_scene_file(broken)
    with pytest.raises(ServiceError, match="cannot read"):
        read_scene_file(tmp_path / "missing.yaml")
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n- 2\n")
    with pytest.raises(ServiceError, match="expected a mapping"):
        read_scene_file(listed)
