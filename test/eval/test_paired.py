"""Paired comparisons: the verdict follows the interval, and bad input is refused."""

from __future__ import annotations

import pytest

from camp_planner.eval.paired import bootstrap_interval, compare_methods, paired_difference


def test_a_consistent_lead_is_beyond_noise_and_a_coin_flip_is_not() -> None:
    ahead = paired_difference([11.0, 12.0, 13.0, 12.5, 11.5], [1.0, 2.0, 3.0, 2.5, 1.5])
    assert ahead["mean"] == pytest.approx(10.0)
    assert ahead["ci_low"] == pytest.approx(10.0) and ahead["ci_high"] == pytest.approx(10.0)
    assert (ahead["verdict"], ahead["a_wins"], ahead["b_wins"]) == ("a ahead", 5, 0)
    behind = paired_difference([1.0, 2.0, 3.0], [5.0, 7.0, 4.0])
    assert behind["verdict"] == "b ahead" and behind["ci_high"] < 0
    # Differences of +-100 in turn: the mean is 0 and the interval spans it.
    flips = paired_difference([100.0, 0.0] * 10, [0.0, 100.0] * 10)
    assert flips["mean"] == pytest.approx(0.0)
    assert flips["ci_low"] < 0 < flips["ci_high"] and flips["verdict"] == "within noise"
    assert flips["pairs"] == 20 and flips["a_wins"] == flips["b_wins"] == 10
    # Seeded: the same samples give the same interval.
    assert paired_difference([100.0, 0.0] * 10, [0.0, 100.0] * 10) == flips


def test_unpaired_samples_are_refused() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        paired_difference([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="no pairs"):
        paired_difference([], [])
    with pytest.raises(ValueError, match="level"):
        paired_difference([1.0], [0.0], level=1.5)
    rows = {
        "camp": [{"task": 0, "objective": 1.0}, {"task": 1, "objective": 2.0}],
        "pure": [{"task": 1, "objective": 1.0}, {"task": 0, "objective": 2.0}],
    }
    with pytest.raises(ValueError, match="not run on the same tasks"):
        compare_methods(rows, "camp", ("objective",))
    assert compare_methods(rows, "missing", ("objective",)) == {}


def test_a_bootstrap_interval_brackets_the_statistic_and_narrows_with_more_values() -> None:
    few = [1.0, 1.2, 0.8, 1.1, 0.9, 5.0]
    low, high = bootstrap_interval(few, "median")
    assert low <= 1.05 <= high  # the sample median
    many_low, many_high = bootstrap_interval(few * 20, "median")
    assert many_high - many_low < high - low
    mean_low, mean_high = bootstrap_interval(few, "mean")
    assert mean_low < sum(few) / len(few) < mean_high
    assert bootstrap_interval([3.0], "median") == (3.0, 3.0)
    with pytest.raises(ValueError, match="statistic"):
        bootstrap_interval(few, "mode")
    with pytest.raises(ValueError, match="no values"):
        bootstrap_interval([], "mean")


def test_the_signed_rank_test_reads_wins_pair_by_pair_not_the_tail() -> None:
    from camp_planner.eval.paired import p_value, signed_rank_p

    # Twelve small wins and one huge loss: the mean says "behind", the ranks say "ahead".
    d = [1.0 + 0.1 * i for i in range(12)] + [-500.0]
    cmp = paired_difference(d, [0.0] * len(d))
    assert cmp["mean"] < 0
    assert cmp["signed_rank_p"] == pytest.approx(signed_rank_p(d))
    # Twelve of thirteen ranks positive, the largest negative: exact two-sided
    # p = 2·P(T ≤ 13) = 176 / 8192 under the null of signs at random.
    assert cmp["signed_rank_p"] == pytest.approx(176 / 8192)
    assert signed_rank_p([float(i) for i in range(1, 11)]) == pytest.approx(2 / 2**10)
    # Ties carry no evidence: exact zeros are dropped, and all zeros give p = 1.
    assert signed_rank_p([0.0, 0.0, 0.0]) == 1.0
    assert signed_rank_p([0.0] * 20 + [float(i) for i in range(1, 11)]) == pytest.approx(
        signed_rank_p([float(i) for i in range(1, 11)])
    )
    with pytest.raises(ValueError, match="finite"):
        signed_rank_p([1.0, float("nan")])
    assert p_value(cmp).startswith("0.")
    assert p_value({"signed_rank_p": 1e-6}) == "< 0.001"
    assert p_value({}) == "–"  # results recorded before the test was added
