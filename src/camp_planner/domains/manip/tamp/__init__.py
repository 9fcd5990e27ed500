"""The manipulation domain's TAMP interface (paper domain D4): a symbolic model of picks,
regrasps and placements with the failure facts refinement learns, and refiners that choose
base poses, check grasps and placements in the simulator and plan base motions with OMPL."""

from camp_planner.domains.manip.tamp.interface import ManipTampInterface, tamp_interface

__all__ = ["ManipTampInterface", "tamp_interface"]
