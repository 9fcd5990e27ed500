"""``camp --world FILE``: a world file stands for its domain and configuration in every
command, and is refused beside a configuration or another domain."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from building_files import write_building

from camp_planner.cli import main


def test_a_world_file_is_the_domain_and_configuration_of_a_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = write_building(tmp_path)
    assert main(["contexts", "--world", str(world), "--json"]) == 0
    contexts = json.loads(capsys.readouterr().out)
    # The building's space: universal and room sets that keep its start and goal rooms.
    assert len(contexts) == 3
    rooms = [c for c in contexts if c["id"] != "universal"]
    assert rooms and all("0" in c["name"] and "4" in c["name"] for c in rooms)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--config", "other.yaml"], "give --config or it, not both"),
        (["--domain", "gridworld", "--domain", "dinner"], "is a namo world, not dinner"),
    ],
)
def test_a_world_file_beside_another_configuration_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    world = write_building(tmp_path)
    assert main(["contexts", "--world", str(world), *extra]) == 2
    assert message in capsys.readouterr().err
