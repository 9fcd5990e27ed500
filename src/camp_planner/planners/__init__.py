"""Solvers that plan in any factored MDP (the full task or a CAMP), chosen by name.

``mcts`` (anytime UCT), ``bfs_replan`` (determinise and replan) and ``vi`` (offline value
iteration) all implement :class:`camp_planner.core.planner.Planner`.
"""

from camp_planner.planners.registry import make_planner, planner_names

__all__ = ["make_planner", "planner_names"]
