"""Section 9: defaults, and every delay scaled by --time-scale."""

from __future__ import annotations

import dataclasses

import pytest

from baseten_operator.controller.timing import Timing, go_duration
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
        if field.name in ("retry_jitter", "scale"):
            continue
        assert getattr(scaled, field.name) == pytest.approx(getattr(base, field.name) * 0.01)
    assert scaled.retry_jitter == 0.5
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
    assert result.requeue_after == pytest.approx(3.0)
