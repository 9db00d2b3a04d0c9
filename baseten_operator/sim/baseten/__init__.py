"""Baseten simulator: Management API (/v1), truss push (GraphQL + S3), lifecycle, faults.

    sim = BasetenSimulator("key", time_scale=0.01)   # or clock=FakeClock() for unit-style tests
    sim.start()      # -> http://127.0.0.1:PORT ; sim.api_url = .../v1 ; sim.remote_url for truss

State advances lazily: every request (and `tick()`) applies the lifecycle steps due by the
clock's now, so a FakeClock makes everything deterministic. Durations are
`LifecycleDurations` (simulated seconds) multiplied by `time_scale`.

Control API: the methods of `BasetenSimulator`, also `POST /_sim/<method>` with JSON keyword
arguments (`GET` for audit_log, uploaded_files, health). Fault and rate-limit endpoint
names: list_teams, list_team_models, list_models, get_model, delete_model,
list_deployments, get_deployment, delete_deployment, activate, deactivate, retry,
update_deployment_autoscaling,
list_environments, create_environment, get_environment, update_environment,
delete_environment, promote, cancel_promotion, pause_promotion, resume_promotion,
force_cancel_promotion, force_roll_forward_promotion, get_deployment_metrics,
get_deployment_logs, list_audit_logs, list_secrets, upsert_secret, delete_secret,
list_team_secrets, upsert_team_secret, delete_team_secret, graphql,
graphql:<root field>, s3, metrics_export (the Prometheus export), or * for any.

Observability (docs/baseten-api.md): `set_traffic_profile(deployment_id,
requests_per_second, share_5xx=0, share_4xx=0, latency_ms=None)` gives a deployment the
inference traffic it would get with all of its environment's traffic; it gets its share over
time (stable, promoting, none), which the metrics endpoint and Baseten's Prometheus export
(`GET /metrics`, with the API key) report. Every change the simulator applies is in the
model's Baseten audit log (`GET /v1/models/{id}/audit_logs`) with the caller: an API key's
prefix and name, or a UI user's email for `ui_update_environment`,
`ui_update_deployment_autoscaling`, `ui_promote` and `ui_signal_promotion` (each takes
`email`). Deployments log their build and deploy (an ERROR line saying why one failed:
`fail_deployment(..., reason=)`); `inject_log(deployment_id, message, level, replica)`
adds a line.

Autoscaling schedules (docs/baseten-api.md): `seed_environment(..., autoscaling_schedule_settings=)`
and `ui_update_environment(model_id, env, autoscaling_schedule_settings=)` take what an
environment update takes and apply it at once (the UI's click-ops: drift for the operator).

Teams: `create_team(name)`, `seed_model(name, team=...)`; model names are unique per team.
`add_api_key(key, label, team=None)` accepts another key, bound to a team when `team` is
given (it sees only that team's models: others answer 404, writes into another team 403);
`revoke_api_key(key)`. Audit entries carry `key`: the label of the key the call carried.

Secrets: `seed_secret(name, value, team=None)` creates one as the UI would; `secrets()`
lists every secret with its id, team, number of writes and the SHA-256 of its value (the
value itself is never kept, and the audit log keeps an upsert's name only). `/v1/secrets`
works on the caller's primary team: a team key's own, else the organisation's default team.
A pushed deployment whose truss config names a secret its model's team lacks fails to load
(FAILED); `deployment_failure(deployment_id)` says which secrets.

Modules: `simulator.py` (`BasetenSimulator`: one port, its control methods) serves `app.py`
(auth, request log, faults, rate limits, audit) over `http.py`; `rest.py` routes /v1 to the
engine with `payloads.py`'s request bodies, `graphql.py` and `s3.py` speak the truss push
protocol, `control_api.py` is `/_sim/`. `engine.py` (`SimEngine`: the API's operations)
works on `account.py` (records, lookups, rendering through `views.py`), with `lifecycle.py`
moving deployments and promotions along the `timeline.py` (`rollout.py`: a promotion's
traffic, step by step), `traffic.py` the traffic each deployment gets over time (read by
`deployment_metrics.py` and `prometheus_export.py`), `audit_trail.py` and `audit_logs.py`
Baseten's audit log, `deployment_logs.py` a deployment's logs, `autoscaling_schedules.py`
editing environments' schedules and telling which one is in force, `team_secrets.py` keeping
the teams' secrets, and `controls.py` acting for the test (seeding, and what Baseten or its
UI would do).

Must not import the operator (`api`, `baseten`, `truss`, `controller`, `sandbox`, `cli`,
`main`): it answers as Baseten does (docs/baseten-api.md), whatever the client believes. From
`runtime` only the clock and the bounded HTTP server (httpserver.py).
"""

from baseten_operator.sim.baseten.engine import SimEngine
from baseten_operator.sim.baseten.lifecycle import LifecycleDurations
from baseten_operator.sim.baseten.simulator import BasetenSimulator

__all__ = ["BasetenSimulator", "LifecycleDurations", "SimEngine"]
