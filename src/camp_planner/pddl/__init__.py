"""A small pure-Python PDDL front end: parse STRIPS domains and problems and ground them."""
