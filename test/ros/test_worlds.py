"""The ``world`` parameter of the NAMO nodes: its defaults for ``config_file`` and
``selector_bundle`` (the paper's world unchanged; grid10's configuration and shipped bundle),
explicit parameters winning over them, an unknown world refused by every node, the CLI and
the bring-up passing it on, and the launch file's ``world`` argument; at the end, `camp
bringup namo --world grid10 --once` to the goal with the shipped grid10 selector."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from camp_planner.cli import main
from camp_planner.core.errors import CampError

pytestmark = [pytest.mark.ros]

ROOT = Path(__file__).resolve().parents[2]
GRID10 = (ROOT / "config" / "namo" / "grid10.yaml").resolve()


@pytest.fixture
def shipped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[Any, ...]]:
    """Every call of ``shipped_bundle``; it answers with a file under ``tmp_path`` named as
    the real one names it, so the tests do not depend on which bundles this checkout has."""
    from camp_planner.learning import bundle

    calls: list[tuple[Any, ...]] = []

    def fake(domain: str, planner: str, world: str | None = None) -> Path:
        calls.append((domain, planner, world))
        return tmp_path / f"{domain}-{world or 'paper'}-{planner}.pt"

    monkeypatch.setattr(bundle, "shipped_bundle", fake)
    return calls


# --- resolution, without nodes --------------------------------------------------------------


def test_the_default_world_is_the_domains_defaults(
    shipped: list[tuple[Any, ...]], tmp_path: Path
) -> None:
    from camp_planner.ros.common import bundle_path, config_path

    assert config_path("namo", "", "") is None
    assert bundle_path("namo", "", "") == tmp_path / "namo-paper-tamp.pt"
    assert shipped == [("namo", "tamp", None)]


@pytest.mark.parametrize("grid", [10, 20])
def test_a_building_world_names_its_configuration_and_its_shipped_bundle(
    shipped: list[tuple[Any, ...]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grid: int
) -> None:
    from camp_planner.ros.common import bundle_path, config_path

    monkeypatch.chdir(tmp_path)  # found from anywhere: the share folder or the source tree
    world = f"grid{grid}"
    config = config_path("namo", world, "")
    assert config is not None
    assert config.resolve() == (ROOT / "config" / "namo" / f"{world}.yaml").resolve()
    assert yaml.safe_load(config.read_text())["world"] == {"grid": grid}
    assert bundle_path("namo", world, "") == tmp_path / f"namo-{world}-tamp.pt"
    assert shipped == [("namo", "tamp", world)]


def test_explicit_parameters_win_over_the_worlds_defaults(
    shipped: list[tuple[Any, ...]], tmp_path: Path
) -> None:
    from camp_planner.ros.common import bundle_path, config_path

    mine = tmp_path / "mine.yaml"
    assert config_path("namo", "grid10", str(mine)) == mine
    assert bundle_path("namo", "grid10", str(tmp_path / "b.pt")) == tmp_path / "b.pt"
    assert bundle_path("namo", "grid10", "none") is None
    assert shipped == []  # an explicit bundle never looks for the shipped one


def test_an_unknown_world_is_an_error_naming_the_known_ones(tmp_path: Path) -> None:
    from camp_planner.ros.common import bundle_path, config_path

    for call in (
        lambda: config_path("namo", "grid11", ""),
        # Refused even where explicit parameters leave the world nothing to decide.
        lambda: config_path("namo", "grid11", str(tmp_path / "mine.yaml")),
        lambda: bundle_path("namo", "grid11", "none"),
    ):
        with pytest.raises(CampError, match=r"unknown world 'grid11' for namo: .*grid10"):
            call()
    with pytest.raises(CampError, match="unknown world 'grid10' for manip"):
        config_path("manip", "grid10", "")


# --- the nodes ------------------------------------------------------------------------------


@pytest.fixture
def ros() -> Iterator[None]:
    import rclpy

    rclpy.init()
    try:
        yield
    finally:
        rclpy.shutdown()


def _node(name: str, **params: Any) -> Any:
    import rclpy
    from rclpy.parameter import Parameter

    return rclpy.create_node(
        name, parameter_overrides=[Parameter(k, value=v) for k, v in params.items()]
    )


def test_declare_service_params_reads_world(
    ros: None, shipped: list[tuple[Any, ...]], tmp_path: Path
) -> None:
    from camp_planner.ros.common import declare_service_params, service_params

    def read(node: Any) -> dict[str, Any]:
        declare_service_params(node)
        kwargs = service_params(node)
        assert node.describe_parameter("world").read_only
        node.destroy_node()
        return kwargs

    node = _node("paper")
    kwargs = read(node)
    assert node.get_parameter("world").value == ""
    assert kwargs["config_path"] is None
    assert kwargs["bundle_path"] == tmp_path / "namo-paper-tamp.pt"

    kwargs = read(_node("grid10", world="grid10"))
    assert kwargs["config_path"].resolve() == GRID10
    assert kwargs["bundle_path"] == tmp_path / "namo-grid10-tamp.pt"

    mine = tmp_path / "mine.yaml"
    kwargs = read(_node("explicit", world="grid10", config_file=str(mine), selector_bundle="none"))
    assert kwargs["config_path"] == mine and kwargs["bundle_path"] is None


def test_a_node_given_an_unknown_world_raises_the_error_start_node_reports(ros: None) -> None:
    from camp_planner.ros.common import declare_service_params

    node = _node("bad", world="grid11")
    with pytest.raises(CampError, match="grid10"):
        declare_service_params(node)
    with pytest.raises(RuntimeError):  # destroyed: rclpy's InvalidHandle
        node.get_name()


@pytest.mark.pybullet
def test_the_sim_node_draws_the_worlds_tasks(ros: None) -> None:
    from rclpy.parameter import Parameter

    from camp_planner.ros.sim_node import SimNode

    for world, rooms in (("", 9), ("grid10", 100)):
        node = SimNode("namo", parameter_overrides=[Parameter("world", value=world)])
        try:
            assert node.task.settings.n_rooms == rooms
        finally:
            node.destroy_node()


@pytest.mark.parametrize(
    "module",
    [
        ["camp_planner.ros.camp_planner_node"],
        ["camp_planner.ros.tamp_server_node"],
        ["camp_planner.ros.sim_node", "namo"],
    ],
)
def test_every_node_started_with_an_unknown_world_exits_with_one_clear_line(
    module: list[str],
) -> None:
    run = subprocess.run(
        [sys.executable, "-m", *module, "--ros-args", "-p", "world:=grid11"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2, run.stderr
    assert "cannot start the node: unknown world 'grid11' for namo" in run.stderr
    assert "grid10" in run.stderr and "Traceback" not in run.stderr


# --- the bring-up and the launch file -------------------------------------------------------


def test_bringup_refuses_an_unknown_world(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bringup", "namo", "--world", "grid11", "--once"]) == 2
    err = capsys.readouterr().err
    assert "unknown world 'grid11' for namo" in err and "grid10" in err


def test_bringup_help_names_the_worlds(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bringup", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--world WORLD" in out and "namo: '' (the default world), grid10" in out


def test_node_processes_get_the_world_over_the_parameter_file(tmp_path: Path) -> None:
    from camp_planner.ros.bringup import node_command

    params = tmp_path / "p.yaml"
    command = node_command("namo_sim", params, ["-p", "world:='grid10'"])
    assert command[-4:] == ["--params-file", str(params), "-p", "world:='grid10'"]
    assert node_command("namo_sim", params)[-2:] == ["--params-file", str(params)]


def test_the_client_draws_its_scene_from_the_nodes_world() -> None:
    import argparse

    from camp_planner.ros.cli import _scene_msg

    args = argparse.Namespace(domain="namo", config=None, split="test", task=4)
    paper = _scene_msg(argparse.Namespace(**vars(args), world=""))
    grid10 = _scene_msg(argparse.Namespace(**vars(args), world="grid10"))
    boxes = [sum(o.object_class == "box" for o in m.objects) for m in (paper, grid10)]
    assert boxes[0] < 30 < 200 < boxes[1]


class _Recorder:
    """Stands in for a launch class: keeps its arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs


class _LaunchConfiguration(_Recorder):
    def perform(self, context: dict[str, str]) -> str:
        return context[self.args[0]]


def _launch_description(monkeypatch: pytest.MonkeyPatch, system: str = "namo") -> Any:
    """launch/<system>.launch.py's description, built against stand-ins for the launch packages
    (not installable here: ros2-from-pypi notes)."""
    stubs = {
        "launch": {"LaunchDescription": _Recorder},
        "launch.actions": {"DeclareLaunchArgument": _Recorder, "OpaqueFunction": _Recorder},
        "launch.conditions": {"IfCondition": _Recorder},
        "launch.launch_context": {"LaunchContext": dict},
        "launch.substitutions": {"LaunchConfiguration": _LaunchConfiguration},
        "launch_ros": {},
        "launch_ros.actions": {"Node": _Recorder},
        "launch_ros.parameter_descriptions": {"ParameterValue": _Recorder},
        "ament_index_python": {},
        "ament_index_python.packages": {"get_package_share_directory": lambda p: f"/share/{p}"},
    }
    for name, attrs in stubs.items():
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        monkeypatch.setitem(sys.modules, name, module)
    # Imported afresh against these stand-ins, and forgotten afterwards.
    monkeypatch.delitem(sys.modules, "camp_planner.ros.launch_system", raising=False)
    spec = importlib.util.spec_from_file_location(
        f"{system}_launch", ROOT / "launch" / f"{system}.launch.py"
    )
    assert spec is not None and spec.loader is not None
    launch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(launch)
    return launch.generate_launch_description()


def test_the_launch_file_passes_world_to_every_node_only_when_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (actions,) = _launch_description(monkeypatch).args
    declared = {a.args[0]: a.kwargs for a in actions if "default_value" in a.kwargs}
    assert declared["world"]["default_value"] == ""
    assert "grid10" in declared["world"]["description"]
    (opaque,) = [a for a in actions if "function" in a.kwargs]
    context = {"params_file": "/share/p.yaml", "namespace": "", "closed_loop": ""}
    for world in ("", "grid10"):
        nodes = opaque.kwargs["function"]({**context, "world": world})[:-1]
        for node in nodes:
            file, _, *overrides = node.kwargs["parameters"]
            assert file == "/share/p.yaml"
            if not world:  # an empty override would hide a world the file sets
                assert overrides == []
                continue
            ((name, value),) = overrides[0].items()
            assert name == "world" and value.args == ("grid10",)
            assert value.kwargs == {"value_type": str}  # "10" must not become an integer


@pytest.mark.parametrize("system", ["namo", "manip"])
def test_the_launch_files_run_the_system_and_its_manager_in_the_namespace_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, system: str
) -> None:
    (actions,) = _launch_description(monkeypatch, system).args
    declared = {a.args[0]: a.kwargs for a in actions if "default_value" in a.kwargs}
    assert declared["namespace"]["default_value"] == ""
    assert declared["use_sim_time"]["default_value"] == "false"
    (opaque,) = [a for a in actions if "function" in a.kwargs]
    given = tmp_path / "p.yaml"
    given.write_text("camp_planner:\n  ros__parameters: {timeout_s: 5.0}\n")
    context = {"params_file": str(given), "namespace": "robot1", "world": "", "closed_loop": ""}
    *nodes, manager = opaque.kwargs["function"](context)
    assert [n.kwargs["name"] for n in nodes] == ["tamp_server", "camp_planner", f"{system}_sim"]
    # closed_loop:=sim runs the executor and the simulated robot; :=robot drives a real one.
    for mode, names in (
        ("sim", ["tamp_server", "camp_executor", f"{system}_robot"]),
        ("robot", ["tamp_server", "camp_executor"]),
    ):
        *loop, loop_manager = opaque.kwargs["function"]({**context, "closed_loop": mode})
        assert [n.kwargs["name"] for n in loop] == names
        assert [n.kwargs["executable"] for n in loop] == names
        managed = loop_manager.kwargs["parameters"][0]["node_names"]
        assert managed == ["tamp_server", "camp_executor"]
    # The managed nodes are brought up by the manager, in the same namespace.
    assert manager.kwargs["executable"] == "camp_lifecycle_manager"
    assert manager.kwargs["parameters"][0]["node_names"] == ["tamp_server", "camp_planner"]
    assert {n.kwargs["namespace"] for n in [*nodes, manager]} == {"robot1"}
    for node in nodes:
        file, sim_time = node.kwargs["parameters"][:2]
        # A bare node name matches only at the root: the nodes read a namespaced copy.
        assert yaml.safe_load(Path(file).read_text()) == {
            "/robot1/camp_planner": {"ros__parameters": {"timeout_s": 5.0}}
        }
        assert sim_time["use_sim_time"].args[0].args == ("use_sim_time",)


# --- end to end -----------------------------------------------------------------------------


@pytest.mark.pybullet
@pytest.mark.fast_downward
@pytest.mark.slow
def test_bringup_world_grid10_once_runs_to_the_goal_with_the_shipped_selector(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from camp_planner.learning.bundle import shipped_bundle

    # No skip: the world's defaults are what this test is about.
    assert shipped_bundle("namo", "tamp", world="grid10") is not None, (
        "no shipped grid10 selector (src/camp_planner/data/namo-grid10-tamp.pt): train it "
        "with config/namo/grid10.yaml and add it"
    )
    # The shipped parameter file with config_file and selector_bundle left to the world; only
    # where the nodes write goes to tmp_path.
    params = yaml.safe_load((ROOT / "config" / "ros" / "namo_params.yaml").read_text())
    for block in params.values():
        p = block["ros__parameters"]
        assert p.get("config_file", "") == "" and p.get("selector_bundle", "") == ""
        if "selector_bundle" in p:
            p["artifacts"] = str(tmp_path / "artifacts")
    params["namo_sim"]["ros__parameters"]["render_dir"] = str(tmp_path / "renders")
    path = tmp_path / "namo.yaml"
    path.write_text(yaml.safe_dump(params))
    args = ["bringup", "namo", "--params", str(path), "--world", "grid10", "--once"]
    assert main([*args, "--wait", "600"]) == 0
    # capfd: the nodes log through rcutils, on descriptor 2.
    captured = capfd.readouterr()
    out = captured.out
    assert "world grid10" in out and "goal reached: True" in out
    assert "[bringup] context:" in out and "task_planning" in out
    # The shipped selector chose the context (without one, no selection status is sent),
    # as the planner node logged it, once.
    err = captured.err
    assert err.count("[camp_planner]: [selection] context ") == 1
    assert "[camp_planner] [" not in out  # no second copy of the node's lines
    renders = list((tmp_path / "renders").glob("namo_execution_*.png"))
    assert renders
    from PIL import Image

    with Image.open(renders[0]) as im:
        assert im.size[0] > 1000  # drawn at the 10×10 world's scale
