"""Simulator adapters: every PyBullet call of the project lives here, with explicit client ids."""
