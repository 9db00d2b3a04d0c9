"""The inference traffic the simulator pretends its deployments receive: what its metrics
(the API's and the Prometheus export's) report.

A test gives a deployment a `TrafficProfile`: the requests per simulated second it would get
with all of its environment's traffic, the shares answered 5xx and 4xx, and its latency
quantiles. What it actually gets follows its share of the traffic over time: the current
deployment of an environment the share the promotion in progress leaves it (rollout phase
"stable"), the candidate `percent_traffic_to_new_version` ("promoting"), a deployment
serving no environment nothing. Both the shares and the profiles are kept as histories of
changes, so the requests in any past window are computed, never sampled: on a FakeClock they
are the same on every run.

Counts are whole numbers: a series' count by time t is the floor of the integral of its
rate up to t, so a window's count is a difference of two floors and windows add up.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from typing import NamedTuple

from baseten_operator.sim.baseten.errors import bad_request

STABLE = "stable"
PROMOTING = "promoting"
# The status codes a profile's shares are answered with (inferred: Baseten's metrics carry
# the real code; the simulator has one per class).
OK, CLIENT_ERROR, SERVER_ERROR = "200", "400", "500"
QUANTILES = (0.5, 0.9, 0.95, 0.99)


@dataclass(frozen=True)
class Latency:
    """End-to-end response times, in seconds, at the quantiles 0.5, 0.9, 0.95 and 0.99.

    The distribution is linear between them (from 0 at no time), the slowest 1% spread up
    to p99 + (p99 - p95) (inferred: the spec states quantiles, not a distribution)."""

    p50: float = 0.1
    p90: float = 0.2
    p95: float = 0.3
    p99: float = 0.5

    @property
    def points(self) -> tuple[tuple[float, float], ...]:
        """(seconds, share of requests at most that slow), the distribution's corners."""
        slowest = self.p99 + (self.p99 - self.p95)
        return ((0.0, 0.0), (self.p50, 0.5), (self.p90, 0.9), (self.p95, 0.95),
                (self.p99, 0.99), (slowest, 1.0))  # fmt: skip

    def cdf(self, seconds: float) -> float:
        points = self.points
        for (x0, p0), (x1, p1) in pairwise(points):
            if seconds < x1:
                return p0 + (p1 - p0) * (seconds - x0) / (x1 - x0) if seconds > x0 else p0
        return 1.0

    @property
    def mean(self) -> float:
        points = self.points
        return sum((p1 - p0) * (x0 + x1) / 2 for (x0, p0), (x1, p1) in pairwise(points))


@dataclass(frozen=True)
class TrafficProfile:
    requests_per_second: float = 0.0  # per simulated second, at 100% of the environment
    share_5xx: float = 0.0
    share_4xx: float = 0.0
    latency: Latency = field(default_factory=Latency)

    @classmethod
    def parse(
        cls,
        requests_per_second: float,
        share_5xx: float = 0.0,
        share_4xx: float = 0.0,
        latency_ms: dict[str, float] | None = None,
    ) -> TrafficProfile:
        """A profile from a control call's arguments; 400 for one that makes no sense."""
        if not requests_per_second >= 0:
            raise bad_request("requests_per_second must be at least 0")
        if not (0 <= share_5xx <= 1 and 0 <= share_4xx <= 1 and share_5xx + share_4xx <= 1):
            raise bad_request("share_5xx and share_4xx must be within 0..1 and add up to at most 1")
        return cls(
            float(requests_per_second), float(share_5xx), float(share_4xx), _latency(latency_ms)
        )

    def status_shares(self) -> dict[str, float]:
        """The share of requests answered with each status code (only those above 0)."""
        shares = {
            OK: 1.0 - self.share_5xx - self.share_4xx,
            CLIENT_ERROR: self.share_4xx,
            SERVER_ERROR: self.share_5xx,
        }
        return {code: share for code, share in shares.items() if share > 0}


NO_TRAFFIC = TrafficProfile()


def mixture_quantile(parts: list[tuple[float, Latency]], q: float) -> float:
    """The q-quantile of the latencies of requests mixed from several distributions, each
    weighted by its number of requests (bisection on the mixture's distribution)."""
    total = sum(weight for weight, _ in parts)
    low, high = 0.0, max(latency.points[-1][0] for _, latency in parts)
    for _ in range(60):
        middle = (low + high) / 2
        if sum(weight * latency.cdf(middle) for weight, latency in parts) / total < q:
            low = middle
        else:
            high = middle
    return round(high, 9)


_QUANTILE_NAMES = ("p50", "p90", "p95", "p99")


def _latency(latency_ms: dict[str, float] | None) -> Latency:
    """Latency from milliseconds by quantile name; a quantile left out keeps its default."""
    default = Latency()
    if latency_ms is None:
        return default
    unknown = set(latency_ms) - set(_QUANTILE_NAMES)
    if unknown:
        raise bad_request(f"latency_ms takes p50, p90, p95 and p99, not {sorted(unknown)}")
    seconds = [
        float(latency_ms[name]) / 1000 if name in latency_ms else getattr(default, name)
        for name in _QUANTILE_NAMES
    ]
    if seconds[0] < 0 or seconds != sorted(seconds):
        raise bad_request("latency_ms must be at least 0 and p50 <= p90 <= p95 <= p99")
    return Latency(*seconds)


# Named tuples, not dataclasses: the account builds one per deployment on every change
# (account.py, `_observe`), and tuples are several times cheaper to build and compare.


class Serving(NamedTuple):
    """A deployment's part of one environment's traffic."""

    environment: str
    phase: str  # STABLE or PROMOTING
    share: float  # 0..1


class DeploymentState(NamedTuple):
    """What the metrics of a deployment follow: its traffic and its serving replicas."""

    servings: tuple[Serving, ...] = ()
    replicas: int = 0


GONE = DeploymentState()


@dataclass(frozen=True)
class Piece:
    """A stretch of time over which a deployment's state and profile stay the same."""

    start: float
    end: float
    state: DeploymentState
    profile: TrafficProfile


class _Changes:
    """A value as it changed over time: (since, value) in time order."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.values: list = []

    def set(self, at: float, value: object) -> None:
        if self.times and at <= self.times[-1]:
            # A later change at the same instant replaces the earlier one (and a time before
            # the last, which the account never records, counts as that instant).
            at = self.times.pop()
            self.values.pop()
        if self.values and self.values[-1] == value:
            return
        self.times.append(at)
        self.values.append(value)

    def since(self, start: float, end: float) -> Iterator[tuple[float, float, object]]:
        """(from, to, value) covering [start, end) where a value is known."""
        first = max(bisect.bisect_right(self.times, start) - 1, 0)
        for i in range(first, len(self.times)):
            lo = max(self.times[i], start)
            hi = min(self.times[i + 1] if i + 1 < len(self.times) else math.inf, end)
            if lo < hi:
                yield lo, hi, self.values[i]


class TrafficLog:
    """Every deployment's state and traffic profile over time."""

    def __init__(self) -> None:
        self._states: dict[str, _Changes] = {}
        self._profiles: dict[str, _Changes] = {}
        self._last: dict[str, dict[str, DeploymentState]] = {}  # by model

    def record(self, at: float, model_id: str, states: dict[str, DeploymentState]) -> None:
        """The state at `at` of every deployment of a model (one missing is gone)."""
        last = self._last.get(model_id, {})
        for dep_id, state in states.items():
            if last.get(dep_id) != state:
                self._states.setdefault(dep_id, _Changes()).set(at, state)
        for dep_id in last.keys() - states.keys():
            self._states[dep_id].set(at, GONE)
        self._last[model_id] = states

    def set_profile(self, dep_id: str, at: float, profile: TrafficProfile) -> None:
        self._profiles.setdefault(dep_id, _Changes()).set(at, profile)

    def pieces(self, dep_id: str, start: float, end: float) -> Iterator[Piece]:
        """The deployment's stretches of constant state and profile within [start, end)."""
        states = self._states.get(dep_id)
        if states is None:
            return
        profiles = self._profiles.get(dep_id)
        for lo, hi, state in states.since(start, end):
            assert isinstance(state, DeploymentState)
            if profiles is None or not profiles.times:
                yield Piece(lo, hi, state, NO_TRAFFIC)
                continue
            if lo < profiles.times[0]:
                yield Piece(lo, min(hi, profiles.times[0]), state, NO_TRAFFIC)
            for p_lo, p_hi, profile in profiles.since(lo, hi):
                assert isinstance(profile, TrafficProfile)
                yield Piece(p_lo, p_hi, state, profile)

    def requests(
        self, dep_id: str, start: float, end: float, time_scale: float
    ) -> dict[tuple[str, str, str], float]:
        """Requests within [start, end) by (status code, environment, rollout phase), as
        real numbers: counts are floors of these from the deployment's start on."""
        totals: dict[tuple[str, str, str], float] = defaultdict(float)
        for piece in self.pieces(dep_id, start, end):
            seconds = piece.end - piece.start
            shares = piece.profile.status_shares()
            for serving in piece.state.servings:
                per_second = piece.profile.requests_per_second * serving.share / time_scale
                for code, share in shares.items():
                    totals[(code, serving.environment, serving.phase)] += (
                        per_second * share * seconds
                    )
        return dict(totals)

    def latencies(
        self, dep_id: str, start: float, end: float, time_scale: float
    ) -> list[tuple[str, str, float, Latency]]:
        """(environment, rollout phase, requests, their latency) within [start, end)."""
        parts = []
        for piece in self.pieces(dep_id, start, end):
            seconds = piece.end - piece.start
            for serving in piece.state.servings:
                per_second = piece.profile.requests_per_second * serving.share / time_scale
                if per_second > 0:
                    requests = per_second * seconds
                    part = (serving.environment, serving.phase, requests, piece.profile.latency)
                    parts.append(part)
        return parts

    def replicas(self, dep_id: str, start: float, end: float) -> float | None:
        """The time-weighted mean of the serving replicas within [start, end), None when
        nothing is known of the deployment then."""
        weighted = known = 0.0
        for piece in self.pieces(dep_id, start, end):
            weighted += piece.state.replicas * (piece.end - piece.start)
            known += piece.end - piece.start
        return weighted / known if known > 0 else None

    def clear(self) -> None:
        self._states.clear()
        self._profiles.clear()
        self._last = {}
