"""`BasetenSimulator`: the Management API, the truss push protocol and a control API on one port."""

from __future__ import annotations

from typing import Any

from baseten_operator.runtime.clock import Clock, RealClock
from baseten_operator.sim.baseten.app import SimApp
from baseten_operator.sim.baseten.audit import AuditLog, RequestLog
from baseten_operator.sim.baseten.audit_trail import DEFAULT_UI_EMAIL, acting_as, ui_actor
from baseten_operator.sim.baseten.control_api import ControlApi
from baseten_operator.sim.baseten.engine import SimEngine
from baseten_operator.sim.baseten.errors import bad_request, not_found
from baseten_operator.sim.baseten.faults import FaultInjector
from baseten_operator.sim.baseten.graphql import TrussGraphQL
from baseten_operator.sim.baseten.http import HttpServer
from baseten_operator.sim.baseten.keys import KeyRing
from baseten_operator.sim.baseten.lifecycle import LifecycleDurations
from baseten_operator.sim.baseten.payloads import AutoscalingUpdate, UpdateEnvironment, parse
from baseten_operator.sim.baseten.promotion_signals import SIGNALS
from baseten_operator.sim.baseten.ratelimit import Limit, RateLimiter
from baseten_operator.sim.baseten.records import DEFAULT_TEAM_ID, DEPLOY_FAILED
from baseten_operator.sim.baseten.s3 import S3Store


def _environment_settings(
    autoscaling_settings: dict | None,
    promotion_settings: dict | None,
    autoscaling_schedule_settings: dict | None,
) -> UpdateEnvironment:
    """Settings given to a control method, checked as an environment update's are."""
    groups = {
        "autoscaling_settings": autoscaling_settings,
        "promotion_settings": promotion_settings,
        "autoscaling_schedule_settings": autoscaling_schedule_settings,
    }
    sent = {group: value for group, value in groups.items() if value is not None}
    return parse(UpdateEnvironment, sent, "invalid settings")


class BasetenSimulator:
    def __init__(
        self,
        api_key: str = "sim-api-key",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        time_scale: float = 1.0,
        clock: Clock | None = None,
        durations: LifecycleDurations | None = None,
        rate_limits: bool = True,
        advertise_host: str | None = None,
    ) -> None:
        """`advertise_host`: the address clients reach the simulator at, where it is not the
        one it listens on (a container reaching the host's loopback through NAT): the truss
        upload credentials name it, so that a push from there can upload."""
        self.api_key = api_key
        self.clock: Clock = clock or RealClock()
        self.time_scale = time_scale
        self.engine = SimEngine(clock=self.clock, time_scale=time_scale, durations=durations)
        self.s3 = S3Store()
        self.faults = FaultInjector()
        self.rate_limiter = RateLimiter(self.clock, time_scale)
        self.rate_limiter.configure(enabled=rate_limits)
        self._audit = AuditLog()
        self.keys = KeyRing(api_key)
        self._requests = RequestLog()
        self._host = host
        self._port = port
        self._advertise_host = advertise_host
        self._url: str | None = None
        self._server: HttpServer | None = None
        self.app = SimApp(
            api_key=api_key,
            clock=self.clock,
            time_scale=time_scale,
            engine=self.engine,
            graphql=TrussGraphQL(self.engine, self.s3, lambda: self.advertised_url),
            s3=self.s3,
            faults=self.faults,
            limiter=self.rate_limiter,
            audit=self._audit,
            requests=self._requests,
            control=ControlApi(self._control_operations()),
            keys=self.keys,
        )

    # ----------------------------------------------------------------- server

    def start(self) -> str:
        """Serve on host:port (0 = any free port); returns the root URL."""
        if self._server is None:
            self._server = HttpServer(self.app, self._host, self._port)
            host, port = self._server.address
            self._url = f"http://{host}:{port}"
            self._server.start()
        return self.url

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> BasetenSimulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._url is None:
            raise RuntimeError("simulator not started")
        return self._url

    @property
    def advertised_url(self) -> str:
        """The root URL as clients reach it (`advertise_host`, else where it listens)."""
        if self._advertise_host is None:
            return self.url
        return f"http://{self._advertise_host}:{self.url.rsplit(':', 1)[1]}"

    @property
    def api_url(self) -> str:
        return self.url + "/v1"

    @property
    def remote_url(self) -> str:
        """What truss takes as its remote URL (it posts to {remote_url}/graphql/)."""
        return self.url

    # ----------------------------------------------------------------- control

    def seed_model(self, name: str, team: str | None = None) -> dict:
        """`team`: the name of a team (create_team) to create the model in; default the org's."""
        if team is None:
            return self.engine.controls.seed_model(name)
        return self.engine.controls.seed_model(name, self._team_id(team))

    def create_team(self, name: str) -> dict:
        return self.engine.create_team(name)

    def add_api_key(self, key: str, label: str, team: str | None = None) -> dict:
        """Accept `key`, bound to the team named `team` (None: organisation-wide). The
        audit log names the key of each call by `label`."""
        team_id = self._team_id(team) if team is not None else None
        self.keys.add(key, label, team_id)
        return {"label": label, "team_id": team_id}

    def revoke_api_key(self, key: str) -> dict:
        self.keys.revoke(key)
        return {"revoked": True}

    def _team_id(self, name: str) -> str:
        teams = self.engine.list_teams(name)
        if not teams:
            raise not_found(f"Team {name!r}")
        return str(teams[0]["id"])

    def seed_secret(self, name: str, value: str, team: str | None = None) -> dict:
        """A secret created outside the operator (the UI, the CLI): in the team named
        `team`, default the organisation's default team. Answers as an upsert does."""
        team_id = self._team_id(team) if team is not None else DEFAULT_TEAM_ID
        return self.engine.secrets.upsert(team_id, name, value)

    def secrets(self) -> list[dict]:
        """Every secret: name, id, team (its name), writes (upserts so far) and value_sha256
        (the SHA-256 of the value last written, hex); never the value itself."""
        return self.engine.secrets.state()

    def seed_deployment(
        self, model_id: str, name: str, *, status: str = "ACTIVE", **extra: Any
    ) -> dict:
        """extra: autoscaling_settings, labels, files, truss_config (see SimEngine)."""
        return self.engine.controls.seed_deployment(model_id, name, status=status, **extra)

    def seed_environment(
        self,
        model_id: str,
        name: str,
        *,
        current_deployment_id: str | None = None,
        autoscaling_settings: dict | None = None,
        promotion_settings: dict | None = None,
        autoscaling_schedule_settings: dict | None = None,
    ) -> dict:
        """`autoscaling_schedule_settings` as an environment update takes them (schedules
        without ids, a timezone)."""
        settings = _environment_settings(
            autoscaling_settings, promotion_settings, autoscaling_schedule_settings
        )
        return self.engine.controls.seed_environment(
            model_id,
            name,
            current_deployment_id=current_deployment_id,
            autoscaling_settings=settings.autoscaling_changes(),
            promotion_settings=settings.promotion_changes(),
            schedules=settings.schedule_edit(),
        )

    def fail_deployment(
        self, deployment_id: str, status: str = DEPLOY_FAILED, reason: str | None = None
    ) -> dict:
        """The deployment fails now; its logs say why (`reason`, else a default)."""
        return self.engine.controls.fail_deployment(deployment_id, status, reason)

    def inject_log(
        self,
        deployment_id: str,
        message: str,
        level: str | None = "ERROR",
        replica: str | None = None,
    ) -> dict:
        """A line in the deployment's logs now (level DEBUG, INFO, WARNING, ERROR or None):
        what a failing build or the model's code printed, a secret's value included if a
        test wants one there."""
        return self.engine.controls.inject_log(deployment_id, message, level, replica)

    def complete_deployment(self, deployment_id: str) -> dict:
        return self.engine.controls.complete_deployment(deployment_id)

    def complete_promotion(self, model_id: str, env: str) -> dict:
        return self.engine.controls.complete_promotion(model_id, env)

    def fail_promotion(self, model_id: str, env: str) -> dict:
        return self.engine.controls.fail_promotion(model_id, env)

    def deactivate(self, deployment_id: str) -> dict:
        """Baseten's inactivity TTL kicking in."""
        return self.engine.controls.deactivate_deployment(deployment_id)

    def ui_update_environment(
        self,
        model_id: str,
        env: str,
        autoscaling_settings: dict | None = None,
        promotion_settings: dict | None = None,
        autoscaling_schedule_settings: dict | None = None,
        email: str = DEFAULT_UI_EMAIL,
    ) -> dict:
        """A change made in Baseten's UI by the user `email`: applied at once (drift for the
        operator to find), audited with source UI. Takes what an environment update takes,
        autoscaling schedules included."""
        settings = _environment_settings(
            autoscaling_settings, promotion_settings, autoscaling_schedule_settings
        )
        with acting_as(ui_actor(email)):
            return self.engine.update_environment(
                model_id,
                env,
                settings.autoscaling_changes(),
                settings.promotion_changes(),
                settings.schedule_edit(),
                immediately=True,
            )["environment"]

    def ui_update_deployment_autoscaling(
        self,
        model_id: str,
        deployment_id: str,
        autoscaling_settings: dict,
        email: str = DEFAULT_UI_EMAIL,
    ) -> dict:
        """A deployment's autoscaling changed in the UI (answers as the API's PATCH)."""
        changes = parse(AutoscalingUpdate, autoscaling_settings, "invalid settings").changes()
        with acting_as(ui_actor(email)):
            return self.engine.update_deployment_autoscaling(model_id, deployment_id, changes)

    def ui_promote(
        self, model_id: str, env: str, deployment_id: str, email: str = DEFAULT_UI_EMAIL
    ) -> dict:
        """A promotion started from the UI (answers as the API's promote)."""
        with acting_as(ui_actor(email)):
            return self.engine.promote(model_id, env, deployment_id)

    def ui_signal_promotion(
        self, model_id: str, env: str, signal: str, email: str = DEFAULT_UI_EMAIL
    ) -> dict:
        """A button on a promotion in the UI: `signal` is one of the API's operations
        (cancel_promotion, pause_promotion, resume_promotion, force_cancel_promotion,
        force_roll_forward_promotion); answers as it does."""
        operation = SIGNALS.get(signal)
        if operation is None:
            raise bad_request(f"Unknown signal {signal!r}; expected one of {sorted(SIGNALS)}")
        with acting_as(ui_actor(email)):
            return operation(self.engine.promotion_signals, model_id, env)

    def set_traffic_profile(
        self,
        deployment_id: str,
        requests_per_second: float,
        share_5xx: float = 0.0,
        share_4xx: float = 0.0,
        latency_ms: dict[str, float] | None = None,
    ) -> dict:
        """The inference traffic the deployment would get with all of its environment's
        traffic, from now on (requests per simulated second, the shares answered 5xx and
        4xx, latency quantiles p50/p90/p95/p99 in ms): what its metrics and the Prometheus
        export (`/metrics`) report, following its share of the traffic over time."""
        return self.engine.controls.set_traffic_profile(
            deployment_id, requests_per_second, share_5xx, share_4xx, latency_ms
        )

    def inject_fault(self, endpoint: str, kind: str, count: int = 1, **params: Any) -> None:
        """kind: latency (seconds=, sim time), 5xx (status=), 429 (retry_after=), drop,
        body (body=: answered with 200 instead of the operation), omit (fields=: dotted
        members left out of the answer)."""
        self.faults.inject(endpoint, kind, count, **params)

    def clear_faults(self) -> None:
        """Forget every fault not yet used up (the simulator's state stays)."""
        self.faults.reset()

    def configure_rate_limits(
        self, enabled: bool | None = None, limits: dict[str, list[float]] | None = None
    ) -> None:
        """Turn limits off/on, or override some: {"retry": [requests, per_seconds], ...}."""
        overrides = (
            {name: Limit(int(spec[0]), float(spec[1])) for name, spec in limits.items()}
            if limits is not None
            else None
        )
        self.rate_limiter.configure(enabled=enabled, overrides=overrides)

    def tick(self) -> None:
        """Apply every lifecycle step due by now."""
        self.engine.advance_to_now()

    def audit_log(self) -> list[dict]:
        return self._audit.entries()

    def request_log(self, since: int | str = 0) -> list[dict]:
        """Every request served (GETs and faulted ones included), from index `since` on."""
        return self._requests.entries(int(since))

    def deployment_failure(self, deployment_id: str) -> dict:
        """{id, status, failure}: why its last load failed (a secret its team lacks), or None."""
        return self.engine.controls.deployment_failure(deployment_id)

    def uploaded_files(self, deployment_id: str) -> dict[str, str]:
        return self.engine.controls.uploaded_files(deployment_id)

    def reset(self) -> None:
        self.engine.reset()
        self.s3.reset()
        self.faults.reset()
        self.rate_limiter.reset()
        self._audit.clear()
        self.keys.reset()
        self._requests.clear()

    def _control_operations(self) -> dict[str, Any]:
        return {
            "health": lambda: {"ok": True},
            "seed_model": self.seed_model,
            "create_team": self.create_team,
            "add_api_key": self.add_api_key,
            "revoke_api_key": self.revoke_api_key,
            "seed_secret": self.seed_secret,
            "secrets": self.secrets,
            "seed_deployment": self.seed_deployment,
            "seed_environment": self.seed_environment,
            "fail_deployment": self.fail_deployment,
            "complete_deployment": self.complete_deployment,
            "complete_promotion": self.complete_promotion,
            "fail_promotion": self.fail_promotion,
            "deactivate": self.deactivate,
            "ui_update_environment": self.ui_update_environment,
            "ui_update_deployment_autoscaling": self.ui_update_deployment_autoscaling,
            "ui_promote": self.ui_promote,
            "ui_signal_promotion": self.ui_signal_promotion,
            "set_traffic_profile": self.set_traffic_profile,
            "inject_log": self.inject_log,
            "inject_fault": self.inject_fault,
            "clear_faults": self.clear_faults,
            "configure_rate_limits": self.configure_rate_limits,
            "tick": self.tick,
            "audit_log": self.audit_log,
            "request_log": self.request_log,
            "uploaded_files": self.uploaded_files,
            "deployment_failure": self.deployment_failure,
            "reset": self.reset,
        }
