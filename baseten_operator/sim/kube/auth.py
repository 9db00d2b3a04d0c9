"""ServiceAccount tokens, TokenReview and SubjectAccessReview, answered from stored RBAC.

The emulator authenticates no request itself (every client is an administrator), but it
answers the review APIs the way kube-apiserver does, so a server that delegates its
authentication and authorization to the API server (secure metrics) can be tested with
`kubectl create token` and ordinary RBAC objects:

- TokenRequest (`POST .../serviceaccounts/NAME/token`) issues an opaque token for the
  ServiceAccount, valid for `expirationSeconds` (default one hour) and while that
  ServiceAccount (same uid) exists.
- TokenReview authenticates such a token as `system:serviceaccount:NS:NAME` with the
  groups `system:serviceaccounts`, `system:serviceaccounts:NS`, `system:authenticated`.
  The kubeconfig's own token is the administrator (group `system:masters`).
- SubjectAccessReview runs the RBAC authorizer over the stored ClusterRoleBindings,
  RoleBindings (for requests in their namespace), Roles and ClusterRoles: resource
  rules (apiGroups, resources incl. `resource/subresource`, resourceNames, verbs, `*`)
  and nonResourceURLs (exact or a trailing `*` prefix). `system:masters` may do anything.
  Aggregated ClusterRoles are not expanded.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from baseten_operator.runtime.clock import format_rfc3339

from . import errors
from .resources import AUTHENTICATION_GROUP, AUTHORIZATION_GROUP, RBAC_GROUP

if TYPE_CHECKING:
    from .store import Store

Obj = dict[str, Any]
ADMIN_TOKEN = "sim-token"
ADMIN_USER = "sim-admin"
MASTERS = "system:masters"
DEFAULT_TOKEN_SECONDS = 3600
MIN_TOKEN_SECONDS = 600  # kube-apiserver's floor for expirationSeconds


@dataclass(frozen=True)
class _Issued:
    namespace: str
    name: str
    uid: str
    expires: float


class Authority:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._tokens: dict[str, _Issued] = {}

    # ---- TokenRequest ---------------------------------------------------------------

    def request_token(self, namespace: str, name: str, body: Obj | None) -> Obj:
        account = self._stored("", "serviceaccounts", namespace, name)
        if account is None:
            raise errors.not_found("serviceaccounts", "", name)
        spec = dict((body or {}).get("spec") or {})
        seconds = max(
            int(spec.get("expirationSeconds") or DEFAULT_TOKEN_SECONDS), MIN_TOKEN_SECONDS
        )
        now = self._store.clock.now()
        token = f"sim-sa.{secrets.token_urlsafe(24)}"
        with self._lock:
            self._tokens[token] = _Issued(
                namespace, name, account["metadata"].get("uid", ""), now + seconds
            )
        return {
            "kind": "TokenRequest",
            "apiVersion": f"{AUTHENTICATION_GROUP}/v1",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                **spec,
                "expirationSeconds": seconds,
                "audiences": spec.get("audiences") or [],
            },
            "status": {"token": token, "expirationTimestamp": format_rfc3339(now + seconds)},
        }

    # ---- TokenReview ----------------------------------------------------------------

    def review_token(self, body: Obj) -> Obj:
        token = str(((body or {}).get("spec") or {}).get("token") or "")
        user = self._authenticate(token)
        status: Obj = {"authenticated": user is not None}
        if user is not None:
            status["user"] = user
        else:
            status["error"] = "invalid bearer token"
        return {**_review_shell(body, "TokenReview", AUTHENTICATION_GROUP), "status": status}

    def _authenticate(self, token: str) -> Obj | None:
        if token == ADMIN_TOKEN:
            return {"username": ADMIN_USER, "groups": [MASTERS, "system:authenticated"]}
        with self._lock:
            issued = self._tokens.get(token)
        if issued is None or issued.expires <= self._store.clock.now():
            return None
        account = self._stored("", "serviceaccounts", issued.namespace, issued.name)
        if account is None or account["metadata"].get("uid", "") != issued.uid:
            return None  # a bound token dies with its ServiceAccount
        return {
            "username": f"system:serviceaccount:{issued.namespace}:{issued.name}",
            "uid": issued.uid,
            "groups": [
                "system:serviceaccounts",
                f"system:serviceaccounts:{issued.namespace}",
                "system:authenticated",
            ],
        }

    # ---- SubjectAccessReview --------------------------------------------------------

    def review_access(self, body: Obj) -> Obj:
        spec = (body or {}).get("spec") or {}
        user = str(spec.get("user") or "")
        groups = [str(g) for g in spec.get("groups") or []]
        resource = spec.get("resourceAttributes")
        non_resource = spec.get("nonResourceAttributes")
        if not user and not groups:
            raise errors.bad_request("spec.user or spec.groups is required")
        if (resource is None) == (non_resource is None):
            raise errors.bad_request(
                "exactly one of spec.resourceAttributes and spec.nonResourceAttributes is required"
            )
        request = _Request.of(resource or {}, non_resource)
        allowed, reason = self._allowed(user, groups, request)
        status: Obj = {"allowed": allowed}
        if reason:
            status["reason"] = reason
        return {**_review_shell(body, "SubjectAccessReview", AUTHORIZATION_GROUP), "status": status}

    def _allowed(self, user: str, groups: list[str], request: _Request) -> tuple[bool, str]:
        if MASTERS in groups:
            return True, "member of system:masters"
        for binding, role in self._grants(request.namespace):
            if not any(_subject_matches(s, user, groups) for s in binding.get("subjects") or []):
                continue
            for rule in role.get("rules") or []:
                if request.matches(rule):
                    kind = binding.get("kind", "")
                    return True, f'RBAC: allowed by {kind} "{binding["metadata"]["name"]}"'
        return False, ""

    def _grants(self, namespace: str) -> Iterator[tuple[Obj, Obj]]:
        """(binding, the role it refers to) for every binding that applies in `namespace`."""
        with self._store.lock:
            cluster_bindings = list(self._bucket("clusterrolebindings").values())
            bindings = [
                b
                for (ns, _), b in self._bucket("rolebindings").items()
                if namespace and ns == namespace
            ]
        for binding in cluster_bindings:
            role = self._role(binding, "")
            if role is not None:
                yield binding, role
        for binding in bindings:
            role = self._role(binding, binding["metadata"].get("namespace", ""))
            if role is not None:
                yield binding, role

    def _role(self, binding: Obj, namespace: str) -> Obj | None:
        ref = binding.get("roleRef") or {}
        if ref.get("kind") == "ClusterRole":
            return self._stored(RBAC_GROUP, "clusterroles", "", ref.get("name", ""))
        if ref.get("kind") == "Role" and namespace:
            return self._stored(RBAC_GROUP, "roles", namespace, ref.get("name", ""))
        return None

    def _bucket(self, plural: str) -> dict[tuple[str, str], Obj]:
        return self._store.objects.get((RBAC_GROUP, plural), {})

    def _stored(self, group: str, plural: str, namespace: str, name: str) -> Obj | None:
        with self._store.lock:
            return self._store.objects.get((group, plural), {}).get((namespace, name))


@dataclass(frozen=True)
class _Request:
    verb: str
    namespace: str = ""
    group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str | None = None  # set for a non-resource request

    @classmethod
    def of(cls, resource: Obj, non_resource: Obj | None) -> _Request:
        if non_resource is not None:
            return cls(
                verb=str(non_resource.get("verb") or ""), path=str(non_resource.get("path") or "")
            )
        return cls(
            verb=str(resource.get("verb") or ""),
            namespace=str(resource.get("namespace") or ""),
            group=str(resource.get("group") or ""),
            resource=str(resource.get("resource") or ""),
            subresource=str(resource.get("subresource") or ""),
            name=str(resource.get("name") or ""),
        )

    def matches(self, rule: Obj) -> bool:
        if not _listed(rule.get("verbs"), self.verb):
            return False
        if self.path is not None:
            return any(
                _url_matches(pattern, self.path) for pattern in rule.get("nonResourceURLs") or []
            )
        if not _listed(rule.get("apiGroups"), self.group):
            return False
        resource = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        if not _listed(rule.get("resources"), resource):
            return False
        names = rule.get("resourceNames") or []
        return not names or self.name in names


def _listed(values: Any, wanted: str) -> bool:
    values = values or []
    return "*" in values or wanted in values


def _url_matches(pattern: str, path: str) -> bool:
    if pattern == "*":
        return True
    if pattern.endswith("*"):
        return path.startswith(pattern[:-1])
    return pattern == path


def _subject_matches(subject: Obj, user: str, groups: list[str]) -> bool:
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return name == user
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        return user == f"system:serviceaccount:{subject.get('namespace', '')}:{name}"
    return False


def _review_shell(body: Obj | None, kind: str, group: str) -> Obj:
    body = body or {}
    return {
        "kind": kind,
        "apiVersion": body.get("apiVersion") or f"{group}/v1",
        "metadata": {"creationTimestamp": None},
        "spec": body.get("spec") or {},
    }
