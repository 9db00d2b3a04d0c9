"""What a team-bound key may reach: its team's models only.

Another team's model is invisible (404, as if it did not exist); writing into another
team (its routes, a push naming it) is forbidden (403). Organisation keys reach all.
"""

from __future__ import annotations

from baseten_operator.sim.baseten.engine import SimEngine
from baseten_operator.sim.baseten.errors import SimError, not_found
from baseten_operator.sim.baseten.keys import ApiKey


def forbidden(message: str) -> SimError:
    return SimError(403, "FORBIDDEN", message)


def check_team(caller: ApiKey, team_id: str, *, write: bool) -> None:
    if caller.team_id is None or caller.team_id == team_id:
        return
    if write:
        raise forbidden(f"API key {caller.label!r} may not write to team {team_id}")
    raise not_found(f"Team {team_id}")


def check_model(engine: SimEngine, caller: ApiKey, model_id: str) -> None:
    if caller.team_id is None:
        return
    team = engine.team_of_model(model_id)
    if team is not None and team != caller.team_id:
        raise not_found(f"Model {model_id}")


def check_route(engine: SimEngine, caller: ApiKey, params: dict[str, str], method: str) -> None:
    team_id = params.get("team_id")
    if team_id is not None:
        check_team(caller, team_id, write=method != "GET")
    model_id = params.get("model_id")
    if model_id is not None:
        check_model(engine, caller, model_id)
