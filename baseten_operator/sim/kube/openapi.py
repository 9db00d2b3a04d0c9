"""Just enough OpenAPI for kubectl.

kubectl asks /openapi/v3 whether a kind's PATCH accepts `fieldValidation`; when it does,
kubectl leaves validation to the server and skips client-side schema checks, so a
document per group-version lists one PATCH operation per kind, and, for `kubectl explain`,
each custom resource's schema tagged with its group, version and kind.
/openapi/v2 (fetched as protobuf) answers with an empty but valid `Document`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .resources import Registry

# openapi_v2.Document{swagger: "2.0"} in protobuf wire format (field 1, length-delimited).
OPENAPI_V2_PROTOBUF = b"\x0a\x032.0"
OPENAPI_V2_CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def v3_document(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for rt in registry.all():
        if (rt.group, rt.version) != (group, version):
            continue
        if rt.schema is not None:
            # A custom resource's schema, tagged with its kind: what `kubectl explain` reads.
            gvk = {"group": group, "version": version, "kind": rt.kind}
            name = ".".join([*reversed(group.split(".")), version, rt.kind])
            schemas[name] = {**rt.schema, "x-kubernetes-group-version-kind": [gvk]}
        scope = "namespaces/{namespace}/" if rt.namespaced else ""
        paths[f"/{_gv_path(group, version)}/{scope}{rt.plural}/{{name}}"] = {
            "patch": {
                "operationId": f"patch{rt.kind}",
                "parameters": [
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}
                ],
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {
                    "group": group, "version": version, "kind": rt.kind,
                },
                "responses": {"200": {"description": "OK"}},
            }
        }  # fmt: skip
    if not paths:
        return None
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def v3_index(registry: Registry) -> dict[str, Any]:
    entries = {}
    for group_version in sorted({(rt.group, rt.version) for rt in registry.all()}):
        document = v3_document(registry, *group_version)
        digest = hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:32]
        path = _gv_path(*group_version)
        entries[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest.upper()}"}
    return {"paths": entries}
