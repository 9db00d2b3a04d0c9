"""The truss directory the operator pushes: config.yaml from the CR's trussConfig, plus the script.

The CR spells fields in camelCase; truss's config.yaml in snake_case (docs/contract.md section 5).
Only what the CR sets is written: truss fills in its own defaults, and a CPU-only model
(`cpu`/`memory`, no accelerator) gets no accelerator key, which truss would refuse empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from baseten_operator.truss.naming import TrussConfigLike, truss_config_dict

CONFIG_FILE = "config.yaml"
SETUP_SCRIPT_FILE = Path("data") / "setup.sh"

# (CR key, config.yaml key) of nested objects whose fields map one to one.
_RESOURCES_FIELDS = (
    ("accelerator", "accelerator"),
    ("useGpu", "use_gpu"),
    ("cpu", "cpu"),  # a string, so YAML quotes a bare number: cpu: '2'
    ("memory", "memory"),
)
_DOCKER_AUTH_FIELDS = (
    ("authMethod", "auth_method"),
    ("secretName", "secret_name"),
    ("registry", "registry"),
)
_DOCKER_SERVER_FIELDS = (
    ("noBuild", "no_build"),
    ("startCommand", "start_command"),
    ("readinessEndpoint", "readiness_endpoint"),
    ("livenessEndpoint", "liveness_endpoint"),
    ("predictEndpoint", "predict_endpoint"),
    ("serverPort", "server_port"),
)
_RUNTIME_FIELDS = (("predictConcurrency", "predict_concurrency"),)
_MODEL_METADATA_FIELDS = (("exampleModelInput", "example_model_input"), ("tags", "tags"))


def _present(value: Any) -> bool:
    """Set in the CR: a present false/0 counts, an empty string, list or map does not."""
    if value is None:
        return False
    if isinstance(value, str | list | dict):
        return len(value) > 0
    return True


def _mapped(source: Mapping[str, Any], fields: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    return {snake: source[camel] for camel, snake in fields if _present(source.get(camel))}


def truss_config_yaml_dict(model_name: str, truss_config: TrussConfigLike) -> dict[str, Any]:
    """The config.yaml content as a dict (snake_case keys)."""
    spec = truss_config_dict(truss_config)
    config: dict[str, Any] = {"model_name": model_name}
    if _present(spec.get("pythonVersion")):
        config["python_version"] = spec["pythonVersion"]

    resources = spec.get("resources") or {}
    config["resources"] = _mapped(resources, _RESOURCES_FIELDS)

    for camel, snake in (("secrets", "secrets"), ("environmentVariables", "environment_variables")):
        if _present(spec.get(camel)):
            # Go's map[string]string: a null value is "".
            config[snake] = {k: "" if v is None else v for k, v in spec[camel].items()}

    base_image = spec.get("baseImage") or {}
    config["base_image"] = {"image": base_image.get("image") or ""}
    docker_auth = base_image.get("dockerAuth")
    if docker_auth is not None:
        config["base_image"]["docker_auth"] = {
            snake: docker_auth.get(camel) or "" for camel, snake in _DOCKER_AUTH_FIELDS
        }

    for camel, snake, fields in (
        ("dockerServer", "docker_server", _DOCKER_SERVER_FIELDS),
        ("runtime", "runtime", _RUNTIME_FIELDS),
        ("modelMetadata", "model_metadata", _MODEL_METADATA_FIELDS),
    ):
        if spec.get(camel) is not None:
            config[snake] = _mapped(spec[camel], fields)
    return config


def render_config_yaml(model_name: str, truss_config: TrussConfigLike) -> str:
    return yaml.safe_dump(
        truss_config_yaml_dict(model_name, truss_config),
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
    )


def write_truss_dir(
    path: Path | str, model_name: str, truss_config: TrussConfigLike, setup_script: str
) -> Path:
    """Write config.yaml (and data/setup.sh when there is a script) under `path`."""
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    (root / CONFIG_FILE).write_text(render_config_yaml(model_name, truss_config), encoding="utf-8")
    if setup_script:
        script = root / SETUP_SCRIPT_FILE
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(setup_script, encoding="utf-8")
        script.chmod(0o755)
    return root
