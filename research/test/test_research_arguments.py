"""Every NAMO investigation refuses bad command-line arguments before any planning or
learning, with argparse's usage error (exit status 2) naming the option, and says so plainly
when its configuration cannot be read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

BAD_ARGUMENTS = [
    ("bench_tamp_tail", ["--repeats", "0"]),
    ("bench_tamp_tail", ["--tasks", "0"]),
    ("bench_tamp_tail", ["--eval-seeds", "0"]),
    ("bench_tamp_tail", ["--timeout", "0"]),
    ("bench_tamp_tail", ["--planner", "vi"]),
    ("bench_tamp_tail", ["--set", "restart_s"]),
    ("audit_namo_csis", ["--tasks", "0"]),
    ("audit_namo_csis", ["--workers", "0"]),
    ("audit_namo_csis", ["--contexts", "oracle"]),
    ("profile_namo", ["--task", "10"]),
    ("profile_namo", ["--seed", "-1"]),
    ("profile_namo", ["--min-share", "1.5"]),
    ("profile_namo", ["--set", "relaxed"]),
    ("profile_namo", ["--context", "oracle"]),
    ("profile_namo", ["--seeds", "0"]),
    ("profile_namo", ["--bundle", "x.pt"]),
    ("probe_check_rate", ["0"]),
    ("probe_check_rate", ["--timeout", "-1"]),
    ("probe_check_rate", ["--set", "relaxed"]),
    ("replan_jitter", []),
    ("replan_jitter", ["--eval", "results.json", "--repeats", "1"]),
    ("replan_jitter", ["--eval", "results.json", "--tasks", "0"]),
    ("replan_jitter", ["--eval", "results.json", "--seeds", "x"]),
    ("beside_boxes_cost", []),
    ("beside_boxes_cost", ["--config", "config/namo/grid10.yaml", "--tasks", "0"]),
    ("beside_boxes_cost", ["--config", "config/namo/grid10.yaml", "--repeats", "x"]),
    ("route_search_cost", []),
    ("route_search_cost", ["--config", "config/namo/grid20.yaml", "--tasks", "0"]),
    ("route_search_cost", ["--config", "config/namo/grid20.yaml", "--repeats", "x"]),
    ("work_ceiling", []),
    ("work_ceiling", ["scores.jsonl", "--lam", "0"]),
    ("time_csi_learning", ["--k1", "0"]),
    ("time_csi_learning", ["--task", "10"]),
    ("time_planning_runs", ["--tasks", "0"]),
    ("time_planning_runs", ["--seeds", "-1"]),
    ("time_planning_runs", ["--timeout", "0"]),
    ("time_planning_runs", ["--planner", "bfs"]),
    ("time_planning_runs", ["--bundle", "x.pt"]),
    ("time_planning_runs", ["--set", "restart_s"]),
]


@pytest.mark.parametrize(("script", "argv"), BAD_ARGUMENTS)
def test_bad_arguments_are_refused(
    script: str,
    argv: list[str],
    capsys: pytest.CaptureFixture[str],
    load_script: Callable[[str], ModuleType],
) -> None:
    with pytest.raises(SystemExit) as exc:
        load_script(script).main(argv)
    assert exc.value.code == 2
    assert "--" in capsys.readouterr().err


@pytest.mark.pybullet
@pytest.mark.parametrize(
    ("script", "argv", "message"),
    [
        ("time_csi_learning", ["--k1", "2"], "cannot read"),
        ("time_planning_runs", [], "malformed YAML"),
    ],
)
def test_an_unreadable_config_is_a_clear_error(
    script: str,
    argv: list[str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    load_script: Callable[[str], ModuleType],
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("csi: [unclosed")
    try:
        code = load_script(script).main(["--config", str(bad), *argv])
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
