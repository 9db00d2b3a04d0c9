"""The emulator's pure parts: selectors, patches, JSONPath and ages, edge cases included."""

from __future__ import annotations

import pytest

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
    assert patched["metadata"]["finalizers"] == ["a", "b"]
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
