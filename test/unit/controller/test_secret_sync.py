"""A BasetenSecret's sync (docs/contract.md 13.3): one upsert when the value is new, changed,
missing from Baseten or due to be reasserted; nothing in steady state."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

VALUE = "hf_live_value_7c1e"
ROTATED = "hf_rotated_value_99d2"


def synced(sh: Any, value: str = VALUE, **spec: Any) -> None:
    sh.secrets.put("hf", {"token": value})
    sh.create(**spec)
    sh.run()


def test_first_pass_adds_the_finalizer_and_calls_nothing(sh: Any) -> None:
    sh.secrets.put("hf", {"token": VALUE})
    sh.create(finalizer=False)
    sh.run()
    assert sh.kube.get(None, "hf-token", "default")["metadata"]["finalizers"]
    assert sh.baseten.calls == []
    assert sh.secrets.reads == 0


def test_a_new_secret_is_written_once_and_recorded(sh: Any, iso_time: Any) -> None:
    synced(sh)
    assert [args[0] for args in sh.upserts()] == ["hf_token"]
    assert sh.baseten.secret_value("hf_token") == VALUE
    status = sh.status()
    assert status["state"] == "SYNCED"
    assert (
        status["message"]
        == "Baseten secret hf_token holds the value of Secret default/hf key 'token'"
    )
    assert status["secretID"] == sh.baseten.list_secrets()[0].id
    assert status["lastSyncTime"] == iso_time(sh.clock.now())
    assert status["fingerprint"].startswith("hmac-sha256:")
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions == {
        "Ready": "True",
        "Progressing": "False",
        "Reconciling": "False",
        "Stalled": "False",
    }
    assert sh.reasons() == ["SecretSynced"]
    assert sh.events[0][2] == (
        "wrote Baseten secret hf_token from Secret default/hf key 'token' (missing from Baseten)"
    )
    assert sh.synced == ["hf_token"]


def test_steady_state_writes_nothing(sh: Any) -> None:
    synced(sh)
    sh.baseten.calls.clear()
    result = sh.run()
    assert sh.upserts() == []
    assert sh.writes == 0 and sh.events == []
    assert result.requeue_after == sh.timing.steady_after("default/hf-token", sh.clock.now())


def test_a_rotated_value_is_written_once(sh: Any) -> None:
    synced(sh)
    before = sh.status()["fingerprint"]
    sh.secrets.put("hf", {"token": ROTATED})
    sh.baseten.calls.clear()
    sh.run()
    sh.run()
    assert len(sh.upserts()) == 1
    assert sh.baseten.secret_value("hf_token") == ROTATED
    assert sh.status()["fingerprint"] != before
    assert "(value changed)" in sh.recorder.events[-1][2]


def test_a_secret_deleted_in_baseten_comes_back(sh: Any) -> None:
    synced(sh)
    sh.baseten.secrets.clear()
    sh.run()
    assert sh.baseten.secret_value("hf_token") == VALUE
    assert "(missing from Baseten)" in sh.recorder.events[-1][2]


def test_an_existing_secret_never_written_by_the_cr_is_written(sh: Any) -> None:
    sh.baseten.add_secret("hf_token", "typed-in-the-ui")
    synced(sh)
    assert sh.baseten.secret_value("hf_token") == VALUE
    assert "(never written by this BasetenSecret)" in sh.recorder.events[-1][2]


def test_reassert_interval_rewrites_an_unchanged_value(sh: Any) -> None:
    synced(sh, reassertInterval="1h")
    sh.baseten.calls.clear()
    result = sh.run()
    assert sh.upserts() == []
    assert result.requeue_after is not None and result.requeue_after <= 3600
    sh.clock.advance(3600)
    sh.run()
    assert len(sh.upserts()) == 1
    assert "(reassertInterval elapsed)" in sh.recorder.events[-1][2]


def test_without_reassert_interval_an_unchanged_value_is_never_rewritten(sh: Any) -> None:
    synced(sh)
    sh.baseten.calls.clear()
    sh.clock.advance(30 * 86400)
    sh.run()
    assert sh.upserts() == []


def test_the_fingerprint_is_keyed_not_a_plain_hash(sh: Any) -> None:
    synced(sh)
    fingerprint = sh.status()["fingerprint"]
    assert hashlib.sha256(VALUE.encode()).hexdigest() not in fingerprint
    assert VALUE not in fingerprint


def test_a_failed_write_is_failed_and_retried(sh: Any) -> None:
    from baseten_operator.baseten.errors import BasetenAPIError
    from baseten_operator.controller.shared.endings import ReconcileError

    sh.secrets.put("hf", {"token": VALUE})
    sh.create()
    sh.baseten.fail("upsert_secret", BasetenAPIError(500, "internal error"))
    with pytest.raises(ReconcileError):  # retried with backoff
        sh.run()
    assert sh.status()["state"] == "FAILED"
    assert sh.status()["message"].startswith("writing Baseten secret hf_token failed: ")
    assert sh.reasons() == ["SecretSyncFailed"]
    assert "fingerprint" not in sh.status()
    sh.run()
    assert sh.status()["state"] == "SYNCED"


def test_a_pass_on_a_lagging_cache_writes_nothing(sh: Any) -> None:
    """The informer has not yet delivered the last pass's status (its fingerprint): the
    pass that reads the older copy must not write the value a second time."""
    sh.secrets.put("hf", {"token": VALUE})
    sh.create()
    sh.cache.lag()
    sh.run()
    assert len(sh.upserts()) == 1
    result = sh.run()  # the same older copy: "never written", so it would write again
    assert len(sh.upserts()) == 1
    assert result.requeue
