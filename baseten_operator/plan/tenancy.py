"""What a plan knows of the tenancy around the planned BasetenModels.

The pass applies the run's tenancy rules (controller/shared/tenancy.py, and the
BasetenModel's admission.py and ownership.py) to what the plan can read, exactly as the
operator applies them to its informers' caches:

- with the cluster (`--cluster`): every Namespace's policy annotations, the API key
  Secrets they name in the operator's namespace, and every live BasetenModel in every
  namespace (they own environments, protect sources from orphan cleanup and block shared
  deletes, as the operator sees them);
- from files only: no Namespace can be read, so no policy is known (`PolicyUnknown`):
  every namespace counts as one without annotations (no team, the operator's key, any
  model and deletion policy), and the claims and siblings are the input's BasetenModels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from baseten_operator.api.constants import BASETENMODELS, BASETENSECRETS
from baseten_operator.controller.shared.ports import ObjectCache
from baseten_operator.plan.inputs import ClusterObjects
from baseten_operator.runtime.errors import NotFound
from baseten_operator.runtime.resource import NAMESPACES, SECRETS

POLICY_UNKNOWN_NOTE = (
    "namespace policy not checked: without --cluster no Namespace is read, so every "
    "namespace counts as one without annotations (allowed models and deletion policies, "
    "team and API key Secret unknown; model lookups are organisation-wide with "
    "BASETEN_API_KEY); conflicts and shared-model deletion blocks are among the input's "
    "BasetenModels only"
)


class PolicyUnknown:
    """The Namespace cache of a plan that cannot read the cluster: every namespace is
    there, without annotations."""

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        return {"metadata": {"name": name}}


@dataclass
class TenancyView:
    namespaces: ObjectCache
    secrets: ObjectCache  # the operator's namespace's API key Secrets
    operator_namespace: str
    # Every live BasetenModel, all namespaces: the planned ones are laid over them.
    live_models: list[dict[str, Any]] = field(default_factory=list)
    # Every live BasetenSecret, all namespaces: they claim Baseten secret names.
    live_secrets: list[dict[str, Any]] = field(default_factory=list)
    require_policy: bool = False
    policy_known: bool = True

    @classmethod
    def unknown(cls) -> TenancyView:
        return cls(
            namespaces=PolicyUnknown(),
            secrets=ClusterObjects(SECRETS),
            operator_namespace="",
            policy_known=False,
        )

    @classmethod
    def from_cluster(
        cls, kube: Any, operator_namespace: str, *, require_policy: bool = False
    ) -> TenancyView:
        """Namespaces and key Secrets are read when a pass first asks for one (`get` only:
        the plan needs no right to list Secrets); the BasetenModels and BasetenSecrets are
        listed at once."""
        items: list[dict[str, Any]] = kube.list(BASETENMODELS).get("items") or []
        try:
            secrets: list[dict[str, Any]] = kube.list(BASETENSECRETS).get("items") or []
        except NotFound:
            secrets = []  # an install from before BasetenSecret: none can exist
        return cls(
            namespaces=ClusterObjects(NAMESPACES, kube),
            secrets=ClusterObjects(SECRETS, kube),
            operator_namespace=operator_namespace,
            live_models=items,
            live_secrets=secrets,
            require_policy=require_policy,
        )

    def notes(self) -> list[str]:
        """What the whole plan must be read with."""
        return [] if self.policy_known else [POLICY_UNKNOWN_NOTE]
