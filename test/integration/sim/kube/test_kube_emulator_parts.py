"""The emulator's pure parts: selectors, patches, JSONPath, ages and protobuf bodies, edge cases
included."""

from __future__ import annotations

import base64

import pytest

from baseten_operator.sim.kube import protobuf
from baseten_operator.sim.kube.errors import ApiError
from baseten_operator.sim.kube.patching import json_patch, merge_patch, strategic_merge_patch
from baseten_operator.sim.kube.selectors import FieldSelector, LabelSelector
from baseten_operator.sim.kube.tables import human_duration, jsonpath


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("", {}, True),
        ("a=b", {"a": "b"}, True),
        ("a==b", {"a": "c"}, False),
        ("a!=b", {}, True),
        ("a in (b, c)", {"a": "c"}, True),
        ("a notin (b,c)", {"a": "c"}, False),
        ("a notin (b,c)", {}, True),
        ("a", {"a": ""}, True),
        ("!a", {"a": "x"}, False),
        ("a=b,!c", {"a": "b"}, True),
        ("app.kubernetes.io/name=x", {"app.kubernetes.io/name": "x"}, True),
        ("a=", {"a": ""}, True),
    ],
)
def test_label_selector(selector, labels, expected):
    assert LabelSelector.parse(selector).matches(labels) is expected


@pytest.mark.parametrize("bad", ["a in b", "a=b,,", "(", "a in (b"])
def test_malformed_label_selectors_are_bad_requests(bad):
    with pytest.raises(ApiError) as error:
        LabelSelector.parse(bad)
    assert error.value.code == 400


def test_field_selector_allows_only_known_fields():
    obj = {"metadata": {"name": "n", "namespace": "ns"}, "reason": "R"}
    assert FieldSelector.parse("metadata.name=n,metadata.namespace!=x").matches(obj)
    assert FieldSelector.parse("reason==R", frozenset({"reason"})).matches(obj)
    with pytest.raises(ApiError):
        FieldSelector.parse("spec.size=1")


def test_merge_patch_removes_nulls_and_replaces_lists():
    doc = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    assert merge_patch(doc, {"a": {"b": None, "c": [3]}, "e": {"f": None}}) == {
        "a": {"c": [3]},
        "d": 1,
        "e": {},
    }
    assert doc == {"a": {"b": 1, "c": [1, 2]}, "d": 1}  # inputs are never mutated


def test_json_patch_operations():
    doc = {"a": [1, 2], "b": {"c": 1}}
    patched = json_patch(
        doc,
        [
            {"op": "add", "path": "/a/-", "value": 3},
            {"op": "move", "from": "/b/c", "path": "/moved"},
            {"op": "copy", "from": "/a/0", "path": "/copied"},
            {"op": "test", "path": "/moved", "value": 1},
            {"op": "replace", "path": "/a/0", "value": 9},
            {"op": "remove", "path": "/b"},
        ],
    )
    assert patched == {"a": [9, 2, 3], "moved": 1, "copied": 1}
    with pytest.raises(ApiError):
        json_patch(doc, [{"op": "test", "path": "/b/c", "value": 2}])
    with pytest.raises(ApiError):
        json_patch(doc, [{"op": "remove", "path": "/missing"}])


def test_strategic_merge_lists_and_directives():
    doc = {
        "metadata": {"finalizers": ["a"], "ownerReferences": [{"uid": "1", "name": "x"}]},
        "spec": {"keep": 1, "drop": 2},
        "status": {"conditions": [{"type": "Ready", "status": "False"}]},
    }
    patched = strategic_merge_patch(
        doc,
        {
            "metadata": {
                "finalizers": ["b"],
                "ownerReferences": [{"uid": "1", "name": "y"}, {"uid": "2", "name": "z"}],
            },
            "spec": {"$patch": "replace", "new": 3},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        },
    )
    assert patched["metadata"]["finalizers"] == ["b", "a"]  # as a real server orders them
    assert patched["metadata"]["ownerReferences"] == [
        {"uid": "1", "name": "y"},
        {"uid": "2", "name": "z"},
    ]
    assert patched["spec"] == {"new": 3}
    assert patched["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    removed = strategic_merge_patch(
        patched,
        {
            "metadata": {
                "$deleteFromPrimitiveList/finalizers": ["a"],
                "ownerReferences": [{"uid": "2", "$patch": "delete"}],
            },
            "status": {"$patch": "delete"},
        },
    )
    assert removed["metadata"]["finalizers"] == ["b"]
    assert removed["metadata"]["ownerReferences"] == [{"uid": "1", "name": "y"}]
    assert "status" not in removed


def test_jsonpath_subset():
    obj = {
        "spec": {"size": 3, "tags": ["a", "b"]},
        "metadata": {"labels": {"app.kubernetes.io/name": "w"}},
        "status": {
            "conditions": [
                {"type": "Synced", "status": "False"},
                {"type": "Ready", "status": "True"},
            ]
        },
    }
    assert jsonpath(obj, ".spec.size") == [3]
    assert jsonpath(obj, "{.spec.tags[1]}") == ["b"]
    assert jsonpath(obj, ".spec.tags[*]") == ["a", "b"]
    assert jsonpath(obj, ".metadata.labels['app.kubernetes.io/name']") == ["w"]
    assert jsonpath(obj, '.status.conditions[?(@.type=="Ready")].status') == ["True"]
    assert jsonpath(obj, ".status.conditions[?(@.type=='Gone')].status") == []
    assert jsonpath(obj, ".spec.missing.deeper") == []


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (5, "5s"),
        (119, "119s"),
        (150, "2m30s"),
        (600, "10m"),
        (3 * 3600 + 60, "3h1m"),
        (10 * 3600, "10h"),
        (3 * 86400 + 3600, "3d1h"),
        (30 * 86400, "30d"),
        (-5, "<invalid>"),
    ],
)
def test_human_duration(seconds, shown):
    assert human_duration(seconds) == shown


# ---- protobuf bodies (protobuf.py), built here with a minimal wire-format writer


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = b""
    while True:
        byte, value = value & 0x7F, value >> 7
        out += bytes([byte | (0x80 if value else 0)])
        if not value:
            return out


def _field(number: int, value: int | bytes | str) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _envelope(api_version: str, kind: str, raw: bytes, encoding: str = "") -> bytes:
    type_meta = _field(1, api_version) + _field(2, kind)
    unknown = _field(1, type_meta) + _field(2, raw) + _field(3, encoding) + _field(4, "")
    return protobuf.MAGIC + unknown


def test_protobuf_secret_decodes_to_its_json_form():
    metadata = (
        _field(1, "sh.helm.release.v1.demo.v1")
        + _field(2, "")  # Go writes empty strings; JSON leaves them out
        + _field(3, "ops")
        + _field(8, b"")  # a zero creationTimestamp
        + _field(11, _field(1, "owner") + _field(2, "helm"))
        + _field(11, _field(1, "version") + _field(2, "1"))
        + _field(14, "example.com/keep")
        + _field(17, b"\x0a\x03mgr")  # managedFields: skipped
    )
    secret = (
        _field(1, metadata)
        + _field(2, _field(1, "release") + _field(2, b"\x00\xffgz"))
        + _field(3, "helm.sh/release.v1")
        + _field(5, 0)
    )
    assert protobuf.decode(_envelope("v1", "Secret", secret)) == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "sh.helm.release.v1.demo.v1",
            "namespace": "ops",
            "labels": {"owner": "helm", "version": "1"},
            "finalizers": ["example.com/keep"],
        },
        "data": {"release": base64.b64encode(b"\x00\xffgz").decode()},
        "type": "helm.sh/release.v1",
        "immutable": False,
    }


def test_protobuf_delete_options_keep_a_zero_grace_period():
    options = _field(1, 0) + _field(2, _field(1, "uid-1")) + _field(4, "Background")
    assert protobuf.decode(_envelope("meta.k8s.io/v1", "DeleteOptions", options)) == {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "DeleteOptions",
        "gracePeriodSeconds": 0,
        "preconditions": {"uid": "uid-1"},
        "propagationPolicy": "Background",
    }


def test_protobuf_negative_ints_and_timestamps():
    metadata = _field(1, "s") + _field(9, _field(1, 1_700_000_000)) + _field(10, -1)
    decoded = protobuf.decode(_envelope("v1", "Secret", _field(1, metadata)))
    assert decoded["metadata"]["deletionTimestamp"] == "2023-11-14T22:13:20Z"
    assert decoded["metadata"]["deletionGracePeriodSeconds"] == -1


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{}", "magic"),
        (_envelope("v1", "ConfigMap", _field(1, _field(1, "cm"))), "ConfigMap are not read"),
        (_envelope("v1", "Secret", b"", encoding="gzip"), "compressed"),
        (protobuf.MAGIC + b"\x0a\x09abc", "past the end"),
        (_envelope("v1", "Secret", b"\x08\xff"), "varint"),
    ],
)
def test_protobuf_bodies_it_cannot_read_are_refused(body, reason):
    with pytest.raises(protobuf.ProtobufError, match=reason):
        protobuf.decode(body)


def test_protobuf_token_request():
    spec = _field(1, "https://kubernetes.default.svc") + _field(4, 600)
    request = _field(1, _field(1, "")) + _field(2, spec)
    assert protobuf.decode(_envelope("authentication.k8s.io/v1", "TokenRequest", request)) == {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"audiences": ["https://kubernetes.default.svc"], "expirationSeconds": 600},
    }
