"""The planning service: what the ROS nodes (and any other front end) call.

Plain-data scenes in, contexts and plans out, with named error codes; no rclpy here. The ROS
adapters in :mod:`camp_planner.ros` only convert messages to and from these types.
"""
