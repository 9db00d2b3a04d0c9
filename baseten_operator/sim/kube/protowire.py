"""Just enough of the protobuf wire format to read the few bodies kubectl only sends as
protobuf (`kubectl create token`'s TokenRequest): fields by number, nothing typed."""

from __future__ import annotations

from . import errors

K8S_MAGIC = b"k8s\x00"  # the envelope of every Kubernetes protobuf body
Fields = dict[int, list[int | bytes]]


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if at >= len(data):
            raise errors.bad_request("truncated protobuf body")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            return value, at
        shift += 7


def fields(data: bytes) -> Fields:
    """Top-level fields of one message: varints as ints, length-delimited ones as bytes."""
    found: Fields = {}
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire_type = key >> 3, key & 7
        value: int | bytes
        if wire_type == 0:
            value, at = _varint(data, at)
        elif wire_type == 2:
            length, at = _varint(data, at)
            value, at = data[at : at + length], at + length
        elif wire_type in (1, 5):  # fixed64 / fixed32: skipped, nothing here uses them
            size = 8 if wire_type == 1 else 4
            value, at = data[at : at + size], at + size
        else:
            raise errors.bad_request(f"unsupported protobuf wire type {wire_type}")
        found.setdefault(number, []).append(value)
    return found


def unwrap(body: bytes) -> bytes:
    """The object inside a Kubernetes protobuf envelope (runtime.Unknown, field 2: raw)."""
    if not body.startswith(K8S_MAGIC):
        raise errors.bad_request("a protobuf body must start with the k8s envelope")
    raw = fields(body[len(K8S_MAGIC) :]).get(2, [b""])[0]
    return raw if isinstance(raw, bytes) else b""


def first_bytes(found: Fields, number: int) -> bytes:
    values = [v for v in found.get(number, []) if isinstance(v, bytes)]
    return values[0] if values else b""
