"""Errors raised by the Baseten client.

Every failure of a Baseten call surfaces as `BasetenAPIError`, so callers need one
`except` to turn it into a status message. Messages are already safe to show: the
client strips the API key from anything that could echo it before building one.
"""

from __future__ import annotations

from collections.abc import Sequence


class ConfigError(Exception):
    """The client cannot be built from its configuration (e.g. no API key)."""


class BasetenAPIError(Exception):
    """A Baseten call failed.

    `status_code` is the HTTP status, or 0 when no response arrived (connection
    error, timeout). A response that arrived but could not be understood keeps its
    HTTP status (usually 200) and says so in `message`.
    """

    def __init__(self, status_code: int, message: str, *, retry_after: float | None = None):
        super().__init__(status_code, message)
        self.status_code = status_code
        self.message = message
        # Seconds the server asked us to wait (429): lets a caller requeue sensibly.
        self.retry_after = retry_after

    @property
    def is_not_found(self) -> bool:
        return self.status_code == 404

    @property
    def is_rate_limited(self) -> bool:
        return self.status_code == 429

    @property
    def is_connection_error(self) -> bool:
        return self.status_code == 0

    def __str__(self) -> str:
        if self.status_code == 0:
            return self.message
        return f"HTTP {self.status_code}: {self.message}"


class RateLimited(Exception):
    """A call would have to wait longer than its deadline allows (Baseten's 429, or the
    client's own budget for the endpoint).

    Deliberately not a BasetenAPIError: being throttled says nothing about the model,
    so no status turns FAILED for it. It ends the pass, which comes back after
    `retry_after` seconds instead of sleeping in a worker.
    """

    def __init__(self, call: str, retry_after: float, detail: str) -> None:
        super().__init__(f"rate limited on {call}: retry after {retry_after:.3g}s ({detail})")
        self.call = call
        self.retry_after = retry_after


class AmbiguousName(BasetenAPIError):
    """A lookup by name matched several objects; the operator never guesses.

    A `BasetenAPIError` (with the lookup's HTTP status, 200) so that code handling
    "lookup failed" also handles this, with a message that lists the ids.
    """

    kind = "object"

    def __init__(self, name: str, ids: Sequence[str]):
        self.name = name
        self.ids = list(ids)
        super().__init__(
            200,
            f"{self.kind} name {name!r} is ambiguous: {len(self.ids)} {self.kind}s "
            f"have that name (ids: {', '.join(self.ids)})",
        )

    def __str__(self) -> str:
        return self.message


class AmbiguousModelName(AmbiguousName):
    """Several models share a name (names are unique only within a team)."""

    kind = "model"


class AmbiguousDeploymentName(AmbiguousName):
    """Several deployments of one model share a name."""

    kind = "deployment"
