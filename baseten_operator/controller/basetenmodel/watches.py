"""What wakes BasetenModels when tenancy changes around them, without polling.

- A CR that stops claiming an environment (deleted, deleting, another model or
  environment, Observe) wakes the CRs of its old claim: the next in line takes over;
  and those of its new claim, whose owner may now be younger than it.
- A Namespace that arrives wakes its CRs (they wait for it: its policy is unknown).
- A Namespace whose policy annotations change wakes its CRs and those sharing their claims
  (the team is part of the claim).
- An API key Secret that changes wakes the CRs of the namespaces naming it.
"""

from __future__ import annotations

from typing import Any

from baseten_operator.controller.basetenmodel.ownership import (
    CLAIM_INDEX,
    claim_changed,
    requests_for_claims,
)
from baseten_operator.controller.shared.namespace_policy import policy_changed
from baseten_operator.controller.shared.ports import Lookup
from baseten_operator.controller.shared.tenancy import TenancySources
from baseten_operator.runtime.controller import Controller, Request
from baseten_operator.runtime.informer import Informer


def _claimants(models: Informer) -> Lookup:
    return lambda value: models.by_index(CLAIM_INDEX, value)


def requests_for_namespace(models: Informer, namespace: dict[str, Any]) -> list[Request]:
    crs = models.list((namespace.get("metadata") or {}).get("name") or "")
    direct = [Request.for_object(obj) for obj in crs]
    return list(dict.fromkeys(direct + requests_for_claims(_claimants(models), crs)))


def watch_tenancy(controller: Controller, *, models: Informer, sources: TenancySources) -> None:
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
        sources.namespaces,
        lambda namespace: requests_for_namespace(models, namespace),
        update_filter=policy_changed,
    )
    controller.watch(
        sources.secrets,
        lambda secret: [
            request
            for namespace in sources.namespaces_naming_key(secret)
            for request in requests_for_namespace(models, namespace)
        ],
        update_filter=lambda old, new: old.get("data") != new.get("data"),
    )
