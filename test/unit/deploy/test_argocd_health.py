"""The Argo CD health check of deploy/argocd, run in a real Lua interpreter."""

from typing import Any

import pytest
import yaml
from lupa import LuaRuntime

from testsupport.paths import REPO

HEALTH_KEY = "resource.customizations.health.models.baseten.com_BasetenModel"
PATCH = REPO / "deploy" / "argocd" / "argocd-cm-health.yaml"


def argo_health(obj: dict[str, Any]) -> tuple[str, str]:
    """Evaluate the check as Argo CD does: the script sees `obj` and returns `hs`."""
    script = yaml.safe_load(PATCH.read_text())["data"][HEALTH_KEY]
    lua = LuaRuntime(unpack_returned_tuples=True)
    lua.globals().obj = lua.table_from(obj, recursive=True)
    hs = lua.execute(script)
    return str(hs["status"]), str(hs["message"])


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
