from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import pytest

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.runtime.workqueue import (
    BATCH_HANDOFF,
    DEFAULT_PRIORITY,
    DELAY_SLACK,
    LOW_PRIORITY,
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimitingQueue,
)

WaitUntil = Callable[..., None]


def test_an_item_added_many_times_is_queued_once() -> None:
    q = RateLimitingQueue("dedup", clock=FakeClock())
    for item in ("a", "b", "a", "a", "b"):
        q.add(item)
    assert len(q) == 2
    assert q.get() == ("a", False)
    assert q.get() == ("b", False)
    assert len(q) == 0


def test_an_item_readded_while_processing_runs_again_after_done() -> None:
    q = RateLimitingQueue("processing", clock=FakeClock())
    q.add("a")
    item, _ = q.get()
    q.add("a")
    q.add("a")
    # Held back while a worker has it: no second worker can take it.
    assert len(q) == 0
    q.done(item)
    assert len(q) == 1
    assert q.get() == ("a", False)
    q.done("a")
    assert len(q) == 0


def test_a_waiting_worker_gets_a_processing_item_only_after_done(wait_until: WaitUntil) -> None:
    q = RateLimitingQueue("handoff", clock=FakeClock())
    q.add("a")
    first, _ = q.get()
    got: list[str] = []
    second = threading.Thread(target=lambda: got.append(q.get()[0]))
    second.start()
    q.add("a")
    assert len(q) == 0 and not got
    q.done(first)
    second.join(5)
    assert got == ["a"]


def test_higher_priority_goes_first_and_each_priority_is_first_in_first_out() -> None:
    q = RateLimitingQueue("priorities", clock=FakeClock())
    q.add("recheck-1", LOW_PRIORITY)
    q.add("user-1")
    q.add("recheck-2", LOW_PRIORITY)
    q.add("user-2", DEFAULT_PRIORITY)
    q.add("urgent", 10)
    order = [q.get_with_priority() for _ in range(5)]
    assert order == [
        ("urgent", 10, False),
        ("user-1", DEFAULT_PRIORITY, False),
        ("user-2", DEFAULT_PRIORITY, False),
        ("recheck-1", LOW_PRIORITY, False),
        ("recheck-2", LOW_PRIORITY, False),
    ]


def test_a_queued_item_added_again_moves_up_never_down() -> None:
    q = RateLimitingQueue("raise", clock=FakeClock())
    q.add("a", LOW_PRIORITY)
    q.add("b", LOW_PRIORITY)
    q.add("c")
    q.add("b")  # a watch event for a queued re-check: it moves up (behind c, added earlier)
    q.add("c", LOW_PRIORITY)  # never down
    assert len(q) == 3
    assert [q.get_with_priority()[:2] for _ in range(3)] == [
        ("c", DEFAULT_PRIORITY),
        ("b", DEFAULT_PRIORITY),
        ("a", LOW_PRIORITY),
    ]
    assert len(q) == 0


def test_an_item_added_while_processing_comes_back_at_the_highest_priority_asked() -> None:
    q = RateLimitingQueue("processing-priority", clock=FakeClock())
    q.add("a", LOW_PRIORITY)
    item, _ = q.get()
    q.add("a", LOW_PRIORITY)
    q.add("a")
    q.add("b", LOW_PRIORITY)
    q.done(item)
    assert q.get_with_priority() == ("a", DEFAULT_PRIORITY, False)
    assert q.get_with_priority() == ("b", LOW_PRIORITY, False)


def test_delayed_adds_keep_their_priority_and_merge_to_the_higher() -> None:
    clock = FakeClock()
    q = RateLimitingQueue("delayed-priority", clock=clock)
    q.add_after("timer", 5, LOW_PRIORITY)
    q.add_after("merged", 2, LOW_PRIORITY)
    q.add_after("merged", 4)  # later deadline: the earlier stands, with the higher priority
    q.add("user")
    clock.advance(5)
    q_order = [q.get_with_priority()[:2] for _ in range(3)]
    assert q_order == [
        ("user", DEFAULT_PRIORITY),
        ("merged", DEFAULT_PRIORITY),
        ("timer", LOW_PRIORITY),
    ]


def test_add_rate_limited_keeps_the_priority_it_is_given() -> None:
    clock = FakeClock()
    q = RateLimitingQueue("retry-priority", ItemExponentialFailureRateLimiter(1.0, 60.0), clock)
    q.add_rate_limited("low", LOW_PRIORITY)
    q.add_rate_limited("user")
    clock.advance(1)
    assert [q.get_with_priority()[:2] for _ in range(2)] == [
        ("user", DEFAULT_PRIORITY),
        ("low", LOW_PRIORITY),
    ]


def test_add_after_releases_items_in_deadline_order(wait_until: WaitUntil) -> None:
    clock = FakeClock()
    q = RateLimitingQueue("delays", clock=clock)
    q.add_after("ten", 10)
    q.add_after("five", 5)
    q.add_after("seven", 7)
    q.add_after("now", 0)
    assert q.get() == ("now", False)
    clock.advance(5)
    assert q.get() == ("five", False)
    assert len(q) == 0
    clock.advance(2)
    assert q.get() == ("seven", False)
    clock.advance(3)
    assert q.get() == ("ten", False)


def test_items_within_their_slack_go_with_a_due_one_and_never_early_alone() -> None:
    clock = FakeClock()
    q = RateLimitingQueue("slack", clock=clock)
    q.add_after("marker", 5)
    q.add_after("due", 10)
    q.add_after("near", 10 + 10 * DELAY_SLACK / 2)  # within its slack of being due at 10
    q.add_after("far", 10.5)  # beyond it: waits for its own deadline
    clock.advance(5)
    assert q.get() == ("marker", False)
    assert len(q) == 0  # released in the same sweep as "marker", had they been
    clock.advance(5)
    assert [q.get()[0], q.get()[0]] == ["due", "near"]
    assert len(q) == 0
    clock.advance(0.5)
    assert q.get() == ("far", False)


def test_a_run_of_released_items_wakes_one_worker_then_the_rest_if_still_queued(
    wait_until: WaitUntil,
) -> None:
    clock = FakeClock()
    q = RateLimitingQueue("batch", clock=clock)
    # Which wake-ups the queue asks for (threading.Condition.notify's `n`): waking every
    # idle worker for a run of re-checks is the cost this rule removes, and only the
    # count of wake-ups shows it.
    wakeups: list[int] = []
    q._item_available.notify = lambda n=1: wakeups.append(n)  # type: ignore[method-assign]
    for item in ("a", "b", "c"):
        q.add_after(item, 10)
    clock.advance(10)
    wait_until(lambda: len(q) == 3, what="the run released")
    assert wakeups == [1]
    q.get()  # the woken worker takes one; two are still queued at the hand-off
    clock.advance(BATCH_HANDOFF)
    wait_until(lambda: len(wakeups) == 2, what="the hand-off")
    assert wakeups == [1, 2]


def test_a_single_released_item_wakes_one_worker_and_nothing_more(wait_until: WaitUntil) -> None:
    clock = FakeClock()
    q = RateLimitingQueue("single", clock=clock)
    wakeups: list[int] = []
    q._item_available.notify = lambda n=1: wakeups.append(n)  # type: ignore[method-assign]
    q.add_after("a", 10)
    q.add_after("later", 20)
    clock.advance(10)
    wait_until(lambda: len(q) == 1, what="the item released")
    clock.advance(BATCH_HANDOFF)
    clock.advance(10)
    wait_until(lambda: len(q) == 2, what="the later item released")
    assert wakeups == [1, 1]


def test_add_after_keeps_the_earliest_deadline_of_an_item() -> None:
    clock = FakeClock()
    q = RateLimitingQueue("earliest", clock=clock)
    q.add_after("x", 10)
    q.add_after("x", 2)
    q.add_after("x", 5)  # later than the live deadline: ignored
    clock.advance(2)
    assert q.get() == ("x", False)
    q.done("x")
    q.add_after("marker", 8)
    clock.advance(8)  # the superseded 10 s entry is due too, and must not add "x" again
    assert q.get() == ("marker", False)
    assert len(q) == 0


def test_item_exponential_limiter_doubles_caps_and_forgets() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    assert [limiter.when("a") for _ in range(4)] == [0.005, 0.01, 0.02, 0.04]
    assert limiter.num_requeues("a") == 4
    assert limiter.when("b") == 0.005  # per item
    for _ in range(100):
        last = limiter.when("a")
    assert last == 1000.0
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 0.005


def test_bucket_limiter_allows_the_burst_then_spaces_at_qps() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(10.0, 100, clock=clock)
    assert all(limiter.when(i) == 0.0 for i in range(100))
    assert limiter.when("over") == pytest.approx(0.1)
    assert limiter.when("over2") == pytest.approx(0.2)
    clock.advance(1.0)  # ten tokens back, two of them owed
    assert [limiter.when(i) for i in range(8)] == [0.0] * 8
    assert limiter.when("again") == pytest.approx(0.1)


def test_max_of_limiters_takes_the_longest_delay_and_forgets_everywhere() -> None:
    clock = FakeClock()
    per_item = ItemExponentialFailureRateLimiter(1.0, 100.0)
    bucket = BucketRateLimiter(1.0, 1, clock=clock)
    limiter = MaxOfRateLimiter(per_item, bucket)
    assert limiter.when("a") == 1.0  # per-item 1 s; bucket had a token
    assert limiter.when("a") == 2.0  # per-item 2 s; bucket 1 s
    assert limiter.num_requeues("a") == 2
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0


def test_add_rate_limited_delays_by_the_limiter_and_counts_retries(
    unique_name: str, sample: Callable[..., float]
) -> None:
    clock = FakeClock()
    q = RateLimitingQueue(unique_name, ItemExponentialFailureRateLimiter(1.0, 60.0), clock)
    q.add_rate_limited("a")
    q.add_rate_limited("b")
    q.add_rate_limited("b")  # b now waits 2 s, but its first 1 s deadline still stands
    assert q.num_requeues("b") == 2
    assert len(q) == 0
    clock.advance(1)
    assert {q.get()[0], q.get()[0]} == {"a", "b"}
    q.forget("b")
    assert q.num_requeues("b") == 0
    assert sample("workqueue_retries_total", name=unique_name) == 3


def test_shutdown_refuses_adds_and_hands_out_what_is_left() -> None:
    q = RateLimitingQueue("shutdown", clock=FakeClock())
    q.add("a")
    q.shutdown()
    q.add("b")
    q.add_after("c", 0)
    assert q.get() == ("a", False)
    assert q.get() == (None, True)


def test_shut_down_with_drain_waits_for_in_flight_items(wait_until: WaitUntil) -> None:
    q = RateLimitingQueue("drain", clock=FakeClock())
    q.add("a")
    item, _ = q.get()
    outcome: list[bool] = []
    drainer = threading.Thread(target=lambda: outcome.append(q.shut_down_with_drain()))
    drainer.start()
    wait_until(q.shutting_down, what="shutdown to begin")
    assert drainer.is_alive() and not outcome
    q.done(item)
    drainer.join(5)
    assert outcome == [True]


def test_shut_down_with_drain_gives_up_after_its_timeout(wait_until: WaitUntil) -> None:
    clock = FakeClock()
    q = RateLimitingQueue("drain-timeout", clock=clock)
    q.add("stuck")
    q.get()
    outcome: list[bool] = []
    drainer = threading.Thread(target=lambda: outcome.append(q.shut_down_with_drain(timeout=5)))
    drainer.start()
    wait_until(q.shutting_down, what="shutdown to begin")
    # The deadline is in queue time; keep time moving until the drainer notices it.
    wait_until(lambda: clock.advance(1) or not drainer.is_alive(), what="drain timeout")
    assert outcome == [False]


def test_many_producers_and_workers_lose_nothing_and_never_overlap(
    wait_until: WaitUntil,
) -> None:
    q = RateLimitingQueue("stress", clock=FakeClock())
    producers, workers, per_producer = 6, 4, 300
    hot_keys = [f"hot-{i}" for i in range(5)]  # added by everyone, over and over
    processed: Counter[str] = Counter()
    in_flight: set[str] = set()
    overlaps: list[str] = []
    lock = threading.Lock()

    def produce(index: int) -> None:
        for i in range(per_producer):
            q.add(f"p{index}-{i}")
            q.add(hot_keys[i % len(hot_keys)])

    def work() -> None:
        while True:
            item, shutdown = q.get()
            if shutdown:
                return
            with lock:
                if item in in_flight:
                    overlaps.append(item)
                in_flight.add(item)
            with lock:
                in_flight.discard(item)
                processed[item] += 1
            q.done(item)

    threads = [threading.Thread(target=work) for _ in range(workers)]
    threads += [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
    for thread in threads:
        thread.start()
    for thread in threads[workers:]:
        thread.join(10)
    unique = {f"p{p}-{i}" for p in range(producers) for i in range(per_producer)}

    def all_processed() -> bool:
        with lock:
            return unique <= set(processed)

    wait_until(all_processed, what="every item processed")
    q.shut_down_with_drain()
    for thread in threads[:workers]:
        thread.join(10)
    assert not overlaps
    assert all(processed[item] == 1 for item in unique)
    assert all(1 <= processed[key] <= producers * per_producer for key in hot_keys)
    assert len(q) == 0


def test_queue_metrics_track_adds_depth_and_running_work(
    unique_name: str, sample: Callable[..., float]
) -> None:
    clock = FakeClock()
    q = RateLimitingQueue(unique_name, clock=clock)
    q.add("a")
    q.add("a")
    q.add("b")
    assert sample("workqueue_adds_total", name=unique_name) == 2
    assert sample("workqueue_depth", name=unique_name) == 2
    q.get()
    clock.advance(3)
    assert sample("workqueue_depth", name=unique_name) == 1
    assert sample("workqueue_longest_running_processor_seconds", name=unique_name) == 3
    assert sample("workqueue_unfinished_work_seconds", name=unique_name) == 3
    q.done("a")
    assert sample("workqueue_work_duration_seconds_count", name=unique_name) == 1
    assert sample("workqueue_work_duration_seconds_sum", name=unique_name) == 3
    assert sample("workqueue_queue_duration_seconds_count", name=unique_name) == 1
    assert sample("workqueue_longest_running_processor_seconds", name=unique_name) == 0
