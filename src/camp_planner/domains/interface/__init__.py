"""The robot-facing side of a domain: perceived scenes in, executable plans out.

Plain data and ROS-free, so that a domain's scene adapter (:mod:`.plugin`) can live with the
domain and the service and ROS layers above can stay generic: :mod:`.errors` holds the named
error codes every layer answers with, :mod:`.scene` the scenes, :mod:`.plan` the plan steps
and geometry, :mod:`.plugin` what a domain implements to be planned over ROS.
"""
