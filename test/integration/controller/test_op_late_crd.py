"""An operator started before the BasetenSecret CRD exists (an upgrade whose CRDs were not
applied first, a cluster that only ever installed BasetenModel's): it is ready, it
reconciles BasetenModels, and it picks the new kind up once the CRD is installed."""

from __future__ import annotations

import base64
import hashlib

import pytest

from baseten_operator.api.constants import BASETENSECRETS
from baseten_operator.runtime.resource import SECRETS
from testsupport.operator_harness import OperatorHarness, reconcile_spec
from testsupport.polling import wait_for

pytestmark = pytest.mark.integration

HARNESS_OPTIONS = {"deferred_kinds": ("BasetenSecret",)}


def test_models_run_without_the_secret_crd_and_secrets_follow_once_it_is_installed(
    harness: OperatorHarness, namespace: str
) -> None:
    informer = harness.manager.informer(BASETENSECRETS)
    assert informer.unserved and not informer.has_synced()
    assert harness.manager.informers_synced()  # ready: the optional kind does not hold it

    model = harness.sim.seed_model("early")
    harness.sim.seed_deployment(model["id"], "early-src")
    harness.create_model_cr(namespace, "early", reconcile_spec("early", "early-src"))
    harness.wait_ready(namespace, "early")

    harness.install_crd("BasetenSecret")
    value = "late-crd-token"
    harness.kube.create(
        SECRETS,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "token", "namespace": namespace},
            "data": {"token": base64.b64encode(value.encode()).decode()},
        },
        namespace,
    )
    harness.kube.create(
        BASETENSECRETS,
        {
            "apiVersion": BASETENSECRETS.api_version,
            "kind": BASETENSECRETS.kind,
            "metadata": {"name": "token", "namespace": namespace},
            "spec": {"name": "late_token", "secretRef": {"name": "token", "key": "token"}},
        },
        namespace,
    )

    def synced() -> bool:
        status = harness.kube.get(BASETENSECRETS, "token", namespace).get("status") or {}
        return status.get("state") == "SYNCED"

    # The kind's informer lists again on its backoff (at most 30 s apart).
    wait_for(synced, timeout=45.0, interval=0.25)
    assert not informer.unserved
    written = {s["name"]: s for s in harness.sim.secrets()}["late_token"]
    assert written["value_sha256"] == hashlib.sha256(value.encode()).hexdigest()
    assert written["writes"] == 1
