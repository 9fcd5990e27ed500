"""The general PDDL path: a user's domain and problem files, through the `camp` CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from camp_planner.cli import main

COURIER = Path(__file__).resolve().parents[2] / "examples" / "pddl" / "courier"
FILES = [
    "--pddl-domain",
    str(COURIER / "domain.pddl"),
    "--pddl-problems",
    *(str(COURIER / f"p{k}.pddl") for k in (1, 2, 3)),
    "--config",
    str(COURIER / "courier.yaml"),
]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main([*args, "--json"]) == 0
    data: dict[str, object] = json.loads(capsys.readouterr().out)
    return data


@pytest.mark.fast_downward
def test_a_users_domain_gets_csis_camps_and_fast_downward(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = [*FILES, "--artifacts", str(tmp_path), "--planner", "fast_downward", "--task", "0"]
    pure = _run(capsys, "plan", *common, "--context", "universal")
    wing = " ∧ ".join(f"robot-at({r})=0" for r in "ghijkl")
    camp = _run(capsys, "plan", *common, "--context", wing)
    assert pure["success"] and camp["success"]
    assert camp["return"] == pure["return"]  # the wing is irrelevant to task 0: no loss
    dropped = camp["dropped_variables"]
    # Parcels can't reach the wing in the CAMP, and task 0 has no parcel z: all dropped; the
    # goal fluents stay.
    assert isinstance(dropped, list) and {"parcel-at(x,j)", "parcel-at(z,a)"} <= set(dropped)
    assert "parcel-at(x,e)" not in dropped and "parcel-at(y,c)" not in dropped


def test_unsupported_requirements_and_missing_files_are_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    adl = tmp_path / "adl.pddl"
    adl.write_text((COURIER / "domain.pddl").read_text().replace(":strips", ":adl :strips"))
    args = ["contexts", "--artifacts", str(tmp_path), "--pddl-domain", str(adl)]
    assert main([*args, "--pddl-problems", str(COURIER / "p1.pddl")]) == 2
    assert "unsupported PDDL requirement :adl" in capsys.readouterr().err
    assert main([*args, "--pddl-problems", str(tmp_path / "nope.pddl")]) == 2
    assert "cannot read PDDL file" in capsys.readouterr().err
    assert main(["contexts", "--pddl-problems", str(COURIER / "p1.pddl")]) == 2
    assert "need --pddl-domain" in capsys.readouterr().err


SHORTCUT = (Path(__file__).parents[1] / "pddl" / "data" / "shortcut-domain.pddl").read_text()


@pytest.mark.fast_downward
@pytest.mark.parametrize(("metric", "steps", "expected"), [(False, 1, -1.0), (True, 4, -4.0)])
def test_the_return_charges_the_problems_own_metric(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], metric: bool, steps: int, expected: float
) -> None:
    # Without (:metric minimize (total-cost)) Fast Downward minimises plan length and takes
    # the expensive shortcut: the return must charge that length, not the action costs.
    (tmp_path / "domain.pddl").write_text(SHORTCUT)
    (tmp_path / "p.pddl").write_text(
        "(define (problem p) (:domain shortcut) (:init (s0) (= (total-cost) 0)) (:goal (done))"
        + (" (:metric minimize (total-cost)))" if metric else ")")
    )
    files = ["--pddl-domain", str(tmp_path / "domain.pddl")]
    files += ["--pddl-problems", str(tmp_path / "p.pddl"), "--artifacts", str(tmp_path / "a")]
    result = _run(capsys, "plan", *files, "--planner", "fast_downward", "--pure")
    assert result["success"] and (result["steps"], result["return"]) == (steps, expected)
