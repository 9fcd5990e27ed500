"""Anytime UCT (UCB1 Monte-Carlo tree search) for black-box factored MDPs.

Only the simulator is used (``sample_next_state``, ``reward``, ``is_terminal``,
``applicable_actions``), so this planner works on any MDP, including those whose transition
distribution cannot be enumerated. Nodes are keyed by (state, time step), so paths that meet
in the same state share statistics; by default the tree is kept from one :meth:`MCTS.act` to
the next, so the search keeps what it learnt about the states the episode actually reaches.
That is what lets an abstraction pay off in the search itself: the fewer distinct abstract
states, the more trajectories meet, and the deeper the same budget reaches.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from camp_planner.core.mdp import Action, FactoredMDP, State
from camp_planner.core.planner import Deadline, Planner, PlanningError


class _Node:
    """Per-action visit counts and summed discounted returns for one (state, depth) pair."""

    __slots__ = ("actions", "counts", "totals", "untried", "visits")

    def __init__(self, actions: Sequence[Action], rng: random.Random) -> None:
        self.actions = actions
        n = len(actions)
        self.counts = [0] * n
        self.totals = [0.0] * n
        untried = list(range(n))
        # Trying actions in a random order keeps the simulator's action order from biasing
        # which branches get explored first when the budget is small.
        rng.shuffle(untried)
        self.untried = untried
        self.visits = 0


class MCTS(Planner):
    """UCT with random rollouts, a closed-loop tree keyed by ``(state, step)`` and UCB1.

    Settings:
        time_per_step: wall-clock seconds of search per :meth:`act` (``math.inf`` disables it).
        max_iterations: stop after this many iterations (``None``: no limit).
        exploration: the UCB1 constant, applied to returns normalised by their observed range,
            so the same value suits rewards of 1 and of 1000.
        normalise: which returns set the range UCB1 rescales by: ``"tree"`` (every return the
            search has seen) or ``"open"`` (the default: those of search paths that did not end
            the episode inside the tree). A CAMP's sink is terminal and far below every other
            return; counted in the range, the first path into it stretches the range so far
            that the differences between all other actions vanish against exploration, and
            the agent wanders. Exact terminal values need no rescaling to be compared.
        rollout_depth: total look-ahead (tree plus rollout) in steps; never beyond the MDP's
            horizon, which is the default.
        reuse_tree: keep the tree between steps (False: a fresh tree per step).
        leaf: how a new leaf is valued: ``"rollout"`` (a uniformly random policy to the depth
            limit, the textbook default) or ``"estimate"`` (the MDP's optimistic
            :meth:`~camp_planner.core.mdp.FactoredMDP.value_estimate`, for sparse goals that
            random rollouts never reach).

    After each :meth:`act`, ``last_iterations`` and ``last_tree_size`` describe the search.
    """

    name = "mcts"

    def __init__(
        self,
        seed: int = 0,
        time_per_step: float = 0.25,
        max_iterations: int | None = None,
        exploration: float = 1.0,
        rollout_depth: int | None = None,
        reuse_tree: bool = True,
        leaf: str = "rollout",
        normalise: str = "open",
    ) -> None:
        super().__init__(seed)
        if not time_per_step > 0:
            raise ValueError(f"time_per_step must be positive, got {time_per_step}")
        if max_iterations is not None and max_iterations < 1:
            raise ValueError(f"max_iterations must be at least 1, got {max_iterations}")
        if exploration < 0:
            raise ValueError(f"exploration must be non-negative, got {exploration}")
        if rollout_depth is not None and rollout_depth < 1:
            raise ValueError(f"rollout_depth must be at least 1, got {rollout_depth}")
        if leaf not in ("rollout", "estimate"):
            raise ValueError(f"leaf must be 'rollout' or 'estimate', got {leaf!r}")
        if normalise not in ("tree", "open"):
            raise ValueError(f"normalise must be 'tree' or 'open', got {normalise!r}")
        self.leaf = leaf
        self.normalise = normalise
        self.time_per_step = time_per_step
        self.max_iterations = max_iterations
        self.exploration = exploration
        self.rollout_depth = rollout_depth
        self.reuse_tree = bool(reuse_tree)
        self.last_iterations = 0
        self.last_tree_size = 0
        self._mdp: FactoredMDP | None = None
        self._rng = random.Random(seed)
        self._max_depth = 1
        self._reset_range()
        self._step = 0
        self._tree: dict[tuple[State, int], _Node] = {}

    def prepare(self, mdp: FactoredMDP, deadline: Deadline) -> None:
        deadline.check()
        if self.leaf == "estimate" and mdp.value_estimate(mdp.initial_state()) is None:
            raise PlanningError(
                f"MCTS leaf='estimate' needs a value estimate, and {mdp.name} offers none; "
                "use leaf='rollout'"
            )
        self._mdp = mdp
        self._rng = random.Random(self.seed)
        self._max_depth = max(1, mdp.horizon)
        self.last_iterations = 0
        self.last_tree_size = 0
        self._step = 0
        self._tree = {}
        self._reset_range()

    def act(self, state: State, deadline: Deadline) -> Action:
        mdp = self._mdp
        if mdp is None:
            raise PlanningError("MCTS.act called before prepare")
        deadline.check()
        if mdp.is_terminal(state):
            raise PlanningError("MCTS.act called in a terminal state")
        actions = mdp.applicable_actions(state)
        if not actions:
            raise PlanningError("no applicable actions in the current state")

        max_iterations = self.max_iterations
        if max_iterations is None and math.isinf(self.time_per_step) and deadline.seconds is None:
            raise PlanningError("MCTS needs max_iterations, a finite time_per_step or a deadline")
        clock = deadline.clock
        stop = clock() + self.time_per_step
        step = self._step
        self._step += 1
        if self.reuse_tree:
            # Nodes of earlier steps can never be reached again.
            tree = {k: n for k, n in self._tree.items() if k[1] >= step}
        else:
            tree = {}
            self._reset_range()
        self._tree = tree
        root = tree.get((state, step))
        if root is None:
            root = tree[(state, step)] = _Node(actions, self._rng)
        horizon = self._mdp_horizon_left(step)
        iterations = 0
        while True:
            self._iterate(state, step, horizon, root, tree)
            iterations += 1
            if max_iterations is not None and iterations >= max_iterations:
                break
            if deadline.expired() or clock() >= stop:
                break
        self.last_iterations = iterations
        self.last_tree_size = len(tree)

        counts = root.counts
        totals = root.totals
        best = 0
        best_key = (-1, -math.inf)
        for i, n in enumerate(counts):
            key = (n, totals[i] / n if n else -math.inf)
            if key > best_key:
                best, best_key = i, key
        return actions[best]

    def _reset_range(self) -> None:
        """Forget the observed returns: ``_lo``/``_hi`` over those that set UCB1's scale,
        ``_lo_all``/``_hi_all`` over all of them (the scale while the first is empty)."""
        self._lo = self._lo_all = math.inf
        self._hi = self._hi_all = -math.inf

    def _mdp_horizon_left(self, step: int) -> int:
        """The last step (exclusive) this search looks ahead to from ``step``."""
        end = self._max_depth
        if self.rollout_depth is not None:
            end = min(end, step + self.rollout_depth)
        return max(end, step + 1)

    def _iterate(
        self,
        root_state: State,
        step: int,
        max_depth: int,
        root: _Node,
        tree: dict[tuple[State, int], _Node],
    ) -> None:
        """One selection–expansion–rollout–backup pass from the root."""
        mdp = self._mdp
        assert mdp is not None
        rng = self._rng
        path: list[tuple[_Node, int, float]] = []
        state = root_state
        node = root
        depth = step
        leaf_value = 0.0
        ended = False
        while True:
            i = node.untried.pop() if node.untried else self._select(node)
            action = node.actions[i]
            next_state = mdp.sample_next_state(state, action, rng)
            path.append((node, i, mdp.reward(state, action, next_state)))
            depth += 1
            state = next_state
            if mdp.is_terminal(state):
                ended = True
                break
            if depth >= max_depth:
                break
            key = (state, depth)
            child = tree.get(key)
            if child is None:
                child_actions = mdp.applicable_actions(state)
                if child_actions:
                    tree[key] = _Node(child_actions, rng)
                    leaf_value = self._leaf_value(state, depth, max_depth)
                break
            node = child

        gamma = mdp.gamma
        lo, hi = self._lo, self._hi
        lo_all, hi_all = self._lo_all, self._hi_all
        ret = leaf_value
        # Paths that ended the episode inside the tree (a sink, a goal) have exact values; the
        # "open" range leaves them out so one sink does not set the scale for everything.
        count_in_range = self.normalise != "open" or not ended
        for visited, i, reward in reversed(path):
            ret = reward + gamma * ret
            visited.visits += 1
            visited.counts[i] += 1
            visited.totals[i] += ret
            if count_in_range:
                if ret < lo:
                    lo = ret
                if ret > hi:
                    hi = ret
            if ret < lo_all:
                lo_all = ret
            if ret > hi_all:
                hi_all = ret
        self._lo, self._hi = lo, hi
        self._lo_all, self._hi_all = lo_all, hi_all

    def _select(self, node: _Node) -> int:
        """UCB1 over a fully expanded node, on returns rescaled by their observed range."""
        counts = node.counts
        totals = node.totals
        spread = self._hi - self._lo
        if not spread > 0:
            spread = self._hi_all - self._lo_all
        inv_scale = 1.0 / spread if spread > 0 else 1.0
        c2_log = self.exploration * self.exploration * math.log(node.visits)
        best = 0
        best_score = -math.inf
        for i, n in enumerate(counts):
            score = totals[i] / n * inv_scale + math.sqrt(c2_log / n)
            if score > best_score:
                best, best_score = i, score
        return best

    def _leaf_value(self, state: State, depth: int, max_depth: int) -> float:
        if self.leaf == "estimate":
            assert self._mdp is not None
            estimate = self._mdp.value_estimate(state, self._max_depth - depth)
            if estimate is not None:
                return estimate
        return self._rollout(state, depth, max_depth)

    def _rollout(self, state: State, depth: int, max_depth: int) -> float:
        """Discounted return of a uniformly random policy from ``state`` to the depth limit."""
        mdp = self._mdp
        assert mdp is not None
        rng = self._rng
        gamma = mdp.gamma
        total = 0.0
        discount = 1.0
        for _ in range(depth, max_depth):
            if mdp.is_terminal(state):
                break
            actions = mdp.applicable_actions(state)
            if not actions:
                break
            action = actions[int(rng.random() * len(actions))]
            next_state = mdp.sample_next_state(state, action, rng)
            total += discount * mdp.reward(state, action, next_state)
            discount *= gamma
            state = next_state
        return total
