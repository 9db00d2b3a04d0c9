import threading

from baseten_operator.runtime.clock import FakeClock, rfc3339


def test_fake_clock_advances_only_when_told() -> None:
    clock = FakeClock(start=1_767_225_600.0)
    assert rfc3339(clock) == "2026-01-01T00:00:00Z"
    clock.advance(90)
    assert rfc3339(clock) == "2026-01-01T00:01:30Z"
    assert clock.monotonic() == 90


def test_fake_sleep_returns_once_time_has_passed() -> None:
    clock = FakeClock()
    woke = threading.Event()

    def sleeper() -> None:
        clock.sleep(10)
        woke.set()

    thread = threading.Thread(target=sleeper)
    thread.start()
    clock.advance(5)
    assert not woke.wait(0.05)
    clock.advance(5)
    assert woke.wait(5)
    thread.join()
