"""What a BasetenModel's namespace decides for it: its policy, its Baseten team, and the
API key (hence the pooled client) every Baseten call and push of its CRs uses."""

from __future__ import annotations

import base64
import binascii
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cachetools import LRUCache
from pydantic import ValidationError

from baseten_operator.api.types import BasetenModelSpec
from baseten_operator.baseten.pool import BasetenClientPool
from baseten_operator.baseten.teams import TeamScopedClient
from baseten_operator.baseten.transport import usable_api_key
from baseten_operator.controller import messages
from baseten_operator.controller.namespace_policy import (
    API_KEY_SECRET_KEY,
    NamespacePolicy,
    effective_team,
)
from baseten_operator.controller.ports import BasetenAPI, KeyedBasetenAPI, ObjectCache


class ApiKeyUnavailable(Exception):
    """The namespace names an API key Secret that is missing or has no key: the message
    names it (never the key)."""


# Namespaces whose policies are kept read; beyond it, the least recently used is read again.
_POLICIES_KEPT = 4096

# BasetenModels (raw dicts) that claim a (model, environment), across namespaces and teams.
ClaimLookup = Callable[[str], list[dict[str, Any]]]


def parse_spec_quietly(obj: dict[str, Any]) -> BasetenModelSpec | None:
    try:
        return BasetenModelSpec.model_validate(obj.get("spec") or {})
    except ValidationError:
        return None


@dataclass
class Tenancy:
    namespaces: ObjectCache  # the Namespace informer: get(None, name)
    secrets: ObjectCache  # the Secret informer of the operator's own namespace
    pool: BasetenClientPool[KeyedBasetenAPI]
    claimants: ClaimLookup
    operator_namespace: str
    require_policy: bool = False
    # The policy read from each Namespace object: a pass asks for it four times or more,
    # and the informer replaces a changed object (never edits it), so the object itself
    # says whether what was read from it still holds.
    _read: LRUCache[str, tuple[dict[str, Any] | None, NamespacePolicy]] = field(
        default_factory=lambda: LRUCache(maxsize=_POLICIES_KEPT), init=False, repr=False
    )
    _read_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def knows_namespace(self, namespace: str) -> bool:
        """The Namespace is in the cache (until it is, its policy is unknown, not empty)."""
        return self.namespaces.get(None, namespace) is not None

    def policy(self, namespace: str) -> NamespacePolicy:
        obj = self.namespaces.get(None, namespace)
        with self._read_lock:
            read = self._read.get(namespace)
        if read is not None and read[0] is obj:
            return read[1]
        policy = NamespacePolicy.from_namespace(namespace, obj)
        with self._read_lock:
            self._read[namespace] = (obj, policy)
        return policy

    def team_of(self, namespace: str, spec: BasetenModelSpec) -> str | None:
        """The Baseten team of a CR's model: its namespace's, else its own `spec.team`
        (None: the organisation's)."""
        return effective_team(spec, self.policy(namespace))

    def allows(self, obj: dict[str, Any]) -> BasetenModelSpec | None:
        """The spec of a CR its namespace's policy allows; None if invalid or refused."""
        spec = parse_spec_quietly(obj)
        namespace = obj["metadata"].get("namespace") or ""
        if spec is None or self.policy(namespace).violation(
            spec, require_policy=self.require_policy
        ):
            return None
        return spec

    def baseten_for(self, policy: NamespacePolicy, team: str | None) -> BasetenAPI:
        """The client for a namespace: its own key's (pooled) or the operator's, in its team."""
        client = self.pool.default
        if policy.api_key_secret is not None:
            client = self.pool.client_for(
                policy.api_key_secret, self._api_key(policy.api_key_secret)
            )
        return TeamScopedClient(client, team) if team else client

    def api_key(self, policy: NamespacePolicy) -> str | None:
        """The namespace's own API key (for truss pushes); None: the operator's."""
        if policy.api_key_secret is None:
            return None
        return self._api_key(policy.api_key_secret)

    def _api_key(self, secret_name: str) -> str:
        secret = self.secrets.get(self.operator_namespace, secret_name)
        if secret is None:
            raise ApiKeyUnavailable(
                messages.api_key_secret_missing(self.operator_namespace, secret_name)
            )
        encoded = (secret.get("data") or {}).get(API_KEY_SECRET_KEY) or ""
        try:
            key = base64.b64decode(encoded, validate=True).decode().strip()
        except (binascii.Error, UnicodeDecodeError):
            key = ""
        if not key:
            raise ApiKeyUnavailable(
                messages.api_key_secret_key_missing(
                    self.operator_namespace, secret_name, API_KEY_SECRET_KEY
                )
            )
        if not usable_api_key(key):  # a pasted key with its line break, say
            raise ApiKeyUnavailable(
                messages.api_key_secret_key_unusable(
                    self.operator_namespace, secret_name, API_KEY_SECRET_KEY
                )
            )
        return key
