"""Fixtures for the Baseten client unit tests: a self-advancing fake clock, a client, HTTP mocks."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import responses

from baseten_operator.baseten.client import BasetenClient
from baseten_operator.runtime.metrics import REGISTRY
from testsupport.clocks import SleepRecordingClock
from testsupport.forward_proxy import proxies  # noqa: F401 (a fixture)
from testsupport.scripted_http import serve  # noqa: F401 (a fixture)

API_KEY = "sk-test-5ecret-KEY-0123456789"
BASE = "https://api.test/v1"


@pytest.fixture
def clock() -> SleepRecordingClock:
    return SleepRecordingClock()


@pytest.fixture
def client(clock: SleepRecordingClock) -> BasetenClient:
    # A deadline long enough for every wait these tests script (a 37 s Retry-After).
    return BasetenClient(API_KEY, BASE, clock=clock, timeout=60, rng=random.Random(7))


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    """Baseten mocked at requests' adapter: nothing leaves the process."""
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


def _metric(name: str, **labels: str) -> float:
    """Current value of a sample in the operator's registry (0 when never observed)."""
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
def metric() -> Callable[..., float]:
    return _metric


@pytest.fixture
def api_key() -> str:
    return API_KEY


@pytest.fixture
def base_url() -> str:
    return BASE


def deployment_json(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "dep1",
        "name": "depl-a",
        "model_id": "m1",
        "created_at": "2026-01-01T00:00:00Z",
        "status": "ACTIVE",
        "active_replica_count": 2,
        "is_production": True,
        "is_development": False,
        "environment": "production",
        "autoscaling_settings": {"min_replica": 1, "max_replica": 3, "concurrency_target": 1},
        "instance_type_name": "H100",
        "labels": None,
        "request_backpressure_settings": {"policy": "QUEUE"},  # unknown to the client
    }
    body.update(overrides)
    return body


def environment_json(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "production",
        "model_id": "m1",
        "created_at": "2026-01-01T00:00:00Z",
        "current_deployment": deployment_json(),
        "candidate_deployment": None,
        "autoscaling_settings": {
            "min_replica": 1,
            "max_replica": 3,
            "autoscaling_window": 60,
            "scale_down_delay": 900,
            "concurrency_target": 1,
            "target_utilization_percentage": 70,
        },
        "promotion_settings": {
            "redeploy_on_promotion": False,
            "rolling_deploy": False,
            "promotion_cleanup_strategy": "SCALE_TO_ZERO",
            "ramp_up_while_promoting": False,
            "ramp_up_duration_seconds": 600,
            "rolling_deploy_config": None,
        },
        "instance_type": {"id": "H100", "name": "H100 80GB", "gpu_count": 1},
        "in_progress_promotion": None,
    }
    body.update(overrides)
    return body


def model_json(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "m1",
        "name": "llama",
        "created_at": "2026-01-01T00:00:00Z",
        "deployments_count": 2,
        "production_deployment_id": "dep1",
        "development_deployment_id": None,
        "instance_type_name": "H100",
        "team_name": "ml",
    }
    body.update(overrides)
    return body


class ApiJson:
    """Builders of API response bodies, with fields the client does not know about."""

    deployment = staticmethod(deployment_json)
    environment = staticmethod(environment_json)
    model = staticmethod(model_json)


@pytest.fixture
def api_json() -> type[ApiJson]:
    return ApiJson
