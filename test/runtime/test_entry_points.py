"""One runtime behind every entry point: the same task, seed and bundle give the same first
context, fallback order and plan through `camp plan`, `camp eval`'s CAMP method and the
planning service behind the ROS nodes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from camp_planner.cli import main
from camp_planner.domains import get_plugin
from camp_planner.eval.methods import bundled_camp_method
from camp_planner.learning.bundle import shipped_bundle
from camp_planner.service.planning import CampService
from camp_planner.workflow import Pipeline


@pytest.mark.pybullet
@pytest.mark.slow
@pytest.mark.parametrize(("domain", "task"), [("namo", 4), ("manip", 1)])
def test_plan_eval_and_the_service_make_the_same_plan(
    domain: str, task: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = shipped_bundle(domain, "tamp")
    assert bundle is not None
    # Compute free: no attempt cap hands over on the clock, so a slow machine makes the
    # same plan.
    cfg = tmp_path / "free.yaml"
    cfg.write_text("lambda: {tamp: 0.0}\n")
    args = ["--domain", domain, "--task", str(task), "--seed", "3", "--artifacts", str(tmp_path)]
    assert main(["plan", "--json", "--bundle", str(bundle), "--config", str(cfg), *args]) == 0
    cli = json.loads(capsys.readouterr().out)

    pipe = Pipeline.create(domain, cfg, tmp_path)
    method = bundled_camp_method(pipe, "tamp", bundle)
    score = method.evaluate(pipe, "tamp", task, seed=3)
    run = method.runtime(pipe, "tamp").run(pipe.task("test", task), seed=3)

    service = CampService(domain, cfg, bundle, artifacts=tmp_path, planner="tamp")
    scene = get_plugin(domain).scene_from_task(service.pipe.task("test", task), None, "map")
    planned = service.plan(scene, seed=3)

    assert cli["success"] and score.success and planned.success
    first = cli["selection"]["candidates"][0]["context"]["id"]
    assert score.context_id == first == run.result.used[0] == planned.contexts_tried[0]
    assert cli["fallback_order"] == run.selection.fallback_order() == planned.fallback_order
    assert cli["plan_digest"] == score.plan == planned.plan_digest
