"""Read the Kubernetes protobuf envelope for the few kinds clients send as protobuf.

client-go's typed clients (Helm's Secret release storage among them) encode request bodies as
`application/vnd.kubernetes.protobuf`: the 4-byte magic `k8s\\x00`, then a `runtime.Unknown`
message whose `raw` field holds the object's own message. This module decodes Secrets and the
DeleteOptions sent with deletes (and TokenRequests, which `kubectl create token` sends) into
their JSON shape; any other kind stays refused (415), so what is not understood is never
silently misread.

Field numbers come from k8s.io/api/core/v1/generated.proto and
k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto. Fields outside the schemas below (for
example managedFields, which the emulator does not track) are skipped.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

MAGIC = b"k8s\x00"

# Wire types of the protobuf encoding.
_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5


class ProtobufError(ValueError):
    """The body is not a protobuf envelope of a kind this module reads."""


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # string | raw | int | bool | time | message | map | map_bytes
    repeated: bool = False
    message: dict[int, Field] | None = None


def _f(name: str, kind: str, **kw: Any) -> Field:
    return Field(name, kind, **kw)


TYPE_META = {1: _f("apiVersion", "string"), 2: _f("kind", "string")}
UNKNOWN = {
    1: _f("typeMeta", "message", message=TYPE_META),
    2: _f("raw", "raw"),
    3: _f("contentEncoding", "string"),
    4: _f("contentType", "string"),
}
OWNER_REFERENCE = {
    1: _f("kind", "string"),
    2: _f("name", "string"),
    3: _f("uid", "string"),
    4: _f("apiVersion", "string"),
    6: _f("controller", "bool"),
    7: _f("blockOwnerDeletion", "bool"),
}
OBJECT_META = {
    1: _f("name", "string"),
    2: _f("generateName", "string"),
    3: _f("namespace", "string"),
    5: _f("uid", "string"),
    6: _f("resourceVersion", "string"),
    8: _f("creationTimestamp", "time"),
    9: _f("deletionTimestamp", "time"),
    10: _f("deletionGracePeriodSeconds", "int"),
    11: _f("labels", "map"),
    12: _f("annotations", "map"),
    13: _f("ownerReferences", "message", repeated=True, message=OWNER_REFERENCE),
    14: _f("finalizers", "string", repeated=True),
}
SECRET = {
    1: _f("metadata", "message", message=OBJECT_META),
    2: _f("data", "map_bytes"),
    3: _f("type", "string"),
    4: _f("stringData", "map"),
    5: _f("immutable", "bool"),
}
PRECONDITIONS = {1: _f("uid", "string"), 2: _f("resourceVersion", "string")}
DELETE_OPTIONS = {
    1: _f("gracePeriodSeconds", "int"),
    2: _f("preconditions", "message", message=PRECONDITIONS),
    3: _f("orphanDependents", "bool"),
    4: _f("propagationPolicy", "string"),
    5: _f("dryRun", "string", repeated=True),
}
BOUND_OBJECT_REFERENCE = {
    1: _f("kind", "string"),
    2: _f("apiVersion", "string"),
    3: _f("name", "string"),
    4: _f("uid", "string"),
}
# What `kubectl create token` sends (authentication.k8s.io/v1, generated.proto).
TOKEN_REQUEST = {
    1: _f("metadata", "message", message=OBJECT_META),
    2: _f(
        "spec",
        "message",
        message={
            1: _f("audiences", "string", repeated=True),
            3: _f("boundObjectRef", "message", message=BOUND_OBJECT_REFERENCE),
            4: _f("expirationSeconds", "int"),
        },
    ),
}
# (apiVersion, kind) -> the schema of its message.
KINDS: dict[tuple[str, str], dict[int, Field]] = {
    ("v1", "Secret"): SECRET,
    ("authentication.k8s.io/v1", "TokenRequest"): TOKEN_REQUEST,
    ("v1", "DeleteOptions"): DELETE_OPTIONS,
    ("meta.k8s.io/v1", "DeleteOptions"): DELETE_OPTIONS,
}


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of an enveloped object; ProtobufError for anything else."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the body does not start with the Kubernetes protobuf magic")
    envelope = _message(body[len(MAGIC) :], UNKNOWN)
    type_meta = envelope.get("typeMeta", {})
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    schema = KINDS.get((api_version, kind))
    if schema is None:
        raise ProtobufError(f"protobuf bodies of {kind or 'unknown kind'} are not read")
    if envelope.get("contentEncoding"):
        raise ProtobufError("encoded (compressed) protobuf bodies are not read")
    obj = _message(envelope.get("raw", b""), schema)
    return {"apiVersion": api_version, "kind": kind, **obj}


def _message(data: bytes, schema: dict[int, Field]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, wire_type, value in _fields(data):
        field = schema.get(number)
        if field is None:
            continue
        if field.kind in ("map", "map_bytes"):
            if not isinstance(value, bytes):
                raise ProtobufError(f"field {field.name}: a map entry must be length-delimited")
            key, item = _map_entry(value, as_bytes=field.kind == "map_bytes")
            out.setdefault(field.name, {})[key] = item
            continue
        decoded = _scalar(field, wire_type, value)
        if field.repeated:
            out.setdefault(field.name, []).append(decoded)
        else:
            out[field.name] = decoded
    # JSON's omitempty: Go writes empty strings and zero times that the JSON form leaves out.
    return {k: v for k, v in out.items() if v not in ("", None, {}, [])}


def _scalar(field: Field, wire_type: int, value: int | bytes) -> Any:
    expected = _VARINT if field.kind in ("int", "bool") else _LENGTH
    if wire_type != expected:
        raise ProtobufError(f"field {field.name}: unexpected wire type {wire_type}")
    if field.kind == "int":
        assert isinstance(value, int)
        return _signed(value)
    if field.kind == "bool":
        return bool(value)
    assert isinstance(value, bytes)
    if field.kind == "raw":
        return value
    if field.kind == "time":
        return _time(value)
    if field.kind == "message":
        assert field.message is not None
        return _message(value, field.message)
    try:
        return value.decode()
    except UnicodeDecodeError:
        raise ProtobufError(f"field {field.name}: not UTF-8") from None


def _map_entry(data: bytes, *, as_bytes: bool) -> tuple[str, str]:
    key, item = "", b""
    for number, wire_type, value in _fields(data):
        if wire_type != _LENGTH or not isinstance(value, bytes):
            raise ProtobufError("a map entry's key and value must be length-delimited")
        if number == 1:
            key = value.decode()
        elif number == 2:
            item = value
    return key, base64.b64encode(item).decode() if as_bytes else item.decode()


def _time(data: bytes) -> str | None:
    """metav1.Time {seconds, nanos} as RFC 3339 (the JSON form drops the fraction); Go writes
    the zero time as an empty message, which JSON leaves out."""
    if not data:
        return None
    seconds = next((v for n, _, v in _fields(data) if n == 1 and isinstance(v, int)), 0)
    return datetime.fromtimestamp(_signed(seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _signed(value: int) -> int:
    """A varint as the int64 it encodes (negative numbers are ten-byte two's complement)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    position = 0
    while position < len(data):
        tag, position = _varint(data, position)
        number, wire_type = tag >> 3, tag & 7
        value: int | bytes
        if wire_type == _VARINT:
            value, position = _varint(data, position)
        elif wire_type == _LENGTH:
            length, position = _varint(data, position)
            if position + length > len(data):
                raise ProtobufError("a length-delimited field runs past the end of the body")
            value, position = data[position : position + length], position + length
        elif wire_type in (_FIXED64, _FIXED32):  # in no schema here: read to be skipped
            size = 8 if wire_type == _FIXED64 else 4
            value = int.from_bytes(data[position : position + size], "little")
            position += size
        else:
            raise ProtobufError(f"unsupported wire type {wire_type}")
        yield number, wire_type, value


def _varint(data: bytes, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if position >= len(data) or shift > 63:
            raise ProtobufError("a truncated or oversized varint")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7
