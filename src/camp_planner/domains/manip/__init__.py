"""Domain D4, sequential manipulation (issue 50): a mobile Panda puts red objects into bins.

So far the world (:mod:`.world`, tasks as pure geometry) and its top-view render
(:mod:`.render`); the PyBullet scene is :mod:`camp_planner.sim.tabletop_scene`. The factored
MDP, the TAMP refiners, the ``Domain`` class and the ROS plug-in build on these."""
