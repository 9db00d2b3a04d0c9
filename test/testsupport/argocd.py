"""Argo CD's health check of deploy/argocd, evaluated as Argo CD does: in a real Lua
interpreter (lupa), the script seeing `obj` and returning `hs`."""

from __future__ import annotations

from typing import Any

import yaml
from lupa import LuaRuntime

from testsupport.paths import REPO

HEALTH_KEY = "resource.customizations.health.models.baseten.com_BasetenModel"
SECRET_HEALTH_KEY = "resource.customizations.health.models.baseten.com_BasetenSecret"
PATCH = REPO / "deploy" / "argocd" / "argocd-cm-health.yaml"


def argo_health(obj: dict[str, Any], key: str = HEALTH_KEY) -> tuple[str, str]:
    script = yaml.safe_load(PATCH.read_text())["data"][key]
    lua = LuaRuntime(unpack_returned_tuples=True)
    lua.globals().obj = lua.table_from(obj, recursive=True)
    hs = lua.execute(script)
    return str(hs["status"]), str(hs["message"])
