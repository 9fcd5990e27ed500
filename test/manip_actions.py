"""The manipulation MDP's actions by skill, for tests that step it by hand."""

from camp_planner.core.mdp import Action
from camp_planner.domains.manip.layout import NONE


def move(to: str) -> Action:
    return ("move", to, NONE, NONE, NONE)


def pick(red: str, style: str) -> Action:
    return ("pick", NONE, red, style, NONE)


def place(k: int) -> Action:
    return ("place", NONE, NONE, NONE, k)


REGRASP: Action = ("regrasp", NONE, NONE, NONE, NONE)
