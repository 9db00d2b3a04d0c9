"""The GraphQL calls `truss push` makes, answered from the simulator's state.

Only what truss sends is understood: one anonymous (or named) operation whose first
root field selects the resolver; arguments are literals or `$variables`. Selection
sets are ignored: every resolver answers with all the fields truss reads.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from baseten_operator.sim.baseten import views
from baseten_operator.sim.baseten.access import check_model, check_team
from baseten_operator.sim.baseten.engine import SimEngine
from baseten_operator.sim.baseten.errors import SimError
from baseten_operator.sim.baseten.keys import ApiKey
from baseten_operator.sim.baseten.s3 import BUCKET, S3Store, unpack_truss

MUTATIONS = frozenset({"create_model_from_truss", "create_model_version_from_truss"})
# A pushed truss: its config.yaml (decoded) and its files by path.
Truss = tuple[dict[str, Any], dict[str, str]]


class GraphQLError(Exception):
    def __init__(self, message: str, code: str = "BAD_REQUEST") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


# ------------------------------------------------------------------ parsing

_TOKEN = re.compile(
    r"""
    (?P<skip>[\s,]+|\#[^\n]*)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<name>[_A-Za-z][_0-9A-Za-z]*)
  | (?P<punct>\.\.\.|[{}()\[\]:$!=@])
    """,
    re.VERBOSE,
)


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise GraphQLError(f"Syntax error at position {pos}")
        pos = match.end()
        kind = match.lastgroup or ""
        if kind != "skip":
            tokens.append((kind, match.group()))
    return tokens


@dataclass(frozen=True)
class RootField:
    name: str
    args: dict[str, Any]


class _Parser:
    def __init__(self, text: str, variables: dict[str, Any]) -> None:
        self._tokens = _tokens(text)
        self._pos = 0
        self._variables = variables

    def _peek(self) -> tuple[str, str]:
        return self._tokens[self._pos] if self._pos < len(self._tokens) else ("eof", "")

    def _next(self) -> tuple[str, str]:
        token = self._peek()
        self._pos += 1
        return token

    def _expect(self, value: str) -> None:
        token = self._next()
        if token[1] != value:
            raise GraphQLError(f"Syntax error: expected {value!r}, got {token[1]!r}")

    def _skip_balanced(self, opening: str, closing: str) -> None:
        depth = 0
        while True:
            kind, value = self._next()
            if kind == "eof":
                raise GraphQLError("Syntax error: unbalanced brackets")
            depth += {opening: 1, closing: -1}.get(value, 0)
            if depth == 0:
                return

    def root_field(self) -> RootField:
        kind, value = self._peek()
        if kind == "name" and value in ("query", "mutation", "subscription"):
            self._next()
            if self._peek()[0] == "name":
                self._next()
            if self._peek()[1] == "(":
                self._skip_balanced("(", ")")
        self._expect("{")
        kind, name = self._next()
        if kind != "name":
            raise GraphQLError("Syntax error: expected a field name")
        if self._peek()[1] == ":":  # alias
            self._next()
            name = self._next()[1]
        args: dict[str, Any] = {}
        if self._peek()[1] == "(":
            self._next()
            while self._peek()[1] != ")":
                arg = self._next()[1]
                self._expect(":")
                args[arg] = self._value()
            self._next()
        return RootField(name, args)

    def _value(self) -> Any:
        kind, value = self._next()
        if kind == "string":
            return json.loads(value)
        if kind == "number":
            return json.loads(value)
        if value == "$":
            return self._variables.get(self._next()[1])
        if value == "[":
            items = []
            while self._peek()[1] != "]":
                items.append(self._value())
            self._next()
            return items
        if value == "{":
            obj = {}
            while self._peek()[1] != "}":
                key = self._next()[1]
                self._expect(":")
                obj[key] = self._value()
            self._next()
            return obj
        if kind == "name":
            return {"true": True, "false": False, "null": None}.get(value, value)
        raise GraphQLError(f"Syntax error: unexpected {value!r}")


def parse_root_field(query: str, variables: dict[str, Any] | None = None) -> RootField:
    return _Parser(query, variables or {}).root_field()


# ------------------------------------------------------------------ resolving


def _decode_config(encoded: Any) -> dict[str, Any]:
    """truss sends its config as base64 of JSON."""
    try:
        config = json.loads(base64.b64decode(str(encoded)))
    except (binascii.Error, ValueError) as exc:
        raise GraphQLError(f"config is not base64-encoded JSON: {exc}") from exc
    if not isinstance(config, dict):
        raise GraphQLError("config must be a JSON object")
    return config


class TrussGraphQL:
    def __init__(self, engine: SimEngine, s3: S3Store, endpoint_url: Callable[[], str]) -> None:
        self._engine = engine
        self._s3 = s3
        self._endpoint_url = endpoint_url
        self._resolvers: dict[str, Callable[[dict[str, Any], ApiKey], Any]] = {
            "teams": self._teams,
            "models": self._models,
            "truss_validation": self._truss_validation,
            "model_s3_upload_credentials": self._upload_credentials,
            "create_model_from_truss": self._create_model,
            "create_model_version_from_truss": self._create_model_version,
        }

    def execute(self, field: RootField, caller: ApiKey) -> dict[str, Any]:
        """The full GraphQL response body (`data` or `errors`) for one root field."""
        resolver = self._resolvers.get(field.name)
        try:
            if resolver is None:
                raise GraphQLError(
                    f"Cannot query field '{field.name}'", "GRAPHQL_VALIDATION_FAILED"
                )
            return {"data": {field.name: resolver(field.args, caller)}}
        except SimError as exc:
            return _errors(exc.message, exc.code)
        except GraphQLError as exc:
            return _errors(exc.message, exc.code)

    def _teams(self, args: dict[str, Any], caller: ApiKey) -> list[dict]:
        teams = self._engine.list_teams(team_id=caller.team_id)
        return [{"id": t["id"], "name": t["name"], "default": t["default"]} for t in teams]

    def _models(self, args: dict[str, Any], caller: ApiKey) -> list[dict]:
        team_id = args.get("team_id")
        if team_id is not None:
            check_team(caller, str(team_id), write=False)
            if not self._engine.has_team(str(team_id)):
                return []
        names = {t["id"]: t["name"] for t in self._engine.list_teams()}
        scope = str(team_id) if team_id is not None else caller.team_id
        return [
            {
                "id": m["id"],
                "name": m["name"],
                "team": {"id": team, "name": names.get(team, "")},
            }
            for m in self._engine.list_models(team_id=scope)
            for team in [self._engine.team_of_model(m["id"]) or views.TEAM_ID]
        ]

    def _truss_validation(self, args: dict[str, Any], caller: ApiKey) -> dict:
        _decode_config(args.get("config"))
        return {"success": True, "details": json.dumps({"errors": [], "warnings": []})}

    def _upload_credentials(self, args: dict[str, Any], caller: ApiKey) -> dict:
        return {
            "s3_bucket": BUCKET,
            "s3_key": f"models/{uuid.uuid4().hex}.tgz",
            "aws_access_key_id": "SIMACCESSKEY",
            "aws_secret_access_key": "sim-secret-key",
            "aws_session_token": "sim-session-token",
            # Extra keys go to boto3.resource("s3", ...): uploads come back to us.
            "endpoint_url": self._endpoint_url(),
            "region_name": "us-east-1",
        }

    def _uploaded_truss(self, s3_key: Any) -> dict[str, str]:
        archive = self._s3.object(str(s3_key))
        if archive is None:
            raise GraphQLError(f"No upload found at s3_key {s3_key}", "RESOURCE_NOT_FOUND")
        try:
            return unpack_truss(archive)
        except Exception as exc:  # any unreadable archive is the client's fault
            raise GraphQLError(f"Uploaded truss is not a tar archive: {exc}") from exc

    @staticmethod
    def _labels(args: dict[str, Any]) -> dict[str, Any] | None:
        metadata = args.get("user_deploy_metadata")
        return json.loads(metadata) if isinstance(metadata, str) else None

    def _read_truss(self, args: dict[str, Any]) -> Truss:
        """The pushed config and files, read before anything is created: a bad upload
        creates no model."""
        return _decode_config(args.get("config")), self._uploaded_truss(args.get("s3_key"))

    def _deploy(self, model_id: str, name: Any, truss: Truss, args: dict[str, Any]) -> dict:
        config, files = truss
        return self._engine.create_pushed_deployment(
            model_id, name, files=files, truss_config=config, labels=self._labels(args)
        )

    def _create_model(self, args: dict[str, Any], caller: ApiKey) -> dict:
        team_id = _push_team(args, caller)
        truss = self._read_truss(args)
        model = self._engine.create_model(str(args.get("name") or ""), team_id)
        deployment = self._deploy(model["id"], args.get("version_name"), truss, args)
        self._promote_if_asked(args, deployment, scale_down_previous=True)
        return self._model_version(model["id"], model["name"], deployment)

    def _create_model_version(self, args: dict[str, Any], caller: ApiKey) -> dict:
        truss = self._read_truss(args)
        check_model(self._engine, caller, str(args.get("model_id")))
        model = self._engine.get_model(str(args.get("model_id")))
        deployment = self._deploy(model["id"], args.get("name"), truss, args)
        self._promote_if_asked(
            args,
            deployment,
            scale_down_previous=bool(args.get("scale_down_old_production", True)),
            preserve_env_instance_type=bool(args.get("preserve_env_instance_type", True)),
        )
        return self._model_version(model["id"], model["name"], deployment)

    def _promote_if_asked(
        self,
        args: dict[str, Any],
        deployment: dict,
        *,
        scale_down_previous: bool,
        preserve_env_instance_type: bool = True,
    ) -> None:
        env = args.get("environment_name")
        if env:
            self._engine.promote(
                deployment["model_id"],
                str(env),
                deployment["id"],
                scale_down_previous_deployment=scale_down_previous,
                preserve_env_instance_type=preserve_env_instance_type,
            )

    @staticmethod
    def _model_version(model_id: str, model_name: str, deployment: dict) -> dict:
        return {
            "model_version": {
                "id": deployment["id"],
                "oracle": {
                    "id": model_id,
                    "name": model_name,
                    "hostname": f"model-{model_id}.sim.baseten.local",
                },
                "instance_type": {"name": deployment["instance_type_name"]},
            }
        }


def _push_team(args: dict[str, Any], caller: ApiKey) -> str:
    """The team a new model is created in: the one named, else the organisation's default.

    A team-bound key must name its team, as on Baseten (UNAUTHORIZED_ACCESS otherwise).
    """
    named = args.get("team_id")
    if named is None:
        if caller.team_id is not None:
            raise GraphQLError(
                f"API key {caller.label!r} is bound to a team: name it (team_id)",
                "UNAUTHORIZED_ACCESS",
            )
        return views.TEAM_ID
    check_team(caller, str(named), write=True)
    return str(named)


def _errors(message: str, code: str) -> dict[str, Any]:
    return {"data": None, "errors": [{"message": message, "extensions": {"code": code}}]}
