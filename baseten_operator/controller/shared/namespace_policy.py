"""Namespace policy: what a namespace's BasetenModels may manage, set by the platform team
as annotations on the Namespace (the built-in `edit` role cannot change Namespaces).

One organisation-wide API key cannot be scoped by Kubernetes RBAC, so the operator
itself refuses what a namespace's policy does not allow, before any Baseten call.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

from baseten_operator.api.constants import GROUP
from baseten_operator.api.types import BasetenModelSpec
from baseten_operator.controller.shared import messages

ALLOWED_MODELS = f"{GROUP}/allowed-models"
ALLOWED_DELETION_POLICIES = f"{GROUP}/allowed-deletion-policies"
TEAM = f"{GROUP}/team"
API_KEY_SECRET = f"{GROUP}/api-key-secret"
# Prefixes of the Baseten secret names a namespace's BasetenSecrets may write.
ALLOWED_SECRET_PREFIXES = f"{GROUP}/allowed-secret-prefixes"
API_KEY_SECRET_KEY = "api-key"
POLICY_ANNOTATIONS = (
    ALLOWED_MODELS,
    ALLOWED_DELETION_POLICIES,
    TEAM,
    API_KEY_SECRET,
    ALLOWED_SECRET_PREFIXES,
)
# Namespaces by the API key Secret they name (an index of the Namespace informer).
API_KEY_SECRET_INDEX = "tenancy.apiKeySecret"
# What the message shows for an annotation that is required (--require-namespace-policy)
# but absent.
UNSET = "(unset)"


def _split(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _text(value: str | None) -> str | None:
    return value.strip() if value is not None and value.strip() else None


@dataclass(frozen=True)
class NamespacePolicy:
    namespace: str
    # None: the annotation is absent (anything goes, unless required).
    allowed_models: tuple[str, ...] | None = None
    allowed_deletion_policies: tuple[str, ...] | None = None
    team: str | None = None
    api_key_secret: str | None = None
    allowed_secret_prefixes: tuple[str, ...] | None = None
    raw: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_namespace(cls, namespace: str, obj: dict[str, Any] | None) -> NamespacePolicy:
        """The policy in a Namespace's annotations (None: the Namespace is not cached)."""
        annotations = ((obj or {}).get("metadata") or {}).get("annotations") or {}
        return cls(
            namespace=namespace,
            allowed_models=_split(annotations.get(ALLOWED_MODELS)),
            allowed_deletion_policies=_split(annotations.get(ALLOWED_DELETION_POLICIES)),
            team=_text(annotations.get(TEAM)),
            api_key_secret=_text(annotations.get(API_KEY_SECRET)),
            allowed_secret_prefixes=_split(annotations.get(ALLOWED_SECRET_PREFIXES)),
            raw=tuple(
                (key, str(annotations[key])) for key in POLICY_ANNOTATIONS if key in annotations
            ),
        )

    def annotation(self, key: str) -> str:
        return dict(self.raw).get(key, UNSET)

    def violation(self, spec: BasetenModelSpec, *, require_policy: bool = False) -> str | None:
        """The status message of the first rule `spec` breaks, None if it breaks none."""
        model = spec.model_name
        if self.allowed_models is None:
            if require_policy:
                return self._message(f"model '{model}'", ALLOWED_MODELS)
        elif not any(fnmatch.fnmatchcase(model, pattern) for pattern in self.allowed_models):
            return self._message(f"model '{model}'", ALLOWED_MODELS)
        policy = str(spec.deletion_policy)
        allowed = self.allowed_deletion_policies
        if allowed is not None and policy not in allowed:
            return self._message(f"deletionPolicy {policy}", ALLOWED_DELETION_POLICIES)
        if spec.team and self.team and spec.team != self.team:
            return self._message(f"team '{spec.team}'", TEAM)
        return None

    def secret_violation(
        self, name: str, team: str | None, *, require_policy: bool = False
    ) -> str | None:
        """The status message of the first rule a BasetenSecret writing the Baseten secret
        `name` (in `team`, its spec's) breaks; None if it breaks none."""
        prefixes = self.allowed_secret_prefixes
        if prefixes is None:
            if require_policy:
                return self._message(f"secret '{name}'", ALLOWED_SECRET_PREFIXES)
        elif not any(name.startswith(prefix) for prefix in prefixes):
            return self._message(f"secret '{name}'", ALLOWED_SECRET_PREFIXES)
        if team and self.team and team != self.team:
            return self._message(f"team '{team}'", TEAM)
        return None

    def _message(self, what: str, annotation: str) -> str:
        return messages.policy_violation(
            what, self.namespace, annotation, self.annotation(annotation)
        )


def team_in(own: str | None, policy: NamespacePolicy) -> str | None:
    """The Baseten team of what a CR manages: its namespace's, else its own `spec.team`."""
    return policy.team or own


def policy_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """A Namespace update that changes a policy annotation (a watch's update filter)."""
    return _policy_annotations(old) != _policy_annotations(new)


def _policy_annotations(namespace: dict[str, Any]) -> dict[str, str]:
    annotations = (namespace.get("metadata") or {}).get("annotations") or {}
    return {key: str(annotations[key]) for key in POLICY_ANNOTATIONS if key in annotations}


def api_key_secret_index(namespace: dict[str, Any]) -> list[str]:
    """The API key Secret a Namespace names (API_KEY_SECRET_INDEX)."""
    annotations = (namespace.get("metadata") or {}).get("annotations") or {}
    name = str(annotations.get(API_KEY_SECRET) or "").strip()
    return [name] if name else []
