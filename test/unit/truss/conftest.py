"""Shared inputs of the truss unit tests: the two vectors of docs/truss.md."""

from __future__ import annotations

import copy
from typing import Any

import pytest

SIMPLE_CONFIG: dict[str, Any] = {
    "resources": {"accelerator": "H100:1"},
    "baseImage": {"image": "us-docker.pkg.dev/my-project/my-repo/vllm:0.16.0"},
    "dockerServer": {"predictEndpoint": "/v1/completions", "serverPort": 8000},
    "setupScript": {"configMapRef": {"name": "my-model-setup", "key": "setup.sh"}},
}
SIMPLE_SCRIPT = (
    "#!/bin/bash\nset -e\npip install -r /app/data/requirements.txt && echo ready > /tmp/ready\n"
)

COMPLETE_SCRIPT = '#!/bin/bash\necho "done"'
# The user guide's complete example (README.md), with the inline setup script.
COMPLETE_CONFIG: dict[str, Any] = {
    "pythonVersion": "py312",
    "resources": {"accelerator": "H100:1", "useGpu": True},
    "baseImage": {
        "image": "us-docker.pkg.dev/my-project/my-repo/vllm:0.16.0",
        "dockerAuth": {
            "authMethod": "GCP_SERVICE_ACCOUNT_JSON",
            "secretName": "docker-registry-secret",
            "registry": "us-docker.pkg.dev",
        },
    },
    "dockerServer": {
        "startCommand": "sh -c 'bash /app/data/setup.sh'",
        "readinessEndpoint": "/health",
        "livenessEndpoint": "/health",
        "predictEndpoint": "/v1/completions",
        "serverPort": 8000,
    },
    "runtime": {"predictConcurrency": 256},
    "modelMetadata": {"tags": ["openai-compatible"]},
    "secrets": {"docker-registry-secret": ""},
    "environmentVariables": {"DD_SITE": "us5.datadoghq.com"},
    "setupScript": {"inline": COMPLETE_SCRIPT},
}


@pytest.fixture
def simple_config() -> dict[str, Any]:
    return copy.deepcopy(SIMPLE_CONFIG)


@pytest.fixture
def complete_config() -> dict[str, Any]:
    return copy.deepcopy(COMPLETE_CONFIG)


@pytest.fixture
def simple_script() -> str:
    return SIMPLE_SCRIPT


@pytest.fixture
def complete_script() -> str:
    return COMPLETE_SCRIPT
