"""camp_planner: learned context-specific abstract MDPs (CAMPs) for fast robot planning.

Folders tell the architecture: ``core`` is the pure planning science (no middleware, no
simulator), ``planners`` the solvers that plan in any factored MDP, ``domains`` the benchmark
worlds, ``eval`` experiments and pictures, ``cli`` the ``camp`` command.
"""

__version__ = "0.1.0"
