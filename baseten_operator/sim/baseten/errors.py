"""Errors the simulator answers with, in Baseten's shape."""

from __future__ import annotations

from typing import Any


class SimError(Exception):
    """A rejected request: rendered as `{"code", "message", "details"}` with `status`."""

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details

    def body(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


def not_found(what: str) -> SimError:
    return SimError(404, "NOT_FOUND", f"{what} not found")


def bad_request(message: str, details: Any = None) -> SimError:
    return SimError(400, "BAD_REQUEST", message, details)


def conflict(message: str) -> SimError:
    return SimError(409, "CONFLICT", message)
