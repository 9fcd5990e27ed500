"""Pooling `camp eval` runs: figures over every episode of every run, and clear errors."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest


def _run(
    path: Path,
    camp: list[list[tuple[float, float, bool]]],
    pure: bool = True,
    seed_ids: list[int] | None = None,
) -> Path:
    def rows(seeds: list[list[tuple[float, float, bool]]]) -> list[list[dict[str, object]]]:
        return [
            [
                {"task": t, "context_id": "c", "objective": o, "compute_time_s": s, "success": g}
                | {"fallbacks": 0}
                for t, (o, s, g) in enumerate(seed)
            ]
            for seed in seeds
        ]

    episodes = {"camp": rows(camp)}
    if pure:
        episodes["pure"] = rows([[(500.0, 5.0, True)]])
    data: dict[str, object] = {"methods": {}, "episodes": episodes}
    if seed_ids is not None:
        data["seed_ids"] = seed_ids
    path.write_text(json.dumps(data))
    return path


def test_runs_pool_episode_by_episode(
    load_script: Callable[[str], ModuleType], tmp_path: Path
) -> None:
    pool = load_script("pool_evals")
    a = _run(tmp_path / "a.json", [[(900.0, 1.0, True), (800.0, 2.0, True)], [(0.0, 9.0, False)]])
    b = _run(tmp_path / "b.json", [[(700.0, 3.0, True)]])
    out = pool.pool([a, b])
    camp = out["camp"]
    # Four episodes, not the mean of two run means (which would be 566.7 and 700).
    assert camp["episodes"] == 4 and camp["runs"] == 2
    assert camp["objective_mean"] == pytest.approx(600.0)
    assert camp["compute_time_median_s"] == pytest.approx(2.5)
    assert camp["compute_time_mean_s"] == pytest.approx(3.75)
    assert camp["successes"] == 3
    assert camp["objective_standard_error"] == pytest.approx(camp["objective_sd_per_episode"] / 2)
    # Three seeds over the two runs, with means 850, 0 and 700: their SD, not the episodes'.
    assert camp["seeds"] == 3
    assert camp["objective_sd_across_seeds"] == pytest.approx(statistics.stdev([850.0, 0.0, 700.0]))
    assert out["pure"]["episodes"] == 2
    assert pool.main([str(a), str(b), "--json", str(tmp_path / "p.json")]) == 0
    assert json.loads((tmp_path / "p.json").read_text())["methods"]["camp"]["episodes"] == 4


def test_a_run_without_episode_rows_or_a_method_is_a_clear_error(
    load_script: Callable[[str], ModuleType],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pool = load_script("pool_evals")
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"methods": {"camp": {}}}))
    assert pool.main([str(old)]) == 2
    assert "no per-episode rows" in capsys.readouterr().err
    assert pool.main([str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    a = _run(tmp_path / "a.json", [[(900.0, 1.0, True)]])
    b = _run(tmp_path / "b.json", [[(700.0, 3.0, True)]], pure=False)
    assert pool.main([str(a), str(b), "--methods", "pure"]) == 2
    assert "method 'pure' is not in" in capsys.readouterr().err
    # Without --methods, only the methods every run has are pooled.
    assert set(pool.pool([a, b])) == {"camp"}


def test_camp_is_compared_with_each_method_episode_by_episode(
    load_script: Callable[[str], ModuleType],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pool = load_script("pool_evals")
    # CAMP 10 points ahead of pure planning on every one of 3 episodes: beyond any noise.
    a = _run(tmp_path / "a.json", [[(510.0, 4.0, True)]])
    b = _run(tmp_path / "b.json", [[(510.0, 6.0, True)]])
    c = _run(tmp_path / "c.json", [[(510.0, 5.0, True)]])
    paired = pool.pool([a, b, c])["camp"]["paired"]["pure"]
    assert paired["objective"]["mean"] == pytest.approx(10.0)
    assert paired["objective"]["verdict"] == "a ahead"
    assert paired["objective"]["a_wins"] == 3
    assert paired["compute_time_s"]["mean"] == pytest.approx(0.0)
    assert paired["compute_time_s"]["verdict"] == "within noise"
    assert pool.main([str(a), str(b), str(c)]) == 0
    row = "| Pure planning | +10.0 [+10.0, +10.0] | 3 / 0 | CAMP ahead |"
    out = capsys.readouterr().out
    assert row in out
    # The median speed-up (CAMP's times 4, 6 and 5 s; pure planning's 5 s each); no ceiling
    # without the oracle's contexts planned again.
    assert "pure planning ÷ CAMP: 1.00× (5.000 s ÷ 5.000 s)." in out
    assert "planned again" not in out
    # A method run on other episodes than CAMP's is left out of the pairing, and said so.
    d = _run(tmp_path / "d.json", [[(510.0, 4.0, True), (510.0, 4.0, True)]])
    assert pool.pool([d])["camp"]["unpaired"] == ["pure"]
    assert pool.main([str(d)]) == 0
    assert "not paired with CAMP (other episodes): pure" in capsys.readouterr().out


def test_runs_that_repeat_seeds_are_named_and_new_seeds_are_not(
    load_script: Callable[[str], ModuleType],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pool = load_script("pool_evals")
    # An eval written before --first-seed: its two seeds are 0 and 1.
    first = _run(tmp_path / "first.json", [[(900.0, 1.0, True)], [(800.0, 2.0, True)]], False)
    later = _run(tmp_path / "later.json", [[(700.0, 3.0, True)]], False, seed_ids=[2])
    again = _run(tmp_path / "again.json", [[(600.0, 3.0, True)]], False, seed_ids=[1])
    assert pool.seed_ids(first) == [0, 1]
    assert pool.repeated_seeds([first, later]) == []
    assert pool.main([str(first), str(later)]) == 0
    assert "note:" not in capsys.readouterr().out
    assert pool.repeated_seeds([first, later, again]) == [(first, again, [1])]
    out_json = tmp_path / "p.json"
    assert pool.main([str(first), str(later), str(again), "--json", str(out_json)]) == 0
    assert f"note: {first} and {again} both hold seed(s) 1:" in capsys.readouterr().out
    payload = json.loads(out_json.read_text())
    assert payload["seed_ids"] == [[0, 1], [2], [1]]
    assert payload["repeated_seeds"] == [[str(first), str(again), [1]]]


def test_counted_work_is_pooled_where_every_run_recorded_it(
    load_script: Callable[[str], ModuleType],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pool = load_script("pool_evals")
    a = _run(tmp_path / "a.json", [[(510.0, 4.0, True)]])
    b = _run(tmp_path / "b.json", [[(510.0, 6.0, True)]])
    assert "work" not in pool.pool([a, b])["camp"]  # evals written before work was recorded
    for path, work in ((a, 0.4), (b, 0.6)):
        data = json.loads(path.read_text())
        data["episodes"]["camp"][0][0]["work_s"] = work
        data["episodes"]["pure"][0][0]["work_s"] = 0.6
        path.write_text(json.dumps(data))
    work = pool.pool([a, b])["camp"]["work"]
    assert work["median_s"] == {"camp": pytest.approx(0.5), "pure": pytest.approx(0.6)}
    assert work["paired"]["pure"]["mean"] == pytest.approx(-0.1)
    assert pool.main([str(a), str(b)]) == 0
    assert "| Pure planning | 0.600 | 1.00× | -0.100 [-0.200, +0.000] | 1 / 1 / 0 |" in (
        capsys.readouterr().out
    )
