"""Instant queries to a user's Prometheus (its HTTP API, `GET /api/v1/query`).

One number is what an analysis check needs: a scalar, or a vector of exactly one sample.
An empty vector (or NaN) is no result; several series are an error the user must fix in
the query (sum them, or select one). Every failure is a `PrometheusError` whose text says
what happened, never the token.
"""

from __future__ import annotations

import json
import math
import os
import ssl
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

import requests
from cachetools import LRUCache
from pydantic import BaseModel, Field, ValidationError

from baseten_operator.baseten.connections import Connections
from baseten_operator.baseten.deadlines import deadline

# A query never holds a worker longer than this, whatever Prometheus does.
DEADLINE = 10.0
CONNECT_TIMEOUT = 5.0
# Pools kept, by (address, CA): one per Prometheus a cluster's analyses name.
_POOLS_KEPT = 64


class PrometheusError(Exception):
    """Prometheus could not be asked, or did not answer with a usable number."""


class _Data(BaseModel):
    result_type: str = Field(alias="resultType")
    result: Any = None


class _Answer(BaseModel):
    status: str
    data: _Data | None = None
    error_type: str | None = Field(default=None, alias="errorType")
    error: str | None = None


class PrometheusClient:
    def __init__(self, environ: Mapping[str, str] = os.environ) -> None:
        self._environ = environ
        self._pools: LRUCache[tuple[str, str | None], Connections] = LRUCache(_POOLS_KEPT)
        self._lock = threading.Lock()

    def query(
        self, address: str, query: str, /, *, token: str | None, ca_pem: str | None
    ) -> float | None:
        """The query's one number at this instant; None when it has no result."""
        parts = urlsplit(address)
        target = f"{parts.path.rstrip('/')}/api/v1/query?{urlencode({'query': query})}"
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            connections = self._connections(address, ca_pem)
            with deadline(DEADLINE):
                response = connections.send(
                    "GET",
                    target,
                    body=None,
                    headers=headers,
                    connect_timeout=CONNECT_TIMEOUT,
                    read_timeout=DEADLINE,
                )
        except (requests.RequestException, OSError, ssl.SSLError) as error:
            raise PrometheusError(f"cannot query Prometheus at {address}: {error}") from None
        return _number(address, response)

    def _connections(self, address: str, ca_pem: str | None) -> Connections:
        key = (address, ca_pem)
        with self._lock:
            pool = self._pools.get(key)
            if pool is None:
                tls = ssl.create_default_context(cadata=ca_pem) if ca_pem else None
                pool = Connections(address, pool_size=2, environ=self._environ, tls=tls)
                self._pools[key] = pool
            return pool


def _number(address: str, response: requests.Response) -> float | None:
    try:
        answer = _Answer.model_validate(json.loads(response.content))
    except (ValueError, ValidationError):
        raise PrometheusError(
            f"Prometheus at {address} answered HTTP {response.status_code} without its "
            "API's JSON"
        ) from None
    if answer.status != "success" or answer.data is None:
        raise PrometheusError(
            f"Prometheus at {address} answered HTTP {response.status_code}: "
            f"{answer.error_type or 'error'}: {answer.error or 'no data'}"
        )
    value = _sample(answer.data)
    return None if value is None or math.isnan(value) else value


def _sample(data: _Data) -> float | None:
    """The one number of a scalar, or of a vector of one sample."""
    result = data.result
    try:
        if data.result_type == "scalar":
            return float(result[1])
        if data.result_type == "vector":
            if not result:
                return None
            if len(result) > 1:
                raise PrometheusError(
                    f"the query gave {len(result)} series where one number is needed "
                    "(aggregate them, with sum or max)"
                )
            return float(result[0]["value"][1])
    except (TypeError, KeyError, IndexError, ValueError):
        raise PrometheusError(f"unreadable {data.result_type} result: {result!r}"[:300]) from None
    raise PrometheusError(f"the query gave a {data.result_type} where one number is needed")
