"""Paper domain D2: making dinner, a PDDL domain planned with Fast Downward."""
