"""The context selector: a torch classifier from task features θ to a context (paper 4.2).

Vector features go through a fully connected net with hidden layers [50, 32, 10]; image
features (C×H×W) through a CNN: conv (10 channels, kernel 2) → max-pool (stride 2) → FC
[32, 10]. Trained with Adam (lr 1e-4) on cross-entropy until the training loss reaches 1e-3
or an iteration cap, seeded and deterministic. Vector inputs are standardised with the
training set's statistics (stored with the weights). Beyond the paper: other label kinds
(soft, multilabel, regression of the objective), a structural model that reads each
context's CAMP size instead of the image, and a prior that ranks the contexts by their
mean training objective (see ``SelectorConfig``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from camp_planner.core.errors import CampError, reject_unknown

LABEL_KINDS = ("hard", "soft", "multilabel", "regression")
LABEL_COSTS = ("wall", "work")
MODELS = ("net", "structural", "prior")
PROGRESS_EVERY = 100  # training iterations between progress reports


def symlog(values: np.ndarray, scale: float) -> np.ndarray:
    """sign(J)·log(1 + |J|/scale): keeps the order of objectives while compressing the tails
    (a timed-out value-iteration run costs thousands of points, a good one scores ~60), so
    a squared loss is not dominated by the worst contexts."""
    out: np.ndarray = np.sign(values) * np.log1p(np.abs(values) / scale)
    return out


def symexp(values: np.ndarray, scale: float) -> np.ndarray:
    """The inverse of :func:`symlog`."""
    out: np.ndarray = np.sign(values) * np.expm1(np.abs(values)) * scale
    return out


# These networks are tiny: a second intra-op thread only adds synchronisation, and when the
# other core is busy (a planner, a parallel scorer) it stalls a 0.5 ms forward pass to 10+ ms,
# which the objective charges to the selector.
torch.set_num_threads(1)


@dataclass(frozen=True)
class SelectorConfig:
    """Hyperparameters (defaults: the paper's)."""

    hidden: tuple[int, ...] = (50, 32, 10)
    conv_channels: int = 10
    conv_kernel: int = 2
    conv_hidden: tuple[int, ...] = (32, 10)
    learning_rate: float = 1e-4
    loss_target: float = 1e-3
    max_iterations: int = 20_000
    seed: int = 0
    # "hard": the paper's argmax labels; "soft": a softmax over each task's objectives with
    # this temperature (objective units), so near-ties share the label mass; "multilabel":
    # one sigmoid per context, trained on "this context is within `temperature` of the best"
    # (every context of every task is a training signal; selection picks the context most
    # likely to be near-best); "regression": one output per context predicting the task's
    # objective under that context (symlog-compressed with `temperature` as the scale), so
    # the size of a loss matters, not only who wins; selection takes the highest prediction.
    labels: str = "hard"
    temperature: float = 5.0
    # Skip contexts whose allowed regions cannot join start and goal on the task's map (see
    # core/feasibility.py) before taking the most probable one; a no-op for domains
    # without a region graph.
    screen: bool = True
    # "net": the paper's networks on the task's features (FC for vectors, CNN for images);
    # "structural" (beyond the paper): a small network shared by all contexts on each
    # context's structural inputs (learning/structural.py: the CAMP's log state count,
    # whether its regions reach the goal, the task's log state count) plus a learned bias
    # per context, with hidden layers `structural_hidden`; "prior" (beyond the paper, for
    # regression labels): no network, each context scored by its mean training target in
    # objective units, the same on every task. The screen (which contexts can join start and
    # goal on the task's map) and the fallbacks make the pick task-specific. With
    # heavy-tailed planning times the mean is what the objective averages; a network fitted
    # to compressed (symlog) targets from a few dozen tasks ranks by something closer to the
    # median, and prefers contexts that are usually fast and now and then catastrophic.
    model: str = "net"
    structural_hidden: tuple[int, ...] = (16, 16)
    # The structural model's learned bias per context. With few training tasks per context
    # it memorises each context's noisy mean score; without it, a context is judged by its
    # structural inputs alone, the same way on every task.
    structural_context_bias: bool = True
    # Label each context with what the CAMP method, which falls back when planning fails,
    # gets from trying it first: a failed attempt scores the universal context's objective
    # less its own compute time, not a lost episode (labels.ScoreMatrix.targets).
    fallback_labels: bool = False
    # Learn from the per-(task, context) mean of this many independent scorings (planner
    # seeds apart): one run of a randomised planner is a noisy label (labels.ScoreMatrix.mean).
    label_repeats: int = 1
    # Regression and multilabel selectors: leave the (task, context) pairs the screen
    # rejects (the context's regions cannot join start and goal on that task's map) out of
    # the loss. Selection never ranks them, so the network need not learn from images which
    # doors a task has; it spends its capacity on ranking the contexts that can succeed.
    learn_screened_only: bool = False
    # What the labels charge for compute (beyond the paper): "wall", the objective as
    # scored (return − λ · wall-clock seconds); "work", return − λ · the planner's count of
    # its work in nominal seconds (``Score.work_s``: collision checks, IK solves, grid cells
    # and task-planner calls at fixed costs), which is the same for the same plan on any
    # machine at any load. One wall-clock run of a plan varies by 15-75 % (docs/results/history.md,
    # "Identical plans planned again"); on work a label says which context saves
    # computation, not which run was lucky. The objective of the eval stays on the wall clock.
    label_cost: str = "wall"

    @staticmethod
    def from_mapping(data: dict[str, Any]) -> SelectorConfig:
        reject_unknown(data, SelectorConfig.__dataclass_fields__, "selector")
        values = dict(data)
        for key in ("hidden", "conv_hidden", "structural_hidden"):
            if key in values:
                values[key] = tuple(int(v) for v in values[key])
        cfg = SelectorConfig(**values)
        if cfg.labels not in LABEL_KINDS:
            raise CampError(
                f"selector.labels must be one of {', '.join(LABEL_KINDS)}, got {cfg.labels!r}"
            )
        if cfg.label_cost not in LABEL_COSTS:
            raise CampError(
                f"selector.label_cost must be one of {', '.join(LABEL_COSTS)}, "
                f"got {cfg.label_cost!r}"
            )
        if cfg.temperature <= 0:
            raise CampError("selector.temperature must be positive")
        if cfg.label_repeats < 1:
            raise CampError(f"selector.label_repeats must be at least 1, got {cfg.label_repeats}")
        if cfg.model not in MODELS:
            raise CampError(f"selector.model must be one of {', '.join(MODELS)}, got {cfg.model!r}")
        if cfg.model == "prior" and cfg.labels != "regression":
            raise CampError(
                f"selector.model: prior ranks by mean objective and needs regression labels, "
                f"got {cfg.labels!r}"
            )
        if cfg.learn_screened_only and (
            not cfg.screen or cfg.labels not in ("regression", "multilabel")
        ):
            raise CampError(
                "selector.learn_screened_only needs selector.screen: true and regression or "
                f"multilabel labels (got screen: {cfg.screen}, labels: {cfg.labels!r})"
            )
        return cfg

    @property
    def iterative(self) -> bool:
        """Whether training runs iterations (worth a progress bar); the prior is a
        closed-form mean."""
        return self.model != "prior"

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["hidden"] = list(self.hidden)
        out["conv_hidden"] = list(self.conv_hidden)
        out["structural_hidden"] = list(self.structural_hidden)
        return out


def _mlp(sizes: list[int]) -> list[nn.Module]:
    layers: list[nn.Module] = []
    for a, b in itertools.pairwise(sizes):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return layers[:-1]  # no activation on the logits


class StructuralNet(nn.Module):
    """One small network applied to every context's row of structural inputs, plus a
    learned bias per context (unless ``per_context_bias`` is off):
    (batch, contexts, features) → (batch, contexts)."""

    def __init__(
        self, n_contexts: int, n_features: int, hidden: tuple[int, ...], per_context_bias: bool
    ) -> None:
        super().__init__()
        self.shared = nn.Sequential(*_mlp([n_features, *hidden, 1]))
        self.bias = nn.Parameter(torch.zeros(n_contexts), requires_grad=per_context_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.shared(x).squeeze(-1) + self.bias
        return out


class PriorNet(nn.Module):
    """One stored score per context (symlog units), whatever the input: (batch, ...) →
    (batch, contexts). Set by :meth:`ContextSelector.fit` in closed form."""

    level: torch.Tensor

    def __init__(self, n_contexts: int) -> None:
        super().__init__()
        self.register_buffer("level", torch.zeros(n_contexts))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.level.expand(x.shape[0], -1)


def build_network(input_shape: tuple[int, ...], n_out: int, cfg: SelectorConfig) -> nn.Module:
    """FC for 1-D inputs, CNN for C×H×W inputs; for the structural model, a network over
    each context's row of a contexts × features input; for the prior, no network."""
    if cfg.model == "prior":
        return PriorNet(n_out)
    if cfg.model == "structural":
        if len(input_shape) != 2 or input_shape[0] != n_out:
            raise CampError(
                f"a structural selector takes one row of features per context ({n_out} rows), "
                f"got shape {input_shape}"
            )
        return StructuralNet(
            n_out, input_shape[1], cfg.structural_hidden, cfg.structural_context_bias
        )
    if len(input_shape) == 1:
        return nn.Sequential(*_mlp([input_shape[0], *cfg.hidden, n_out]))
    if len(input_shape) != 3:
        raise CampError(f"features must be a vector or a C×H×W image, got shape {input_shape}")
    c, h, w = input_shape
    conv_h, conv_w = h - cfg.conv_kernel + 1, w - cfg.conv_kernel + 1
    flat = cfg.conv_channels * (conv_h // 2) * (conv_w // 2)
    return nn.Sequential(
        nn.Conv2d(c, cfg.conv_channels, cfg.conv_kernel),
        nn.ReLU(),
        nn.MaxPool2d(2, stride=2),
        nn.Flatten(),
        *_mlp([flat, *cfg.conv_hidden, n_out]),
    )


class _MaskedLoss(nn.Module):
    """An element-wise loss averaged over the pairs ``mask`` keeps."""

    def __init__(self, loss: nn.Module, mask: torch.Tensor) -> None:
        super().__init__()
        self.loss, self.mask = loss, mask
        self.count = mask.sum()

    def forward(self, output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = (self.loss(output, target) * self.mask).sum() / self.count
        return out


def _masked_loss(mask: np.ndarray, shape: tuple[int, int], labels: str) -> nn.Module:
    keep = np.asarray(mask)
    if labels not in ("regression", "multilabel"):
        raise CampError(f"a loss mask needs regression or multilabel labels, not {labels!r}")
    if keep.shape != shape or keep.dtype != np.bool_:
        raise CampError(f"the loss mask must be a boolean tasks × contexts array {shape}")
    if not keep.any(axis=1).all():
        raise CampError("the loss mask leaves a task with no context to learn from")
    element: nn.Module = (
        nn.MSELoss(reduction="none")
        if labels == "regression"
        else nn.BCEWithLogitsLoss(reduction="none")
    )
    return _MaskedLoss(element, torch.as_tensor(keep, dtype=torch.float32))


@dataclass
class TrainingReport:
    iterations: int
    final_loss: float
    reached_target: bool


class ContextSelector:
    """Maps task features to a distribution over a fixed list of contexts."""

    def __init__(self, input_shape: tuple[int, ...], n_contexts: int, cfg: SelectorConfig) -> None:
        if n_contexts < 1:
            raise CampError("a selector needs at least one context")
        self.input_shape = tuple(input_shape)
        self.n_contexts = n_contexts
        self.cfg = cfg
        torch.manual_seed(cfg.seed)
        self.net = build_network(self.input_shape, n_contexts, cfg)
        self.mean = np.zeros(self.input_shape, dtype=np.float32)
        self.std = np.ones(self.input_shape, dtype=np.float32)

    def _prepare(self, x: np.ndarray) -> torch.Tensor:
        arr = np.asarray(x, dtype=np.float32)
        if arr.shape[1:] != self.input_shape:
            raise CampError(
                f"features have shape {arr.shape[1:]}, the selector expects {self.input_shape}"
            )
        if not np.all(np.isfinite(arr)):
            raise CampError("features contain NaN or infinite values")
        return torch.from_numpy((arr - self.mean) / self.std)

    def fit(
        self,
        x: np.ndarray,
        labels: np.ndarray,
        progress: Callable[[int], None] | None = None,
        mask: np.ndarray | None = None,
    ) -> TrainingReport:
        """Full-batch Adam on cross-entropy until the loss target or the iteration cap;
        ``progress`` is told every ``PROGRESS_EVERY`` iterations how many more were done.
        ``mask`` (regression and multilabel labels: tasks × contexts, true where the pair
        counts) leaves the other pairs out of the loss; their targets may be anything finite.

        ``labels`` are class indices (the paper's hard labels) or, as a 2-D array, target
        distributions over the contexts (soft labels). With soft labels the stopping rule
        uses the KL divergence (cross-entropy minus the targets' entropy), which can reach
        the loss target where the cross-entropy itself cannot."""
        arr = np.asarray(x, dtype=np.float32)
        if len(self.input_shape) == 1:
            self.mean = arr.mean(axis=0)
            self.std = np.maximum(arr.std(axis=0), 1e-6).astype(np.float32)
        elif self.cfg.model == "structural" and arr.ndim == 3:
            # One scale per feature, shared by every context's row.
            rows = arr.reshape(-1, arr.shape[-1])
            self.mean = np.broadcast_to(rows.mean(axis=0), self.input_shape).astype(np.float32)
            std = np.maximum(rows.std(axis=0), 1e-6)
            self.std = np.broadcast_to(std, self.input_shape).astype(np.float32)
        inputs = self._prepare(arr)
        raw = np.asarray(labels)
        floor = 0.0
        loss_fn: nn.Module = nn.CrossEntropyLoss()
        if self.cfg.labels == "regression":
            if raw.shape != (len(arr), self.n_contexts) or not np.all(np.isfinite(raw)):
                raise CampError("regression targets must be finite, one row of contexts per task")
            targets = torch.as_tensor(symlog(raw, self.cfg.temperature), dtype=torch.float32)
            loss_fn = nn.MSELoss()
        elif self.cfg.labels == "multilabel":
            if raw.shape != (len(arr), self.n_contexts) or not np.isin(raw, (0, 1)).all():
                raise CampError("multilabel targets must be 0/1, one row of contexts per task")
            targets = torch.as_tensor(raw, dtype=torch.float32)
            loss_fn = nn.BCEWithLogitsLoss()
        elif raw.ndim == 2:
            if raw.shape != (len(arr), self.n_contexts) or not np.allclose(raw.sum(axis=1), 1):
                raise CampError("soft labels must be one distribution over contexts per task")
            targets = torch.as_tensor(raw, dtype=torch.float32)
            nonzero = raw[raw > 0]
            floor = float(-(nonzero * np.log(nonzero)).sum() / len(raw))
        else:
            targets = torch.as_tensor(raw, dtype=torch.long)
            if targets.min() < 0 or targets.max() >= self.n_contexts:
                raise CampError("labels must index the context list")
        if mask is not None:
            loss_fn = _masked_loss(mask, (len(arr), self.n_contexts), self.cfg.labels)
        if self.cfg.model == "prior":
            return self._fit_prior(raw, mask, loss_fn, targets)
        torch.manual_seed(self.cfg.seed)
        # CPU kernels of these layers are deterministic; seeding makes the run repeatable.
        with torch.random.fork_rng():
            optimiser = torch.optim.Adam(self.net.parameters(), lr=self.cfg.learning_rate)
            self.net.train()
            loss_value = float("inf")
            iteration = 0
            while iteration < self.cfg.max_iterations:
                iteration += 1
                optimiser.zero_grad()
                loss = loss_fn(self.net(inputs), targets)
                loss.backward()
                optimiser.step()
                loss_value = float(loss.item()) - floor
                if progress is not None and iteration % PROGRESS_EVERY == 0:
                    progress(PROGRESS_EVERY)
                if loss_value <= self.cfg.loss_target:
                    break
        self.net.eval()
        return TrainingReport(iteration, loss_value, loss_value <= self.cfg.loss_target)

    def _fit_prior(
        self, raw: np.ndarray, mask: np.ndarray | None, loss_fn: nn.Module, targets: torch.Tensor
    ) -> TrainingReport:
        """Each context's mean target over the tasks ``mask`` keeps (all without one), in
        objective units; a context no task keeps scores below every other."""
        keep = np.ones(raw.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        counts = keep.sum(axis=0)
        sums = np.where(keep, raw, 0.0).sum(axis=0)
        means = np.divide(sums, counts, out=np.zeros(len(counts)), where=counts > 0)
        if (counts == 0).any():
            means[counts == 0] = means[counts > 0].min() - 1.0
        assert isinstance(self.net, PriorNet)
        self.net.level.copy_(torch.as_tensor(symlog(means, self.cfg.temperature)))
        self.net.eval()
        with torch.inference_mode():
            loss = float(loss_fn(self.net(torch.zeros(len(raw), 1)), targets).item())
        return TrainingReport(0, loss, True)

    def predict_objective(self, x: np.ndarray) -> np.ndarray:
        """A regression selector's predicted objective per context (objective units)."""
        if self.cfg.labels != "regression":
            raise CampError(f"a {self.cfg.labels!r} selector does not predict objectives")
        with torch.inference_mode():
            out: np.ndarray = self.net(self._prepare(x)).numpy().astype(np.float64)
        return symexp(out, self.cfg.temperature)

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """Context probabilities for a batch of feature arrays (for multilabel selectors, each
        context's probability of being near-best, which need not sum to one; for regression
        selectors a softmax of the predicted objectives with `temperature`, so the ranking
        is the predicted objectives' and near-equal predictions share the mass)."""
        if self.cfg.labels == "regression":
            return self._objective_softmax(self.predict_objective(x))
        with torch.inference_mode():
            logits = self.net(self._prepare(x))
            if self.cfg.labels == "multilabel":
                return torch.sigmoid(logits).numpy()
            return torch.softmax(logits, dim=1).numpy()

    def _objective_softmax(self, objectives: np.ndarray) -> np.ndarray:
        scaled = objectives / self.cfg.temperature
        weights = np.exp(scaled - scaled.max(axis=1, keepdims=True))
        probs: np.ndarray = (weights / weights.sum(axis=1, keepdims=True)).astype(np.float32)
        return probs

    def scores(self, x: np.ndarray) -> np.ndarray:
        """Each context's preference score for a batch of feature arrays, higher preferred,
        on a scale a regression can use: a regression selector's predicted objective, else
        the log of its probability (floored at 1e-6)."""
        if self.cfg.labels == "regression":
            return self.predict_objective(x)
        out: np.ndarray = np.log(np.clip(self.predict_proba(x).astype(np.float64), 1e-6, None))
        return out

    def ranked(self, features: np.ndarray) -> list[tuple[int, float]]:
        """Context indices with probabilities for one task, most probable first (regression
        selectors: highest predicted objective first, which also orders the contexts whose
        softmax probability underflows to zero)."""
        batch = np.asarray(features)[None]
        if self.cfg.labels == "regression":
            keys = self.predict_objective(batch)
            probs = self._objective_softmax(keys)[0]
            keys = keys[0]
        else:
            probs = keys = self.predict_proba(batch)[0]
        order = sorted(range(len(probs)), key=lambda i: (-keys[i], i))
        return [(i, float(probs[i])) for i in order]

    def state(self) -> dict[str, Any]:
        return {
            "weights": self.net.state_dict(),
            "mean": torch.from_numpy(np.asarray(self.mean, dtype=np.float32)),
            "std": torch.from_numpy(np.asarray(self.std, dtype=np.float32)),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        try:
            self.net.load_state_dict(state["weights"])
            self.mean = state["mean"].numpy()
            self.std = state["std"].numpy()
        except (KeyError, RuntimeError, AttributeError) as exc:
            raise CampError(f"selector weights do not fit the network: {exc}") from exc
        self.net.eval()
