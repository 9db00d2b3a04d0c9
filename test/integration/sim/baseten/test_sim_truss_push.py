"""A real `truss push` (truss 0.18.36, in a child process) against the simulator."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
import yaml

from baseten_operator.sim.baseten import BasetenSimulator

pytestmark = pytest.mark.integration

API_KEY = "push-key"
TIME_SCALE = 0.01
CONFIG = {
    "model_name": "tiny",
    "base_image": {"image": "python:3.11-slim"},
    "docker_server": {
        "start_command": "sh /app/data/setup.sh && python -m http.server 8000",
        "server_port": 8000,
        "predict_endpoint": "/predict",
        "readiness_endpoint": "/",
        "liveness_endpoint": "/",
    },
    "resources": {"cpu": "2", "memory": "4Gi"},
}
SETUP = "#!/bin/sh\nset -e\necho 'setting up'\n"

# truss mutates os.environ (it strips AWS_* for the upload): run it in its own process.
PUSH_SCRIPT = """
import json, pathlib, sys, warnings
warnings.simplefilter("ignore", DeprecationWarning)  # pathspec's GitWildMatchPattern
from truss.remote.baseten.remote import BasetenRemote
from truss.truss_handle.build import load
url, key, truss_dir, model_name, deployment_name = sys.argv[1:6]
service = BasetenRemote(url, key).push(
    load(truss_dir),
    model_name=model_name,
    working_dir=pathlib.Path(truss_dir),
    publish=True,
    deployment_name=deployment_name,
)
print(json.dumps({"model_id": service.model_id, "deployment_id": service.model_version_id}))
"""


@pytest.fixture
def live_sim() -> Iterator[BasetenSimulator]:
    # A pushed deployment (min_replica 0) stays ACTIVE for its scale_down_delay, 900 s: nine
    # seconds at this time scale, plenty to observe it.
    simulator = BasetenSimulator(API_KEY, time_scale=TIME_SCALE)
    simulator.start()
    try:
        yield simulator
    finally:
        simulator.stop()


def write_truss(root: Path) -> Path:
    (root / "data").mkdir(parents=True)
    (root / "config.yaml").write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    (root / "data" / "setup.sh").write_text(SETUP)
    return root


def push(sim: BasetenSimulator, truss_dir: Path, deployment_name: str) -> dict:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            PUSH_SCRIPT,
            sim.remote_url,
            API_KEY,
            str(truss_dir),
            "tiny",
            deployment_name,
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def eventually(check: Callable[[], bool], what: Callable[[], str], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what()}")
        time.sleep(0.02)


def test_truss_push_creates_model_and_deployments(
    live_sim: BasetenSimulator, tmp_path: Path
) -> None:
    truss_dir = write_truss(tmp_path / "truss")
    first = push(live_sim, truss_dir, "tiny-abc123")

    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {API_KEY}"
    models = http.get(f"{live_sim.api_url}/models", params={"name": "tiny"}).json()["models"]
    assert [m["id"] for m in models] == [first["model_id"]]
    dep_url = f"{live_sim.api_url}/models/{first['model_id']}/deployments/{first['deployment_id']}"
    deployment = http.get(dep_url).json()
    assert deployment["name"] == "tiny-abc123"
    assert deployment["instance_type_name"] == "2x4"

    files = live_sim.uploaded_files(first["deployment_id"])
    assert yaml.safe_load(files["config.yaml"]) == CONFIG
    assert files["data/setup.sh"] == SETUP
    eventually(
        lambda: http.get(dep_url).json()["status"] == "ACTIVE",
        lambda: f"the deployment to be ACTIVE: {http.get(dep_url).text}",
    )

    # A second push to the same model name adds a deployment to it.
    second = push(live_sim, truss_dir, "tiny-def456")
    assert second["model_id"] == first["model_id"]
    names = [
        d["name"]
        for d in http.get(f"{live_sim.api_url}/models/{first['model_id']}/deployments").json()[
            "deployments"
        ]
    ]
    assert names == ["tiny-abc123", "tiny-def456"]
    pushes = [e["endpoint"] for e in live_sim.audit_log()]
    assert pushes == ["graphql:create_model_from_truss", "graphql:create_model_version_from_truss"]
