"""Manager pieces that need no API server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from baseten_operator.runtime import manager as manager_module
from baseten_operator.runtime.client import CONFIGMAPS, NAMESPACES
from baseten_operator.runtime.manager import Manager, ManagerOptions, lease_namespace


def test_lease_namespace_prefers_configuration_then_the_pod_namespace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert lease_namespace("ops") == "ops"
    pod_namespace = tmp_path / "namespace"
    pod_namespace.write_text("operators\n")
    monkeypatch.setattr(manager_module, "SERVICE_ACCOUNT_NAMESPACE_FILE", str(pod_namespace))
    assert lease_namespace("") == "operators"
    monkeypatch.setattr(manager_module, "SERVICE_ACCOUNT_NAMESPACE_FILE", str(tmp_path / "none"))
    assert lease_namespace("") == "default"


def test_informers_are_shared_per_resource_and_namespace(list_watch_client: Any) -> None:
    manager = Manager(list_watch_client, ManagerOptions(namespace="team-a"))
    default_ns = manager.informer(CONFIGMAPS)
    assert default_ns is manager.informer(CONFIGMAPS, "team-a")
    assert default_ns.namespace == "team-a"  # the watch namespace by default
    assert manager.informer(CONFIGMAPS, "team-b") is not default_ns
    cluster_scoped = manager.informer(NAMESPACES, "ignored")
    assert cluster_scoped is manager.informer(NAMESPACES)
    assert cluster_scoped.namespace is None


def test_stop_before_start_finishes_with_exit_code_0(list_watch_client: Any) -> None:
    manager = Manager(list_watch_client, ManagerOptions(), identity="solo")
    manager.stop()
    assert manager.wait() == 0
    assert not manager.is_leader
