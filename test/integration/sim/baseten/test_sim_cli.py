"""The simulator as a standalone process."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
import requests

pytestmark = pytest.mark.integration


def test_standalone_serves_until_sigterm() -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "baseten_operator.sim.baseten",
            "--port",
            "0",
            "--api-key",
            "cli-key",
            "--time-scale",
            "0.01",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        seeded = requests.post(f"{url}/_sim/seed_model", json={"name": "m"}, timeout=5).json()
        listed = requests.get(
            f"{url}/v1/models", headers={"Authorization": "Api-Key cli-key"}, timeout=5
        ).json()
        assert [m["id"] for m in listed["models"]] == [seeded["id"]]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_upload_credentials_name_the_advertised_host() -> None:
    """Where a client reaches the simulator at another address than it listens on (a
    container through NAT), the truss upload goes to that address."""
    process = subprocess.Popen(
        [sys.executable, "-m", "baseten_operator.sim.baseten", "--port", "0",
         "--api-key", "cli-key", "--advertise-host", "10.0.2.2"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        answer = requests.post(
            f"{url}/graphql/",
            json={"query": "query { model_s3_upload_credentials { s3_key endpoint_url } }"},
            headers={"Authorization": "Api-Key cli-key"},
            timeout=5,
        )
        assert answer.status_code == 200, answer.text
        credentials = answer.json()["data"]["model_s3_upload_credentials"]
        port = url.rsplit(":", 1)[1]
        assert credentials["endpoint_url"] == f"http://10.0.2.2:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)
