"""Metrics scraped from the operator's /metrics endpoint, as Prometheus would: over HTTPS
with the token of a ServiceAccount bound to the installed metrics-reader ClusterRole."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from testsupport.e2e.harness import (
    LEASE_NAME,
    METRICS_READER,
    Stack,
    served_certificate,
    service_account_token,
)

pytestmark = pytest.mark.e2e


def scrape(url: str, token: str, ca: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Samples by name: [(labels, value)]."""
    response = requests.get(url, headers={"Authorization": f"Bearer {token}"}, verify=ca, timeout=5)
    response.raise_for_status()
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def test_metrics_endpoint_reports_reconciles_api_calls_and_leadership(
    stack: Stack, tmp_path: Path
) -> None:
    if stack.metrics_url is None:
        pytest.skip("the operator runs in the cluster: its metrics port is not reachable here")
    namespace = stack.new_namespace("e2e-metrics")
    stack.promoted_model(namespace, "e2e-metrics", autoscaling={"minReplicas": 1})
    token = service_account_token(
        stack.kubectl, namespace, "prometheus", cluster_role=METRICS_READER
    )

    samples = scrape(
        stack.metrics_url, token, served_certificate(stack.metrics_url, tmp_path / "ca")
    )

    reconciles = [
        value
        for labels, value in samples["controller_runtime_reconcile_total"]
        if labels["controller"] == "basetenmodel"
    ]
    assert sum(reconciles) > 0
    api_calls = samples["baseten_api_requests_total"]
    assert {labels["method"] for labels, _ in api_calls} >= {"GET", "POST"}
    assert sum(value for _, value in api_calls) > 0
    assert samples["leader_election_master_status"] == [({"name": LEASE_NAME}, 1.0)]
