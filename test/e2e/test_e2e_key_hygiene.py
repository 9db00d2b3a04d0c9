"""The Baseten API key reaches no log line, Event, status or metric: operators at
`--log-level debug`, Baseten errors that echo the key (literally, base64, URL-quoted),
failing truss pushes, and a failover from one replica to the other."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
import yaml

from testsupport.e2e.harness import (
    basetenmodel,
    scrape_as_prometheus,
)
from testsupport.e2e.local import KeyStack
from testsupport.paths import REPO
from testsupport.polling import wait_for

pytestmark = pytest.mark.e2e

ECHOED = "rejected request with Authorization"  # the simulator's echo fault (sim/baseten)


def key_forms(key: str) -> list[str]:
    raw = key.encode()
    encoded = [base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()]
    return [key, quote(key, safe=""), quote_plus(key), *encoded, *(e.rstrip("=") for e in encoded)]


def echo_errors(key_stack: KeyStack, endpoint: str, count: int) -> None:
    """The next `count` calls of `endpoint` answer 400 with the caller's key in the body."""
    key_stack.stack.sim.control("inject_fault", endpoint=endpoint, kind="echo", count=count)


def rescale(key_stack: KeyStack, namespace: str, name: str, min_replicas: int) -> None:
    autoscaling = {"minReplicas": min_replicas, "maxReplicas": 4}
    patch = json.dumps({"spec": {"environment": {"autoscaling": autoscaling}}})
    key_stack.cluster.kubectl.run("patch", "bm", name, "-n", namespace, "--type=merge", "-p", patch)


def test_the_key_is_in_no_log_line_event_status_or_metric(
    key_stack: KeyStack, tmp_path: Path
) -> None:
    stack, kubectl = key_stack.stack, key_stack.cluster.kubectl
    key_stack.start_operator("operator-a")
    namespace = stack.new_namespace("e2e-key")
    kubectl.run("apply", "-n", namespace, "-f", str(REPO / "config/samples/setup_configmap.yaml"))

    # Baseten errors echoing the key, surfacing in status and Events.
    model_id, _ = stack.promoted_model(namespace, "echoed", autoscaling={"minReplicas": 1})
    echo_errors(key_stack, "update_environment", 40)
    rescale(key_stack, namespace, "echoed", 2)
    stack.wait_status(
        namespace, "echoed", lambda s: ECHOED in (s.get("message") or ""), what="echoed error"
    )

    # A truss push whose Baseten calls echo the key, then fail.
    truss = yaml_sample("models_v1alpha1_basetenmodel_truss.yaml")
    echo_errors(key_stack, "graphql", 50)
    kubectl.apply(basetenmodel("pushed", namespace, truss["spec"]))
    stack.wait_status(
        namespace,
        "pushed",
        lambda s: "truss push failed for" in (s.get("message") or ""),
        what="a failed push",
        timeout=60,
    )

    # Failover: the second replica takes the Lease and meets the same errors.
    first_holder = wait_for(lambda: key_stack.cluster.kubectl.lease_holder(), timeout=30)
    key_stack.start_operator("operator-b")
    operator_a = key_stack.operators[0].process
    key_stack.processes.remove(operator_a)
    assert operator_a.terminate(30) == 0
    wait_for(lambda: key_stack.cluster.kubectl.lease_holder() not in ("", first_holder), timeout=60)
    echo_errors(key_stack, "update_environment", 40)
    rescale(key_stack, namespace, "echoed", 3)
    stack.wait_status(
        namespace,
        "echoed",
        lambda s: ECHOED in (s.get("message") or ""),
        what="echo after failover",
    )

    # Everything a user or a scraper can see.
    operator_b = key_stack.operators[1]
    scraped = scrape_as_prometheus(kubectl, namespace, operator_b.metrics_port, tmp_path)
    seen = {
        "operator-a log": (key_stack.workdir / "operator-a.log").read_text(),
        "operator-b log": (key_stack.workdir / "operator-b.log").read_text(),
        "events": kubectl.run("get", "events", "-A", "-o", "json").stdout,
        "statuses": kubectl.run("get", "bm", "-A", "-o", "json").stdout,
        "metrics": scraped,
    }
    assert '"severity": "DEBUG"' in seen["operator-a log"]  # the logs really are at debug
    assert ECHOED in seen["statuses"] and "[redacted]" in seen["operator-a log"]
    assert "TrussPushFailed" in seen["events"]
    key = key_stack.cluster.api_key
    leaks = {where: form for where, text in seen.items() for form in key_forms(key) if form in text}
    assert not leaks, f"the key leaked: {leaks}"


def yaml_sample(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((REPO / "config" / "samples" / name).read_text())
    return loaded
