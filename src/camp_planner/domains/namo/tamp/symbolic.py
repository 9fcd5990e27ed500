"""The symbolic model NAMO's TAMP interface gives the task planner (STRIPS, regenerated at
every replan): locations ``here`` (where planning started), ``goal`` and ``near_<box>`` (a
pose from which the box can be picked); boxes; ``(at ?l)``, ``(holding ?b)``,
``(handempty)``, ``(moved ?b)``. One move action per destination requires every box known to
block the way there to have been moved; ``pick`` and ``place`` put a box aside. Initially
nothing is known to block anything (optimism); refinement failures teach ``(blocks b l)``
facts (:meth:`SymbolicModel.learn`), and facts that make the task unsolvable are forgotten.
"""

from __future__ import annotations

from dataclasses import dataclass

from camp_planner.core.mdp import State
from camp_planner.domains.namo.layout import NONE
from camp_planner.domains.namo.tamp.base import InterfaceBase
from camp_planner.domains.namo.world import Pose2D


@dataclass(frozen=True)
class NamoSnapshot:
    """Where a planning call stands: the MDP state, the symbolic location and what is known
    about which boxes block which ways (see :meth:`SymbolicModel.snapshot`)."""

    state: State
    at: str
    moved: frozenset[str]
    blocks: tuple[tuple[str, frozenset[str]], ...]
    near: frozenset[str]
    keep_out: tuple[Pose2D, ...]


class SymbolicModel(InterfaceBase):
    """The symbolic layer of the interface: PDDL out, learnt facts in."""

    def pddl(self) -> tuple[str, str]:
        """The symbolic domain and problem of the current state and every learnt fact."""
        held = str(self.state[2])
        boxes = sorted(
            {*self.near, *(b for bs in self.blocks.values() for b in bs)}
            | ({held} if held != NONE else set())
        )
        locations = ["here", "goal", *(f"near_{b}" for b in sorted(self.near))]
        moves = []
        for loc in locations[1:]:
            required = self.blocks.get(loc, set()) | self.after.get(loc, set())
            needs = " ".join(f"(moved {b})" for b in sorted(required))
            moves.append(
                f"  (:action move_to_{loc}\n    :parameters (?from - loc)\n"
                f"    :precondition (and (at ?from) (handempty) {needs})\n"
                f"    :effect (and (not (at ?from)) (at {loc})))"
            )
        box_consts = " ".join(boxes)
        domain = (
            "(define (domain namo-tamp)\n  (:requirements :strips :typing)\n"
            "  (:types loc box)\n"
            f"  (:constants {' '.join(locations)} - loc {box_consts + ' - box' if boxes else ''})\n"
            "  (:predicates (at ?l - loc) (holding ?b - box) (handempty) (moved ?b - box)\n"
            "    (pickloc ?b - box ?l - loc))\n"
            + "\n".join(moves)
            + "\n  (:action pick\n    :parameters (?b - box ?l - loc)\n"
            "    :precondition (and (at ?l) (pickloc ?b ?l) (handempty))\n"
            "    :effect (and (holding ?b) (not (handempty))))\n"
            "  (:action place\n    :parameters (?b - box)\n    :precondition (holding ?b)\n"
            "    :effect (and (handempty) (not (holding ?b)) (moved ?b))))\n"
        )
        init = [f"(at {self.at})"]
        init.append(f"(holding {held})" if held != NONE else "(handempty)")
        init += [f"(moved {b})" for b in sorted(self.moved) if b in boxes]
        init += [f"(pickloc {b} near_{b})" for b in sorted(self.near)]
        problem = (
            "(define (problem namo-task)\n  (:domain namo-tamp)\n"
            f"  (:init {' '.join(init)})\n  (:goal (at goal)))\n"
        )
        return domain, problem

    def learn(self, facts: list[str]) -> None:
        """Add ``(blocks b l)`` facts, given in the order the way to ``l`` meets the boxes.

        The way reaches each box past the ones before it, so those also block the way to
        it: ``a`` must be moved before ``near_b`` is entered, for every ``a`` met before
        ``b``. These orders are inferred, not observed, and kept apart in ``after`` so that
        ``forget`` can drop them alone. Without these precedences
        the task planner may clear the boxes in any order, and the way to a far one, planned
        from the start, crosses other boxes (whose ways cross the first ones): the learnt
        facts then form a cycle, the problem is unsolvable, and since forgetting them and
        replanning from the same state rediscovers the same cycle, planning gave up after
        ``max_replans`` (7 of the 50 default training tasks)."""
        met: dict[str, list[str]] = {}
        for fact in facts:
            parts = fact.strip("() ").split()
            if parts[0] == "blocks":
                box, loc = parts[1], parts[2]
                for earlier in met.setdefault(loc, []):
                    self.after.setdefault(f"near_{box}", set()).add(earlier)
                met[loc].append(box)
                self.blocks.setdefault(loc, set()).add(box)
                self.near.add(box)
                # A box moved once but in the way again must be moved again.
                self.moved.discard(box)

    def forget(self) -> bool:
        """Called when the learnt facts make the task unsolvable: first drop only the
        inferred orders of clearing, then (if there are none) every learnt fact.

        An inferred order can contradict an observed obstruction: the way to the goal meets
        A before B, but the only pose that picks A stands where B is. Forgetting everything
        then rediscovered the same pair and the same cycle until ``max_replans`` (NAMO test
        task 3 of eval seed 0, planner seed 1: 22 s, no plan)."""
        if self.after:
            self.after.clear()
            return True
        if not self.blocks:
            return False
        self.blocks.clear()
        # Boxes already put aside stay where they are; only the symbolic claims about which
        # box blocks which way are dropped, and re-learnt from the current geometry.
        self.near = {b for b in self.near if b == str(self.state[2])}
        if self.at.startswith("near_") and self.at[len("near_") :] not in self.near:
            self.at = "here"  # "where this call's robot is", now that near_<box> is gone
        self.keep_out = []
        self._corridor = None
        return True

    def at_goal(self) -> bool:
        """Whether the current state reaches the goal (ends the episode)."""
        return self.mdp.is_terminal(self.state)

    def snapshot(self) -> NamoSnapshot:
        """The state, the symbolic location, the boxes moved, the learnt obstructions and the
        ways placements keep off: what a search that backs up (Stilman's algorithm) puts
        back. Random numbers, inferred orders and counters go on."""
        return NamoSnapshot(
            self.state,
            self.at,
            frozenset(self.moved),
            tuple((loc, frozenset(boxes)) for loc, boxes in self.blocks.items()),
            frozenset(self.near),
            tuple(self.keep_out),
        )

    def restore(self, snapshot: object) -> None:
        """Go back to a :meth:`snapshot` of this interface."""
        assert isinstance(snapshot, NamoSnapshot)
        self.state = snapshot.state
        self.at = snapshot.at
        self.moved = set(snapshot.moved)
        self.blocks = {loc: set(boxes) for loc, boxes in snapshot.blocks}
        self.near = set(snapshot.near)
        self.keep_out = list(snapshot.keep_out)
