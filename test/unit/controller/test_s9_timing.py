"""Section 9: defaults, and every delay scaled by --time-scale."""

from __future__ import annotations

import dataclasses

import pytest

from baseten_operator.controller.shared.timing import Timing, go_duration
from baseten_operator.truss.pusher import PUSH_TIMEOUT


def test_defaults() -> None:
    t = Timing()
    assert (t.steady, t.poll, t.settings_applied, t.push_poll) == (300, 30, 10, 10)
    assert (t.retry_base, t.retry_cap, t.retry_jitter, t.retry_deadline) == (120, 1800, 0.5, 7200)
    assert (t.delete_blocked, t.observe, t.recreation_blocked, t.model_id_invalidated) == (
        30,
        30,
        300,
        1,
    )


def test_every_delay_is_scaled() -> None:
    base, scaled = Timing(), Timing.scaled(0.01)
    for field in dataclasses.fields(Timing):
        if field.name in ("retry_jitter", "steady_jitter", "scale"):
            continue
        assert getattr(scaled, field.name) == pytest.approx(getattr(base, field.name) * 0.01)
    # Fractions of a delay, not delays.
    assert (scaled.retry_jitter, scaled.steady_jitter) == (0.5, 0.1)
    assert go_duration(scaled.nominal(scaled.retry_deadline)) == "2h0m0s"


def test_the_push_timeout_is_five_minutes_and_never_a_scaled_delay() -> None:
    # It bounds a real child process, which --time-scale does not speed up.
    assert PUSH_TIMEOUT == 300
    assert "push_timeout" not in {field.name for field in dataclasses.fields(Timing)}


def test_invalid_scale() -> None:
    with pytest.raises(ValueError):
        Timing.scaled(0)


def test_retry_delay() -> None:
    t = Timing()
    assert [t.retry_delay(n, 0.0) for n in range(1, 7)] == [120, 240, 480, 960, 1800, 1800]
    assert t.retry_delay(1, 0.999) == pytest.approx(120 * 1.4995)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(7200, "2h0m0s"), (301, "5m1s"), (300, "5m0s"), (45, "45s"), (0.5, "500ms"), (0, "0s")],
)
def test_go_duration(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


def test_scaled_reconciler_requeues(h) -> None:
    from baseten_operator.runtime.controller import Request

    h.timing = Timing.scaled(0.01)
    h.reconciler = h.make_reconciler()
    h.steady_world()
    h.create()
    result = h.reconciler.reconcile(Request("default", "my-model"))
    assert result.requeue_after == pytest.approx(Timing().steady_after("default/my-model") * 0.01)
    assert 3.0 <= result.requeue_after < 3.3


KEYS = [f"ns-{i % 7}/model-{i:04d}" for i in range(1000)]


def test_the_steady_period_is_fixed_per_object() -> None:
    # Per object, not per pass: a restarted operator (another process) keeps each period.
    # Pinned values, not a second call in this process: Python's hash() would pass that,
    # being salted per process only.
    t = Timing()
    assert [t.steady_after(key) for key in KEYS] == [t.steady_after(key) for key in KEYS]
    assert t.steady_after("default/my-model") == pytest.approx(326.83770515683034)
    assert t.steady_after("team-b/rival") == pytest.approx(318.5851664530335)
    assert t.steady_after("a/b") != t.steady_after("b/a")


def test_the_steady_period_is_within_ten_percent_above_five_minutes() -> None:
    periods = [Timing().steady_after(key) for key in KEYS]
    assert all(300 <= period < 330 for period in periods)


def test_steady_periods_spread_evenly_across_objects() -> None:
    # 1,000 objects over the 30 s jitter window: ten 3 s buckets of about 100 each.
    buckets = [0] * 10
    for key in KEYS:
        buckets[int((Timing().steady_after(key) - 300) / 3)] += 1
    assert min(buckets) >= 70 and max(buckets) <= 130


def test_steady_reads_even_out_over_later_periods() -> None:
    # Every object converged at 0 (a restart): the k-th re-check of each falls at
    # k * its period, so after ten periods the reads cover a whole period, not a burst.
    t = Timing()
    tenth = [(10 * t.steady_after(key)) % t.steady for key in KEYS]
    minutes = [0] * 5
    for offset in tenth:
        minutes[int(offset // 60)] += 1
    assert min(minutes) >= 150 and max(minutes) <= 250


def test_the_pass_requeues_at_its_own_steady_period(h) -> None:
    h.steady_world()
    h.create(name="alpha")
    period = h.run(name="alpha").requeue_after
    assert period == Timing().steady_after("default/alpha") != Timing().steady
    # The next pass, a period later by the fake clock, asks for the same period again.
    h.clock.advance(period)
    assert h.run(name="alpha").requeue_after == period
