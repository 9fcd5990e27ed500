"""A planar toy world behind the executive's ports, for tests without ROS or PyBullet."""

from __future__ import annotations

from dataclasses import dataclass, field

from camp_planner.domains.interface.plan import CLOSE, OPEN, GripperAction, PlanStepData
from camp_planner.domains.interface.scene import Pose, Pose2, Scene, SceneObject
from camp_planner.execution.commands import ExecutablePlan, Joints
from camp_planner.execution.executive import Outcome

BOX = (0.4, 0.4, 0.4)


def held_of(scene: Scene) -> str:
    return next((o.id for o in scene.objects if o.room == "held"), "")


@dataclass
class World:
    robot: Pose2 = (0.0, 0.0, 0.0)
    boxes: dict[str, tuple[float, float]] = field(
        default_factory=lambda: {"a": (2.5, 0.0), "far": (9.0, 9.0), "side": (3.0, 2.0)}
    )
    held: str = ""
    arm: Joints = (0.0,)
    time: float = 0.0
    # disturbances: command count → what happens before that command runs
    disturb: dict[int, str] = field(default_factory=dict)
    commands: int = 0
    reject: str = ""  # a controller that refuses every goal: "base" | "arm" | "gripper"

    def scene(self) -> Scene:
        objects = tuple(
            SceneObject(
                k,
                "box",
                Pose.planar(*(self.robot[:2] if k == self.held else xy), 0.0, 0.2),
                BOX,
                True,
                "held" if k == self.held else "",
            )
            for k, xy in sorted(self.boxes.items())
        )
        return Scene("toy", Pose.planar(*self.robot), objects, goal_object_id="a")

    def _tick(self, kind: str) -> Outcome | None:
        self.commands += 1
        self.time += 1.0
        what = self.disturb.pop(self.commands, "")
        if what == "push_far":
            self.boxes["far"] = (9.5, 9.0)
        elif what == "into_path":
            self.boxes["side"] = (3.5, 0.0)
        elif what == "slip":
            self.boxes[self.held] = (self.robot[0] + 0.5, self.robot[1])
            self.held = ""
        elif what == "push_a":
            x, y = self.boxes["a"]
            self.boxes["a"] = (x, y + 0.5)
        if self.reject == kind:
            return Outcome("rejected", f"the {kind} controller refused the goal")
        return None

    # Controllers
    def drive(self, poses: list[Pose2]) -> Outcome:
        refused = self._tick("base")
        if refused:
            return refused
        for goal in poses:
            start = self.robot
            for i in range(1, 11):  # along the segment, as a base drives it
                p = (
                    start[0] + (goal[0] - start[0]) * i / 10,
                    start[1] + (goal[1] - start[1]) * i / 10,
                    goal[2],
                )
                for k, (x, y) in self.boxes.items():
                    if k != self.held and abs(p[0] - x) < 0.3 and abs(p[1] - y) < 0.3:
                        return Outcome("aborted", f"blocked by {k}")
                self.robot = p
        return Outcome("ok")

    def move_arm(self, points: list[Joints]) -> Outcome:
        refused = self._tick("arm")
        if refused:
            return refused
        self.arm = points[-1]
        return Outcome("ok")

    def gripper(self, close: bool) -> Outcome:
        refused = self._tick("gripper")
        if refused:
            return refused
        if close:
            near = [
                k
                for k, (x, y) in self.boxes.items()
                if abs(x - self.robot[0] - 0.5) < 0.1 and abs(y - self.robot[1]) < 0.1
            ]
            if not near:
                return Outcome("aborted", "nothing between the fingers")
            self.held = near[0]
        else:
            self.boxes[self.held] = (self.robot[0] + 0.5, self.robot[1])
            self.held = ""
        return Outcome("ok")

    # Perception
    def latest(self) -> Scene | None:
        return self.scene()

    def after(self, t: float, timeout_s: float) -> Scene | None:
        return self.scene()


def plan_for(scene: Scene, plan_id: str) -> ExecutablePlan:
    """Fetch box a to (4.5, 0): drive beside it, pick, drive on, place — from wherever the
    robot and the box are."""
    held = held_of(scene)
    box = next(o for o in scene.objects if o.id == "a")
    start = scene.robot_pose.as_planar()
    steps: list[PlanStepData] = []
    path: list[Pose2] = [start]
    arm: list[Joints] = []
    if held != "a":
        path.append((box.pose.x - 0.5, box.pose.y, 0.0))
        steps.append(
            PlanStepData("move", [], [], "transit", Pose.planar(*path[-1]), len(path) - 1, 0)
        )
        arm += [(1.0,), (0.0,)]
        steps.append(
            PlanStepData(
                "pick",
                ["a"],
                ["a"],
                "manipulation",
                box.pose,
                len(path) - 1,
                len(arm),
                (GripperAction(len(arm) - 2, CLOSE),),
            )
        )
    if any(o.id == "side" and abs(o.pose.y) < 0.3 for o in scene.objects):
        path.append((3.5, 0.8, 0.0))  # round a box standing in the way
    path.append((4.0, 0.0, 0.0))
    steps.append(
        PlanStepData("move", [], ["a"], "transfer", Pose.planar(*path[-1]), len(path) - 1, len(arm))
    )
    arm += [(1.0,), (0.0,)]
    steps.append(
        PlanStepData(
            "place",
            ["a"],
            ["a"],
            "manipulation",
            Pose.planar(4.5, 0.0, 0.0, 0.2),
            len(path) - 1,
            len(arm),
            (GripperAction(len(arm) - 2, OPEN),),
        )
    )
    return ExecutablePlan(plan_id, scene, steps, path, ("j",), arm)


class Planner:
    def __init__(self) -> None:
        self.calls = 0

    def plan(self, scene: Scene) -> ExecutablePlan:
        self.calls += 1
        return plan_for(scene, f"plan-{self.calls}")
