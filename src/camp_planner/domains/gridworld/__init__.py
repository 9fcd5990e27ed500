"""Domain D1, the gridworld: tasks, the factored MDP, features and renders."""
