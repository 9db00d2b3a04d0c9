"""The client's reads of a model's audit log and a deployment's metrics and logs, against
`responses` mocks: the queries sent, the answers read, and malformed or partial answers
giving a clear error or "no data", never a wrong number."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import responses

from baseten_operator.baseten.client import BasetenClient
from baseten_operator.baseten.deployment_metrics import MetricsUnreadable, total
from baseten_operator.baseten.errors import BasetenAPIError

REQUESTS = "baseten_inference_requests_total"
REPLICAS = "baseten_replicas_active"
STATUS_LABELS = [
    {"status_code": "200", "rollout_phase": "promoting"},
    {"status_code": "500", "rollout_phase": "promoting"},
    {"status_code": "503", "rollout_phase": "promoting"},
]


def sent_query(rsps: responses.RequestsMock, call: int = 0) -> dict[str, list[str]]:
    return parse_qs(urlsplit(rsps.calls[call].request.url).query)


def metrics_json(values: list[Any], **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "start_epoch_millis": 1_000,
        "end_epoch_millis": 61_000,
        "mode": "SUMMARY",
        "step_seconds": None,
        "metric_descriptors": [
            {"name": REPLICAS, "unit_hint": "COUNT", "kind": "GAUGE", "label_sets": [{}]},
            {
                "name": REQUESTS,
                "unit_hint": "COUNT",
                "kind": "COUNTER",
                "label_sets": STATUS_LABELS,
            },  # fmt: skip
        ],
        "metric_values": [{"start_epoch_millis": 1_000, "values": values}],
        "surprise": "ignored",
    }
    body.update(overrides)
    return body


def labels(**pairs: str) -> frozenset[tuple[str, str]]:
    return frozenset(pairs.items())


def is_5xx(labels: dict[str, str]) -> bool:
    return labels.get("status_code", "").startswith("5")


@pytest.fixture
def metrics_url(base_url: str) -> str:
    return f"{base_url}/models/m1/deployments/d%2F1/metrics"


def fetch(client: BasetenClient, **kwargs: Any) -> Any:
    return client.get_deployment_metrics("m1", "d/1", **kwargs)


def test_a_summary_reads_as_values_by_label_set(
    client: BasetenClient, rsps: responses.RequestsMock, metrics_url: str
) -> None:
    rsps.get(metrics_url, json=metrics_json([[2], [90, 6, 4]]))
    answer = fetch(client, mode="SUMMARY", start_ms=1_000, end_ms=61_000,
                   metrics=[REPLICAS, REQUESTS])  # fmt: skip
    assert sent_query(rsps) == {
        "mode": ["SUMMARY"],
        "start_epoch_millis": ["1000"],
        "end_epoch_millis": ["61000"],
        "metrics": [REPLICAS, REQUESTS],
    }
    assert answer.summary(REPLICAS) == {frozenset(): 2.0}
    counts = answer.summary(REQUESTS)
    assert counts[labels(status_code="500", rollout_phase="promoting")] == 6.0
    assert total(counts) == 100
    assert total(counts, is_5xx) == 10
    assert answer.names() == [REPLICAS, REQUESTS]


def test_current_mode_sends_no_window_and_the_default_metrics(
    client: BasetenClient, rsps: responses.RequestsMock, metrics_url: str
) -> None:
    rsps.get(metrics_url, json=metrics_json([[1], [1, 0, 0]], mode="CURRENT"))
    fetch(client, mode="CURRENT")
    assert sent_query(rsps) == {"mode": ["CURRENT"]}


def test_a_series_reads_step_by_step_and_nulls_are_no_data(
    client: BasetenClient, rsps: responses.RequestsMock, metrics_url: str
) -> None:
    body = metrics_json([[1], [10, None, None]], mode="SERIES", step_seconds=30)
    body["metric_values"].append({"start_epoch_millis": 31_000, "values": [None, None]})
    rsps.get(metrics_url, json=body)
    answer = fetch(client, mode="SERIES")
    steps = answer.series(REQUESTS)
    assert [start for start, _ in steps] == [1_000, 31_000]
    assert total(steps[0][1], is_5xx) is None  # no data, not zero
    assert set(steps[1][1].values()) == {None}
    with pytest.raises(MetricsUnreadable, match="2 value sets where one was expected"):
        answer.summary(REQUESTS)


def test_a_metric_not_returned_is_no_data(
    client: BasetenClient, rsps: responses.RequestsMock, metrics_url: str
) -> None:
    rsps.get(metrics_url, json=metrics_json([], metric_descriptors=[], metric_values=[]))
    answer = fetch(client, mode="SUMMARY")
    assert answer.summary(REQUESTS) == {}
    assert answer.series(REQUESTS) == []
    assert total(answer.summary(REQUESTS)) is None


def test_values_that_are_not_finite_numbers_are_no_data(
    client: BasetenClient, rsps: responses.RequestsMock, metrics_url: str
) -> None:
    # Python's json (and pydantic) read NaN and Infinity, which strict JSON has not.
    descriptors = f'[{{"name": "{REQUESTS}", "label_sets": [{{"a": "1"}}, {{"a": "2"}}]}}]'
    values = '[{"values": [[NaN, Infinity]]}]'
    body = f'{{"metric_descriptors": {descriptors}, "metric_values": {values}}}'
    rsps.get(metrics_url, body=body)
    assert set(fetch(client, mode="SUMMARY").summary(REQUESTS).values()) == {None}


@pytest.mark.parametrize(
    ("values", "descriptors", "problem"),
    [
        # One metric short: every index after it would point at the wrong metric.
        ([[90, 6, 4]], None, "a value set has 1 metrics for 2 descriptors"),
        # A series short: which label set lost its value cannot be told.
        ([[2], [90, 6]], None, "has 2 values for 3 label sets"),
        (
            [[2], [90, 6, 4]],
            [{"name": REPLICAS, "label_sets": [{}]}, {"name": REQUESTS}],
            "has no label_sets",
        ),
        (
            [[2], [90, 6, 4]],
            [
                {"name": REQUESTS, "label_sets": [{}]},
                {"name": REQUESTS, "label_sets": STATUS_LABELS},
            ],  # fmt: skip
            "described 2 times",
        ),
        (
            [[2], [90, 6, 4]],
            [
                {"name": REPLICAS, "label_sets": [{}]},
                {"name": REQUESTS, "label_sets": [STATUS_LABELS[0]] * 3},
            ],  # fmt: skip
            "lists a label set twice",
        ),
    ],
)
def test_a_misaligned_answer_is_unreadable_rather_than_misread(
    client: BasetenClient,
    rsps: responses.RequestsMock,
    metrics_url: str,
    values: list[Any],
    descriptors: list[dict[str, Any]] | None,
    problem: str,
) -> None:
    overrides = {"metric_descriptors": descriptors} if descriptors is not None else {}
    rsps.get(metrics_url, json=metrics_json(values, **overrides))
    answer = fetch(client, mode="SUMMARY")
    with pytest.raises(MetricsUnreadable, match=problem) as unreadable:
        answer.summary(REQUESTS)
    assert isinstance(unreadable.value, BasetenAPIError)


@pytest.mark.parametrize(
    "body",
    [
        metrics_json([[2], ["90", 6, 4]]),  # a count as a string
        metrics_json([[True], [90, 6, 4]]),  # or a boolean
        {"mode": "SUMMARY", "metric_values": []},  # no descriptors at all
        ["not", "an", "object"],
    ],
)
def test_an_answer_of_the_wrong_types_fails_the_call(
    client: BasetenClient, rsps: responses.RequestsMock, metrics_url: str, body: Any
) -> None:
    rsps.get(metrics_url, json=body)
    with pytest.raises(BasetenAPIError, match="malformed response from GET"):
        fetch(client, mode="SUMMARY")


def test_metrics_are_a_read_retried_on_5xx(
    client: BasetenClient, rsps: responses.RequestsMock, metrics_url: str
) -> None:
    rsps.get(metrics_url, status=503)
    rsps.get(metrics_url, json=metrics_json([[1], [1, 2, 3]]))
    assert total(fetch(client, mode="SUMMARY").summary(REQUESTS)) == 6
    assert len(rsps.calls) == 2


# ----------------------------------------------------------------- audit logs


def audit_entry(**overrides: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": "e1",
        "created": "2026-01-01T00:00:10Z",
        "event_type": "ENVIRONMENT_UPDATED",
        "event_data": {
            "event_type": "ENVIRONMENT_UPDATED",
            "environment_name": "production",
            "min_replica": 2,
            "previous_settings": {"min_replica": 1},
        },  # fmt: skip
        "source": "UI",
        "actor": {"type": "USER", "email": "sre@example.com"},
        "client_name": "web",
    }
    entry.update(overrides)
    return entry


def test_an_audit_log_page_with_its_query_and_cursor(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    url = f"{base_url}/models/m1/audit_logs"
    rsps.get(url, json={"items": [audit_entry()], "pagination": {"has_more": True, "cursor": "c2"}})
    page = client.list_audit_logs(
        "m1",
        event_type_groups=["AUTOSCALING_SETTINGS", "ENVIRONMENT_SETTINGS"],
        start=datetime(2026, 1, 1, tzinfo=UTC),
        end=datetime(2026, 1, 1, 1, tzinfo=UTC),
        limit=50,
        cursor="c1",
    )
    assert sent_query(rsps) == {
        "limit": ["50"],
        "event_type_groups": ["AUTOSCALING_SETTINGS", "ENVIRONMENT_SETTINGS"],
        "start_epoch_millis": ["1767225600000"],
        "end_epoch_millis": ["1767229200000"],
        "cursor": ["c1"],
    }
    [entry] = page.items
    assert (entry.event_type, entry.source, entry.actor.type, entry.actor.email) == (
        "ENVIRONMENT_UPDATED",
        "UI",
        "USER",
        "sre@example.com",
    )
    assert entry.actor.api_key_prefix is None
    assert entry.created == datetime(2026, 1, 1, 0, 0, 10, tzinfo=UTC)
    assert entry.event_data["previous_settings"] == {"min_replica": 1}
    assert page.next_cursor == "c2"


def test_the_last_page_has_no_next_cursor_and_unknown_words_are_kept(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    entry = audit_entry(source="SOMETHING_NEW", event_type="MODEL_TELEPORTED", event_data={},
                        created="not a time", actor={"type": "ROBOT"})  # fmt: skip
    rsps.get(
        f"{base_url}/models/m1/audit_logs",
        json={"items": [entry], "pagination": {"has_more": False, "cursor": "stale"}},
    )
    page = client.list_audit_logs("m1")
    assert sent_query(rsps) == {"limit": ["20"]}
    assert (page.items[0].source, page.items[0].event_type, page.items[0].created) == (
        "SOMETHING_NEW",
        "MODEL_TELEPORTED",
        None,
    )
    assert page.next_cursor is None


@pytest.mark.parametrize(
    "body",
    [
        {"pagination": {"has_more": False}},  # no items
        {"items": [audit_entry(actor=None)], "pagination": {"has_more": False}},
        {"items": [{"created": "2026-01-01T00:00:00Z", "actor": {}}], "pagination": {}},  # no id
    ],
)
def test_a_malformed_audit_page_fails_the_call(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, body: Any
) -> None:
    rsps.get(f"{base_url}/models/m1/audit_logs", json=body)
    with pytest.raises(BasetenAPIError, match="malformed response"):
        client.list_audit_logs("m1")


def test_a_naive_time_is_refused_before_anything_is_sent(client: BasetenClient) -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        client.list_audit_logs("m1", start=datetime(2026, 1, 1))


# ----------------------------------------------------------------- logs


def test_deployment_logs_with_their_query(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    rsps.get(
        f"{base_url}/models/m1/deployments/d1/logs",
        json={
            "logs": [
                {
                    "timestamp": "1767225600123456789",
                    "message": "boom",
                    "replica": "abcde",
                    "level": "ERROR",
                },  # fmt: skip
                {"timestamp": "later", "message": "no level here", "replica": None},
            ]
        },
    )
    lines = client.get_deployment_logs(
        "m1", "d1", min_level="ERROR", limit=10, start_ms=5, end_ms=9, direction="desc"
    )
    assert sent_query(rsps) == {
        "limit": ["10"],
        "start_epoch_millis": ["5"],
        "end_epoch_millis": ["9"],
        "min_level": ["ERROR"],
        "direction": ["desc"],
    }
    assert [(line.message, line.level, line.replica) for line in lines] == [
        ("boom", "ERROR", "abcde"),
        ("no level here", None, None),
    ]
    assert lines[0].timestamp_ns == 1767225600123456789
    assert lines[1].timestamp_ns is None


@pytest.mark.parametrize(
    "body", [{}, {"logs": [{"message": "no timestamp"}]}, {"logs": [{"timestamp": "1"}]}]
)
def test_malformed_logs_fail_the_call(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, body: Any
) -> None:
    rsps.get(f"{base_url}/models/m1/deployments/d1/logs", json=body)
    with pytest.raises(BasetenAPIError, match="malformed response"):
        client.get_deployment_logs("m1", "d1")


# ----------------------------------------------------------------- promotion signals


@pytest.mark.parametrize(
    "signal",
    [
        "pause_promotion",
        "resume_promotion",
        "force_cancel_promotion",
        "force_roll_forward_promotion",
    ],  # fmt: skip
)
def test_a_signal_posts_to_its_quoted_path_and_returns_the_acknowledgement(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str, signal: str
) -> None:
    rsps.post(f"{base_url}/models/m%201/environments/eu%2Fprod/{signal}", json={"success": True})
    ack = getattr(client, signal)("m 1", "eu/prod")
    assert ack.success is True
    assert rsps.calls[0].request.body is None


def test_a_refused_signal_says_why(
    client: BasetenClient, rsps: responses.RequestsMock, base_url: str
) -> None:
    message = "No promotion in progress for environment production"
    rsps.post(
        f"{base_url}/models/m1/environments/production/pause_promotion",
        status=400,
        json={"code": "BAD_REQUEST", "message": message, "details": None},
    )
    with pytest.raises(BasetenAPIError) as refused:
        client.pause_promotion("m1", "production")
    assert (refused.value.status_code, refused.value.message) == (400, message)
