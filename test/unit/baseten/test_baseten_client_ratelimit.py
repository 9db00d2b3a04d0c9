"""Baseten rate limits: buckets sized from documented limits, one per endpoint, client use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import responses

from baseten_operator.baseten.client import BasetenClient
from baseten_operator.baseten.ratelimit import EndpointRateLimiter, Limit, bucket_for
from baseten_operator.runtime.clock import FakeClock


@pytest.mark.parametrize(
    ("limit", "burst", "rate"),
    [
        (Limit(20, 60), 5, 15 / 60),
        (Limit(10, 60), 2, 8 / 60),
        (Limit(100, 1), 25, 75.0),
        (Limit(1, 1), 1, 1.0),
    ],
)
def test_buckets_are_sized_so_no_window_exceeds_the_limit(
    limit: Limit, burst: int, rate: float
) -> None:
    bucket = bucket_for(limit, FakeClock())
    assert bucket.burst == burst
    assert bucket.rate == pytest.approx(rate)


def test_invalid_limits_are_rejected() -> None:
    with pytest.raises(ValueError):
        Limit(0, 60)


def test_any_window_sees_at_most_the_documented_number(clock: Any) -> None:
    limit = Limit(20, 60)
    bucket = bucket_for(limit, clock)
    sent_at = []
    for _ in range(100):
        clock.advance(bucket.reserve())  # the caller waits what the bucket says
        sent_at.append(clock.monotonic())
    for start in sent_at:
        in_window = [t for t in sent_at if start <= t <= start + limit.per_seconds]
        assert len(in_window) <= limit.requests
    # ...and the bucket is not needlessly slow: 100 requests in about 5 minutes.
    assert sent_at[-1] == pytest.approx((100 - 5) * 4.0)


def test_endpoints_have_separate_buckets() -> None:
    clock = FakeClock()
    limiter = EndpointRateLimiter(clock)
    limit = Limit(4, 60)  # burst 1
    assert limiter.reserve("/a", limit) == 0.0
    assert limiter.reserve("/b", limit) == 0.0


def test_client_throttles_activations_per_endpoint(
    client: BasetenClient,
    rsps: responses.RequestsMock,
    base_url: str,
    clock: Any,
    metric: Callable[..., float],
) -> None:
    for action in ("activate", "deactivate"):
        rsps.post(f"{base_url}/models/m1/deployments/d1/{action}", json={"success": True})
    template = "/v1/models/{model_id}/deployments/{deployment_id}/activate"
    before = metric("baseten_api_rate_limit_wait_seconds_total", endpoint=template)
    for _ in range(5):
        client.activate_deployment("m1", "d1")
        client.deactivate_deployment("m1", "d1")
    assert clock.sleeps == []  # the burst, on each endpoint
    client.activate_deployment("m1", "d1")
    assert clock.sleeps == [pytest.approx(4.0)]  # 20/min: 5 at once, then one per 4 s
    after = metric("baseten_api_rate_limit_wait_seconds_total", endpoint=template)
    assert after - before == pytest.approx(4.0)


def test_client_throttles_retries_harder(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, clock: Any
) -> None:
    rsps.post(
        f"{base_url}/models/m1/deployments/d1/retry",
        json={"retried": False, "reason": "not failed", "deployment": None},
    )
    for _ in range(3):
        client.retry_deployment("m1", "d1")
    assert clock.sleeps == [pytest.approx(60 / 8)]  # 10/min: 2 at once, then one per 7.5 s


def test_client_allows_bursts_on_ordinary_endpoints(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, clock: Any
) -> None:
    rsps.get(f"{base_url}/models", json={"models": []})
    for _ in range(25):
        client.list_models()
    assert clock.sleeps == []
    client.list_models()
    assert clock.sleeps == [pytest.approx(1 / 75)]


def test_a_get_and_a_patch_of_one_path_are_throttled_apart(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, clock: Any, api_json: Any
) -> None:
    url = f"{base_url}/models/m1/environments/production"
    rsps.get(url, json=api_json.environment())
    rsps.patch(url, json={"status": "ACCEPTED"})
    for _ in range(25):
        client.get_environment("m1", "production")  # the GET's whole burst
    client.update_environment("m1", "production", {"min_replica": 2}, None)
    assert clock.sleeps == []  # the PATCH has a budget of its own
    client.get_environment("m1", "production")
    assert clock.sleeps == [pytest.approx(1 / 75)]


def test_a_time_scale_shortens_every_window_like_every_other_wait(
    clock: Any, rsps: responses.RequestsMock, base_url: str
) -> None:
    # --time-scale 0.1: the simulator's minute lasts 6 s, so the client's budget refills so.
    client = BasetenClient("k", base_url, clock=clock, time_scale=0.1)
    rsps.post(f"{base_url}/models/m1/deployments/d1/activate", json={"success": True})
    for _ in range(6):
        client.activate_deployment("m1", "d1")
    assert clock.sleeps == [pytest.approx(0.4)]  # 20/min: 5 at once, then one per 4 s x 0.1


def test_a_time_scale_must_be_positive() -> None:
    with pytest.raises(ValueError, match="time scale"):
        EndpointRateLimiter(FakeClock(), time_scale=0)
