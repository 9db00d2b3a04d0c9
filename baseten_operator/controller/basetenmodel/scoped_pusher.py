"""The truss pusher as one namespace's CRs see it: their pushes carry the namespace's API
key and Baseten team."""

from __future__ import annotations

import dataclasses

import structlog

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.baseten.teams import TeamScopedClient
from baseten_operator.controller.shared.ports import Pusher
from baseten_operator.truss.pusher import PushOutcome, PushRequest

log = structlog.get_logger(__name__)


class ScopedPusher:
    def __init__(
        self, pusher: Pusher, api_key: str | None, team_client: TeamScopedClient | None
    ) -> None:
        self._pusher = pusher
        self._api_key = api_key
        # truss takes the team's ID, not its name: the team view looks it up (once a pass).
        self._team_client = team_client

    def has_capacity(self) -> bool:
        return self._pusher.has_capacity()

    def in_flight(self, deployment_name: str) -> bool:
        return self._pusher.in_flight(deployment_name)

    def take_outcome(self, key: str) -> PushOutcome | None:
        return self._pusher.take_outcome(key)

    def launch(self, req: PushRequest) -> bool:
        team_id = None
        if self._team_client is not None:
            try:
                team_id = self._team_client.team_id()
            except BasetenAPIError as error:
                log.warning("team lookup for a push failed", key=req.key, error=str(error))
                return False  # retried on the next pass, as when there is no capacity
        scoped = dataclasses.replace(req, api_key=self._api_key, team_id=team_id)
        return self._pusher.launch(scoped)
