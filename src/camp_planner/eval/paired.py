"""Paired comparisons of two methods on the same test episodes: is one ahead beyond noise?

`camp eval` reports each method's mean over seeds with the standard deviation across seeds.
With three seeds and a randomised planner those spreads overlap for almost any pair of
methods, and the table cannot say whether CAMP's lead over pure planning is real. Both
methods solve the same tasks, though, so the per-task differences carry the answer: their
mean, with a bootstrap confidence interval (resampling the (seed, task) pairs), and how
many tasks each side won. The interval treats pairs as independent; pairs of one seed share
a trained selector, so it is a little narrow when the selector's luck dominates, which in
the domains here it does not (the planner's run-to-run spread does).

Planning times are heavy-tailed: one 40 s run among thirty 1 s runs moves the mean, and a
percentile bootstrap of the mean of so skewed a sample covers less than its nominal level.
So each comparison also carries the Wilcoxon signed-rank test's two-sided p-value, which
asks whether one side tends to come out ahead pair by pair, whatever the size of the tail.
Pairs that tie exactly (the same plan counted the same work) carry no evidence either way
and are left out of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

RESAMPLES = 10_000
LEVEL = 0.95


def paired_difference(
    a: Sequence[float],
    b: Sequence[float],
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = 0,
) -> dict[str, Any]:
    """The mean of ``a[i] - b[i]`` with a percentile-bootstrap interval at ``level``.

    ``verdict`` is "a ahead" when the interval lies above 0, "b ahead" when below, and
    "within noise" otherwise; ``a_wins`` and ``b_wins`` count the pairs each side won;
    ``signed_rank_p`` is the two-sided p-value of :func:`signed_rank_p`."""
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} and {len(b)}")
    if not a:
        raise ValueError("no pairs to compare")
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    low, high = bootstrap_interval(d, "mean", resamples, level, seed)
    verdict = "a ahead" if low > 0 else "b ahead" if high < 0 else "within noise"
    return {
        "pairs": len(d),
        "mean": float(d.mean()),
        "ci_low": float(low),
        "ci_high": float(high),
        "level": level,
        "a_wins": int((d > 0).sum()),
        "b_wins": int((d < 0).sum()),
        "verdict": verdict,
        "signed_rank_p": signed_rank_p(d),
    }


def signed_rank_p(differences: Sequence[float] | np.ndarray) -> float:
    """The two-sided p-value of the Wilcoxon signed-rank test that the paired differences
    are centred on 0. Zero differences are dropped first (they favour neither side); with
    none left the answer is 1. Exact for up to 50 untied differences, the normal
    approximation with a tie correction otherwise (SciPy's choice)."""
    d = np.asarray(differences, dtype=float)
    if not np.all(np.isfinite(d)):
        raise ValueError("paired differences must be finite")
    d = d[d != 0.0]
    if d.size == 0:
        return 1.0
    # SciPy's stats module takes a few tenths of a second to import: only when comparing.
    from scipy.stats import wilcoxon

    return float(wilcoxon(d, alternative="two-sided").pvalue)


def p_value(comparison: dict[str, Any]) -> str:
    """A comparison's signed-rank p-value as a table shows it ("–" for results written
    before it was recorded)."""
    p = comparison.get("signed_rank_p")
    if p is None:
        return "–"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def bootstrap_interval(
    values: Sequence[float] | np.ndarray,
    statistic: str = "mean",
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = 0,
) -> tuple[float, float]:
    """A percentile-bootstrap interval at ``level`` for the mean or median of ``values``
    (seeded, so the same values give the same interval)."""
    if statistic not in ("mean", "median"):
        raise ValueError(f"statistic must be 'mean' or 'median', got {statistic!r}")
    if resamples < 1 or not 0.0 < level < 1.0:
        raise ValueError("resamples must be positive and level in (0, 1)")
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("no values to resample")
    samples = x[np.random.default_rng(seed).integers(0, x.size, size=(resamples, x.size))]
    stats = samples.mean(axis=1) if statistic == "mean" else np.median(samples, axis=1)
    low, high = np.quantile(stats, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return float(low), float(high)


def compare_methods(
    rows: dict[str, list[dict[str, Any]]], method: str, metrics: Sequence[str]
) -> dict[str, dict[str, dict[str, Any]]]:
    """``method`` against every other method of ``rows`` (method → episodes, in the same
    order of (seed, task) for all), per metric: other method → metric → paired difference
    (``method`` minus the other)."""
    if method not in rows:
        return {}
    mine = rows[method]
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for other, theirs in rows.items():
        if other == method:
            continue
        if [r.get("task") for r in theirs] != [r.get("task") for r in mine]:
            raise ValueError(f"'{method}' and '{other}' were not run on the same tasks")
        out[other] = {
            m: paired_difference([float(r[m]) for r in mine], [float(r[m]) for r in theirs])
            for m in metrics
        }
    return out
