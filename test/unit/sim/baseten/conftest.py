"""Fixtures for the Baseten simulator's unit tests: an engine on a fake clock."""

from __future__ import annotations

import pytest

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.sim.baseten.engine import LifecycleDurations, SimEngine

DURATIONS = LifecycleDurations()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def engine(clock: FakeClock) -> SimEngine:
    return SimEngine(clock=clock, durations=DURATIONS)


@pytest.fixture
def model_id(engine: SimEngine) -> str:
    return engine.controls.seed_model("llama")["id"]
