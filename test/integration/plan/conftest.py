"""One PlanWorld (Kubernetes emulator + Baseten simulator) per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testsupport.plan_world import PlanWorld


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlanWorld]:
    running = PlanWorld(tmp_path_factory.mktemp("plan"))
    running.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def namespace(world: PlanWorld) -> str:
    return world.new_namespace()
