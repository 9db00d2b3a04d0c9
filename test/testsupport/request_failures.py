"""Connection failures as `requests` raises them (urllib3's, wrapped), for transport tests."""

from __future__ import annotations

import requests
from urllib3.exceptions import ConnectTimeoutError, MaxRetryError, NewConnectionError, ProtocolError


def refused() -> requests.ConnectionError:
    """Nothing listens: the server never saw the request."""
    cause = NewConnectionError(
        None, "Failed to establish a new connection: [Errno 111] Connection refused"
    )  # type: ignore[arg-type]
    return requests.ConnectionError(MaxRetryError(None, "/v1", cause))  # type: ignore[arg-type]


def connect_timed_out() -> requests.ConnectTimeout:
    cause = ConnectTimeoutError("connect timed out")
    return requests.ConnectTimeout(MaxRetryError(None, "/v1", cause))  # type: ignore[arg-type]


def reset() -> requests.ConnectionError:
    """The connection broke after the request went out: it may have been acted on."""
    cause = ConnectionResetError(104, "Connection reset by peer")
    return requests.ConnectionError(ProtocolError("Connection aborted.", cause))
