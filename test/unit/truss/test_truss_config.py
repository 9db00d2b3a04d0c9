"""config.yaml from the CR's trussConfig (docs/contract.md section 5), checked against truss."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from baseten_operator.api.types import TrussConfig
from baseten_operator.truss.config import render_config_yaml, write_truss_dir

EXPECTED_COMPLETE: dict[str, Any] = {
    "model_name": "my-llm-model",
    "python_version": "py312",
    "resources": {"accelerator": "H100:1", "use_gpu": True},
    "secrets": {"docker-registry-secret": ""},
    "environment_variables": {"DD_SITE": "us5.datadoghq.com"},
    "base_image": {
        "image": "us-docker.pkg.dev/my-project/my-repo/vllm:0.16.0",
        "docker_auth": {
            "auth_method": "GCP_SERVICE_ACCOUNT_JSON",
            "secret_name": "docker-registry-secret",
            "registry": "us-docker.pkg.dev",
        },
    },
    "docker_server": {
        "start_command": "sh -c 'bash /app/data/setup.sh'",
        "readiness_endpoint": "/health",
        "liveness_endpoint": "/health",
        "predict_endpoint": "/v1/completions",
        "server_port": 8000,
    },
    "runtime": {"predict_concurrency": 256},
    "model_metadata": {"tags": ["openai-compatible"]},
}

# Loads a truss directory with truss (in a child: truss stays out of the test process)
# and prints the config truss understood.
_LOAD_WITH_TRUSS = """
import json, sys
from truss.truss_handle.build import load
config = load(sys.argv[1]).spec.config
config.validate_forbid_extra()
print(json.dumps(config.to_dict(verbose=True)))
"""


def _load_with_truss(truss_dir: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _LOAD_WITH_TRUSS, str(truss_dir)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return loaded


def test_complete_example_maps_every_field(complete_config: dict[str, Any]) -> None:
    rendered = yaml.safe_load(render_config_yaml("my-llm-model", complete_config))
    assert rendered == EXPECTED_COMPLETE


def test_pydantic_model_renders_like_the_dict(complete_config: dict[str, Any]) -> None:
    model = TrussConfig.model_validate(complete_config)
    assert render_config_yaml("m", model) == render_config_yaml("m", complete_config)


def test_absent_and_empty_fields_are_left_out() -> None:
    config = {
        "pythonVersion": "",
        "resources": {"accelerator": ""},
        "secrets": {},
        "baseImage": {"image": "img"},
        "dockerServer": {"noBuild": True, "startCommand": "", "serverPort": 0},
        "modelMetadata": {"exampleModelInput": {"prompt": "hi", "n": [1, 2.5]}, "tags": []},
    }
    assert yaml.safe_load(render_config_yaml("m", config)) == {
        "model_name": "m",
        # CPU only: truss refuses an empty accelerator.
        "resources": {},
        "base_image": {"image": "img"},
        "docker_server": {"no_build": True, "server_port": 0},
        "model_metadata": {"example_model_input": {"prompt": "hi", "n": [1, 2.5]}},
    }


def test_text_needing_quotes_survives_yaml() -> None:
    config = {
        "resources": {"accelerator": "L4"},
        "baseImage": {"image": "img"},
        "environmentVariables": {"A": "yes", "B": "0123", "C": "a: b # c", "D": "é\n"},
    }
    rendered = yaml.safe_load(render_config_yaml("model: 'x'", config))
    assert rendered["model_name"] == "model: 'x'"
    assert rendered["environment_variables"] == config["environmentVariables"]


def test_write_truss_dir_with_and_without_script(tmp_path: Path) -> None:
    config = {"resources": {"accelerator": "L4"}, "baseImage": {"image": "img"}}
    with_script = write_truss_dir(tmp_path / "a", "m", config, "#!/bin/sh\necho é\n")
    script = with_script / "data" / "setup.sh"
    assert script.read_text(encoding="utf-8") == "#!/bin/sh\necho é\n"
    assert script.stat().st_mode & stat.S_IXUSR
    assert (with_script / "config.yaml").read_text() == render_config_yaml("m", config)

    without_script = write_truss_dir(tmp_path / "b", "m", config, "")
    assert sorted(p.name for p in without_script.iterdir()) == ["config.yaml"]


def test_truss_loads_the_complete_example_and_round_trips(
    tmp_path: Path, complete_config: dict[str, Any], complete_script: str
) -> None:
    truss_dir = write_truss_dir(
        tmp_path / "truss", "my-llm-model", complete_config, complete_script
    )
    loaded = _load_with_truss(truss_dir)
    assert loaded["model_name"] == "my-llm-model"
    assert loaded["python_version"] == "py312"
    assert loaded["resources"]["accelerator"] == "H100"  # truss writes a count of 1 implicitly
    assert loaded["resources"]["use_gpu"] is True
    assert loaded["secrets"] == EXPECTED_COMPLETE["secrets"]
    assert loaded["environment_variables"] == EXPECTED_COMPLETE["environment_variables"]
    base_image = loaded["base_image"]
    assert base_image["image"] == EXPECTED_COMPLETE["base_image"]["image"]
    for key, value in EXPECTED_COMPLETE["base_image"]["docker_auth"].items():
        assert base_image["docker_auth"][key] == value
    for key, value in EXPECTED_COMPLETE["docker_server"].items():
        assert loaded["docker_server"][key] == value
    assert loaded["runtime"]["predict_concurrency"] == 256
    assert loaded["model_metadata"] == EXPECTED_COMPLETE["model_metadata"]
    assert loaded["data_dir"] == "data"


def test_a_cpu_only_model_maps_cpu_and_memory_and_truss_loads_it(tmp_path: Path) -> None:
    config = {
        "resources": {"cpu": "2", "memory": "4Gi", "useGpu": False},
        "baseImage": {"image": "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.29.0"},
    }
    rendered = render_config_yaml("cpu-model", config)
    assert "cpu: '2'" in rendered  # a string, as truss wants it, not the number 2
    assert yaml.safe_load(rendered)["resources"] == {"use_gpu": False, "cpu": "2", "memory": "4Gi"}
    loaded = _load_with_truss(write_truss_dir(tmp_path / "truss", "cpu-model", config, ""))
    assert loaded["resources"]["cpu"] == "2"
    assert loaded["resources"]["memory"] == "4Gi"
    assert loaded["resources"]["use_gpu"] is False
    assert not loaded["resources"].get("accelerator")
