"""A BasetenSecret's Secret: opt-in reads (FORBIDDEN names the RoleBinding to create) and bad
input (docs/contract.md 13.4, 13.5): a status naming the Secret and key, no Baseten call."""

from __future__ import annotations

from typing import Any

import pytest

from baseten_operator.api.secret_types import SECRET_VALUE_MAX_BYTES

FORBIDDEN_MESSAGE = (
    "cannot read Secret default/hf: create a RoleBinding in namespace default granting "
    "ClusterRole baseten-operator-secret-reader to ServiceAccount "
    "baseten-system/baseten-operator-controller-manager"
)


def test_without_the_role_binding_the_cr_is_forbidden_and_nothing_else_happens(sh: Any) -> None:
    sh.secrets.put("hf", {"token": "v"})
    sh.secrets.forbidden.add("default")
    sh.create()
    result = sh.run()
    status = sh.status()
    assert status["state"] == "FORBIDDEN"
    assert status["message"] == FORBIDDEN_MESSAGE
    assert sh.baseten.calls == []
    assert sh.reasons() == ["SecretSyncFailed"]
    assert result.requeue_after == sh.timing.secret_forbidden
    stalled = {c["type"]: c["status"] for c in status["conditions"]}["Stalled"]
    assert stalled == "True"
    # Granted: the next pass syncs.
    sh.secrets.forbidden.clear()
    sh.run()
    assert sh.status()["state"] == "SYNCED"
    assert len(sh.upserts()) == 1


def test_a_refusal_that_names_no_user_names_the_configured_service_account(sh: Any) -> None:
    from baseten_operator.runtime.errors import Forbidden

    def refuse(namespace: str, name: str) -> None:
        raise Forbidden(403, "Forbidden", "forbidden")

    sh.secrets.get = refuse
    sh.create()
    sh.run()
    assert sh.status()["message"].endswith("to ServiceAccount baseten-system/baseten-operator")


@pytest.mark.parametrize(
    ("data", "state", "message"),
    [
        (
            None,
            "WAITING_FOR_SECRET",
            "waiting for Secret default/hf (not found; it holds key 'token')",
        ),
        (
            {"other": "v"},
            "WAITING_FOR_SECRET",
            "waiting for Secret default/hf key 'token' (the Secret has no such key)",
        ),
        (
            {"token": ""},
            "FAILED",
            "Secret default/hf key 'token' is empty: Baseten secrets need a value",
        ),
        (
            {"token": b"\xff\xfe"},
            "FAILED",
            "Secret default/hf key 'token' is not UTF-8 text: Baseten secrets are strings",
        ),
        (
            {"token": "x" * (SECRET_VALUE_MAX_BYTES + 1)},
            "FAILED",
            f"Secret default/hf key 'token' holds {SECRET_VALUE_MAX_BYTES + 1} bytes, more than "
            f"the {SECRET_VALUE_MAX_BYTES} allowed",
        ),
    ],
)
def test_bad_input_is_reported_without_a_baseten_call(
    sh: Any, data: dict[str, Any] | None, state: str, message: str
) -> None:
    if data is not None:
        sh.secrets.put("hf", data)
    sh.create()
    sh.run()
    assert (sh.status()["state"], sh.status()["message"]) == (state, message)
    assert sh.baseten.calls == []
    assert sh.reasons() == ["SecretSyncFailed"]
    conditions = {c["type"]: c["status"] for c in sh.status()["conditions"]}
    waiting = state == "WAITING_FOR_SECRET"
    assert conditions["Progressing"] == ("True" if waiting else "False")
    assert conditions["Stalled"] == ("False" if waiting else "True")
    # The same pass again: no second Event.
    sh.run()
    assert sh.events == []


def test_a_value_of_exactly_the_limit_is_written(sh: Any) -> None:
    sh.secrets.put("hf", {"token": "x" * SECRET_VALUE_MAX_BYTES})
    sh.create()
    sh.run()
    assert sh.status()["state"] == "SYNCED"


def test_a_secret_that_appears_is_synced(sh: Any) -> None:
    sh.create()
    sh.run()
    sh.secrets.put("hf", {"token": "v"})
    sh.run()
    assert sh.status()["state"] == "SYNCED"
