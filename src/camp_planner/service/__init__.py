"""The planning service: what the ROS nodes (and any other front end) call.

Plain-data scenes in, contexts and plans out, with named error codes; no rclpy here. It
serves any domain with a robot plug-in (:mod:`camp_planner.domains.interface.plugin`), which
turns scenes into tasks and executed plans into geometry. The ROS adapters in
:mod:`camp_planner.ros` only convert messages to and from these types.
"""
