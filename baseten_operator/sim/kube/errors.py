"""Kubernetes `Status` error responses.

Every failure the emulator reports travels as an `ApiError` up to the HTTP layer,
which renders it as the `Status` object a real API server sends (`reason`, `code`,
`details`), so clients map it to the same exceptions they would get from a cluster.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        *,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.retry_after = retry_after

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def qualified(plural: str, group: str) -> str:
    """`configmaps` or `basetenmodels.models.baseten.com`, as messages name resources."""
    return f"{plural}.{group}" if group else plural


def _details(name: str, group: str, kind: str, **extra: Any) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": kind}
    if group:
        details["group"] = group
    details.update(extra)
    return details


def not_found(plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{qualified(plural, group)} "{name}" not found',
        _details(name, group, plural),
    )


def already_exists(plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified(plural, group)} "{name}" already exists',
        _details(name, group, plural),
    )


def conflict(plural: str, group: str, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(plural, group)} "{name}": {why}',
        _details(name, group, plural),
    )


STALE_OBJECT = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def invalid(kind: str, group: str, name: str, causes: list[dict[str, Any]]) -> ApiError:
    parts = [f"{c.get('field', '')}: {c.get('message', '')}".lstrip(": ") for c in causes]
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    qualified_kind = f"{kind}.{group}" if group else kind
    return ApiError(
        422,
        "Invalid",
        f'{qualified_kind} "{name}" is invalid: {summary}',
        _details(name, group, kind, causes=causes),
    )


def field_invalid(kind: str, group: str, name: str, field: str, message: str) -> ApiError:
    return invalid(
        kind, group, name, [{"reason": "FieldValueInvalid", "message": message, "field": field}]
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(message: str) -> ApiError:
    return ApiError(403, "Forbidden", message)


def method_not_allowed(message: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media_type(message: str) -> ApiError:
    return ApiError(415, "UnsupportedMediaType", message)


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def too_many_requests(retry_after: float | None) -> ApiError:
    details = {"retryAfterSeconds": int(retry_after)} if retry_after is not None else None
    return ApiError(
        429,
        "TooManyRequests",
        "the server has received too many requests and has asked us to try again later",
        details,
        retry_after=retry_after,
    )


def internal(message: str, code: int = 500) -> ApiError:
    return ApiError(code, "InternalError", message)
