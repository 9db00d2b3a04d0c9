"""The Kubernetes API semantics the operator relies on.

Runs on both servers every time: the project's emulator and a real kube-apiserver (built
from source, testsupport.clusters); KUBE_CONTRACT_REAL=1 with KUBECONFIG puts a cluster of
your own in the real one's place (conftest.py). Every assertion here is what a real API
server does.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import pytest


def _cm(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "data": data}


def _widget(name: str, size: int = 2, **extra: Any) -> dict[str, Any]:
    body = {
        "apiVersion": "contract.example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": size},
    }
    body.update(extra)
    return body


def _names(listed: dict[str, Any]) -> list[str]:
    return sorted(item["metadata"]["name"] for item in listed["items"])


def _rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


# ---- resourceVersion and lists -------------------------------------------------------------


def test_resource_version_is_global_and_monotonic(kube, namespace):
    a = kube.create(kube.CONFIGMAPS, _cm("a"), namespace)
    w = kube.create(kube.WIDGETS, _widget("w"), namespace)
    b = kube.patch(kube.CONFIGMAPS, "a", {"data": {"k": "v"}}, namespace)
    assert _rv(a) < _rv(w) < _rv(b)
    listed = kube.list(kube.CONFIGMAPS, namespace)
    assert listed["kind"] == "ConfigMapList"
    assert int(listed["metadata"]["resourceVersion"]) >= _rv(b)


def test_label_selectors(kube, namespace):
    kube.create(kube.CONFIGMAPS, _cm("prod", {"env": "prod", "tier": "web"}), namespace)
    kube.create(kube.CONFIGMAPS, _cm("dev", {"env": "dev"}), namespace)
    kube.create(kube.CONFIGMAPS, _cm("bare"), namespace)
    cases = {
        "env=prod": ["prod"],
        "env==dev": ["dev"],
        "env!=prod": ["bare", "dev"],
        "env in (prod,dev)": ["dev", "prod"],
        "env notin (prod)": ["bare", "dev"],
        "tier": ["prod"],
        "!tier": ["bare", "dev"],
        "env=prod,tier=web": ["prod"],
    }
    for selector, expected in cases.items():
        listed = kube.list(kube.CONFIGMAPS, namespace, labelSelector=selector)
        # kube-root-ca.crt exists in every namespace of a real cluster: only ours count.
        assert [n for n in _names(listed) if n in ("prod", "dev", "bare")] == expected, selector


def test_field_selectors_on_name_and_namespace(kube, namespace):
    kube.create(kube.CONFIGMAPS, _cm("one"), namespace)
    kube.create(kube.CONFIGMAPS, _cm("two"), namespace)
    by_name = kube.list(kube.CONFIGMAPS, namespace, fieldSelector="metadata.name=two")
    assert _names(by_name) == ["two"]
    everywhere = kube.list(kube.CONFIGMAPS, None, fieldSelector=f"metadata.namespace={namespace}")
    assert {"one", "two"} <= set(_names(everywhere))
    assert {i["metadata"]["namespace"] for i in everywhere["items"]} == {namespace}
    excluded = kube.list(kube.CONFIGMAPS, namespace, fieldSelector="metadata.name!=two")
    assert "two" not in _names(excluded) and "one" in _names(excluded)


def test_limit_and_continue_page_through_everything(kube, namespace):
    for i in range(7):
        kube.create(kube.WIDGETS, _widget(f"w{i}"), namespace)
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        page = kube.list(kube.WIDGETS, namespace, limit=3, **({"continue": token} if token else {}))
        assert len(page["items"]) <= 3
        seen += [i["metadata"]["name"] for i in page["items"]]
        pages += 1
        token = page["metadata"].get("continue")
        if not token:
            break
    assert sorted(seen) == [f"w{i}" for i in range(7)]
    assert pages == 3


# ---- watch ----------------------------------------------------------------------------------


def test_watch_without_version_lists_then_streams(kube, namespace):
    kube.create(kube.CONFIGMAPS, _cm("before"), namespace)
    stream = kube.watch(kube.CONFIGMAPS, namespace)
    try:
        first = stream.until(lambda e: e["object"]["metadata"]["name"] == "before")
        assert first["type"] == "ADDED"
        kube.create(kube.CONFIGMAPS, _cm("after"), namespace)
        kube.patch(kube.CONFIGMAPS, "after", {"data": {"x": "1"}}, namespace)
        kube.delete(kube.CONFIGMAPS, "after", namespace)
        events = [
            stream.until(lambda e: e["object"]["metadata"]["name"] == "after") for _ in range(3)
        ]
        assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
        versions = [_rv(e["object"]) for e in events]
        assert versions == sorted(versions) and len(set(versions)) == 3
    finally:
        stream.close()


def test_watch_replays_history_after_a_resource_version(kube, namespace):
    start = kube.create(kube.CONFIGMAPS, _cm("r"), namespace)
    kube.patch(kube.CONFIGMAPS, "r", {"data": {"a": "1"}}, namespace)
    kube.patch(kube.CONFIGMAPS, "r", {"data": {"a": "2"}}, namespace)
    stream = kube.watch(
        kube.CONFIGMAPS, namespace, resourceVersion=start["metadata"]["resourceVersion"]
    )
    try:
        # A cluster adds kube-root-ca.crt to new namespaces: only "r" counts.
        ours = lambda e: e["object"]["metadata"]["name"] == "r"  # noqa: E731
        first, second = stream.until(ours), stream.until(ours)
        assert [first["type"], second["type"]] == ["MODIFIED", "MODIFIED"]
        assert [first["object"]["data"]["a"], second["object"]["data"]["a"]] == ["1", "2"]
    finally:
        stream.close()


def test_watch_ends_at_timeout_seconds(kube, namespace):
    stream = kube.watch(kube.CONFIGMAPS, namespace, timeoutSeconds=1)
    assert stream.ended.wait(10)
    assert stream.error is None


def test_watch_with_selector_reports_an_object_leaving_it_as_deleted(kube, namespace):
    kube.create(kube.CONFIGMAPS, _cm("sel", {"app": "x"}), namespace)
    listed = kube.list(kube.CONFIGMAPS, namespace, labelSelector="app=x")
    stream = kube.watch(
        kube.CONFIGMAPS,
        namespace,
        labelSelector="app=x",
        resourceVersion=listed["metadata"]["resourceVersion"],
    )
    try:
        kube.patch(kube.CONFIGMAPS, "sel", {"metadata": {"labels": {"app": "y"}}}, namespace)
        gone = stream.next()
        assert gone["type"] == "DELETED" and gone["object"]["metadata"]["name"] == "sel"
        kube.patch(kube.CONFIGMAPS, "sel", {"metadata": {"labels": {"app": "x"}}}, namespace)
        back = stream.next()
        assert back["type"] == "ADDED" and back["object"]["metadata"]["labels"]["app"] == "x"
    finally:
        stream.close()


def test_namespaced_and_all_namespace_watches(kube, namespace):
    other = f"kc-{uuid.uuid4().hex[:8]}"
    kube.create(kube.NAMESPACES, {"metadata": {"name": other}})
    rv = kube.list(kube.WIDGETS, namespace)["metadata"]["resourceVersion"]
    mine = kube.watch(kube.WIDGETS, namespace, resourceVersion=rv)
    everyone = kube.watch(kube.WIDGETS, None, resourceVersion=rv)
    try:
        kube.create(kube.WIDGETS, _widget("elsewhere"), other)
        kube.create(kube.WIDGETS, _widget("here"), namespace)
        assert mine.next()["object"]["metadata"]["name"] == "here"
        ours = lambda e: e["object"]["metadata"]["name"] in ("here", "elsewhere")  # noqa: E731
        seen = {everyone.until(ours)["object"]["metadata"]["namespace"] for _ in range(2)}
        assert seen == {namespace, other}
    finally:
        mine.close()
        everyone.close()
        kube.delete(kube.NAMESPACES, other)


def test_watch_bookmarks_carry_the_current_version(kube, emulator, namespace):
    created = kube.create(kube.CONFIGMAPS, _cm("b"), namespace)
    stream = kube.watch(
        kube.CONFIGMAPS,
        namespace,
        allowWatchBookmarks=True,
        resourceVersion=created["metadata"]["resourceVersion"],
    )
    try:
        bookmark = stream.next(skip_bookmarks=False)
        assert bookmark["type"] == "BOOKMARK"
        assert _rv(bookmark["object"]) >= _rv(created)
        assert bookmark["object"]["kind"] == "ConfigMap"
    finally:
        stream.close()


def test_send_initial_events_ends_with_the_initial_events_bookmark(kube, namespace):
    kube.create(kube.CONFIGMAPS, _cm("i1"), namespace)
    kube.create(kube.CONFIGMAPS, _cm("i2"), namespace)
    stream = kube.watch(
        kube.CONFIGMAPS,
        namespace,
        sendInitialEvents=True,
        allowWatchBookmarks=True,
        resourceVersionMatch="NotOlderThan",
    )
    try:
        added = set()
        while (event := stream.next(skip_bookmarks=False))["type"] == "ADDED":
            added.add(event["object"]["metadata"]["name"])
        # kube-root-ca.crt exists in every namespace of a full cluster: only ours count.
        assert added - {"kube-root-ca.crt"} == {"i1", "i2"}
        marker = event
        assert marker["type"] == "BOOKMARK"
        annotations = marker["object"]["metadata"]["annotations"]
        assert annotations["k8s.io/initial-events-end"] == "true"
    finally:
        stream.close()


def test_watch_from_compacted_history_gets_410_expired(kube, emulator, namespace):
    old = kube.create(kube.CONFIGMAPS, _cm("c"), namespace)
    kube.patch(kube.CONFIGMAPS, "c", {"data": {"a": "1"}}, namespace)
    emulator.compact()
    stream = kube.watch(
        kube.CONFIGMAPS, namespace, resourceVersion=old["metadata"]["resourceVersion"]
    )
    event = stream.next()
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"
    assert stream.ended.wait(5)


# ---- create ---------------------------------------------------------------------------------


def test_create_sets_server_fields(kube, namespace):
    response = kube.raw(
        "POST",
        kube.WIDGETS.path(namespace),
        body=_widget("", status={"conditions": []}) | {"metadata": {"generateName": "gen-"}},
    )
    assert response.status == 201
    created = json.loads(response.read())
    meta = created["metadata"]
    assert meta["name"].startswith("gen-") and len(meta["name"]) > len("gen-")
    assert meta["uid"] and meta["generation"] == 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["creationTimestamp"])
    assert "status" not in created  # the status subresource owns it


def test_create_conflicts_and_missing_namespace(kube, namespace):
    kube.create(kube.CONFIGMAPS, _cm("dup"), namespace)
    with pytest.raises(kube.Error) as exists:
        kube.create(kube.CONFIGMAPS, _cm("dup"), namespace)
    assert exists.value.status == 409 and exists.value.body["reason"] == "AlreadyExists"
    assert exists.value.body["details"]["name"] == "dup"
    with pytest.raises(kube.Error) as missing:
        kube.create(kube.CONFIGMAPS, _cm("x"), f"nope-{uuid.uuid4().hex[:6]}")
    assert missing.value.status == 404 and missing.value.body["reason"] == "NotFound"
    assert missing.value.body["kind"] == "Status" and missing.value.body["code"] == 404


# ---- update ---------------------------------------------------------------------------------


def test_update_with_stale_version_conflicts(kube, namespace):
    created = kube.create(kube.WIDGETS, _widget("u"), namespace)
    kube.patch(kube.WIDGETS, "u", {"spec": {"size": 3}}, namespace)
    created["spec"]["size"] = 4
    with pytest.raises(kube.Error) as stale:
        kube.update(kube.WIDGETS, created)
    assert stale.value.status == 409 and stale.value.body["reason"] == "Conflict"


def test_a_uid_in_an_update_is_a_precondition(kube, namespace):
    created = kube.create(kube.CONFIGMAPS, _cm("uid"), namespace)
    forged = {**created, "metadata": {**created["metadata"], "uid": str(uuid.uuid4())}}
    with pytest.raises(kube.Error) as mismatch:
        kube.update(kube.CONFIGMAPS, forged)
    assert mismatch.value.status == 409


def test_custom_resource_update_requires_a_resource_version(kube, namespace):
    created = kube.create(kube.WIDGETS, _widget("norv"), namespace)
    del created["metadata"]["resourceVersion"]
    with pytest.raises(kube.Error) as missing:
        kube.update(kube.WIDGETS, created)
    assert missing.value.status == 422


def test_update_keeps_server_metadata_and_isolates_status(kube, namespace):
    created = kube.create(kube.WIDGETS, _widget("iso"), namespace)
    body = {**created, "status": {"observedGeneration": 99}}
    body["metadata"] = {
        **created["metadata"],
        "creationTimestamp": "2000-01-01T00:00:00Z",
        "labels": {"l": "1"},
    }
    body["spec"] = {"size": 5}
    updated = kube.update(kube.WIDGETS, body)
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]
    assert updated["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]
    assert updated["metadata"]["labels"] == {"l": "1"}
    assert "status" not in updated  # ignored on the main resource
    assert updated["metadata"]["generation"] == 2
    status_body = {**updated, "spec": {"size": 9}, "status": {"observedGeneration": 2}}
    after_status = kube.update(kube.WIDGETS, status_body, sub="status")
    assert after_status["status"] == {"observedGeneration": 2}
    assert after_status["spec"]["size"] == 5  # spec ignored through /status
    assert after_status["metadata"]["generation"] == 2


def test_generation_moves_only_with_spec(kube, namespace):
    created = kube.create(kube.WIDGETS, _widget("gen"), namespace)
    labelled = kube.patch(kube.WIDGETS, "gen", {"metadata": {"labels": {"a": "b"}}}, namespace)
    assert labelled["metadata"]["generation"] == 1 and _rv(labelled) > _rv(created)
    status = kube.patch(
        kube.WIDGETS, "gen", {"status": {"observedGeneration": 1}}, namespace, sub="status"
    )
    assert status["metadata"]["generation"] == 1
    changed = kube.patch(kube.WIDGETS, "gen", {"spec": {"size": 7}}, namespace)
    assert changed["metadata"]["generation"] == 2


def test_noop_write_changes_nothing_and_emits_nothing(kube, namespace):
    created = kube.create(kube.WIDGETS, _widget("noop"), namespace)
    stream = kube.watch(
        kube.WIDGETS, namespace, resourceVersion=created["metadata"]["resourceVersion"]
    )
    try:
        same = kube.update(kube.WIDGETS, created)
        assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
        same_patch = kube.patch(kube.WIDGETS, "noop", {"spec": {"size": 2}}, namespace)
        assert same_patch["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
        kube.patch(kube.WIDGETS, "noop", {"spec": {"size": 3}}, namespace)
        event = stream.next()  # the first event is the real change
        assert event["type"] == "MODIFIED" and event["object"]["spec"]["size"] == 3
    finally:
        stream.close()


# ---- patch ----------------------------------------------------------------------------------


def test_merge_and_json_patches(kube, namespace):
    kube.create(
        kube.WIDGETS, _widget("p", color="red") | {"spec": {"size": 2, "color": "red"}}, namespace
    )
    merged = kube.patch(kube.WIDGETS, "p", {"spec": {"color": None, "size": 4}}, namespace)
    assert merged["spec"] == {"size": 4}
    patched = kube.patch(
        kube.WIDGETS,
        "p",
        [
            {"op": "replace", "path": "/spec/size", "value": 6},
            {"op": "add", "path": "/metadata/labels", "value": {"k": "v"}},
        ],
        namespace,
        content_type=kube.JSON_PATCH,
    )
    assert patched["spec"]["size"] == 6 and patched["metadata"]["labels"] == {"k": "v"}


def test_strategic_merge_on_builtins_and_415_on_custom_resources(kube, namespace):
    kube.create(
        kube.CONFIGMAPS,
        {**_cm("s", k="v"), "metadata": {"name": "s", "finalizers": ["a.io/one"]}},
        namespace,
    )
    patched = kube.patch(
        kube.CONFIGMAPS,
        "s",
        {"metadata": {"finalizers": ["b.io/two"]}, "data": {"k2": "v2"}},
        namespace,
        content_type=kube.STRATEGIC,
    )
    assert patched["metadata"]["finalizers"] == ["b.io/two", "a.io/one"]  # lists merge
    assert patched["data"] == {"k": "v", "k2": "v2"}
    removed = kube.patch(
        kube.CONFIGMAPS,
        "s",
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.io/one"]}},
        namespace,
        content_type=kube.STRATEGIC,
    )
    assert removed["metadata"]["finalizers"] == ["b.io/two"]
    kube.patch(kube.CONFIGMAPS, "s", {"metadata": {"finalizers": None}}, namespace)
    kube.create(kube.WIDGETS, _widget("sm"), namespace)
    with pytest.raises(kube.Error) as unsupported:
        kube.patch(
            kube.WIDGETS, "sm", {"spec": {"size": 3}}, namespace, content_type=kube.STRATEGIC
        )
    assert unsupported.value.status == 415


def test_resource_version_in_a_patch_is_a_precondition(kube, namespace):
    created = kube.create(kube.CONFIGMAPS, _cm("pre"), namespace)
    kube.patch(kube.CONFIGMAPS, "pre", {"data": {"a": "1"}}, namespace)
    with pytest.raises(kube.Error) as stale:
        kube.patch(
            kube.CONFIGMAPS,
            "pre",
            {
                "metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
                "data": {"a": "2"},
            },
            namespace,
        )
    assert stale.value.status == 409


def test_status_patch_touches_only_status(kube, namespace):
    kube.create(kube.WIDGETS, _widget("st"), namespace)
    patched = kube.patch(
        kube.WIDGETS,
        "st",
        {"spec": {"size": 8}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        namespace,
        sub="status",
    )
    assert patched["status"]["conditions"][0]["type"] == "Ready"
    assert patched["spec"]["size"] == 2
    main = kube.patch(kube.WIDGETS, "st", {"status": {"conditions": []}}, namespace)
    assert main["status"]["conditions"][0]["type"] == "Ready"


# ---- delete ---------------------------------------------------------------------------------


def test_delete_with_finalizers_goes_through_terminating(kube, namespace):
    created = kube.create(
        kube.WIDGETS,
        _widget("fin") | {"metadata": {"name": "fin", "finalizers": ["x.io/f"]}},
        namespace,
    )
    stream = kube.watch(
        kube.WIDGETS, namespace, resourceVersion=created["metadata"]["resourceVersion"]
    )
    try:
        kube.delete(kube.WIDGETS, "fin", namespace)
        terminating = stream.next()
        assert terminating["type"] == "MODIFIED"
        assert terminating["object"]["metadata"]["deletionTimestamp"]
        again = kube.delete(kube.WIDGETS, "fin", namespace)  # a repeated DELETE changes nothing
        assert (
            again["metadata"]["resourceVersion"]
            == terminating["object"]["metadata"]["resourceVersion"]
        )
        with pytest.raises(kube.Error) as refused:
            kube.patch(
                kube.WIDGETS, "fin", {"metadata": {"finalizers": ["x.io/f", "y.io/g"]}}, namespace
            )
        assert refused.value.status == 422
        kube.patch(kube.WIDGETS, "fin", {"metadata": {"finalizers": None}}, namespace)
        deleted = stream.next()
        assert deleted["type"] == "DELETED"
        assert not kube.exists(kube.WIDGETS, "fin", namespace)
    finally:
        stream.close()


def test_delete_preconditions(kube, namespace):
    created = kube.create(kube.CONFIGMAPS, _cm("pc"), namespace)
    with pytest.raises(kube.Error) as wrong_uid:
        kube.delete(kube.CONFIGMAPS, "pc", namespace, {"preconditions": {"uid": str(uuid.uuid4())}})
    assert wrong_uid.value.status == 409
    with pytest.raises(kube.Error) as wrong_rv:
        kube.delete(kube.CONFIGMAPS, "pc", namespace, {"preconditions": {"resourceVersion": "1"}})
    assert wrong_rv.value.status == 409
    kube.delete(
        kube.CONFIGMAPS, "pc", namespace, {"preconditions": {"uid": created["metadata"]["uid"]}}
    )
    assert not kube.exists(kube.CONFIGMAPS, "pc", namespace)
    with pytest.raises(kube.Error) as gone:
        kube.delete(kube.CONFIGMAPS, "pc", namespace)
    assert gone.value.status == 404


# ---- CRDs, discovery, schema ----------------------------------------------------------------


def test_crd_discovery(kube):
    groups = kube.call("GET", "/apis")["groups"]
    group = next(g for g in groups if g["name"] == "contract.example.com")
    assert group["preferredVersion"]["version"] == "v1"
    resources = {
        r["name"]: r for r in kube.call("GET", "/apis/contract.example.com/v1")["resources"]
    }
    widgets = resources["widgets"]
    assert widgets["kind"] == "Widget" and widgets["namespaced"] is True
    assert widgets["shortNames"] == ["wdg"] and widgets["categories"] == ["contract"]
    assert {"get", "list", "watch", "create", "update", "patch", "delete"} <= set(widgets["verbs"])
    assert set(resources["widgets/status"]["verbs"]) >= {"get", "patch", "update"}
    core = {r["name"] for r in kube.call("GET", "/api/v1")["resources"]}
    assert {"namespaces", "configmaps", "secrets", "events"} <= core
    crd = kube.get(kube.CRDS, "widgets.contract.example.com")
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions["Established"] == "True" and conditions["NamesAccepted"] == "True"


def test_schema_prunes_defaults_and_validates(kube, namespace):
    body = _widget("sch")
    body["spec"] = {"unknown": 1, "extra": {"free": "form"}}
    created = kube.create(kube.WIDGETS, body, namespace)
    assert created["spec"] == {"size": 1, "extra": {"free": "form"}}
    with pytest.raises(kube.Error) as invalid:
        kube.create(
            kube.WIDGETS, _widget("bad", size=0) | {"spec": {"size": 0, "color": "pink"}}, namespace
        )
    assert invalid.value.status == 422 and invalid.value.body["reason"] == "Invalid"
    fields = {c["field"] for c in invalid.value.body["details"]["causes"]}
    assert {"spec.size", "spec.color"} <= fields


def _gadget_crd(suffix: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets{suffix}.contract.example.com"},
        "spec": {
            "group": "contract.example.com",
            "scope": "Namespaced",
            "names": {"plural": f"gadgets{suffix}", "kind": f"Gadget{suffix}"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


def test_deleting_a_crd_removes_its_objects(kube, namespace):
    suffix = uuid.uuid4().hex[:6]
    crd = _gadget_crd(suffix)
    kube.create(kube.CRDS, crd)
    gadgets = type(kube.WIDGETS)("contract.example.com", "v1", f"gadgets{suffix}")
    kube.eventually(lambda: _try_create(kube, gadgets, namespace, suffix))
    kube.delete(kube.CRDS, crd["metadata"]["name"])
    kube.eventually(lambda: not kube.exists(kube.CRDS, crd["metadata"]["name"]), timeout=60)
    with pytest.raises(kube.Error) as gone:
        kube.get(gadgets, "g1", namespace)
    assert gone.value.status == 404


def test_a_kind_without_its_crd_lists_as_404_until_the_crd_is_installed(kube, namespace):
    # What an optional informer reads as "not served yet" (runtime/informer.py).
    suffix = uuid.uuid4().hex[:6]
    gadgets = type(kube.WIDGETS)("contract.example.com", "v1", f"gadgets{suffix}")
    with pytest.raises(kube.Error) as unserved:
        kube.list(gadgets, namespace)
    assert unserved.value.status == 404
    kube.create(kube.CRDS, _gadget_crd(suffix))
    try:
        listed = kube.eventually(lambda: _listed(kube, gadgets, namespace))
        assert listed["items"] == []
    finally:
        kube.delete(kube.CRDS, f"gadgets{suffix}.contract.example.com")


def _listed(kube, res, namespace) -> dict[str, Any] | None:
    try:
        return kube.list(res, namespace)
    except kube.Error:
        return None


def _try_create(kube, res, namespace, suffix) -> bool:
    try:
        kube.create(
            res,
            {
                "apiVersion": "contract.example.com/v1",
                "kind": f"Gadget{suffix}",
                "metadata": {"name": "g1"},
            },
            namespace,
        )
    except kube.Error:
        return False
    return True


# ---- built-ins, dry run, tables, version, errors --------------------------------------------


def test_builtin_namespaces_and_kinds(kube, namespace):
    names = _names(kube.list(kube.NAMESPACES))
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= set(names)
    secret = kube.create(
        kube.SECRETS,
        {"metadata": {"name": "s"}, "stringData": {"a": "b"}, "type": "Opaque"},
        namespace,
    )
    assert secret["data"] == {"a": "Yg=="} and "stringData" not in secret  # merged, base64
    lease = kube.create(
        kube.LEASES, {"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}}, namespace
    )
    renewed = kube.patch(
        kube.LEASES,
        "l",
        {"spec": {"holderIdentity": "you"}},
        namespace,
        content_type=kube.STRATEGIC,
    )
    assert renewed["spec"]["holderIdentity"] == "you" and _rv(renewed) > _rv(lease)


def test_both_event_apis_show_the_same_events(kube, namespace):
    kube.create(
        kube.EVENTS,
        {
            "metadata": {"name": "e1"},
            "reason": "Tested",
            "message": "hello",
            "type": "Normal",
            "involvedObject": {"kind": "ConfigMap", "name": "x", "namespace": namespace},
            "source": {"component": "contract"},
        },
        namespace,
    )
    seen = kube.get(kube.NEW_EVENTS, "e1", namespace)
    assert seen["note"] == "hello" and seen["regarding"]["name"] == "x"
    by_reason = kube.list(kube.EVENTS, namespace, fieldSelector="involvedObject.name=x")
    assert _names(by_reason) == ["e1"]


def test_dry_run_persists_nothing(kube, namespace):
    dry = kube.create(kube.CONFIGMAPS, _cm("dry"), namespace, dryRun="All")
    assert dry["metadata"]["name"] == "dry"
    assert not kube.exists(kube.CONFIGMAPS, "dry", namespace)
    real = kube.create(kube.CONFIGMAPS, _cm("wet", k="v"), namespace)
    kube.patch(kube.CONFIGMAPS, "wet", {"data": {"k": "changed"}}, namespace, dryRun="All")
    after = kube.get(kube.CONFIGMAPS, "wet", namespace)
    assert (
        after["data"] == {"k": "v"}
        and after["metadata"]["resourceVersion"] == real["metadata"]["resourceVersion"]
    )


def test_table_output_uses_printer_columns(kube, namespace):
    kube.create(kube.WIDGETS, _widget("t", size=3), namespace)
    kube.patch(
        kube.WIDGETS,
        "t",
        {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        namespace,
        sub="status",
    )
    table = kube.call("GET", kube.WIDGETS.path(namespace), accept=kube.TABLE)
    assert table["kind"] == "Table"
    columns = {c["name"]: c for c in table["columnDefinitions"]}
    assert list(columns)[:3] == ["Name", "Size", "Ready"]
    assert columns["Color"]["priority"] == 1
    cells = dict(zip(columns, table["rows"][0]["cells"], strict=True))
    assert cells["Name"] == "t" and cells["Size"] == 3 and cells["Ready"] == "True"
    builtin = kube.call("GET", kube.NAMESPACES.path(), accept=kube.TABLE)
    assert builtin["columnDefinitions"][0]["name"] == "Name"


@pytest.mark.parametrize(
    ("current", "patch", "merged"),
    [
        (["a/1", "c/3"], ["b/2"], ["b/2", "a/1", "c/3"]),
        (["a/1", "c/3", "d/4"], ["c/3", "b/2"], ["a/1", "c/3", "b/2", "d/4"]),
        (["a/1", "c/3", "d/4"], ["b/2", "a/1"], ["b/2", "a/1", "c/3", "d/4"]),
        (["a/1"], ["c/3", "b/2"], ["c/3", "b/2", "a/1"]),
    ],
)
def test_strategic_merge_orders_lists_as_a_real_server_does(
    kube, namespace, current, patch, merged
):
    """The patch's items in its order, interleaved with the server's others by position."""
    name = f"o-{uuid.uuid4().hex[:6]}"
    kube.create(kube.CONFIGMAPS, {"metadata": {"name": name, "finalizers": current}}, namespace)
    patched = kube.patch(
        kube.CONFIGMAPS,
        name,
        {"metadata": {"finalizers": patch}},
        namespace,
        content_type=kube.STRATEGIC,
    )
    kube.patch(kube.CONFIGMAPS, name, {"metadata": {"finalizers": None}}, namespace)
    assert patched["metadata"]["finalizers"] == merged


def test_strategic_merge_orders_keyed_lists_alike_and_merges_their_items(kube, namespace):
    """A list merged on a key (a Service's ports, on `port`): the same order, and an item the
    patch names is merged into the server's, not replaced."""

    def port(number: int, **extra: Any) -> dict[str, Any]:
        return {"name": f"p{number}", "port": number, **extra}

    service = {
        "metadata": {"name": "ordered"},
        "spec": {"ports": [port(1), port(3), port(4)]},
    }
    kube.create(kube.SERVICES, service, namespace)
    patched = kube.patch(
        kube.SERVICES,
        "ordered",
        {"spec": {"ports": [port(3, targetPort=9), port(2)]}},
        namespace,
        content_type=kube.STRATEGIC,
    )
    ports = patched["spec"]["ports"]
    assert [p["port"] for p in ports] == [1, 3, 2, 4]
    assert ports[1]["targetPort"] == 9 and ports[1]["name"] == "p3"


def test_version_has_every_field(kube):
    version = kube.call("GET", "/version")
    for field in (
        "major",
        "minor",
        "gitVersion",
        "gitCommit",
        "gitTreeState",
        "buildDate",
        "goVersion",
        "compiler",
        "platform",
    ):
        assert version.get(field), field


def test_protobuf_bodies_are_refused_with_advice(kube, emulator, namespace):
    with pytest.raises(kube.Error) as refused:
        kube.call(
            "POST",
            kube.CONFIGMAPS.path(namespace),
            body="\x6b\x38\x73\x00",
            content_type="application/vnd.kubernetes.protobuf",
        )
    assert refused.value.status == 415 and "kubectl apply -f" in refused.value.body["message"]


def test_strict_field_validation_rejects_unknown_fields(kube, namespace):
    body = _widget("strict")
    body["spec"]["sise"] = 3
    with pytest.raises(kube.Error) as rejected:
        kube.create(kube.WIDGETS, body, namespace, fieldValidation="Strict")
    assert rejected.value.status == 400
    assert 'unknown field "spec.sise"' in rejected.value.body["message"]
    created = kube.create(kube.WIDGETS, body, namespace, fieldValidation="Ignore")
    assert "sise" not in created["spec"]
