"""Secrets (docs/baseten-api.md): per team, upserted by name, listed without values.

The simulator never keeps a value: an upsert stores its SHA-256, which only the control
API shows (a test proves a rotation arrived without the value being anywhere), and a
secret keeps its id and creation time across rotations, as Baseten's do.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from baseten_operator.sim.baseten import views
from baseten_operator.sim.baseten.account import Account
from baseten_operator.sim.baseten.errors import not_found
from baseten_operator.sim.baseten.records import Secret


def missing_secrets(account: Account, team_id: str, names: Iterable[str]) -> list[str]:
    """Of `names`, the ones the team has no secret for, sorted (the caller holds the lock)."""
    return sorted({name for name in names if (team_id, name) not in account.secrets})


class TeamSecrets:
    def __init__(self, account: Account) -> None:
        self._account = account

    def list_secrets(self, team_id: str) -> list[dict]:
        with self._account.session():
            team = self._account.team(team_id)
            return [
                views.secret_view(secret, team.name)
                for (owner, _), secret in self._account.secrets.items()
                if owner == team_id
            ]

    def upsert(self, team_id: str, name: str, value: str) -> dict:
        """Create the secret, or give an existing one its new value (same id)."""
        digest = hashlib.sha256(value.encode()).hexdigest()
        with self._account.session() as now:
            team = self._account.team(team_id)
            secret = self._account.secrets.get((team_id, name))
            if secret is None:
                secret = Secret(self._account.new_id(), name, team_id, now, digest)
                self._account.secrets[(team_id, name)] = secret
            else:
                secret.value_sha256 = digest
                secret.writes += 1
            return views.secret_view(secret, team.name)

    def delete(self, team_id: str, name: str) -> dict:
        with self._account.session():
            self._account.team(team_id)
            if self._account.secrets.pop((team_id, name), None) is None:
                raise not_found(f"Secret {name!r}")
            return {"name": name}

    def state(self) -> list[dict]:
        """For tests only: every secret with its team, write count and the value's SHA-256."""
        with self._account.session():
            return [
                {
                    "name": secret.name,
                    "id": secret.id,
                    "team": self._account.team(secret.team_id).name,
                    "writes": secret.writes,
                    "value_sha256": secret.value_sha256,
                }
                for secret in self._account.secrets.values()
            ]
