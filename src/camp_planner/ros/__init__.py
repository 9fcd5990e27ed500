"""ROS 2 adapters: nodes, message conversion, bring-up and a client. Only this package
imports rclpy; every node converts messages and calls :mod:`camp_planner.service`."""
