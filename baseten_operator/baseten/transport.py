"""HTTP transport of the Baseten client: auth, throttling, retries, errors, metrics.

Retry policy (conservative: a duplicate promote or create is worse than an error):
- 429: a call waits what the server asks (`retry_after` in the body or the
  `Retry-After` header) and tries again, within a bounded number of attempts, when
  the wait fits in what is left of its deadline; otherwise it raises `RateLimited`
  and the caller comes back later instead of sleeping in a worker.
- 5xx: only idempotent endpoints (GET, DELETE, settings PATCH) are retried.
- connection errors: idempotent endpoints are retried; the others only when the
  connection failed before the request could have been sent.

Bounds: every call has one total deadline covering throttling, connecting, sending,
reading and every retry (deadlines.py cuts a server that answers too slowly). Every
write first passes the write fence, and every wait is the fence's, so losing the
Lease or shutting down interrupts it.

Requests go through one `requests` transport adapter per client (connections.py,
`HTTPAdapter.send`, no `Session`): its pool of kept-alive connections, proxy, TLS trust and
URL are settled once per client, not on every call. urllib3's own Retry only repeats a GET
on a kept-alive connection that broke before any answer; everything above is decided here.
"""

from __future__ import annotations

import codecs
import json
import logging
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar
from urllib.parse import quote, urlencode, urlsplit

import requests
import structlog
from prometheus_client import Counter, Histogram
from pydantic import BaseModel, SecretStr, ValidationError
from urllib3.exceptions import MaxRetryError, NewConnectionError

from baseten_operator.baseten.connections import HttpSender
from baseten_operator.baseten.deadlines import deadline
from baseten_operator.baseten.errors import BasetenAPIError, RateLimited
from baseten_operator.baseten.metrics import (
    BASETEN_API_LATENCY,
    BASETEN_API_REQUESTS,
    BASETEN_RATE_LIMIT_WAIT,
)
from baseten_operator.baseten.ratelimit import EndpointRateLimiter, Limit
from baseten_operator.runtime.clock import Clock
from baseten_operator.runtime.fence import WriteFence
from baseten_operator.runtime.logging import MIN_SECRET_LENGTH, appears_in, mask_secret
from baseten_operator.runtime.pools import never_sent

log = structlog.get_logger(__name__)
_stdlib_log = logging.getLogger(__name__)  # the level structlog's stdlib loggers filter on

# Documented per-key limit of every endpoint without a stricter one.
DEFAULT_LIMIT = Limit(100, 1.0)

# Error messages end up in CR status; keep them readable.
_MAX_MESSAGE_CHARS = 300
_REDACTED = "[REDACTED]"
# What an error says instead of a server's text that contains a value too short to mask
# (a one-letter secret would mask every such letter): better no text than the value.
_WITHHELD = "answer withheld: it may quote the secret value sent"
# An Authorization header echoed in text (e.g. a dumped request): keep the scheme, drop the value.
_AUTH_HEADER_VALUE = re.compile(
    r"(?i)(authorization['\"]?\s*[:=]\s*['\"]?(?:bearer|api-key)\s+)[^\s'\",}]+"
)

T = TypeVar("T", bound=BaseModel)
# A query as pairs when a parameter repeats (`metrics=a&metrics=b`).
Query = Mapping[str, str] | Sequence[tuple[str, str]]


@dataclass(frozen=True)
class Endpoint:
    """One API operation: its path template (relative to the base URL) and retry class."""

    method: str
    template: str
    idempotent: bool
    limit: Limit = DEFAULT_LIMIT

    @property
    def label(self) -> str:
        """The template as the API documents it, for metrics and logs (never a raw path)."""
        return "/v1" + self.template

    def path(self, params: Mapping[str, str]) -> str:
        return self.template.format(**{k: quote(v, safe="") for k, v in params.items()})


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 4
    # The whole call, retries and waits included, ends by then.
    deadline: float = 30.0
    # Connecting is bounded more tightly: a dead host is noticed fast.
    connect_timeout: float = 10.0
    backoff_base: float = 0.5
    backoff_cap: float = 8.0

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Exponential in the attempt number, capped, jittered over its upper half."""
        ceiling = min(self.backoff_cap, self.backoff_base * 2 ** (attempt - 1))
        return ceiling * (0.5 + rng.random() / 2)


def usable_api_key(key: str) -> bool:
    """Whether `key` can travel in an Authorization header: printable ASCII without
    whitespace (a line break would end the header, or start another one)."""
    return key.isascii() and key.isprintable() and not any(c.isspace() for c in key)


class Secret:
    """Holds the API key so that no repr, vars() dump or log of its owner shows it."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<redacted>"

    __str__ = __repr__


# Failures by requests' names: the name is part of the message a status shows
# ("connection error on GET ...: ConnectionError: ..."). The first match names it.
_FAILURE_NAMES: tuple[tuple[type[Exception], str], ...] = (
    (requests.ConnectTimeout, "ConnectTimeout"),
    (requests.ReadTimeout, "ReadTimeout"),
    (requests.exceptions.SSLError, "SSLError"),
    (requests.exceptions.ProxyError, "ProxyError"),
)


def _failure_name(exc: Exception) -> str:
    for kind, name in _FAILURE_NAMES:
        if isinstance(exc, kind):
            return name
    return "ConnectionError"


def _failed_before_sending(exc: requests.RequestException) -> bool:
    """True when no connection was made, so the server never saw the request."""
    cause = exc.args[0] if exc.args else None
    return isinstance(cause, BaseException) and never_sent(cause)


def _detail(exc: requests.RequestException) -> str:
    """What went wrong, without the pool's and the connection object's reprs that
    requests' own text leads with."""
    cause = exc.args[0] if exc.args else exc
    if isinstance(cause, MaxRetryError) and cause.reason is not None:
        cause = cause.reason
    text = str(cause)
    if isinstance(cause, NewConnectionError):
        text = text.removeprefix(f"{cause.conn}: ")
    return text


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > _MAX_MESSAGE_CHARS:
        return text[: _MAX_MESSAGE_CHARS - 1] + "…"
    return text


def _json(response: requests.Response) -> Any:
    """The body as JSON; ValueError when it is not."""
    return json.loads(response.content)


def _server_message(response: requests.Response) -> str:
    """The server's own explanation: JSON message/error/detail, else the plain text."""
    try:
        data = _json(response)
    except ValueError:
        data = None
    if isinstance(data, dict):
        for key in ("message", "error", "detail"):
            value = data.get(key)
            if value:
                return value if isinstance(value, str) else json.dumps(value)
    text = response.content.decode("utf-8", "replace")
    if text.strip():
        return text
    return response.reason or "no message"


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


class Transport:
    """Sends one endpoint's request and returns its parsed body, or raises BasetenAPIError.

    Thread-safe: the pool is shared, and so are the rate limiter's buckets, by every
    thread using this transport.
    """

    def __init__(
        self,
        api_key: Secret,
        base_url: str,
        *,
        http: HttpSender,
        clock: Clock,
        policy: RetryPolicy,
        rng: random.Random,
        user_agent: str | None = None,
        time_scale: float = 1.0,
    ) -> None:
        self._api_key = api_key
        self._prefix = urlsplit(base_url).path.rstrip("/")
        self._http = http
        self._clock = clock
        self._policy = policy
        self._rng = rng
        self._limiter = EndpointRateLimiter(clock, time_scale)
        self._series: dict[tuple[Endpoint, str], tuple[Counter, Histogram]] = {}
        # Every request's headers but the key's, which is added per request so that no
        # attribute holds it in the clear.
        self._headers = {"Accept": "application/json", "Accept-Encoding": "gzip, deflate"}
        if user_agent:
            self._headers["User-Agent"] = user_agent
        self.fence: WriteFence | None = None

    def call(
        self,
        endpoint: Endpoint,
        path: Mapping[str, str],
        model: type[T],
        *,
        query: Query | None = None,
        body: Mapping[str, Any] | None = None,
        conceal: SecretStr | None = None,
    ) -> T:
        """`conceal`: a value the body carries that no error may show (a secret's), masked
        as the API key is."""
        response = self._send(endpoint, path, query, body, conceal)
        try:
            # pydantic parses the JSON itself, in one pass (about half the CPU of
            # json.loads followed by validation of the Python objects). It reads UTF-8
            # only; json.loads also skipped a byte order mark, which JSON lets a reader
            # ignore.
            return model.model_validate_json(response.content.removeprefix(codecs.BOM_UTF8))
        except ValidationError as exc:
            # Name the first problem only: a pydantic dump is noise in a CR's status.
            first = exc.errors(include_input=False, include_url=False)[0]
            if first["type"] == "json_invalid":
                raise self._malformed(endpoint, response, "body is not JSON") from None
            where = ".".join(str(part) for part in first["loc"]) or "body"
            raise self._malformed(endpoint, response, f"{where}: {first['msg']}") from None

    def _send(
        self,
        endpoint: Endpoint,
        path: Mapping[str, str],
        query: Query | None,
        body: Mapping[str, Any] | None,
        conceal: SecretStr | None = None,
    ) -> requests.Response:
        """Send with throttling and retries; return a 2xx response or raise BasetenAPIError.

        Raises RateLimited when a wait does not fit in the deadline, and NotLeader (from
        the fence) when this replica may no longer write or the fence closes mid-wait.
        """
        target = self._prefix + endpoint.path(path)
        if query:
            target += "?" + urlencode(query)
        headers = dict(self._headers)
        headers["Authorization"] = f"Bearer {self._api_key.value}"
        payload = None
        if body is not None:
            payload = json.dumps(body, allow_nan=False).encode()
            headers["Content-Type"] = "application/json"
        expires = self._clock.monotonic() + self._policy.deadline
        attempt = 0
        while True:
            attempt += 1
            last_attempt = attempt >= self._policy.max_attempts
            self._throttle(endpoint, expires)
            if endpoint.method != "GET" and self.fence is not None:
                self.fence.check(f"{endpoint.method} {endpoint.label}")
            remaining = expires - self._clock.monotonic()
            if remaining <= 0:
                raise self._deadline_exceeded(endpoint)
            started = self._clock.monotonic()
            try:
                with deadline(remaining) as cut:
                    response = self._http.send(
                        endpoint.method,
                        target,
                        body=payload,
                        headers=headers,
                        connect_timeout=min(self._policy.connect_timeout, remaining),
                        read_timeout=remaining,
                    )
            except requests.RequestException as exc:
                self._record(endpoint, "0", started)
                if cut.expired:
                    raise self._deadline_exceeded(endpoint) from None
                # `from None`: the library's exception text may carry request details.
                error = BasetenAPIError(0, self._connection_message(endpoint, exc, conceal))
                safe_to_repeat = endpoint.idempotent or _failed_before_sending(exc)
                if last_attempt or not safe_to_repeat:
                    raise error from None
                self._back_off(endpoint, attempt, error, expires)
                continue
            status = response.status_code
            self._record(endpoint, str(status), started)
            if 200 <= status < 300:
                return response
            error = BasetenAPIError(status, self._safe(_server_message(response), conceal))
            if status == 429:
                error.retry_after = self._retry_after(response)
                self._wait_out_rate_limit(endpoint, attempt, error, expires, last_attempt)
                continue
            if status >= 500 and endpoint.idempotent and not last_attempt:
                self._back_off(endpoint, attempt, error, expires)
                continue
            raise error

    def _wait_out_rate_limit(
        self,
        endpoint: Endpoint,
        attempt: int,
        error: BasetenAPIError,
        expires: float,
        last_attempt: bool,
    ) -> None:
        """Sleep what a 429 asks when it fits in the deadline; else raise RateLimited."""
        delay = (
            error.retry_after
            if error.retry_after is not None
            else self._policy.backoff(attempt, self._rng)
        )
        if last_attempt or delay >= expires - self._clock.monotonic():
            raise RateLimited(f"{endpoint.method} {endpoint.label}", delay, str(error)) from None
        self._wait(endpoint, attempt, error, delay)
        BASETEN_RATE_LIMIT_WAIT.labels(endpoint=endpoint.label).inc(delay)

    def _throttle(self, endpoint: Endpoint, expires: float) -> None:
        """Wait for the endpoint's client-side budget; give up early if it cannot fit."""
        # Baseten counts each operation on its own: a GET and a PATCH of one path are two.
        delay = self._limiter.reserve(f"{endpoint.method} {endpoint.template}", endpoint.limit)
        if delay <= 0:
            return
        what = f"{endpoint.method} {endpoint.label}"
        if delay >= expires - self._clock.monotonic():
            raise RateLimited(what, delay, "client-side rate limit")
        self._sleep(delay, what)
        BASETEN_RATE_LIMIT_WAIT.labels(endpoint=endpoint.label).inc(delay)

    def _sleep(self, seconds: float, action: str) -> None:
        if self.fence is not None:
            self.fence.sleep(seconds, action)
        else:
            self._clock.sleep(seconds)

    def _deadline_exceeded(self, endpoint: Endpoint) -> BasetenAPIError:
        return BasetenAPIError(
            0,
            f"timeout on {endpoint.method} {endpoint.label}: no complete answer within "
            f"the {self._policy.deadline:g}s deadline",
        )

    def _record(self, endpoint: Endpoint, code: str, started: float) -> None:
        elapsed = self._clock.monotonic() - started
        series = self._series.get((endpoint, code))
        if series is None:
            # A labelled child per (endpoint, code), looked up once: `labels()` takes the
            # metric's lock and builds its key on every call.
            labels = {"endpoint": endpoint.label, "method": endpoint.method}
            series = (
                BASETEN_API_REQUESTS.labels(code=code, **labels),
                BASETEN_API_LATENCY.labels(**labels),
            )
            self._series[(endpoint, code)] = series
        requests, latency = series
        requests.inc()
        latency.observe(elapsed)
        # Checked first: even a dropped structlog call builds a bound logger.
        if _stdlib_log.isEnabledFor(logging.DEBUG):
            log.debug(
                "baseten request",
                code=code,
                duration=round(elapsed, 4),
                endpoint=endpoint.label,
                method=endpoint.method,
            )

    def _back_off(
        self, endpoint: Endpoint, attempt: int, error: BasetenAPIError, expires: float
    ) -> None:
        """Sleep before a retry; a backoff that would outlast the deadline fails the call."""
        delay = self._policy.backoff(attempt, self._rng)
        if delay >= expires - self._clock.monotonic():
            raise error
        self._wait(endpoint, attempt, error, delay)

    def _wait(self, endpoint: Endpoint, attempt: int, error: BasetenAPIError, delay: float) -> None:
        log.warning(
            "baseten request failed, retrying",
            method=endpoint.method,
            endpoint=endpoint.label,
            attempt=attempt,
            delay=round(delay, 3),
            error=str(error),
        )
        self._sleep(delay, f"{endpoint.method} {endpoint.label}")

    def _retry_after(self, response: requests.Response) -> float | None:
        """The longer of the body's `retry_after` and the `Retry-After` header (seconds or date)."""
        candidates: list[float] = []
        try:
            data = _json(response)
        except ValueError:
            data = None
        if isinstance(data, dict):
            from_body = _number(data.get("retry_after"))
            if from_body is not None:
                candidates.append(from_body)
        header = response.headers.get("Retry-After")
        if header:
            from_header = _number(header.strip())
            if from_header is None:
                try:
                    from_header = parsedate_to_datetime(header).timestamp() - self._clock.now()
                except (TypeError, ValueError):
                    from_header = None
            if from_header is not None:
                candidates.append(from_header)
        return max(0.0, *candidates) if candidates else None

    def _malformed(
        self, endpoint: Endpoint, response: requests.Response, problem: str
    ) -> BasetenAPIError:
        return BasetenAPIError(
            response.status_code,
            self._safe(f"malformed response from {endpoint.method} {endpoint.label}: {problem}"),
        )

    def unacknowledged(self, endpoint: Endpoint, answer: str) -> BasetenAPIError:
        """The error for a 2xx whose body does not acknowledge the action, quoting the body."""
        return BasetenAPIError(
            200,
            self._safe(
                f"{endpoint.method} {endpoint.label} not acknowledged: Baseten answered {answer}"
            ),
        )

    def _connection_message(
        self, endpoint: Endpoint, exc: requests.RequestException, conceal: SecretStr | None
    ) -> str:
        kind = "timeout" if isinstance(exc, requests.Timeout) else "connection error"
        return self._safe(
            f"{kind} on {endpoint.method} {endpoint.label}: {_failure_name(exc)}: {_detail(exc)}",
            conceal,
        )

    def _safe(self, text: str, conceal: SecretStr | None = None) -> str:
        """Text fit for an error: without the key or the concealed value (in any encoding)
        or an echoed auth header, then shortened.

        Redaction comes first so truncation can never leave part of a secret behind.
        """
        text = _AUTH_HEADER_VALUE.sub(lambda m: m.group(1) + _REDACTED, text)
        text = mask_secret(text, self._api_key.value, _REDACTED)
        if conceal is not None:
            value = conceal.get_secret_value()
            if len(value) < MIN_SECRET_LENGTH:
                text = _WITHHELD if appears_in(text, value) else text
            else:
                text = mask_secret(text, value, _REDACTED)
        return _shorten(text)
