"""PyBullet servers, private and pooled (``camp_planner.sim.pybullet_servers``)."""

import pytest

from camp_planner.sim.pybullet_servers import connected_clients, direct_client

pytestmark = pytest.mark.pybullet


def test_connected_clients_counts_the_servers_not_yet_disconnected() -> None:
    before = connected_clients()
    with direct_client(), direct_client():
        assert connected_clients() == before + 2
    assert connected_clients() == before
