"""A rate-limited priority work queue with client-go's `util/workqueue` semantics.

Guarantees the controller relies on:
- an item is queued at most once (the dirty set), however often it is added;
- an item being processed is never handed to a second worker; if it is added while
  processing, it is queued again when `done` is called, so the latest state is seen;
- `add_after` delays an item (earliest deadline wins for an item already waiting); it is
  never released before its deadline, except beside an item that is due: the waiter then
  also releases the items within DELAY_SLACK of their own delay from being due, so one
  wake-up serves a run of nearby deadlines (the kernel's timer slack, for the same reason:
  a wake-up is what costs). Such a run wakes one idle worker, which takes its items one
  after the other; the other idle workers are woken only for what is still queued
  BATCH_HANDOFF later (a slow call). Woken together, Python threads mostly wait for each
  other's GIL: at 1,000 CRs this cut the steady window's CPU by about a tenth;
- `add_rate_limited` delays by the rate limiter's answer, `forget` resets it;
- after `shutdown`, adds are ignored and `get` hands out what is still queued, then
  reports shutdown; `shut_down_with_drain` also waits for in-flight items.

Priorities, as controller-runtime 0.20's priority queue: every add carries one (higher
first, first in first out within one), and an item added again at a higher priority
moves up, never down. Work a user caused (a watch event) keeps `DEFAULT_PRIORITY`;
re-checks nobody asked for (requeue timers, resyncs, the initial list) take
`LOW_PRIORITY`, so a burst of them never delays a spec change behind it.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Hashable
from typing import Any, Protocol

from baseten_operator.runtime import metrics
from baseten_operator.runtime.clock import Clock, RealClock
from baseten_operator.runtime.tokenbucket import TokenBucket

DEFAULT_PRIORITY = 0
LOW_PRIORITY = -100
# The fraction of its delay an item may be released early, beside a due one.
DELAY_SLACK = 0.01
# Items released together by the delay waiter wake one worker, which takes them one after
# the other; the other idle workers are woken for what is still queued this long after.
BATCH_HANDOFF = 0.05


class RateLimiter(Protocol):
    def when(self, item: Hashable) -> float:
        """Seconds to wait before `item` may be processed again; records a failure."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking `item` (it succeeded)."""
        ...

    def num_requeues(self, item: Hashable) -> int: ...


class ItemExponentialFailureRateLimiter:
    """base * 2^failures per item, capped: 5 ms, 10 ms, 20 ms ... 1000 s."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._lock = threading.Lock()
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        with self._lock:
            failures = self._failures.get(item, 0)
            self._failures[item] = failures + 1
        # Past ~2^64 the float overflows long before the cap matters; stop doubling there.
        if failures > 64:
            return self._max_delay
        return min(self._base_delay * 2.0**failures, self._max_delay)

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class BucketRateLimiter:
    """An overall token bucket (qps, burst) shared by all items, as golang.org/x/time/rate.

    Each call reserves a token; when the bucket is empty the reservation is in the
    future and its distance is the delay. Tokens may go negative, so a burst of
    failures is spread out at `qps` rather than released all at once.
    """

    def __init__(self, qps: float = 10.0, burst: int = 100, *, clock: Clock | None = None) -> None:
        self._bucket = TokenBucket(qps, burst, clock or RealClock())

    def when(self, item: Hashable) -> float:
        return self._bucket.reserve()

    def forget(self, item: Hashable) -> None:
        """The bucket is shared; nothing per item to forget."""

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """The longest delay any of the limiters asks for."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self._limiters = limiters

    def when(self, item: Hashable) -> float:
        # Every limiter must record the failure, so evaluate all before taking the max.
        return max([limiter.when(item) for limiter in self._limiters])

    def forget(self, item: Hashable) -> None:
        for limiter in self._limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self._limiters)


def default_controller_rate_limiter(clock: Clock | None = None) -> RateLimiter:
    """controller-runtime's default: per-item 5 ms..1000 s, overall 10 qps burst 100."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(10.0, 100, clock=clock),
    )


class RateLimitingQueue:
    def __init__(
        self, name: str, rate_limiter: RateLimiter | None = None, clock: Clock | None = None
    ) -> None:
        self._name = name
        self._clock: Clock = clock or RealClock()
        self._rate_limiter = rate_limiter or default_controller_rate_limiter(self._clock)

        # One lock; two conditions so adds wake workers and new deadlines wake the waiter.
        self._lock = threading.Lock()
        self._item_available = threading.Condition(self._lock)
        self._delay_changed = threading.Condition(self._lock)
        self._processing_changed = threading.Condition(self._lock)

        # Ready items: a heap of (-priority, sequence, item); `_queued` holds each item's
        # live (priority, sequence), so entries superseded by a raise are skipped when popped.
        self._queue: list[tuple[int, int, Any]] = []
        self._queued: dict[Any, tuple[int, int]] = {}
        self._dirty: dict[Any, int] = {}  # item -> the highest priority it was added with
        self._processing: dict[Any, float] = {}  # item -> monotonic start
        self._added_at: dict[Any, float] = {}  # item -> monotonic first add while dirty
        self._shutting_down = False
        self._draining = False

        # Delayed items: a heap of (ready_at, sequence, item, release_from), the last the
        # earliest moment the slack allows; `_ready_at` holds the live deadline per item, so
        # superseded heap entries are skipped when popped, and `_waiting_priority` the
        # priority the item is added with once due.
        self._waiting: list[tuple[float, int, Any, float]] = []
        self._ready_at: dict[Any, float] = {}
        self._waiting_priority: dict[Any, int] = {}
        self._sequence = itertools.count()
        self._waiter: threading.Thread | None = None

        self._depth = metrics.WORKQUEUE_DEPTH.labels(name=name)
        self._adds = metrics.WORKQUEUE_ADDS.labels(name=name)
        self._queue_duration = metrics.WORKQUEUE_QUEUE_DURATION.labels(name=name)
        self._work_duration = metrics.WORKQUEUE_WORK_DURATION.labels(name=name)
        self._retries = metrics.WORKQUEUE_RETRIES.labels(name=name)
        metrics.IN_FLIGHT_WORK.track(self)

    @property
    def name(self) -> str:
        return self._name

    # --- the plain queue ------------------------------------------------------------

    def add(self, item: Hashable, priority: int = DEFAULT_PRIORITY) -> None:
        with self._lock:
            self._add_locked(item, priority)

    def _add_locked(self, item: Any, priority: int, *, wake: bool = True) -> bool:
        """Whether the item was newly queued (and, with `wake`, an idle worker woken)."""
        if self._shutting_down:
            return False
        queued_with = self._dirty.get(item)
        if queued_with is not None:
            if priority > queued_with:
                self._dirty[item] = priority
                if item in self._queued:
                    self._push_locked(item, priority)  # moves up; the old entry goes stale
            return False
        self._adds.inc()
        self._dirty[item] = priority
        self._added_at.setdefault(item, self._clock.monotonic())
        if item in self._processing:
            return False  # `done` queues it again
        self._push_locked(item, priority)
        if wake:
            self._item_available.notify()
        return True

    def _push_locked(self, item: Any, priority: int) -> None:
        sequence = next(self._sequence)
        self._queued[item] = (priority, sequence)
        heapq.heappush(self._queue, (-priority, sequence, item))
        self._depth.set(len(self._queued))

    def get(self) -> tuple[Any, bool]:
        """Block until an item is available; `(None, True)` once shut down and empty."""
        item, _, shutdown = self.get_with_priority()
        return item, shutdown

    def get_with_priority(self) -> tuple[Any, int, bool]:
        """`get`, also saying the priority the item was queued with."""
        with self._lock:
            while not self._queued and not self._shutting_down:
                self._item_available.wait()
            if not self._queued:
                return None, DEFAULT_PRIORITY, True
            while True:
                negative_priority, sequence, item = heapq.heappop(self._queue)
                if self._queued.get(item) == (-negative_priority, sequence):
                    break
            del self._queued[item]
            self._depth.set(len(self._queued))
            now = self._clock.monotonic()
            self._queue_duration.observe(max(0.0, now - self._added_at.pop(item, now)))
            self._processing[item] = now
            priority = self._dirty.pop(item)
            return item, priority, False

    def done(self, item: Hashable) -> None:
        with self._lock:
            started = self._processing.pop(item, None)
            if started is not None:
                self._work_duration.observe(max(0.0, self._clock.monotonic() - started))
            priority = self._dirty.get(item)
            if priority is not None:
                self._push_locked(item, priority)
                self._item_available.notify()
            if not self._processing:
                self._processing_changed.notify_all()

    def __len__(self) -> int:
        with self._lock:
            return len(self._queued)

    def processing_ages(self) -> list[float]:
        with self._lock:
            now = self._clock.monotonic()
            return [max(0.0, now - started) for started in self._processing.values()]

    def shutdown(self) -> None:
        """Refuse new items and wake every waiter; a pending drain stops waiting."""
        with self._lock:
            self._shutting_down = True
            self._draining = False
            self._notify_all_locked()

    def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        """Shut down, then wait until no item is being processed.

        Returns whether processing drained (False when `timeout`, in this queue's
        clock, passed first or `shutdown` cancelled the wait).
        """
        with self._lock:
            self._shutting_down = True
            self._draining = True
            self._notify_all_locked()
            deadline = None if timeout is None else self._clock.monotonic() + timeout
            while self._processing and self._draining:
                remaining = None if deadline is None else deadline - self._clock.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._clock.wait(self._processing_changed, remaining)
            return not self._processing

    def shutting_down(self) -> bool:
        with self._lock:
            return self._shutting_down

    def _notify_all_locked(self) -> None:
        self._item_available.notify_all()
        self._delay_changed.notify_all()
        self._processing_changed.notify_all()

    # --- delaying -------------------------------------------------------------------

    def add_after(self, item: Hashable, seconds: float, priority: int = DEFAULT_PRIORITY) -> None:
        with self._lock:
            if self._shutting_down:
                return
            if seconds <= 0:
                self._add_locked(item, priority)
                return
            ready_at = self._clock.monotonic() + seconds
            current = self._ready_at.get(item)
            if current is not None and current <= ready_at:
                # Already due sooner; it is added then with the higher of the two priorities.
                self._waiting_priority[item] = max(priority, self._waiting_priority[item])
                return
            self._ready_at[item] = ready_at
            self._waiting_priority[item] = max(priority, self._waiting_priority.get(item, priority))
            earliest = not self._waiting or ready_at < self._waiting[0][0]
            release_from = ready_at - seconds * DELAY_SLACK
            heapq.heappush(self._waiting, (ready_at, next(self._sequence), item, release_from))
            self._ensure_waiter_locked()
            if earliest:
                # Otherwise the waiter already wakes sooner: waking it for every add would
                # cost a thread switch per requeue.
                self._delay_changed.notify()

    def _ensure_waiter_locked(self) -> None:
        # Started on first use: most queues in tests never delay anything.
        if self._waiter is None:
            self._waiter = threading.Thread(
                target=self._wait_loop, name=f"workqueue-{self._name}-delay", daemon=True
            )
            self._waiter.start()

    def _wait_loop(self) -> None:
        handoff_at: float | None = None
        with self._lock:
            while not self._shutting_down:
                now = self._clock.monotonic()
                if handoff_at is not None and handoff_at <= now:
                    handoff_at = None
                    self._item_available.notify(len(self._queued))
                if self._waiting and self._waiting[0][0] <= now:
                    # The due ones, and the nearly due ones behind them (their slack).
                    released = 0
                    while self._waiting and self._waiting[0][3] <= now:
                        ready_at, _, item, _ = heapq.heappop(self._waiting)
                        if self._ready_at.get(item) == ready_at:
                            del self._ready_at[item]
                            priority = self._waiting_priority.pop(item)
                            released += self._add_locked(item, priority, wake=False)
                    if released:
                        # One worker for the run; more only if it falls behind. Every
                        # worker woken at once would mostly wait for the others' GIL.
                        self._item_available.notify()
                        if released > 1 and handoff_at is None:
                            handoff_at = now + BATCH_HANDOFF
                wake_at = [self._waiting[0][0]] if self._waiting else []
                if handoff_at is not None:
                    wake_at.append(handoff_at)
                self._clock.wait(self._delay_changed, min(wake_at) - now if wake_at else None)

    # --- rate limiting --------------------------------------------------------------

    def add_rate_limited(self, item: Hashable, priority: int = DEFAULT_PRIORITY) -> None:
        self._retries.inc()
        self.add_after(item, self._rate_limiter.when(item), priority)

    def forget(self, item: Hashable) -> None:
        self._rate_limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return self._rate_limiter.num_requeues(item)
