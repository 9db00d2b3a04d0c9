"""Secrets read when a pass asks, with a GET each time: for what a pass needs now and then
(a Prometheus check's token or CA, once per analysis interval), where a watch per Secret
(basetensecret/watches.py) would cost more than it saves. Readable only where a namespace
has let the operator read its Secrets: elsewhere the API server's `Forbidden` comes back."""

from __future__ import annotations

from typing import Any

from baseten_operator.controller.shared.ports import KubeAPI
from baseten_operator.runtime.errors import NotFound
from baseten_operator.runtime.resource import SECRETS


class DirectSecrets:
    def __init__(self, reader: KubeAPI) -> None:
        self._reader = reader

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The Secret; None when it does not exist."""
        try:
            return self._reader.get(SECRETS, name, namespace)
        except NotFound:
            return None
