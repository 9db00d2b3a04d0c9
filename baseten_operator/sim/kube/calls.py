"""A Kubernetes API request once its path is understood: the resource it targets, its verb,
its options, its body decoded as its Content-Type says, and the form the answer must take.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml

from . import errors, protobuf, tables
from .errors import ApiError
from .resources import ResourceType
from .store import Store

Obj = dict[str, Any]
PROTOBUF_MESSAGE = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json, application/yaml (this Kubernetes API emulator reads protobuf only for "
    "Secrets, DeleteOptions and TokenRequests ({reason}); `kubectl create <generator>` sends "
    "protobuf: write a manifest and use `kubectl apply -f`)"
)


@dataclass(frozen=True)
class Target:
    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None


@dataclass(frozen=True)
class ApiCall:
    target: Target
    query: dict[str, str]
    raw: bytes
    content_type: str  # the Content-Type header, "" when absent
    accept: str  # the Accept header, "" when absent

    def body(self) -> Any:
        """The decoded body (None when empty): JSON, YAML, or protobuf for the few kinds
        protobuf.py knows (415 otherwise)."""
        content_type = (self.content_type or "application/json").lower()
        if "protobuf" in content_type:
            try:
                return protobuf.decode(self.raw) if self.raw else None
            except protobuf.ProtobufError as exc:
                raise errors.unsupported_media_type(PROTOBUF_MESSAGE.format(reason=exc)) from None
        if not self.raw:
            return None
        try:
            if "yaml" in content_type:
                return yaml.safe_load(self.raw)
            return json.loads(self.raw)
        except (ValueError, yaml.YAMLError) as exc:
            raise errors.bad_request(f"the request body is not valid: {exc}") from None

    @property
    def media_type(self) -> str:
        """The Content-Type without parameters, lower case (how a patch names its flavour)."""
        return self.content_type.split(";")[0].strip().lower()

    @property
    def dry_run(self) -> bool:
        return self.query.get("dryRun") == "All"

    @property
    def strict(self) -> bool:
        """fieldValidation=Strict: unknown fields are an error instead of being pruned."""
        return self.query.get("fieldValidation") == "Strict"

    @property
    def wants_table(self) -> bool:
        return "as=Table" in self.accept

    @property
    def wants_metadata(self) -> bool:
        """`as=PartialObjectMetadata` (and `...List`): metadata-only clients (informers)."""
        return "as=PartialObjectMetadata" in self.accept

    @property
    def include_object(self) -> str:
        return self.query.get("includeObject", "Metadata")

    def shaped(
        self, obj: Obj, now: float, *, table_allowed: bool = True, with_columns: bool = True
    ) -> Obj:
        """One object in the form the Accept header asks for: a Table (kubectl get), its
        metadata only, or whole."""
        if table_allowed and self.wants_table:
            rv = obj.get("metadata", {}).get("resourceVersion", "")
            return tables.table(
                self.target.rt, [obj], now, include=self.include_object,
                list_metadata={"resourceVersion": rv}, with_columns=with_columns,
            )  # fmt: skip
        if self.wants_metadata:
            return tables.partial_metadata(obj)
        return obj


def truthy(value: str | None) -> bool:
    return value in ("true", "1", "True")


def no_such_path() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def resolve(store: Store, group: str, version: str, rest: list[str]) -> Target:
    """The resource, namespace, name and subresource a path names below /api(s)/GROUP/VERSION."""
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        inner = store.lookup(group, version, rest[2])
        if inner is not None and inner.namespaced:
            namespace, rest = rest[1], rest[2:]
    rt = store.lookup(group, version, rest[0])
    if rt is None or len(rest) > 3:
        raise no_such_path()
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else None
    if subresource is not None and not (
        (subresource == "status" and rt.status_subresource)
        or any(subresource == extra for extra, _, _ in rt.create_subresources)
    ):
        raise no_such_path()
    if rt.namespaced and name is not None and namespace is None:
        raise no_such_path()
    return Target(rt, namespace, name, subresource)


def verb_of(method: str, target: Target, query: dict[str, str]) -> str:
    if method == "GET":
        if truthy(query.get("watch")):
            return "watch"
        return "get" if target.name is not None else "list"
    if method == "POST" and target.name is None:
        return "create"
    if method in ("PUT", "PATCH") and target.name is not None:
        return "update" if method == "PUT" else "patch"
    if method == "DELETE":
        return "delete" if target.name is not None else "deletecollection"
    raise errors.method_not_allowed(f"{method} is not allowed on this path")
