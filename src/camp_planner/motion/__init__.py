"""Motion planning adapters: the only package that imports OMPL."""
