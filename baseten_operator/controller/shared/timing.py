"""Every delay of the reconciler (docs/contract.md section 9), scaled by --time-scale.

The push's hard timeout is not one of them: it bounds a real child process, which runs no
faster under a small --time-scale, so it lives unscaled with the pusher
(`truss.pusher.PUSH_TIMEOUT`).
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

MINUTE = 60.0
HOUR = 60 * MINUTE
DAY = 24 * HOUR


@dataclass(frozen=True)
class Timing:
    steady: float = 5 * MINUTE
    # A steady re-check never comes sooner than this fraction of the period after the pass
    # that schedules it (steady_after): one just done is not repeated at once.
    steady_earliest: float = 0.1
    # Promotion in progress, waiting for a source, and the poll after a retry.
    poll: float = 30.0
    # After an environment create or a settings PATCH (applied asynchronously).
    settings_applied: float = 10.0
    push_poll: float = 10.0
    retry_base: float = 2 * MINUTE
    retry_cap: float = 30 * MINUTE
    retry_jitter: float = 0.5
    retry_deadline: float = 2 * HOUR
    delete_blocked: float = 30.0
    observe: float = 30.0
    recreation_blocked: float = 5 * MINUTE
    model_id_invalidated: float = 1.0
    # A CR whose Namespace the cache has not seen yet (its add event normally comes first).
    namespace_unknown: float = 5.0
    # A BasetenSecret whose Secret the operator may not read: looked at again this often, as
    # the RoleBinding that grants it is not watched.
    secret_forbidden: float = 10.0
    # Spec-given durations (orphan cleanup interval and age) are scaled too.
    minute: float = MINUTE
    day: float = DAY
    # The factor every duration above was multiplied by; messages quote the nominal
    # values ("retries exhausted after 2h0m0s") whatever the scale.
    scale: float = 1.0

    @classmethod
    def scaled(cls, time_scale: float) -> Timing:
        if time_scale <= 0:
            raise ValueError(f"time scale must be positive, got {time_scale}")
        base = cls()
        scaled = {
            field.name: getattr(base, field.name) * time_scale
            for field in dataclasses.fields(cls)
            if field.name not in ("retry_jitter", "steady_earliest", "scale")
        }
        return cls(**scaled, scale=time_scale)

    def retry_delay(self, attempt: int, jitter_fraction: float) -> float:
        """Backoff before retry `attempt + 1`: base * 2^(attempt-1), capped, plus jitter.

        `jitter_fraction` is U[0, 1); the jitter itself is U[0, retry_jitter).
        """
        exponent = max(attempt - 1, 0)
        delay = min(self.retry_base * (2**exponent), self.retry_cap)
        return delay * (1 + self.retry_jitter * jitter_fraction)

    def steady_after(self, key: str, now: float) -> float:
        """How long until the steady re-check of the object `key` (namespace/name), from
        `now` (wall-clock seconds).

        Each key has its phase in the period, a fraction of it fixed by the key
        (`key_fraction`), on a grid anchored at the epoch: the re-check comes at the key's
        next phase, and from then on every period exactly. N objects that converge
        together (a restart, a new leader) are re-checked spread evenly over the period
        from the first one on, and every replica computes the same instants. Never sooner
        than `steady_earliest` of a period: a clock that fires a re-check a little early
        does not bring it back at once."""
        period = self.steady
        wait = (key_fraction(key) * period - now) % period
        if wait < self.steady_earliest * period:
            wait += period
        return wait

    def nominal(self, seconds: float) -> float:
        """A scaled duration expressed in unscaled time, for messages."""
        return seconds / self.scale


def key_fraction(key: str) -> float:
    """A fraction in [0, 1) fixed by `key` and uniform across keys (not Python's hash(),
    which is salted per process: a restarted operator must keep each object's period)."""
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def go_duration(seconds: float) -> str:
    """Go's time.Duration.String() at second precision (2h0m0s, 5m3s, 45s, 500ms)."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms" if seconds > 0 else "0s"
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"
