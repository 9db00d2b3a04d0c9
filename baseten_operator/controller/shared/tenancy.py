"""What a namespace decides for the CRs in it, for both kinds: its policy, the Baseten team
of what they manage, and the API key (hence the pooled client) of every Baseten call and
push they make.

A pass reads its namespace's `Tenant` once and hands it on; other objects' policies (a
claimant's, a model naming a secret) are read through `Tenancy.policy`, which keeps what
it read from each Namespace object.
"""

from __future__ import annotations

import base64
import binascii
import threading
from dataclasses import dataclass, field
from typing import Any

from cachetools import LRUCache

from baseten_operator.baseten.pool import BasetenClientPool
from baseten_operator.baseten.teams import TeamScopedClient
from baseten_operator.baseten.transport import usable_api_key
from baseten_operator.controller.shared import messages
from baseten_operator.controller.shared.namespace_policy import (
    API_KEY_SECRET_INDEX,
    API_KEY_SECRET_KEY,
    NamespacePolicy,
    api_key_secret_index,
    team_in,
)
from baseten_operator.controller.shared.ports import BasetenAPI, KeyedBasetenAPI, ObjectCache
from baseten_operator.runtime.informer import Informer
from baseten_operator.runtime.resource import NAMESPACES, SECRETS


class ApiKeyUnavailable(Exception):
    """The namespace names an API key Secret that is missing or has no key: the message
    names it (never the key)."""


# Namespaces whose policies are kept read; beyond it, the least recently used is read again.
_POLICIES_KEPT = 4096


@dataclass
class Tenancy:
    namespaces: ObjectCache  # the Namespace informer: get(None, name)
    secrets: ObjectCache  # the Secret informer of the operator's own namespace
    pool: BasetenClientPool[KeyedBasetenAPI]
    operator_namespace: str
    require_policy: bool = False
    # The policy read from each Namespace object: the informer replaces a changed object
    # (never edits it), so the object itself says whether what was read from it still holds.
    _read: LRUCache[str, tuple[dict[str, Any] | None, NamespacePolicy]] = field(
        default_factory=lambda: LRUCache(maxsize=_POLICIES_KEPT), init=False, repr=False
    )
    _read_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def knows_namespace(self, namespace: str) -> bool:
        """The Namespace is in the cache (until it is, its policy is unknown, not empty)."""
        return self.namespaces.get(None, namespace) is not None

    def tenant(self, namespace: str) -> Tenant:
        """The namespace's tenancy for one pass, read once."""
        obj = self.namespaces.get(None, namespace)
        return Tenant(self._policy_of(namespace, obj), known=obj is not None, tenancy=self)

    def policy(self, namespace: str) -> NamespacePolicy:
        return self._policy_of(namespace, self.namespaces.get(None, namespace))

    def _policy_of(self, namespace: str, obj: dict[str, Any] | None) -> NamespacePolicy:
        with self._read_lock:
            read = self._read.get(namespace)
        if read is not None and read[0] is obj:
            return read[1]
        policy = NamespacePolicy.from_namespace(namespace, obj)
        with self._read_lock:
            self._read[namespace] = (obj, policy)
        return policy

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


@dataclass(frozen=True)
class Tenant:
    """One namespace's tenancy as a pass read it: its policy (empty, and `known` False, for
    a Namespace the cache has not seen), and through it the team, client and key of what
    the pass manages."""

    policy: NamespacePolicy
    known: bool
    tenancy: Tenancy = field(repr=False)

    @property
    def require_policy(self) -> bool:
        return self.tenancy.require_policy

    def team(self, own: str | None) -> str | None:
        """The Baseten team of what a CR manages: its namespace's, else its own `spec.team`
        (None: the organisation's)."""
        return team_in(own, self.policy)

    def client(self, team: str | None) -> BasetenAPI:
        """The namespace's client in `team`; ApiKeyUnavailable when its key is."""
        return self.tenancy.baseten_for(self.policy, team)

    def api_key(self) -> str | None:
        """The namespace's own API key (for truss pushes); None: the operator's."""
        return self.tenancy.api_key(self.policy)


@dataclass
class TenancySources:
    """The informers and client pool the tenancy rules read, which both controllers share:
    the operator has one `Tenancy`, so each Namespace's policy is read once for both kinds."""

    namespaces: Informer  # metadata only: the annotations are the policy
    secrets: Informer  # the operator namespace's Secrets: the namespaces' API keys
    pool: BasetenClientPool[KeyedBasetenAPI]
    operator_namespace: str
    require_policy: bool = False
    tenancy: Tenancy = field(init=False)

    def __post_init__(self) -> None:
        # Before the informer lists: an indexer must exist when the first objects arrive.
        self.namespaces.add_indexer(API_KEY_SECRET_INDEX, api_key_secret_index)
        # A namespace's key Secret that goes takes its pooled client (and connections) along.
        self.secrets.add_event_handler(
            on_delete=lambda secret: self.pool.forget(
                (secret.get("metadata") or {}).get("name") or ""
            )
        )
        self.tenancy = Tenancy(
            namespaces=self.namespaces,
            secrets=self.secrets,
            pool=self.pool,
            operator_namespace=self.operator_namespace,
            require_policy=self.require_policy,
        )

    @classmethod
    def on_manager(
        cls,
        manager: Any,
        *,
        pool: BasetenClientPool[KeyedBasetenAPI],
        operator_namespace: str,
        require_policy: bool = False,
    ) -> TenancySources:
        """On the manager's shared informers."""
        return cls(
            # Only the annotations matter: no Namespace spec or status is ever cached.
            namespaces=manager.informer(NAMESPACES, metadata_only=True),
            # Only the operator's own namespace: its RBAC grants Secrets there and nowhere else.
            secrets=manager.informer(SECRETS, operator_namespace),
            pool=pool,
            operator_namespace=operator_namespace,
            require_policy=require_policy,
        )

    def namespaces_naming_key(self, secret: dict[str, Any]) -> list[dict[str, Any]]:
        """The Namespaces whose policy names this API key Secret."""
        name = (secret.get("metadata") or {}).get("name") or ""
        return self.namespaces.by_index(API_KEY_SECRET_INDEX, name)
