"""Domain D3: navigation among movable obstacles (NAMO) with a mobile manipulator."""
