"""The ``camp`` command end to end, including bad input (one line, exit 2, no traceback)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from camp_planner.cli import main


def _camp(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "camp_planner.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=600,
    )


def test_contexts_lists_ids(capsys: pytest.CaptureFixture[str], artifacts: Path) -> None:
    assert main(["contexts", "--json", "--artifacts", str(artifacts)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["id"] == "universal" and len(rows) == 46


def test_plan_prints_one_json_object(capsys: pytest.CaptureFixture[str], artifacts: Path) -> None:
    code = main(
        [
            "plan",
            "--task",
            "0",
            "--planner",
            "bfs_replan",
            "--context",
            "5",
            "--json",
            "--artifacts",
            str(artifacts),
        ]
    )
    assert code == 0
    record = json.loads(capsys.readouterr().out)
    for key in (
        "return",
        "objective",
        "compute_time_s",
        "context",
        "relevant_variables",
        "dropped_variables",
        "success",
    ):
        assert key in record
    assert record["dropped_variables"]
    assert (artifacts / "csi").is_dir()


def test_csi_json(capsys: pytest.CaptureFixture[str], artifacts: Path) -> None:
    assert main(["csi", "--context", "1", "--json", "--artifacts", str(artifacts)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out[0]["dependencies"] and "dropped_variables" in out[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["plan", "--domain", "chess"], "unknown domain 'chess'"),
        (["plan", "--planner", "astar"], "unknown planner 'astar'"),
        (["plan", "--context", "nope"], "unknown context 'nope'"),
        (["plan", "--task", "99"], "out of range"),
        (["plan", "--task", "x"], "invalid int value"),
        (["csi"], "say which contexts"),
        (["fly"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    res = _camp(*args, cwd=tmp_path)
    assert res.returncode == 2
    assert message in res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tasks: [1, 2\n", "malformed YAML"),
        ("nonsense: 3\n", "unknown setting 'nonsense'"),
        ("tasks: {train: many}\n", "should be int"),
        ("domain: namo\n", "is for domain 'namo'"),
        ("- 1\n- 2\n", "mapping at the top level"),
    ],
)
def test_bad_config_files(text: str, message: str, tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text)
    res = _camp("contexts", "--config", str(cfg), cwd=tmp_path)
    assert res.returncode == 2 and message in res.stderr and "Traceback" not in res.stderr


def test_a_planner_setting_in_a_file_keeps_the_domains_other_settings(tmp_path: Path) -> None:
    from camp_planner.config import load_config
    from camp_planner.core.errors import CampError
    from camp_planner.domains import get_domain

    domain = get_domain("namo")
    defaults = domain.default_config()["planners"]
    cfg = tmp_path / "one.yaml"
    cfg.write_text("planners: {tamp: {restart_s: null}, mcts: {iterations: 5}}\n")
    planners = load_config(domain, cfg)["planners"]
    assert planners["tamp"] == {**defaults["tamp"], "restart_s": None}
    assert planners["stilman"] == defaults["stilman"] and planners["mcts"] == {"iterations": 5}
    cfg.write_text("planners: {tamp: 3}\n")
    with pytest.raises(CampError, match=r"planners\.tamp"):
        load_config(domain, cfg)


def test_corrupt_csi_cache_is_a_clear_error(tmp_path: Path) -> None:
    assert _camp("csi", "--context", "1", cwd=tmp_path).returncode == 0
    cache = next((tmp_path / "artifacts" / "csi").glob("*.json"))
    cache.write_text("{not json")
    res = _camp("csi", "--context", "1", cwd=tmp_path)
    assert res.returncode == 2 and "is corrupt" in res.stderr


def test_every_subcommand_has_help(tmp_path: Path) -> None:
    for sub in ("contexts", "csi", "plan", "train", "select", "eval", "sweep", "demo"):
        res = _camp(sub, "--help", cwd=tmp_path)
        assert res.returncode == 0 and "usage: camp" in res.stdout


def test_demo_writes_png(tmp_path: Path) -> None:
    # A small context space and CSI budget: the point is the demo's output; at the default
    # budget, CSI learning alone took two and a half minutes.
    cfg = tmp_path / "small.yaml"
    cfg.write_text("contexts: {max_contexts: 4}\ncsi: {k1: 10, k2: 5, tasks: 2}\n")
    res = _camp(
        "demo",
        "--config",
        str(cfg),
        "--task",
        "1",
        "--out",
        str(tmp_path / "demo.png"),
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "demo.png").read_bytes()[:4] == b"\x89PNG"
    assert "best context" in res.stdout


def test_select_without_a_bundle_is_a_clear_error(tmp_path: Path) -> None:
    res = _camp("select", "--artifacts", str(tmp_path / "none"), cwd=tmp_path)
    assert res.returncode == 2 and "run `camp train` first" in res.stderr


@pytest.mark.pybullet
def test_select_falls_back_to_the_shipped_bundle_as_plan_does(tmp_path: Path) -> None:
    args = ["select", "--domain", "namo", "--task", "0", "--json"]
    res = _camp(*args, "--artifacts", str(tmp_path / "none"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["bundle"].endswith("namo-tamp.pt")
    assert out["ranked"] and 0.0 <= out["ranked"][0]["probability"] <= 1.0
    # The shipped bundle carries the gate's gain table: the gate weighs the first choice.
    gate = out["gate"]
    assert gate["proposed"] == out["ranked"][0]["name"] and gate["training_tasks"] > 0
    assert gate["context"] in (gate["proposed"], "universal") and gate["reason"]


def test_null_means_no_limit_for_optional_context_settings(tmp_path: Path) -> None:
    from camp_planner.config import load_config
    from camp_planner.domains import get_domain

    cfg = tmp_path / "c.yaml"
    cfg.write_text("contexts: {max_contexts: null, values: null}\n")
    config = load_config(get_domain("dinner"), cfg)
    assert config["contexts"]["max_contexts"] is None and config["contexts"]["values"] is None
    cfg.write_text("csi: {k1: null}\n")
    res = _camp("contexts", "--config", str(cfg), cwd=tmp_path)
    assert res.returncode == 2 and "should be int" in res.stderr


@pytest.mark.pybullet
@pytest.mark.fast_downward
@pytest.mark.slow
def test_namo_plan_renders_and_prints_json(tmp_path: Path) -> None:
    png = tmp_path / "namo.png"
    done = _camp(
        "plan",
        "--domain",
        "namo",
        "--planner",
        "tamp",
        "--task",
        "4",
        "--split",
        "test",
        "--context",
        "robot_room ∈ {0,1,2,5,6,8}",
        "--render",
        str(png),
        "--json",
        "--artifacts",
        str(tmp_path / "artifacts"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)  # the whole of stdout is one JSON object
    assert result["context"]["name"] == "robot_room ∈ {0,1,2,5,6,8}"
    assert any(v.startswith("box_r3_") for v in result["dropped_variables"])
    assert "motion_planning" in result["stage_times_s"]
    assert png.stat().st_size > 10_000


@pytest.mark.pybullet
@pytest.mark.fast_downward
@pytest.mark.slow
def test_namo_plan_without_a_context_uses_the_shipped_selector(tmp_path: Path) -> None:
    png = tmp_path / "namo.png"
    # The command as written: no --planner, so NAMO's own (TAMP), not BFS-replan.
    args = ["plan", "--domain", "namo", "--task", "4", "--json"]
    done = _camp(
        *args, "--render", str(png), "--artifacts", str(tmp_path / "artifacts"), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["planner"] == "tamp" and result["success"], result["failures"]
    selection = result["selection"]
    assert selection["bundle"].endswith("namo-tamp.pt")
    ranked = [r["name"] for r in selection["ranked"]]
    assert ranked and all(0 <= r["probability"] <= 1 for r in selection["ranked"])
    # The context planned in is the selector's first choice, or a fallback after it failed.
    if selection["fallbacks"] == 0:
        assert result["context"]["name"] == ranked[0]
    assert result["used"][0] == next(r["id"] for r in selection["ranked"])
    assert png.stat().st_size > 10_000
    # A bundle that is not there is a clear error, not a silent universal context.
    missing = _camp(*args, "--bundle", str(tmp_path / "nope.pt"), cwd=tmp_path)
    assert missing.returncode == 2 and "nope.pt" in missing.stderr


@pytest.mark.parametrize(
    "path",
    sorted(
        p
        for p in (Path(__file__).resolve().parents[2] / "config").glob("*/*.yaml")
        if p.parent.name != "ros"
    ),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_every_shipped_domain_config_loads(path: Path) -> None:
    # config/<domain>/<variant>.yaml; config/ros/ holds ROS parameters, not a domain's.
    from camp_planner.config import load_config
    from camp_planner.domains import get_domain

    domain = get_domain(path.parent.name)
    config = load_config(domain, path)
    assert config["selector"] and config["tasks"]


@pytest.mark.parametrize(
    ("domain", "planner"),
    [("gridworld", "bfs_replan"), ("dinner", "fast_downward"), ("namo", "tamp")],
)
def test_an_unnamed_planner_is_the_domains_own(domain: str, planner: str) -> None:
    from camp_planner.cli import _pipeline, build_parser

    args = build_parser().parse_args(["eval", "--domain", domain])
    assert args.planner is None
    pipe = _pipeline(args)
    assert args.planner == planner
    assert pipe.lam(planner) > 0  # the domain configures a λ for its own planner
    named = build_parser().parse_args(["eval", "--domain", domain, "--planner", "mcts"])
    _pipeline(named)
    assert named.planner == "mcts"


TINY_GRID = """\
tasks: {train: 6, test: 2}
contexts: {max_contexts: 5}
csi: {k1: 10, k2: 5, tasks: 2}
selector: {max_iterations: 30}
"""


@pytest.mark.slow
def test_bundles_trained_for_two_configurations_are_kept_apart(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    artifacts = tmp_path / "artifacts"
    configs = {}
    for name, extra in (("a", ""), ("b", "lambda: {bfs_replan: 7.0}\n")):
        configs[name] = tmp_path / f"{name}.yaml"
        configs[name].write_text(TINY_GRID + extra)
    common = ["--planner", "bfs_replan", "--artifacts", str(artifacts), "--json"]
    bundles = {}
    for name, cfg in configs.items():
        assert main(["train", "--config", str(cfg), *common]) == 0
        bundles[name] = json.loads(capsys.readouterr().out)["bundle"]
    # Training the second world wrote a bundle of its own instead of replacing the first.
    assert bundles["a"] != bundles["b"]
    assert all(Path(b).is_file() for b in bundles.values())
    for name, cfg in configs.items():
        assert main(["select", "--config", str(cfg), *common]) == 0
        assert json.loads(capsys.readouterr().out)["bundle"] == bundles[name]
    # A world nobody trained for does not borrow another world's selector.
    other = tmp_path / "c.yaml"
    other.write_text(TINY_GRID + "lambda: {bfs_replan: 9.0}\n")
    assert main(["select", "--config", str(other), *common]) == 2
    err = capsys.readouterr().err
    assert "no selector bundle trained for this configuration" in err
    assert Path(bundles["a"]).name in err and Path(bundles["b"]).name in err
    # The run's own seed is not part of the key (`camp eval` shifts it to draw new tasks).
    shifted = tmp_path / "a-seed.yaml"
    shifted.write_text(TINY_GRID + "seed: 5\n")
    assert main(["select", "--config", str(shifted), *common]) == 0
    assert json.loads(capsys.readouterr().out)["bundle"] == bundles["a"]


def test_csi_why_explains_kept_and_dropped_variables(
    capsys: pytest.CaptureFixture[str], artifacts: Path
) -> None:
    args = ["csi", "--context", "1", "--json", "--artifacts", str(artifacts)]
    assert main(args) == 0
    record = json.loads(capsys.readouterr().out)[0]
    kept, dropped = record["relevant_variables"], record["dropped_variables"]
    assert kept and dropped
    why = [kept[-1], dropped[0]]
    assert main([*args, "--why", why[0], "--why", why[1]]) == 0
    answer = json.loads(capsys.readouterr().out)[0]["why"]
    pairs = {tuple(d) for d in record["dependencies"]}
    chain = answer[why[0]]["chain"]
    assert answer[why[0]]["relevant"] and chain[0] == why[0]
    assert all((a, b) in pairs for a, b in itertools.pairwise(chain))
    assert answer[why[1]] == {
        "relevant": False,
        "chain": None,
        "reason": answer[why[1]]["reason"],
    }
    assert answer[why[1]]["reason"].startswith("dropped")
    # The text form gives the same reasons, one line per variable.
    assert main(["csi", "--context", "1", "--artifacts", str(artifacts), "--why", why[1]]) == 0
    assert f"{why[1]}: dropped" in capsys.readouterr().out
    assert main([*args, "--why", "no_such_var"]) == 2
    assert "no state variable no_such_var" in capsys.readouterr().err


def test_csi_keeps_every_variable_under_the_universal_context(
    capsys: pytest.CaptureFixture[str], artifacts: Path
) -> None:
    args = ["csi", "--context", "universal", "--json", "--artifacts", str(artifacts)]
    assert main([*args, "--why", "agent_room"]) == 0
    record = json.loads(capsys.readouterr().out)[0]
    assert record["dropped_variables"] == []
    assert record["why"]["agent_room"]["relevant"] is True


SET_CONJUNCTIONS = """
domain: gridworld
tasks: {train: 2, test: 2}
contexts:
  variables: [agent_room, move]
  values: [0, 1, up, down]
  include_single: false
  max_disjunction_length: 0
  max_set_conjunction_variables: 2
  max_set_size: 2
csi: {k1: 10, k2: 5, tasks: 2}
"""


def test_contexts_and_csi_show_set_conjunctions(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Issue 50: a file opts in to conjunctions of per-variable value sets.
    config = tmp_path / "sets.yaml"
    config.write_text(SET_CONJUNCTIONS)
    common = ["--config", str(config), "--artifacts", str(tmp_path / "artifacts")]
    assert main(["contexts", *common]) == 0
    text = capsys.readouterr().out
    assert "agent_room ∈ {0,1} ∧ move=up" in text
    assert main(["contexts", "--json", *common]) == 0
    rows = json.loads(capsys.readouterr().out)
    # agent_room: {0}, {1}, {0,1}; move: {up}, {down}, {down,up}; minus the 4 conjunctions.
    assert len(rows) == 1 + 9 - 4
    assert {r["kind"] for r in rows[1:]} == {"set_conjunction"}
    row = next(r for r in rows if r["name"] == "agent_room ∈ {0,1} ∧ move ∈ {down,up}")
    assert [t["value"] for t in row["terms"]] == [0, 1, "down", "up"]
    # A name is accepted back, as printed or typed in ASCII.
    for ref in (row["name"], "agent_room in {0,1} and move in {down,up}"):
        assert main(["csi", "--context", ref, "--json", *common]) == 0
        record = json.loads(capsys.readouterr().out)[0]
        assert record["context_id"] == row["id"] and record["name"] == row["name"]
        assert record["context"]["kind"] == "set_conjunction"
        # The room variable is the context's own, so it always stays.
        assert "agent_room" in record["relevant_variables"]
    assert main(["csi", "--context", row["name"], *common]) == 0
    assert row["id"] in capsys.readouterr().out


def test_set_conjunction_settings_are_optional_and_checked(tmp_path: Path) -> None:
    from camp_planner.config import load_config
    from camp_planner.core.errors import CampError
    from camp_planner.domains import get_domain

    domain = get_domain("gridworld")
    # Absent from the defaults, so existing configurations (and their bundle keys) stay.
    assert "max_set_conjunction_variables" not in domain.default_config()["contexts"]
    path = tmp_path / "c.yaml"
    path.write_text("contexts: {max_set_conjunction_variables: 2, max_set_size: 3}\n")
    loaded = load_config(domain, path)["contexts"]
    assert (loaded["max_set_conjunction_variables"], loaded["max_set_size"]) == (2, 3)
    for bad in ("max_set_size: 0", "max_set_conjunction_variables: -1", "max_set_size: two"):
        path.write_text(f"contexts: {{{bad}}}\n")
        with pytest.raises(CampError, match="max_set"):
            load_config(domain, path)
