"""Refining NAMO's ``move_to_<location>`` and ``pick`` steps: sample target poses, find the
way there, and when it is blocked, name the boxes in the way as ``(blocks b l)`` facts.

A move first looks for a relaxed path that may pass through movable boxes (all but the box
to be picked): usually nothing is in the way and OMPL then plans a drivable path with every
box solid; otherwise the boxes the relaxed path meets are the obstructions, after one short
search for a way around them. Under ``relaxed: grid`` (the default) the relaxed path is the
grid's fewest-boxes path; under ``relaxed: ompl`` it is one OMPL query through the boxes,
as Srivastava et al.'s interface layer names obstructions. Every motion is executed in the
MDP's simulator before the next step is refined.
"""

from __future__ import annotations

import math
import time

from camp_planner.core.mdp import Action
from camp_planner.core.planner import Deadline
from camp_planner.domains.namo.layout import NONE, in_reach
from camp_planner.domains.namo.tamp.base import PLAN_MARGIN
from camp_planner.domains.namo.tamp.motion import MotionPlanning
from camp_planner.domains.namo.world import Pose2D
from camp_planner.motion.ompl_se2 import MotionResult
from camp_planner.planners.tamp import Refinement
from camp_planner.sim.carry import HOLD_AHEAD

TARGET_SAMPLES = 6
RELAXED_TRIES = 3


class MoveRefiner(MotionPlanning):
    """Moves and picks, and the corridor to the goal the robot still needs."""

    def _targets(self, loc: str) -> list[Pose2D]:
        """Candidate base poses for location ``loc``, free and inside the allowed rooms."""
        scene = self._scene()
        out: list[Pose2D] = []
        if loc == "goal":
            cx, cy = self.task.goal
            dists = (0.55, 0.72)
            box_top = None
        else:
            value = self._value(loc[len("near_") :])
            if not isinstance(value, tuple):
                return []
            cx, cy = float(value[0]), float(value[1])
            dists = (0.46, 0.56)
            box_top = self.task.settings.box_size[2] + 0.02
        # Square to the box and at the distance the arm holds it: picking it there lifts it
        # in place, without swinging it into a wall or a neighbour beside it (the slots along
        # walls leave 5 cm). Then random headings and distances.
        square = [(HOLD_AHEAD, k * math.pi / 2) for k in range(-1, 3)]
        if box_top is None:
            square = []
        self.rng.shuffle(square)
        random_draws = [
            (self.rng.uniform(*dists), self.rng.uniform(-math.pi, math.pi))
            for _ in range(TARGET_SAMPLES * 20)
        ]
        for d, heading in square + random_draws:
            pose = (cx - d * math.cos(heading), cy - d * math.sin(heading), heading)
            if not self._allowed_at(pose[0], pose[1]) or scene.collisions(pose, PLAN_MARGIN):
                continue
            if loc == "goal" and not self.task.reached(pose[0], pose[1]):
                continue
            if box_top is not None and not scene.arm_reaches(cx, cy, box_top):
                continue
            if box_top is not None and not self._pick_works(pose, loc[len("near_") :]):
                continue
            out.append(pose)
            if len(out) >= TARGET_SAMPLES:
                break
        hx, hy, _ = self._pose(self.state)
        out.sort(key=lambda p: math.hypot(p[0] - hx, p[1] - hy))
        return out

    def _refine_move(self, loc: str, deadline: Deadline) -> Refinement:
        self._corridor_poses(deadline)
        if loc == self.at and loc != "here":
            return Refinement(True)  # already there
        target_box = loc[len("near_") :] if loc.startswith("near_") else ""
        start = self._pose(self.state)
        self._clear_failed = False
        targets = self._targets(loc)
        if not targets:
            return Refinement(False, reason=f"no free pose at {loc} inside the allowed rooms")
        # Plan through movable boxes first: usually nothing is in the way and this is the
        # path; otherwise it names the boxes that are. A few tries keep the fewest blockers.
        best: tuple[set[str], Pose2D] | None = None
        best_path: list[Pose2D] = []
        best_order: list[str] = []
        # The box to be picked stays solid (the approach must not pass through it); if no
        # such path turns up, the approach itself may need it moved first.
        tries = [(t, target_box) for t in targets[:RELAXED_TRIES]]
        if target_box:
            tries += [(t, "") for t in targets[:2]]
        for target, solid in tries:
            if deadline.expired() or (best is not None and solid != target_box):
                break
            relaxed, blockers = self._relaxed(start, target, deadline, solid)
            if relaxed.path is None:
                continue
            if not blockers and relaxed.vertices is not None:
                done = self._drive(relaxed.vertices, target, loc, en_route=True)
                if done is not None:
                    return done
            if target_box and target_box in blockers:
                # The way runs through the box to be picked: pick it from where the way
                # reaches it instead.
                approach, crowding = self._approach(relaxed.path, target_box)
                if approach is not None:
                    targets.insert(0, approach)
                    blockers.discard(target_box)
                    target = approach
                else:
                    # No pose on this side picks the box: what stands there must go first.
                    blockers |= crowding
            if best is None or len(blockers) < len(best[0]):
                best = (blockers, target)
                best_path = relaxed.path
                best_order = list(self.order)
        if best is None:
            return Refinement(False, reason=f"no path to {loc} even through movable boxes")
        blockers, target = best
        order = [b for b in best_order if b in blockers] + sorted(blockers - set(best_order))
        # Something is in the way: maybe there is a way around it (RRT-Connect finds open
        # paths in tens of milliseconds, so a short budget suffices to try).
        if not deadline.expired():
            result = self._plan(start, target, False, deadline, self.detour_timeout)
            if result.vertices is not None:
                done = self._drive(result.vertices, target, loc, en_route=True)
                if done is not None:
                    return done
        blockers.discard(target_box)
        # Boxes put aside later must keep off the way they were found blocking.
        self.keep_out += best_path[::4]
        if not blockers:
            return Refinement(False, reason=f"motion planning to {loc} failed without obstruction")
        return Refinement(
            False,
            # In the order the way meets them (Stilman's algorithm clears the first first).
            facts=[f"(blocks {b} {loc})" for b in order if b in blockers],
            reason=f"{', '.join(sorted(blockers))} block the way to {loc}",
        )

    def _relaxed(
        self, start: Pose2D, target: Pose2D, deadline: Deadline, solid: str
    ) -> tuple[MotionResult, set[str]]:
        """A path that may pass through movable boxes (all but ``solid``), and the boxes it
        runs into (``self.order`` holds them in the order met). ``relaxed: grid`` (the
        default) takes the fewest-boxes grid path; when that path is clear it asks OMPL for
        a drivable path with every box solid (returned with its ``vertices``), and only when
        OMPL finds none there (the grid's disc passed a gap the real base does not) falls
        back to OMPL through boxes. ``relaxed: ompl`` (the paper's interface layer) is one
        OMPL query through boxes, whatever they cross."""
        if self.relaxed_mode == "grid":
            t0 = time.perf_counter()
            path = self._fewest_boxes_path(start, target, solid)
            self._timed("motion_planning", t0)
            if path is None:
                return MotionResult(None, time.perf_counter() - t0, 0, False), set()
            blockers = self._boxes_on(path, deadline)
            if blockers:
                return MotionResult(path, time.perf_counter() - t0, 0, False), blockers
            # The grid's disc is only a necessary condition: in a cramped spot it passes
            # where the base cannot, and OMPL spends its whole budget failing. Open paths
            # take it tens of milliseconds, so after one such failure in this move the
            # other target poses get a quarter of the budget.
            budget = self.motion_timeout / (4 if self._clear_failed else 1)
            clear = self._plan(start, target, False, deadline, budget, solid=solid)
            self._clear_failed = self._clear_failed or clear.vertices is None
            if clear.vertices is not None:
                # Every box was solid for OMPL: this path runs into none of them.
                self.order = []
                return clear, set()
        result = self._plan(start, target, True, deadline, 2 * self.motion_timeout, solid=solid)
        return result, self._boxes_on(result.path, deadline) if result.path is not None else set()

    def _approach(self, path: list[Pose2D], box: str) -> tuple[Pose2D | None, set[str]]:
        """The last pose of ``path`` before it reaches ``box`` from which the box can be
        picked (facing it, free, arm reaching its top), or None and the other boxes that
        stand where such poses would be."""
        value = self._value(box)
        if not isinstance(value, tuple):
            return None, set()
        bx, by = float(value[0]), float(value[1])
        scene = self._scene()
        top = self.task.settings.box_size[2] + 0.02
        hit = self._first_hit(path, box)
        crowding: set[str] = set()
        # Come in along the way the path arrives, facing the box, at picking distance.
        for back in (1, 10, 20):
            x, y, _ = path[max(hit - back, 0)]
            length = math.hypot(bx - x, by - y)
            if length < 1e-6:
                continue
            ux, uy = (bx - x) / length, (by - y) / length
            for d in (0.46, 0.5, 0.54):
                pose = (bx - d * ux, by - d * uy, math.atan2(uy, ux))
                hits = scene.collisions(pose, PLAN_MARGIN)
                if not hits and scene.arm_reaches(bx, by, top) and self._pick_works(pose, box):
                    return pose, set()
                crowding |= (hits & self.slots) - {box}
        return None, crowding

    def _pick_works(self, pose: Pose2D, box: str) -> bool:
        """Whether the simulator lets the robot, standing at ``pose`` with empty hands, pick
        ``box``. Reach and inverse kinematics are not enough: the picked box is held ahead of
        the base at the base's heading, so a box put down beside a wall, picked at a slant,
        swings into the wall and the pick fails. An approach pose that passed only the
        reach test then ended the whole planning call (NAMO test task 8 of eval seed 1,
        planner seed 2: 5.7 s, no plan).

        The callers have checked reach and inverse kinematics at ``pose``; this adds the
        last test ``NamoMDP``'s pick makes, the grasped box clear of everything, at the pose
        as the executed action rounds it, and puts the box back as the state has it."""
        value = self._value(box)
        if self.state[2] != NONE or not isinstance(value, tuple):
            return False
        rounded = (round(pose[0], 4), round(pose[1], 4), round(pose[2], 4))
        bx, by = float(value[0]), float(value[1])
        if self.task.reached(rounded[0], rounded[1]) or not in_reach(rounded, bx, by):
            return False  # the episode would end there (a terminal state picks nothing)
        t0 = time.perf_counter()
        scene = self._scene()
        scene.set_base(rounded)
        scene.grasp(box)
        blocked = scene.collisions()
        scene.let_go()
        scene.place_box(box, bx, by)
        self._timed("grasp_place", t0)
        return not blocked

    def _first_hit(self, path: list[Pose2D], box: str) -> int:
        """The index of the first pose of ``path`` that runs into ``box`` (its length if none)."""
        scene = self._scene()
        for i, pose in enumerate(path):
            if box in scene.collisions_at(pose):
                return i
        return len(path)

    def _boxes_on(self, path: list[Pose2D], deadline: Deadline) -> set[str]:
        """The boxes ``path`` runs into; ``self.order`` remembers the order it meets them.

        Raises PlanningTimeout once the planning call's deadline has passed (a path across
        the whole world has a thousand poses to check)."""
        scene = self._scene()
        before = scene.checks
        hits: dict[str, None] = {}
        for i, pose in enumerate(path):
            if i % 64 == 63:
                deadline.call.check()
            for name in sorted(scene.collisions_at(pose) & self.slots):
                hits.setdefault(name, None)
        self.checks += scene.checks - before
        self.order = list(hits)
        return set(hits)

    def _drive(
        self, vertices: list[Pose2D], target: Pose2D, loc: str, en_route: bool = False
    ) -> Refinement | None:
        """Execute the path's segments; None if execution did not end at ``target``.

        A way may pass within reach of the goal object before its last vertex (a doorway
        next to it, or, with ``en_route``, a way past it to a box): the episode ends there,
        so the drive does too, wherever it was going, and the plan ends at the goal. The
        simulator moves a robot that has reached the goal no further, so such a drive would
        otherwise end short of its target. Carrying a box is not cut short (``en_route``
        false): the carry's refiner puts the box down where the drive ends, which it cannot
        do from the goal, and it tries another spot instead."""
        actions: list[Action] = [
            ("move", tuple(round(v, 4) for v in p), NONE) for p in vertices[1:]
        ]
        states = self._execute(actions)
        if loc == "goal" or en_route:
            for k, state in enumerate(states):
                if self.mdp.is_terminal(state):
                    self.state = state
                    self.at = "goal"
                    return Refinement(True, actions[: k + 1], states[: k + 1])
        ex, ey, _ = self._pose(states[-1] if states else self.state)
        if math.hypot(ex - target[0], ey - target[1]) > 0.02:
            return None
        self.state = states[-1] if states else self.state
        self.at = loc
        return Refinement(True, actions, states)

    def _refine_pick(self, box: str) -> Refinement:
        t0 = time.perf_counter()
        nxt = self.mdp.step(self.state, ("pick", None, box))
        self._timed("grasp_place", t0)
        if nxt[2] != box:
            # Picking is deterministic: retrying from the same pose fails the same way, so
            # the next symbolic plan must come here again, from a newly sampled pose.
            self.at = "here"
            return Refinement(False, reason=f"cannot pick {box} from here")
        self.state = nxt
        return Refinement(True, [("pick", None, box)], [nxt])

    def _corridor_poses(self, deadline: Deadline) -> list[Pose2D]:
        """Where the robot still needs to pass: a path to the goal through movable boxes,
        planned once per call while the hands are empty (every 4th waypoint kept)."""
        if self._corridor is None:
            if self.state[2] != NONE:
                return []
            goal = self._targets("goal")
            self._goal_pose = goal[0] if goal else None
            path: list[Pose2D] | None = None
            if goal and self.relaxed_mode == "grid":
                t0 = time.perf_counter()
                path = self._fewest_boxes_path(self._pose(self.state), goal[0], "")
                self._timed("motion_planning", t0)
            elif goal:
                path = self._plan(self._pose(self.state), goal[0], True, deadline).path
            self._corridor = (path or [])[::4]
        return self._corridor
