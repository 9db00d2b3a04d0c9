"""The Argo CD health check of deploy/argocd, run in a real Lua interpreter."""

from typing import Any

import pytest

from testsupport.argocd import SECRET_HEALTH_KEY, argo_health


def cond(kind: str, status: str, message: str) -> dict[str, str]:
    return {"type": kind, "status": status, "reason": "X", "message": message}


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        # README.md's Argo CD health rule: Ready True -> Healthy whatever Progressing says.
        (
            [cond("Ready", "True", "active: a"), cond("Progressing", "False", "active: a")],
            ("Healthy", "active: a"),
        ),
        (
            [cond("Ready", "True", "active: b"), cond("Progressing", "True", "p")],
            ("Healthy", "active: b"),
        ),
        # Ready False, Progressing True -> Progressing, with the progressing message.
        (
            [cond("Ready", "False", "r"), cond("Progressing", "True", "promoting x")],
            ("Progressing", "promoting x"),
        ),
        # Ready False, Progressing False -> Degraded, with the ready message.
        (
            [cond("Ready", "False", "unable to promote"), cond("Progressing", "False", "u")],
            ("Degraded", "unable to promote"),
        ),
        # Ready False and no Progressing condition -> Degraded.
        ([cond("Ready", "False", "failed")], ("Degraded", "failed")),
    ],
)
def test_health_follows_ready_and_progressing(
    conditions: list[dict[str, str]], expected: tuple[str, str]
) -> None:
    assert argo_health({"status": {"conditions": conditions}}) == expected


@pytest.mark.parametrize("obj", [{}, {"status": {}}, {"status": {"conditions": []}}])
def test_no_conditions_yet_is_progressing(obj: dict[str, Any]) -> None:
    assert argo_health(obj) == ("Progressing", "Waiting for reconciliation")


# --------------------------------------------------------------------------- BasetenSecret


def bsec(state: str | None, *, ready: str = "False", generation: int = 2, **status: Any) -> Any:
    """A BasetenSecret at `generation` whose status (if `state`) is of that generation."""
    obj: dict[str, Any] = {"metadata": {"name": "hf", "generation": generation}}
    if state is not None:
        observed = {"observedGeneration": generation, **status}
        obj["status"] = {
            "state": state,
            "message": f"{state.lower()} message",
            "conditions": [
                {**cond("Ready", ready, "r"), "observedGeneration": generation},
                cond("Progressing", "True" if state == "WAITING_FOR_SECRET" else "False", "p"),
            ],
            **observed,
        }
    return obj


def secret_health(obj: Any) -> tuple[str, str]:
    return argo_health(obj, SECRET_HEALTH_KEY)


@pytest.mark.parametrize(
    ("state", "ready", "expected"),
    [
        ("SYNCED", "True", "Healthy"),
        ("WAITING_FOR_SECRET", "False", "Progressing"),
        ("PAUSED", "False", "Suspended"),
        ("FORBIDDEN", "False", "Degraded"),
        ("CONFLICT", "False", "Degraded"),
        ("FAILED", "False", "Degraded"),
        # As a BasetenModel's refused deletion: Ready and Progressing False, Degraded.
        ("DELETE_BLOCKED", "False", "Degraded"),
    ],
)
def test_a_basetensecrets_health_follows_its_state(state: str, ready: str, expected: str) -> None:
    assert secret_health(bsec(state, ready=ready)) == (expected, f"{state.lower()} message")


@pytest.mark.parametrize(
    "obj",
    [
        bsec(None),  # no status yet
        {"metadata": {"generation": 1}, "status": {}},
        bsec("SYNCED", ready="True", observedGeneration=1),  # a spec change not yet observed
        bsec("FAILED", observedGeneration=1),
    ],
)
def test_a_basetensecret_not_yet_observed_is_progressing(obj: Any) -> None:
    assert secret_health(obj) == ("Progressing", "Waiting for reconciliation")


def test_synced_is_healthy_only_with_ready_true_for_the_current_generation() -> None:
    stale_ready = bsec("SYNCED", ready="True")
    stale_ready["status"]["conditions"][0]["observedGeneration"] = 1
    assert secret_health(stale_ready) == ("Progressing", "synced message")
    assert secret_health(bsec("SYNCED", ready="False")) == ("Progressing", "synced message")


@pytest.mark.parametrize(
    ("ready", "progressing", "expected"),
    [
        ("True", "False", "Healthy"),
        ("False", "True", "Progressing"),
        ("False", "False", "Degraded"),
    ],
)
def test_a_state_it_does_not_know_is_judged_by_the_conditions(
    ready: str, progressing: str, expected: str
) -> None:
    obj = bsec("OUT_OF_SYNC")
    obj["status"]["conditions"] = [cond("Ready", ready, "r"), cond("Progressing", progressing, "p")]
    assert secret_health(obj) == (expected, "out_of_sync message")
