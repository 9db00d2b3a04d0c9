"""Secure by default, checked the way a user would: kubectl for tokens and RBAC, an HTTPS
client for the metrics endpoint; and idle connections cannot buy threads."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import requests

from testsupport.e2e.harness import (
    METRICS_READER,
    Stack,
    http_ok,
    served_certificate,
    service_account_token,
)
from testsupport.polling import wait_for

pytestmark = pytest.mark.e2e

IDLE_CONNECTIONS = 300
METRICS_CONNECTION_LIMIT = 64  # runtime/httpserver.py ConnectionLimits


@pytest.fixture
def local(stack: Stack) -> Stack:
    if stack.metrics_url is None or stack.operator_pid is None:
        pytest.skip("the operator runs in the cluster: its metrics port is not reachable here")
    return stack


def _status(url: str, ca: str, token: str | None = None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.get(url, headers=headers, verify=ca, timeout=5).status_code


def test_no_token_401_unbound_token_403_metrics_reader_200(local: Stack, tmp_path: Path) -> None:
    assert local.metrics_url is not None
    url = local.metrics_url
    ca = served_certificate(url, tmp_path / "ca.crt")
    namespace = local.new_namespace("e2e-scrape")
    stranger = service_account_token(local.kubectl, namespace, "stranger")
    reader = service_account_token(local.kubectl, namespace, "reader", cluster_role=METRICS_READER)

    assert _status(url, ca) == 401
    assert _status(url, ca, "forged-token") == 401
    assert _status(url, ca, stranger) == 403
    response = requests.get(
        url, headers={"Authorization": f"Bearer {reader}"}, verify=ca, timeout=5
    )
    assert response.status_code == 200
    assert "controller_runtime_reconcile_total" in response.text
    # Plain HTTP is not served on the secure port.
    with pytest.raises(requests.ConnectionError):
        requests.get(url.replace("https://", "http://"), timeout=5)


def _threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError(f"no thread count for process {pid}")


def _closed_by_server(sock: socket.socket) -> bool:
    """For a non-blocking socket: whether the server hung up (nothing is ever sent)."""
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def test_three_hundred_idle_connections_do_not_cost_three_hundred_threads(
    local: Stack, tmp_path: Path
) -> None:
    assert local.metrics_url is not None and local.operator_pid is not None
    url = local.metrics_url
    ca = served_certificate(url, tmp_path / "ca.crt")
    address = ("127.0.0.1", int(url.split(":")[2].split("/")[0]))
    threads_before = _threads(local.operator_pid)

    idle = [socket.create_connection(address, timeout=5) for _ in range(IDLE_CONNECTIONS)]
    for sock in idle:
        sock.setblocking(False)
    try:
        # Connections beyond the limit are closed at once; the rest hold a thread each.
        beyond_limit = IDLE_CONNECTIONS - METRICS_CONNECTION_LIMIT
        wait_for(lambda: sum(_closed_by_server(s) for s in idle) >= beyond_limit, timeout=30)
        grown = _threads(local.operator_pid) - threads_before
        assert grown <= METRICS_CONNECTION_LIMIT + 10, f"{grown} threads for idle connections"
        # The probes have their own server and limit: the kubelet still gets its answers.
        assert local.health_url is not None and http_ok(local.health_url)
    finally:
        for sock in idle:
            sock.close()
    # Their slots come back: scrapes are answered again (401 without a token).
    wait_for(lambda: _status_or_none(url, ca) == 401, timeout=30)


def _status_or_none(url: str, ca: str) -> int | None:
    try:
        return _status(url, ca)
    except requests.RequestException:
        return None
