"""One Baseten client per API key, built by one factory.

Namespaces may bring their own API key (a Secret named by the namespace's
`models.baseten.com/api-key-secret` annotation). Every client the operator uses is
built by the single `make_client` callable given here, so whatever every client must
carry (base URL, timeouts, a leadership fence) is decided in one place (main.py).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from baseten_operator.runtime.logging import register_secret

if TYPE_CHECKING:
    from baseten_operator.baseten.client import BasetenClient

# The clients' type: what the pool hands out is what it was given or its factory builds.
# Covariant: a pool of BasetenClients serves where a pool of any client interface is wanted.
Client = TypeVar("Client", covariant=True)

# How main.py builds the client of a namespace's API key.
MakeClient = Callable[[str], "BasetenClient"]


def _fingerprint(api_key: str) -> str:
    # The pool is keyed by a digest so that no dict dump or debugger shows the key itself.
    return hashlib.sha256(api_key.encode()).hexdigest()


class BasetenClientPool(Generic[Client]):
    """`default` serves every namespace without a key of its own; `client_for` the rest.

    A key is remembered per source (the Secret it came from): when the source's key
    changes (rotation), the client of the old key is dropped unless another source
    still uses it, so a rotated-out key stops being used at once.
    """

    def __init__(self, default: Client, make_client: Callable[[str], Client]) -> None:
        self._default = default
        self._make_client = make_client
        self._lock = threading.Lock()
        self._clients: dict[str, Client] = {}
        self._source_keys: dict[str, str] = {}

    @property
    def default(self) -> Client:
        return self._default

    def client_for(self, source: str, api_key: str) -> Client:
        fingerprint = _fingerprint(api_key.strip())
        with self._lock:
            previous = self._source_keys.get(source)
            self._source_keys[source] = fingerprint
            if previous is not None and previous != fingerprint:
                self._drop_unused(previous)
            client = self._clients.get(fingerprint)
            if client is None:
                # A namespace's key is as secret as the operator's own: masked in every log
                # line and Event from now on (a rotated-out key stays masked).
                register_secret(api_key)
                client = self._make_client(api_key.strip())
                self._clients[fingerprint] = client
            return client

    def forget(self, source: str) -> None:
        """The source (Secret) is gone: its key's client goes too, if nobody else uses it."""
        with self._lock:
            previous = self._source_keys.pop(source, None)
            if previous is not None:
                self._drop_unused(previous)

    def __len__(self) -> int:
        with self._lock:
            return len(self._clients)

    def _drop_unused(self, fingerprint: str) -> None:
        if fingerprint not in self._source_keys.values():
            self._clients.pop(fingerprint, None)
