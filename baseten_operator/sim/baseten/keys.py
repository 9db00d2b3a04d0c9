"""API keys the simulator accepts: the organisation's, and keys bound to one team.

Every key has a label, which the audit log records instead of the key itself: a test
can tell which key each call carried without the log ever holding a secret.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

ORG_KEY_LABEL = "org"


@dataclass(frozen=True)
class ApiKey:
    label: str
    team_id: str | None = None  # None: organisation-wide


class KeyRing:
    def __init__(self, org_key: str) -> None:
        self._org_key = org_key
        self._lock = threading.Lock()
        self._keys: dict[str, ApiKey] = {}
        self.reset()

    def add(self, key: str, label: str, team_id: str | None = None) -> ApiKey:
        api_key = ApiKey(label, team_id)
        with self._lock:
            self._keys[key.strip()] = api_key
        return api_key

    def revoke(self, key: str) -> None:
        with self._lock:
            self._keys.pop(key.strip(), None)

    def lookup(self, key: str) -> ApiKey | None:
        with self._lock:
            return self._keys.get(key.strip())

    def reset(self) -> None:
        with self._lock:
            self._keys = {self._org_key: ApiKey(ORG_KEY_LABEL)}
