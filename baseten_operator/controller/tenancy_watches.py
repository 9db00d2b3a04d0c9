"""What wakes CRs when tenancy changes around them, without polling.

- A CR that stops claiming an environment (deleted, deleting, another model or
  environment, Observe) wakes the CRs of its old claim: the next in line takes over;
  and those of its new claim, whose owner may now be younger than it.
- A Namespace that arrives wakes its CRs (they wait for it: its policy is unknown).
- A Namespace whose policy annotations change wakes its CRs and those sharing their claims
  (the team is part of the claim).
- An API key Secret that changes wakes the CRs of the namespaces naming it; one that
  goes drops its pooled client.
"""

from __future__ import annotations

from typing import Any

from baseten_operator.baseten.pool import BasetenClientPool
from baseten_operator.controller.namespace_policy import (
    ALLOWED_DELETION_POLICIES,
    ALLOWED_MODELS,
    ALLOWED_SECRET_PREFIXES,
    API_KEY_SECRET,
    TEAM,
)
from baseten_operator.controller.ownership import CLAIM_INDEX, claim_changed, requests_for_claims
from baseten_operator.controller.tenancy import ClaimLookup
from baseten_operator.runtime.controller import Controller, Request
from baseten_operator.runtime.informer import Informer

# Namespaces by the API key Secret they name.
API_KEY_SECRET_INDEX = "tenancy.apiKeySecret"
POLICY_ANNOTATIONS = (
    ALLOWED_MODELS,
    ALLOWED_DELETION_POLICIES,
    TEAM,
    API_KEY_SECRET,
    ALLOWED_SECRET_PREFIXES,
)


def api_key_secret_index(namespace: dict[str, Any]) -> list[str]:
    annotations = (namespace.get("metadata") or {}).get("annotations") or {}
    name = str(annotations.get(API_KEY_SECRET) or "").strip()
    return [name] if name else []


def _policy(namespace: dict[str, Any]) -> dict[str, str]:
    annotations = (namespace.get("metadata") or {}).get("annotations") or {}
    return {key: str(annotations[key]) for key in POLICY_ANNOTATIONS if key in annotations}


def policy_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return _policy(old) != _policy(new)


def _claimants(models: Informer) -> ClaimLookup:
    return lambda value: models.by_index(CLAIM_INDEX, value)


def requests_for_namespace(models: Informer, namespace: dict[str, Any]) -> list[Request]:
    crs = models.list((namespace.get("metadata") or {}).get("name") or "")
    direct = [Request.for_object(obj) for obj in crs]
    return list(dict.fromkeys(direct + requests_for_claims(_claimants(models), crs)))


def watch_tenancy(
    controller: Controller,
    *,
    models: Informer,
    namespaces: Informer,
    secrets: Informer,
    pool: BasetenClientPool,
) -> None:
    claimants = _claimants(models)

    def enqueue(requests: list[Request]) -> None:
        for request in requests:
            controller.enqueue(request)

    def on_model_update(old: dict[str, Any], new: dict[str, Any]) -> None:
        if claim_changed(old, new):
            # The old claim's next in line takes over; the new claim's owner may have to
            # stand down (an edited CR keeps its age, so it can be older than that owner).
            enqueue(requests_for_claims(claimants, [old, new]))

    models.add_event_handler(
        on_update=on_model_update,
        on_delete=lambda obj: enqueue(requests_for_claims(claimants, [obj])),
    )
    controller.watch(
        namespaces,
        lambda namespace: requests_for_namespace(models, namespace),
        update_filter=policy_changed,
    )

    def requests_for_secret(secret: dict[str, Any]) -> list[Request]:
        name = (secret.get("metadata") or {}).get("name") or ""
        requests: list[Request] = []
        for namespace in namespaces.by_index(API_KEY_SECRET_INDEX, name):
            requests.extend(requests_for_namespace(models, namespace))
        return requests

    controller.watch(
        secrets,
        requests_for_secret,
        update_filter=lambda old, new: old.get("data") != new.get("data"),
    )
    secrets.add_event_handler(
        on_delete=lambda secret: pool.forget((secret.get("metadata") or {}).get("name") or "")
    )
