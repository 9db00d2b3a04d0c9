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
        if field.name in ("retry_jitter", "steady_earliest", "scale"):
            continue
        assert getattr(scaled, field.name) == pytest.approx(getattr(base, field.name) * 0.01)
    # Fractions of a delay, not delays.
    assert (scaled.retry_jitter, scaled.steady_earliest) == (0.5, 0.1)
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
    now = h.clock.now()
    assert result.requeue_after == pytest.approx(h.timing.steady_after("default/my-model", now))
    # Within a tenth and 1.1 scaled periods of 5 minutes.
    assert 0.3 <= result.requeue_after < 3.3


KEYS = [f"ns-{i % 7}/model-{i:04d}" for i in range(1000)]
# 2026-01-01T00:00:00Z, the fake clock's start: a multiple of the 5-minute period.
RESTART = 1_767_225_600.0


def recheck_instants(t: Timing, converged: float) -> list[float]:
    """When each object's first steady re-check falls, all converged at `converged`."""
    return [converged + t.steady_after(key, converged) for key in KEYS]


def busiest_tenth(instants: list[float], period: float) -> float:
    """The share of the instants in the busiest tenth of the period (0.1 is even)."""
    tenths = [0] * 10
    for at in instants:
        tenths[int((at % period) / period * 10)] += 1
    return max(tenths) / len(instants)


def test_each_object_has_its_phase_in_the_period_whatever_the_process() -> None:
    """Pinned values, not a second call in this process: Python's hash() would pass that,
    being salted per process only. A restart or a new leader keeps every phase."""
    t = Timing()
    # The offsets in the period at which each is re-checked, seen 7 s into it.
    assert 7 + t.steady_after("default/my-model", RESTART + 7) == pytest.approx(268.3770515683)
    assert 7 + t.steady_after("team-b/rival", RESTART + 7) == pytest.approx(185.851664530335)
    assert t.steady_after("a/b", RESTART) != t.steady_after("b/a", RESTART)


@pytest.mark.parametrize("converged", [RESTART, RESTART + 12.5, RESTART + 299.9])
def test_objects_converging_together_are_rechecked_spread_over_the_period(converged) -> None:
    """A restart: 1,000 objects converge within a second. Their first steady re-checks
    already cover the whole period evenly, not a burst that takes periods to drift apart."""
    t = Timing()
    assert busiest_tenth(recheck_instants(t, converged), t.steady) <= 0.12


def test_a_recheck_comes_between_a_tenth_and_eleven_tenths_of_a_period() -> None:
    t = Timing()
    for converged in (RESTART, RESTART + 100, RESTART + 250):
        waits = [t.steady_after(key, converged) for key in KEYS]
        assert all(30 <= wait < 330 for wait in waits)


def test_from_the_first_recheck_on_each_object_is_rechecked_every_period() -> None:
    t = Timing()
    first = RESTART + t.steady_after("default/alpha", RESTART)
    assert t.steady_after("default/alpha", first) == pytest.approx(t.steady)
    # A timer that fires a little late, or a little early, keeps the phase.
    assert 2 + t.steady_after("default/alpha", first + 2) == pytest.approx(t.steady)
    assert t.steady_after("default/alpha", first - 2) - 2 == pytest.approx(t.steady)


def test_the_pass_requeues_at_its_own_phase(h) -> None:
    h.steady_world()
    h.create(name="alpha")
    wait = h.run(name="alpha").requeue_after
    assert wait == Timing().steady_after("default/alpha", h.clock.now())
    # The next pass, at that instant by the fake clock, asks for one whole period.
    h.clock.advance(wait)
    assert h.run(name="alpha").requeue_after == pytest.approx(Timing().steady)
