"""The Secrets BasetenSecrets name, and only those (docs/contract.md 13.4).

The operator has no Secret read anywhere but where a namespace grants it, and reads
nothing it was not pointed at: each referenced Secret gets a watch of its own, by name
(`fieldSelector=metadata.name=...`), kept while a BasetenSecret names it and stopped when
the last one lets go. A change to the Secret's data wakes the BasetenSecrets naming it at
once, so a rotation reaches Baseten within seconds.

A watch starts only once a pass has read the Secret with a GET (or been told it does not
exist): a namespace that has not bound the reader role answers 403, and a watch there would
only fail and log every half minute. Until its watch has listed, a pass reads with a GET;
a watch refused since (the RoleBinding removed) is dropped, its cache no longer trusted,
and the pass reads with a GET again, which says FORBIDDEN.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import structlog

from baseten_operator.runtime.clock import Clock
from baseten_operator.runtime.errors import NotFound
from baseten_operator.runtime.informer import Informer
from baseten_operator.runtime.resource import SECRETS

log = structlog.get_logger(__name__)

SecretKey = tuple[str, str]  # (namespace, name)
# Called with a Secret's (namespace, name) when its data changes, it appears or it goes.
OnSecretChange = Callable[[str, str], None]
# Builds the informer of one Secret (the kube client's, in production).
MakeInformer = Callable[[str, str], Informer]


def secret_informer(client: Any, clock: Clock) -> MakeInformer:
    """One Secret's informer: a list and watch selecting it by name."""
    return lambda namespace, name: Informer(
        client, SECRETS, namespace, field_selector=f"metadata.name={name}", clock=clock
    )


class ReferencedSecrets:
    """One watch per referenced Secret, kept while a BasetenSecret names it."""

    def __init__(self, reader: Any, make_informer: MakeInformer, on_change: OnSecretChange) -> None:
        self._reader = reader  # `get(SECRETS, name, namespace)`: the KubeAPI port
        self._make_informer = make_informer
        self._on_change = on_change
        self._lock = threading.Lock()
        self._informers: dict[SecretKey, Informer] = {}
        self._referenced_by: dict[SecretKey, set[str]] = {}
        self._reference_of: dict[str, SecretKey] = {}
        self._stopped = False

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The Secret (None: it does not exist). Raises the API server's `Forbidden` when
        the operator may not read it."""
        secret = (namespace, name)
        with self._lock:
            informer = self._informers.get(secret)
        if informer is not None and informer.refused:
            # Its RBAC was revoked: the cache is stale, and the GET below says so (403).
            self._unwatch(secret, informer)
            informer = None
        if informer is not None and informer.has_synced():
            return informer.get(namespace, name)
        try:
            found = self._reader.get(SECRETS, name, namespace)
        except NotFound:
            found = None
        if informer is None:
            self._watch_if_referenced(secret)  # readable: from now on, its changes wake us
        return found

    def _unwatch(self, secret: SecretKey, informer: Informer) -> None:
        with self._lock:
            if self._informers.get(secret) is informer:
                del self._informers[secret]
        informer.stop(timeout=0)

    def _watch_if_referenced(self, secret: SecretKey) -> None:
        with self._lock:
            # Stopped: a pass still running after the shutdown starts no watch.
            if secret in self._informers or secret not in self._referenced_by or self._stopped:
                return
            informer = self._informers[secret] = self._watch(secret)
        informer.start()

    def refer(self, cr_key: str, secret: SecretKey | None) -> None:
        """The BasetenSecret `cr_key` now names `secret` (None: nothing, or it is gone); its
        watch starts at the first successful read (`get`)."""
        stop: Informer | None = None
        with self._lock:
            before = self._reference_of.get(cr_key)
            if before == secret:
                return
            if before is not None:
                stop = self._release(cr_key, before)
            if secret is not None:
                self._reference_of[cr_key] = secret
                self._referenced_by.setdefault(secret, set()).add(cr_key)
        if stop is not None:
            stop.stop(timeout=0)

    def watched(self) -> set[SecretKey]:
        with self._lock:
            return set(self._informers)

    def stop(self, timeout: float) -> None:
        """Every watch, each given `timeout` to end its threads; none starts after this."""
        with self._lock:
            self._stopped = True
            informers = list(self._informers.values())
            self._informers.clear()
        for informer in informers:
            informer.stop(timeout)

    def _release(self, cr_key: str, secret: SecretKey) -> Informer | None:
        del self._reference_of[cr_key]
        users = self._referenced_by.get(secret, set())
        users.discard(cr_key)
        if users:
            return None
        self._referenced_by.pop(secret, None)
        return self._informers.pop(secret, None)

    def _watch(self, secret: SecretKey) -> Informer:
        namespace, name = secret
        informer = self._make_informer(namespace, name)

        def changed(*_: dict[str, Any]) -> None:
            self._on_change(namespace, name)

        def data_changed(old: dict[str, Any], new: dict[str, Any]) -> None:
            if old.get("data") != new.get("data"):
                self._on_change(namespace, name)

        informer.add_event_handler(on_add=changed, on_update=data_changed, on_delete=changed)
        log.debug("watching a referenced Secret", namespace=namespace, secret=name)
        return informer
