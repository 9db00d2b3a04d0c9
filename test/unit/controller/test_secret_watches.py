"""The referenced Secrets' watches (secret_watches.py): one per Secret while a BasetenSecret
names it, and none left running, or started, once stopped with the manager."""

from __future__ import annotations

from typing import Any

from baseten_operator.controller.secret_watches import ReferencedSecrets


class WatchOf:
    """An informer's lifecycle, as ReferencedSecrets drives it."""

    def __init__(self, namespace: str, name: str) -> None:
        self.key = (namespace, name)
        self.started = False
        self.stopped_with: float | None = None

    def add_event_handler(self, **_handlers: Any) -> None:
        pass

    def start(self) -> None:
        self.started = True

    def stop(self, timeout: float) -> None:
        self.stopped_with = timeout


def watches() -> tuple[ReferencedSecrets, list[WatchOf]]:
    made: list[WatchOf] = []

    def make(namespace: str, name: str) -> Any:
        made.append(WatchOf(namespace, name))
        return made[-1]

    return ReferencedSecrets(reader=None, make_informer=make, on_change=lambda *_: None), made


def test_one_watch_per_secret_kept_while_a_cr_names_it() -> None:
    referenced, made = watches()
    referenced.refer("default/a", ("default", "hf"))
    referenced.refer("default/b", ("default", "hf"))
    assert [(w.key, w.started) for w in made] == [(("default", "hf"), True)]
    referenced.refer("default/a", None)
    assert made[0].stopped_with is None
    referenced.refer("default/b", ("default", "other"))
    assert made[0].stopped_with == 0
    assert referenced.watched() == {("default", "other")}


def test_stop_ends_every_watch_and_starts_none_after() -> None:
    referenced, made = watches()
    referenced.refer("default/a", ("default", "hf"))
    referenced.refer("team-b/c", ("team-b", "token"))
    referenced.stop(5.0)
    assert [w.stopped_with for w in made] == [5.0, 5.0]
    assert referenced.watched() == set()
    # A CR's event handled while the manager shuts down.
    referenced.refer("default/d", ("default", "late"))
    assert len(made) == 2 and referenced.watched() == set()
