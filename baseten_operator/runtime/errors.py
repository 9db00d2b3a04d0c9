"""The Kubernetes API's errors as types, built from the server's `Status` body.

Kept apart from the client so that code which only handles errors (a reconciler catching
`NotFound`, a fake client raising `Conflict`) does not import the HTTP machinery.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A Kubernetes API error; `body` is the decoded `Status` object when there is one."""

    def __init__(self, status: int, reason: str, message: str, body: dict[str, Any] | None = None):
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body


class NotFound(ApiError):
    pass


class AlreadyExists(ApiError):
    pass


class Conflict(ApiError):
    pass


class Gone(ApiError):
    """410: the requested resourceVersion is too old (history compacted): relist."""


class Invalid(ApiError):
    pass


class TooManyRequests(ApiError):
    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        body: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ):
        super().__init__(status, reason, message, body)
        self.retry_after = retry_after


class Unauthorized(ApiError):
    pass


class Forbidden(ApiError):
    pass


class ServerError(ApiError):
    pass


class UnsupportedMediaType(ApiError):
    pass


class ConnectionFailed(ApiError):
    """No HTTP answer at all (refused, reset, timed out): status 0."""


_ERRORS_BY_STATUS: dict[int, type[ApiError]] = {
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    415: UnsupportedMediaType,
    422: Invalid,
    429: TooManyRequests,
}


def api_error(
    status: int, body: dict[str, Any] | None, retry_after_header: str | None = None
) -> ApiError:
    """Build the typed error for an HTTP status and its (possibly absent) Status body."""
    status_body = body if isinstance(body, dict) else None
    reason = str((status_body or {}).get("reason") or "")
    message = str((status_body or {}).get("message") or "")
    if status == 409 and reason == "AlreadyExists":
        return AlreadyExists(status, reason, message, status_body)
    if status == 429:
        return TooManyRequests(
            status, reason, message, status_body, _retry_after(status_body, retry_after_header)
        )
    cls = _ERRORS_BY_STATUS.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else ApiError
    return cls(status, reason, message, status_body)


def _retry_after(body: dict[str, Any] | None, header: str | None) -> float | None:
    if header:
        try:
            return float(header)
        except ValueError:
            pass  # an HTTP date: fall back to the Status details
    seconds = ((body or {}).get("details") or {}).get("retryAfterSeconds")
    return float(seconds) if isinstance(seconds, int | float) else None
