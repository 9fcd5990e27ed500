"""Closed-loop execution, ROS-free: a plan split into the commands a robot's controllers take
(:mod:`.commands`), arm motions timed within joint limits (:mod:`.timing`), the observed scene
checked against what the plan expects (:mod:`.monitor`), and the executive that carries a plan
out through controller ports and replans when the world disagrees (:mod:`.executive`)."""
