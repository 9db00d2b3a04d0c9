"""Authentication and authorization of HTTP requests delegated to the Kubernetes API.

What controller-runtime's `filters.WithAuthenticationAndAuthorization` does for secure
metrics: the request's bearer token is checked with a TokenReview, and the user it
names with a SubjectAccessReview for the request's verb on its path as a non-resource
URL (`get` `/metrics`). No or an unknown token answers 401, a user without the grant
403. Both answers are cached for a minute (by a hash of the token, never the token), so
a scrape every few seconds costs the API server two requests a minute, not two a scrape.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from cachetools import TTLCache

from baseten_operator.runtime.client import KubeClient
from baseten_operator.runtime.clock import Clock, RealClock
from baseten_operator.runtime.errors import ApiError
from baseten_operator.runtime.httpserver import Response
from baseten_operator.runtime.resource import Resource

_log = structlog.get_logger(__name__)

TOKEN_REVIEWS = Resource(
    "authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False
)
SUBJECT_ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False
)
CACHE_TTL = 60.0
CACHE_ENTRIES = 1024
# The HTTP methods a read-only endpoint answers, as the Kubernetes authorizer names them.
_VERBS = {"GET": "get", "HEAD": "get"}


@dataclass(frozen=True)
class User:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The token of an `Authorization: Bearer` header (`headers` by lower-case name)."""
    scheme, _, token = (headers.get("authorization") or "").strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


class DelegatedAuth:
    """A `RequestFilter` answering 401/403 for requests the API server does not allow."""

    def __init__(
        self,
        client: KubeClient,
        *,
        clock: Clock | None = None,
        ttl: float = CACHE_TTL,
        max_entries: int = CACHE_ENTRIES,
    ) -> None:
        self._client = client
        timer = (clock or RealClock()).monotonic
        self._lock = threading.Lock()
        self._users: TTLCache[str, User | None] = TTLCache(max_entries, ttl, timer=timer)
        self._decisions: TTLCache[tuple[User, str, str], bool] = TTLCache(
            max_entries, ttl, timer=timer
        )

    def __call__(self, method: str, path: str, headers: Mapping[str, str]) -> Response | None:
        token = bearer_token(headers)
        if token is None:
            return Response(401, b"Unauthorized\n")
        try:
            user = self.authenticate(token)
        except ApiError as error:
            _log.warning("token review failed", error=str(error))
            return Response(401, b"Unauthorized\n")
        if user is None:
            return Response(401, b"Unauthorized\n")
        verb = _VERBS.get(method, method.lower())
        try:
            allowed = self.authorize(user, verb, path)
        except ApiError as error:
            _log.warning("subject access review failed", error=str(error), user=user.name)
            message = f"Authorization error (user={user.name}, verb={verb}, path={path})\n"
            return Response(500, message.encode())
        if not allowed:
            message = f"Authorization denied for user={user.name} (verb={verb}, path={path})\n"
            return Response(403, message.encode())
        return None

    def authenticate(self, token: str) -> User | None:
        """The user a token belongs to, None when the API server does not accept it."""
        key = hashlib.sha256(token.encode()).hexdigest()
        with self._lock:
            if key in self._users:
                return self._users[key]
        review = self._client.create(
            TOKEN_REVIEWS,
            {
                "apiVersion": TOKEN_REVIEWS.api_version,
                "kind": "TokenReview",
                "spec": {"token": token},
            },
        )
        user = _user(review.get("status") or {})
        with self._lock:
            self._users[key] = user
        return user

    def authorize(self, user: User, verb: str, path: str) -> bool:
        key = (user, verb, path)
        with self._lock:
            if key in self._decisions:
                return self._decisions[key]
        review = self._client.create(
            SUBJECT_ACCESS_REVIEWS,
            {
                "apiVersion": SUBJECT_ACCESS_REVIEWS.api_version,
                "kind": "SubjectAccessReview",
                "spec": {
                    "user": user.name,
                    "uid": user.uid,
                    "groups": list(user.groups),
                    "extra": {name: list(values) for name, values in user.extra},
                    "nonResourceAttributes": {"verb": verb, "path": path},
                },
            },
        )
        allowed = bool((review.get("status") or {}).get("allowed"))
        with self._lock:
            self._decisions[key] = allowed
        return allowed


def _user(status: dict[str, Any]) -> User | None:
    if not status.get("authenticated"):
        return None
    info = status.get("user") or {}
    extra = info.get("extra") or {}
    return User(
        name=str(info.get("username", "")),
        uid=str(info.get("uid", "")),
        groups=tuple(info.get("groups") or ()),
        extra=tuple(sorted((k, tuple(v)) for k, v in extra.items())),
    )
