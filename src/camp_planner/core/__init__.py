"""The pure CAMP core: factored MDPs, contexts, CSI learning, relevance, CAMP construction and
the compute-aware objective. Nothing here imports rclpy, pybullet or ompl."""
