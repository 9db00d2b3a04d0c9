"""Alerts and the dashboard name only metrics the operator exports."""

import json
import re
from collections.abc import Iterator

import pytest
import yaml

# The operator's entry point imports every module that defines a collector.
import baseten_operator.main  # noqa: F401
from baseten_operator.runtime.metrics import REGISTRY
from testsupport.paths import REPO

MONITORING = REPO / "deploy" / "monitoring"
METRIC_PREFIXES = ("controller_runtime_", "workqueue_", "leader_election_", "baseten_")
METRIC_TOKEN = re.compile(r"\b(?:{})[a-z0-9_]+".format("|".join(METRIC_PREFIXES)))
SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "gauge": ("",),
}


def exported_series_names() -> set[str]:
    """Every sample name the registry can produce, observed yet or not."""
    names: set[str] = set()
    for family in REGISTRY.collect():
        names.add(family.name)
        names.update(family.name + suffix for suffix in SUFFIXES.get(family.type, ("",)))
    return names


def alert_expressions() -> Iterator[tuple[str, str]]:
    rules = yaml.safe_load((MONITORING / "prometheus-rules.yaml").read_text())
    for group in rules["spec"]["groups"]:
        for rule in group["rules"]:
            yield rule["alert"], rule["expr"]


def dashboard_expressions() -> Iterator[tuple[str, str]]:
    dashboard = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            yield panel["title"], target["expr"]


@pytest.mark.parametrize(
    ("where", "expr"), [*alert_expressions(), *dashboard_expressions()], ids=lambda v: v[:60]
)
def test_every_metric_named_is_exported(where: str, expr: str) -> None:
    named = set(METRIC_TOKEN.findall(expr))
    assert named, f"{where}: no operator metric in {expr!r}"
    missing = named - exported_series_names()
    assert not missing, f"{where} names metrics the operator does not export: {sorted(missing)}"


def test_alerts_cover_the_failure_modes_users_page_on() -> None:
    alerts = " ".join(expr for _, expr in alert_expressions())
    for metric in (
        'baseten_deployment_retries_total{result="exhausted"}',
        "baseten_model_ready",
        "baseten_drift_corrections_total",
        "baseten_api_requests_total",
        "leader_election_master_status",
        "baseten_orphan_deployments_holding_replicas",
    ):
        assert metric in alerts
