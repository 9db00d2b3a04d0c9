"""Baseten teams (docs/baseten-api.md): the team lookup and a
client view whose model lookups and secrets stay inside one team.

Model names are unique per team only, so a namespace bound to a team must resolve its
models through `GET /v1/teams/{team_id}/models?name=` and never through the
organisation-wide list, where another team's model of the same name would match.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import SecretStr

from baseten_operator.baseten.errors import AmbiguousModelName, BasetenAPIError
from baseten_operator.baseten.models import ModelV1, SecretV1, TeamV1


class TeamNotFound(BasetenAPIError):
    """The team a namespace names does not exist (for the key in use)."""

    def __init__(self, team: str) -> None:
        self.team = team
        super().__init__(200, f'team "{team}" not found')

    def __str__(self) -> str:
        return self.message


class TeamDirectory(Protocol):
    """What the team view itself calls on the client it wraps (`BasetenClient`'s own)."""

    def list_teams(self, name: str | None = None, /) -> list[TeamV1]: ...

    def list_team_models(self, team_id: str, name: str | None = None, /) -> list[ModelV1]: ...

    def list_team_secrets(self, team_id: str, /) -> list[SecretV1]: ...

    def upsert_team_secret(self, team_id: str, name: str, value: SecretStr, /) -> SecretV1: ...

    def delete_team_secret(self, team_id: str, name: str, /) -> bool: ...


class TeamScopedClient:
    """A BasetenClient whose model lookups and secrets go through one team; every other
    call is the client's own (model IDs are global, so calls on an ID need no team)."""

    def __init__(self, client: TeamDirectory, team: str) -> None:
        self._client = client
        self.team = team
        # One view serves one pass: the team's ID is looked up once, then reused (the push
        # of the same pass needs it right after the model lookup).
        self._team_id: str | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def __repr__(self) -> str:
        return f"TeamScopedClient({self._client!r}, team={self.team!r})"

    def team_id(self) -> str:
        if self._team_id is None:
            matches = [t for t in self._client.list_teams(self.team) if t.name == self.team]
            if not matches:
                raise TeamNotFound(self.team)
            self._team_id = matches[0].id
        return self._team_id

    def list_models(self, name: str | None = None) -> list[ModelV1]:
        return self._client.list_team_models(self.team_id(), name)

    def find_model(self, name: str) -> ModelV1 | None:
        """The team's model with exactly this name; None if the team has none."""
        matches = [m for m in self.list_models(name) if m.name == name]
        if len(matches) > 1:
            raise AmbiguousModelName(name, [m.id for m in matches])
        return matches[0] if matches else None

    def list_secrets(self) -> list[SecretV1]:
        return self._client.list_team_secrets(self.team_id())

    def upsert_secret(self, name: str, value: SecretStr) -> SecretV1:
        return self._client.upsert_team_secret(self.team_id(), name, value)

    def delete_secret(self, name: str) -> bool:
        return self._client.delete_team_secret(self.team_id(), name)
