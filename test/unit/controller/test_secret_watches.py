"""The referenced Secrets' watches (controller/basetensecret/watches.py): one per Secret
while a BasetenSecret names it, and none left running, or started, once stopped with the
manager."""

from __future__ import annotations

from typing import Any

import pytest

from baseten_operator.controller.basetensecret.watches import ReferencedSecrets
from baseten_operator.runtime.errors import Forbidden, NotFound


class WatchOf:
    """An informer's lifecycle, as ReferencedSecrets drives it."""

    def __init__(self, namespace: str, name: str) -> None:
        self.key = (namespace, name)
        self.started = False
        self.synced = False
        self.refused = False
        self.stopped_with: float | None = None

    def add_event_handler(self, **_handlers: Any) -> None:
        pass

    def start(self) -> None:
        self.started = True

    def has_synced(self) -> bool:
        return self.synced

    def get(self, namespace: str, name: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": namespace}, "cached": True}

    def stop(self, timeout: float) -> None:
        self.stopped_with = timeout


class Reader:
    """The API server's GET of a Secret: refused (403) in the namespaces listed."""

    def __init__(self, refused: set[str] | None = None) -> None:
        self.refused = refused or set()
        self.reads: list[tuple[str, str]] = []

    def get(self, _res: Any, name: str, namespace: str) -> dict[str, Any]:
        self.reads.append((namespace, name))
        if namespace in self.refused:
            raise Forbidden(403, "Forbidden", f'secrets "{name}" is forbidden')
        if name == "absent":
            raise NotFound(404, "NotFound", f'secrets "{name}" not found')
        return {"metadata": {"name": name, "namespace": namespace}}


def watches(reader: Reader | None = None) -> tuple[ReferencedSecrets, list[WatchOf]]:
    made: list[WatchOf] = []

    def make(namespace: str, name: str) -> Any:
        made.append(WatchOf(namespace, name))
        return made[-1]

    referenced = ReferencedSecrets(
        reader=reader or Reader(), make_informer=make, on_change=lambda *_: None
    )
    return referenced, made


def test_a_watch_starts_at_the_first_read_and_is_kept_while_a_cr_names_it() -> None:
    referenced, made = watches()
    referenced.refer("default/a", ("default", "hf"))
    referenced.refer("default/b", ("default", "hf"))
    assert made == []  # not before a read shows the Secret may be read
    assert referenced.get("default", "hf") is not None
    assert [(w.key, w.started) for w in made] == [(("default", "hf"), True)]
    referenced.get("default", "hf")  # the watch has not listed yet: read again, no second
    assert len(made) == 1
    referenced.refer("default/a", None)
    assert made[0].stopped_with is None
    referenced.refer("default/b", ("default", "other"))
    assert made[0].stopped_with == 0
    assert referenced.watched() == set()


def test_a_refused_read_starts_no_watch_and_an_absent_secret_is_watched() -> None:
    referenced, made = watches(Reader(refused={"locked"}))
    referenced.refer("locked/a", ("locked", "hf"))
    referenced.refer("default/b", ("default", "absent"))
    with pytest.raises(Forbidden):
        referenced.get("locked", "hf")
    assert referenced.get("default", "absent") is None  # watched: its creation wakes us
    assert referenced.watched() == {("default", "absent")}


def test_an_unreferenced_secret_read_is_not_watched() -> None:
    referenced, made = watches()
    referenced.get("default", "hf")
    assert made == []


def test_stop_ends_every_watch_and_starts_none_after() -> None:
    referenced, made = watches()
    referenced.refer("default/a", ("default", "hf"))
    referenced.refer("team-b/c", ("team-b", "token"))
    referenced.get("default", "hf")
    referenced.get("team-b", "token")
    referenced.stop(5.0)
    assert [w.stopped_with for w in made] == [5.0, 5.0]
    assert referenced.watched() == set()
    # A pass still reading while the manager shuts down.
    referenced.refer("default/d", ("default", "late"))
    referenced.get("default", "late")
    assert len(made) == 2 and referenced.watched() == set()


def test_a_watch_refused_after_its_rbac_is_revoked_is_dropped_and_the_read_says_so() -> None:
    reader = Reader()
    referenced, made = watches(reader)
    referenced.refer("team-a/a", ("team-a", "hf"))
    referenced.get("team-a", "hf")
    made[0].synced = True
    assert referenced.get("team-a", "hf")["cached"]  # served from the watch's cache
    reader.refused.add("team-a")
    made[0].refused = True  # its relist or re-watch answered 403
    with pytest.raises(Forbidden):
        referenced.get("team-a", "hf")
    assert made[0].stopped_with == 0 and referenced.watched() == set()
