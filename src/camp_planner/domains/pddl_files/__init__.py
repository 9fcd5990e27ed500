"""Any STRIPS domain with types and action costs, from PDDL files given by the user."""
