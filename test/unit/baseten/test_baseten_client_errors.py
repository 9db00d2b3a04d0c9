"""Error paths: status codes, messages, retries and backoff, and the API key never leaking."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import pytest
import requests
import responses
import structlog

from baseten_operator.baseten.client import BasetenClient
from baseten_operator.baseten.errors import BasetenAPIError, RateLimited
from baseten_operator.runtime.clock import FakeClock
from baseten_operator.runtime.fence import NotLeader, WriteFence
from testsupport.polling import wait_for
from testsupport.request_failures import connect_timed_out, refused, reset

ACTIVATE_TEMPLATE = "/v1/models/{model_id}/deployments/{deployment_id}/activate"


def test_401_is_not_retried_and_carries_the_server_message(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.get(f"{base_url}/models", status=401, json={"error": "Invalid API key"})
    with pytest.raises(BasetenAPIError) as caught:
        client.list_models()
    assert caught.value.status_code == 401
    assert str(caught.value) == "HTTP 401: Invalid API key"
    assert len(rsps.calls) == 1


def test_detail_field_is_used_when_there_is_no_message(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.get(f"{base_url}/models/m1/deployments/d1", status=404, json={"detail": "Not Found"})
    with pytest.raises(BasetenAPIError, match=r"^HTTP 404: Not Found$"):
        client.get_deployment("m1", "d1")


def test_plain_text_error_body(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.post(
        f"{base_url}/models/m1/environments",
        status=400,
        body="production environment already exists\n",
        content_type="text/plain",
    )
    with pytest.raises(BasetenAPIError) as caught:
        client.create_environment("m1", "production", None, None)
    assert str(caught.value) == "HTTP 400: production environment already exists"


def test_long_error_bodies_are_truncated(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.get(f"{base_url}/models", status=400, body="<html>" + "x" * 5000 + "</html>")
    with pytest.raises(BasetenAPIError) as caught:
        client.list_models()
    assert len(caught.value.message) <= 300
    assert caught.value.message.startswith("<html>xxx")
    assert caught.value.message.endswith("…")


def test_empty_error_body_falls_back_to_the_reason(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.get(f"{base_url}/models", status=403, body="")
    with pytest.raises(BasetenAPIError, match=r"^HTTP 403: Forbidden$"):
        client.list_models()


def test_429_waits_the_body_retry_after_then_succeeds(
    client: BasetenClient,
    rsps: responses.RequestsMock,
    base_url: str,
    clock: Any,
    metric: Callable[..., float],
) -> None:
    url = f"{base_url}/models/m1/deployments/d1/activate"
    rsps.post(
        url,
        status=429,
        json={"error": "Rate limit exceeded. Please try again later.", "retry_after": 37},
    )
    rsps.post(url, json={"success": True})
    before = metric("baseten_api_rate_limit_wait_seconds_total", endpoint=ACTIVATE_TEMPLATE)
    client.activate_deployment("m1", "d1")
    assert clock.sleeps == [37]
    assert len(rsps.calls) == 2
    after = metric("baseten_api_rate_limit_wait_seconds_total", endpoint=ACTIVATE_TEMPLATE)
    assert after - before == pytest.approx(37)


def test_429_honours_the_retry_after_header(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, clock: Any
) -> None:
    url = f"{base_url}/models"
    rsps.get(url, status=429, body="slow down", headers={"Retry-After": "3"})
    rsps.get(url, json={"models": []})
    assert client.list_models() == []
    assert clock.sleeps == [3]


def test_429_with_header_and_body_waits_the_longer(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, clock: Any
) -> None:
    url = f"{base_url}/models"
    rsps.get(url, status=429, json={"retry_after": 5}, headers={"Retry-After": "2"})
    rsps.get(url, json={"models": []})
    client.list_models()
    assert clock.sleeps == [5]


def test_429_retry_after_http_date(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, clock: Any
) -> None:
    url = f"{base_url}/models"
    # FakeClock starts at 2026-01-01T00:00:00Z.
    rsps.get(url, status=429, headers={"Retry-After": "Thu, 01 Jan 2026 00:00:10 GMT"})
    rsps.get(url, json={"models": []})
    client.list_models()
    assert clock.sleeps == [pytest.approx(10)]


def test_429_without_a_hint_backs_off(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, clock: Any
) -> None:
    url = f"{base_url}/models"
    rsps.get(url, status=429, body="")
    rsps.get(url, json={"models": []})
    client.list_models()
    assert len(clock.sleeps) == 1 and 0.25 <= clock.sleeps[0] <= 0.5


def test_429_exhausted_raises_rate_limited_with_retry_after(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, clock: Any
) -> None:
    rsps.get(
        f"{base_url}/models",
        status=429,
        json={"error": "Rate limit exceeded. Please try again later.", "retry_after": 2},
    )
    with pytest.raises(RateLimited) as caught:
        client.list_models()
    assert caught.value.retry_after == 2
    assert "Rate limit exceeded" in str(caught.value)
    assert len(rsps.calls) == 4  # bounded
    assert clock.sleeps == [2, 2, 2]


def test_429_asking_for_a_wait_past_the_deadline_is_raised_at_once(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, clock: Any
) -> None:
    # The deadline is 60 s: a worker never sleeps out an hour; the pass comes back later.
    rsps.get(f"{base_url}/models", status=429, json={"retry_after": 3600})
    with pytest.raises(RateLimited) as caught:
        client.list_models()
    assert caught.value.retry_after == 3600
    assert clock.sleeps == []
    assert len(rsps.calls) == 1


def test_429_waits_only_what_is_left_of_the_deadline(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, clock: Any
) -> None:
    url = f"{base_url}/models"
    rsps.get(url, status=429, json={"retry_after": 40})
    rsps.get(url, status=429, json={"retry_after": 40})
    with pytest.raises(RateLimited) as caught:
        client.list_models()
    # 40 s fitted in the 60 s deadline once; the second 40 s did not.
    assert clock.sleeps == [40]
    assert caught.value.retry_after == 40


def test_a_backoff_that_would_outlast_the_deadline_fails_the_call(
    base_url: str, clock: Any, rsps: responses.RequestsMock
) -> None:
    client = BasetenClient("k", base_url, clock=clock, timeout=1.0, backoff_base=2.0)
    rsps.get(f"{base_url}/models", status=503, json={"error": "unavailable"})
    with pytest.raises(BasetenAPIError) as caught:
        client.list_models()
    assert caught.value.status_code == 503
    assert clock.sleeps == []
    assert len(rsps.calls) == 1


def test_429_on_promote_is_retried(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, api_json: Any
) -> None:
    # A 429 means the server did nothing, so even a non-idempotent call may repeat.
    url = f"{base_url}/models/m1/environments/production/promote"
    rsps.post(url, status=429, json={"retry_after": 1})
    rsps.post(url, json=api_json.deployment())
    assert client.promote("m1", "production", "dep1").id == "dep1"


def test_5xx_on_get_is_retried_with_backoff_then_succeeds(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, clock: Any
) -> None:
    url = f"{base_url}/models/m1/environments"
    rsps.get(url, status=503, body="unavailable")
    rsps.get(url, status=500, json={"message": "boom"})
    rsps.get(url, json={"environments": []})
    assert client.list_environments("m1") == []
    assert len(clock.sleeps) == 2
    assert 0.25 <= clock.sleeps[0] <= 0.5
    assert 0.5 <= clock.sleeps[1] <= 1.0


def test_5xx_exhausted_raises_the_last_error(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, clock: Any
) -> None:
    rsps.delete(f"{base_url}/models/m1", status=502, json={"message": "bad gateway"})
    with pytest.raises(BasetenAPIError, match=r"^HTTP 502: bad gateway$"):
        client.delete_model("m1")
    assert len(rsps.calls) == 4
    assert len(clock.sleeps) == 3
    # Exponential, jittered within [half, full] of 0.5 * 2^n.
    for n, delay in enumerate(clock.sleeps):
        assert 0.5 * 2**n / 2 <= delay <= 0.5 * 2**n


def test_backoff_is_capped(base_url: str, clock: Any, rsps: responses.RequestsMock) -> None:
    client = BasetenClient("k", base_url, clock=clock, max_attempts=8, backoff_cap=2.0)
    rsps.get(f"{base_url}/models", status=500)
    with pytest.raises(BasetenAPIError):
        client.list_models()
    assert len(clock.sleeps) == 7
    assert max(clock.sleeps) <= 2.0


def test_settings_patch_is_retried_on_5xx(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    url = f"{base_url}/models/m1/environments/production"
    rsps.patch(url, status=500)
    rsps.patch(url, json={"status": "ACCEPTED", "message": "ok"})
    client.update_environment("m1", "production", {"min_replica": 1}, None)
    assert len(rsps.calls) == 2


@pytest.mark.parametrize(
    ("call", "path"),
    [
        (lambda c: c.promote("m1", "production", "d1"), "environments/production/promote"),
        (lambda c: c.create_environment("m1", "staging", None, None), "environments"),
        (lambda c: c.activate_deployment("m1", "d1"), "deployments/d1/activate"),
        (lambda c: c.retry_deployment("m1", "d1"), "deployments/d1/retry"),
        (lambda c: c.pause_promotion("m1", "prod"), "environments/prod/pause_promotion"),
        (lambda c: c.resume_promotion("m1", "prod"), "environments/prod/resume_promotion"),
        (
            lambda c: c.force_cancel_promotion("m1", "prod"),
            "environments/prod/force_cancel_promotion",
        ),
        (
            lambda c: c.force_roll_forward_promotion("m1", "prod"),
            "environments/prod/force_roll_forward_promotion",
        ),
    ],
)
def test_post_is_not_retried_on_5xx(
    client: BasetenClient,
    rsps: responses.RequestsMock,
    base_url: str,
    clock: Any,
    call: Callable[[BasetenClient], object],
    path: str,
) -> None:
    rsps.post(f"{base_url}/models/m1/{path}", status=500, json={"message": "internal"})
    with pytest.raises(BasetenAPIError, match="HTTP 500: internal"):
        call(client)
    assert len(rsps.calls) == 1
    assert clock.sleeps == []


def test_connection_error_is_status_0_after_retries(
    client: BasetenClient,
    rsps: responses.RequestsMock,
    base_url: str,
    clock: Any,
    metric: Callable[..., float],
) -> None:
    rsps.get(f"{base_url}/models", body=refused())
    before = metric("baseten_api_requests_total", endpoint="/v1/models", method="GET", code="0")
    with pytest.raises(BasetenAPIError) as caught:
        client.list_models()
    assert caught.value.status_code == 0
    assert caught.value.is_connection_error
    assert str(caught.value).startswith("connection error on GET /v1/models: ConnectionError:")
    assert "Connection refused" in str(caught.value)
    assert len(rsps.calls) == 4
    after = metric("baseten_api_requests_total", endpoint="/v1/models", method="GET", code="0")
    assert after - before == 4


def test_post_is_retried_when_the_connection_was_never_made(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, api_json: Any
) -> None:
    url = f"{base_url}/models/m1/environments/production/promote"
    rsps.post(url, body=refused())
    rsps.post(url, body=connect_timed_out())
    rsps.post(url, json=api_json.deployment())
    assert client.promote("m1", "production", "dep1").id == "dep1"
    assert len(rsps.calls) == 3


@pytest.mark.parametrize(
    "failure",
    [
        requests.ReadTimeout("read timed out"),
        reset(),
    ],
)
def test_post_is_not_retried_when_the_request_may_have_been_sent(
    client: BasetenClient,
    rsps: responses.RequestsMock,
    base_url: str,
    failure: Exception,
) -> None:
    rsps.post(f"{base_url}/models/m1/environments/production/promote", body=failure)
    with pytest.raises(BasetenAPIError) as caught:
        client.promote("m1", "production", "dep1")
    assert caught.value.status_code == 0
    assert len(rsps.calls) == 1


def test_timeout_message_says_timeout(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    slow = requests.ReadTimeout("slow")
    rsps.post(f"{base_url}/models/m1/deployments/d1/retry", body=slow)
    with pytest.raises(BasetenAPIError, match=r"^timeout on POST /v1/models/\{model_id\}"):
        client.retry_deployment("m1", "d1")


def test_a_body_led_by_a_byte_order_mark_is_read(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.get(
        f"{base_url}/models", body=b"\xef\xbb\xbf" + b'{"models": [{"id": "m1", "name": "a"}]}'
    )
    assert [model.id for model in client.list_models()] == ["m1"]


def test_body_that_is_not_json_is_a_clear_error(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.get(f"{base_url}/models", body="<html>hello</html>", content_type="text/html")
    with pytest.raises(BasetenAPIError) as caught:
        client.list_models()
    assert caught.value.status_code == 200
    assert str(caught.value) == "HTTP 200: malformed response from GET /v1/models: body is not JSON"
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"models": [{"name": "no id"}]}, "models.0.id: Field required"),
        ([], "body: Input should be an object"),  # JSON's word: pydantic reads the JSON
        ({"items": []}, "models: Field required"),
    ],
)
def test_body_of_the_wrong_shape_is_a_clear_error(
    client: BasetenClient,
    rsps: responses.RequestsMock,
    base_url: str,
    body: Any,
    problem: str,
) -> None:
    rsps.get(f"{base_url}/models", json=body)
    with pytest.raises(BasetenAPIError) as caught:
        client.list_models()
    assert caught.value.message.startswith("malformed response from GET /v1/models: ")
    assert problem in caught.value.message
    assert "pydantic" not in str(caught.value)
    assert caught.value.__cause__ is None


def test_requests_are_counted_by_template_method_and_code(
    client: BasetenClient,
    rsps: responses.RequestsMock,
    base_url: str,
    metric: Callable[..., float],
) -> None:
    rsps.post(f"{base_url}/models/m%2F1/deployments/d1/activate", json={"success": True})
    rsps.post(f"{base_url}/models/m2/deployments/d2/activate", status=404, json={"message": "no"})
    labels = {"endpoint": ACTIVATE_TEMPLATE, "method": "POST"}
    ok_before = metric("baseten_api_requests_total", code="200", **labels)
    missing_before = metric("baseten_api_requests_total", code="404", **labels)
    seen_before = metric("baseten_api_request_duration_seconds_count", **labels)
    client.activate_deployment("m/1", "d1")
    with pytest.raises(BasetenAPIError):
        client.activate_deployment("m2", "d2")
    assert metric("baseten_api_requests_total", code="200", **labels) - ok_before == 1
    assert metric("baseten_api_requests_total", code="404", **labels) - missing_before == 1
    assert metric("baseten_api_request_duration_seconds_count", **labels) - seen_before == 2


class TestTheKeyNeverLeaks:
    @staticmethod
    def assert_hidden(api_key: str, *texts: str) -> None:
        for text in texts:
            assert api_key not in text
            assert api_key[:12] not in text  # not even a truncated piece

    def test_in_connection_errors_and_logs(
        self,
        client: BasetenClient,
        rsps: responses.RequestsMock,
        base_url: str,
        api_key: str,
        capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        # A library message that dumps the request, headers included.
        leaky = requests.ConnectionError(
            f"failed sending {{'Authorization': 'Bearer {api_key}'}} key={api_key}"
        )
        rsps.get(f"{base_url}/models", body=leaky)
        caplog.set_level(logging.DEBUG)
        with structlog.testing.capture_logs() as logs, pytest.raises(BasetenAPIError) as caught:
            client.list_models()
        error = caught.value
        out, err = capsys.readouterr()
        self.assert_hidden(
            api_key, str(error), repr(error), error.message, repr(error.args), out, err, caplog.text
        )
        assert "[REDACTED]" in error.message
        assert logs, "retries are logged"
        self.assert_hidden(api_key, repr(logs))
        assert error.__cause__ is None and error.__suppress_context__

    def test_in_server_messages_that_echo_it(
        self,
        client: BasetenClient,
        rsps: responses.RequestsMock,
        base_url: str,
        api_key: str,
    ) -> None:
        rsps.get(f"{base_url}/models", status=401, json={"message": f"bad key {api_key}"})
        with pytest.raises(BasetenAPIError) as caught:
            client.list_models()
        self.assert_hidden(api_key, str(caught.value), repr(caught.value))
        assert str(caught.value) == "HTTP 401: bad key [REDACTED]"

    def test_when_truncation_would_cut_it(
        self,
        client: BasetenClient,
        rsps: responses.RequestsMock,
        base_url: str,
        api_key: str,
    ) -> None:
        rsps.get(f"{base_url}/models", status=400, body="x" * 280 + api_key)
        with pytest.raises(BasetenAPIError) as caught:
            client.list_models()
        self.assert_hidden(api_key, caught.value.message)

    def test_in_reprs(self, client: BasetenClient, api_key: str) -> None:
        transport = client._transport
        self.assert_hidden(api_key, repr(client), repr(vars(client)), repr(vars(transport)))


# --- the write fence ---------------------------------------------------------------------


def test_a_fenced_client_refuses_writes_before_sending_them(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    refusal: list[str | None] = [None]
    client.fence_writes(WriteFence(lambda: refusal[0]))
    rsps.get(f"{base_url}/models", json={"models": []})
    refusal[0] = "the lease is held by replica-b"
    assert client.list_models() == []  # reads go on: the cache and checks stay warm
    with pytest.raises(NotLeader, match="replica-b"):
        client.promote("m1", "production", "dep1")
    with pytest.raises(NotLeader):
        client.delete_model("m1")
    assert len(rsps.calls) == 1  # nothing but the GET left the process


def test_losing_the_lease_interrupts_a_retry_wait(
    base_url: str, rsps: responses.RequestsMock
) -> None:
    clock = FakeClock()  # time never moves on its own: only the fence can end the wait
    client = BasetenClient("k", base_url, clock=clock, timeout=600)
    fence = WriteFence(clock=clock)
    client.fence_writes(fence)
    rsps.get(f"{base_url}/models", status=429, json={"retry_after": 300})
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            client.list_models()
        except NotLeader as refused:
            outcome.append(refused)

    thread = threading.Thread(target=call)
    thread.start()
    wait_for(lambda: len(rsps.calls) == 1)
    fence.close("leadership lost")
    thread.join(5)
    assert not thread.is_alive()
    assert len(outcome) == 1 and outcome[0].reason == "leadership lost"


def test_every_request_names_the_replica_in_its_user_agent(
    base_url: str, clock: Any, rsps: responses.RequestsMock
) -> None:
    client = BasetenClient("k", base_url, clock=clock, user_agent="baseten-operator/0.1.0 (pod-a)")
    rsps.get(f"{base_url}/models", json={"models": []})
    client.list_models()
    assert rsps.calls[0].request.headers["User-Agent"] == "baseten-operator/0.1.0 (pod-a)"
