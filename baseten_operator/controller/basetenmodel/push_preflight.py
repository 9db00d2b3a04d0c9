"""What truss would refuse, checked before a push is launched (docs/contract.md section 5).

A push of a config truss rejects fails minutes later in a child process with a pydantic
dump; checking here gives the user a FAILED status naming the CR field, and no push.
The rules mirror truss 0.18's own `DockerServer` validation (truss/base/truss_config.py):
`server_port`, `predict_endpoint`, `readiness_endpoint` and `liveness_endpoint` have no
default, and `start_command` is required unless `no_build` is true.
"""

from __future__ import annotations

from baseten_operator.api.types import DockerServer, TrussConfig
from baseten_operator.truss.naming import InvalidPushName, validate_push_names

_DOCKER_SERVER = "trussConfig.dockerServer"
# (python attribute, CR field) that truss requires whenever docker_server is given.
_ALWAYS_REQUIRED = (
    ("server_port", "serverPort"),
    ("predict_endpoint", "predictEndpoint"),
    ("readiness_endpoint", "readinessEndpoint"),
    ("liveness_endpoint", "livenessEndpoint"),
)


def _is_set(value: object) -> bool:
    # truss/config.py leaves an empty string out of config.yaml: for truss it is missing.
    return value is not None and value != ""


def _docker_server_problem(server: DockerServer) -> str | None:
    for attribute, field in _ALWAYS_REQUIRED:
        if not _is_set(getattr(server, attribute)):
            return f"{_DOCKER_SERVER}.{field} is required by truss"
    if not server.no_build and not _is_set(server.start_command):
        return f"{_DOCKER_SERVER}.startCommand is required by truss unless noBuild is true"
    return None


def push_problem(model_name: str, environment: str, truss_config: TrussConfig) -> str | None:
    """Why truss would reject this push, naming the field; None when it can go ahead."""
    try:
        validate_push_names(model_name, environment)
    except InvalidPushName as error:
        return str(error)
    if truss_config.docker_server is not None:
        return _docker_server_problem(truss_config.docker_server)
    return None
