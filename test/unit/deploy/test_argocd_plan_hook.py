"""deploy/argocd/plan-presync-hook.yaml: a PreSync Job whose command is a real `plan` command
line, run by a ServiceAccount granted exactly the reads a plan makes."""

from __future__ import annotations

from typing import Any

import yaml

from baseten_operator.cli import build_parser
from testsupport.paths import REPO

HOOK = REPO / "deploy" / "argocd" / "plan-presync-hook.yaml"
OPERATOR_NAMESPACE = "baseten-operator-system"


def objects() -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(HOOK.read_text()) if doc}


def container() -> dict[str, Any]:
    (plan,) = objects()["Job"]["spec"]["template"]["spec"]["containers"]
    return plan


def test_every_object_is_a_presync_hook_the_job_last() -> None:
    found = objects()
    assert set(found) == {
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Job",
    }
    for kind, obj in found.items():
        annotations = obj["metadata"]["annotations"]
        assert annotations["argocd.argoproj.io/hook"] == "PreSync", kind
        assert annotations["argocd.argoproj.io/hook-delete-policy"] == "BeforeHookCreation", kind
        wave = int(annotations.get("argocd.argoproj.io/sync-wave", "0"))
        assert wave == (0 if kind == "Job" else -1), kind


def test_the_command_is_a_plan_of_the_mounted_manifests_with_the_cluster() -> None:
    plan = container()
    program, *argv = plan["command"]
    assert program == "baseten-operator"
    args = build_parser().parse_args(argv)  # the real CLI: an unknown flag exits here
    assert args.command == "plan"
    assert args.cluster and not args.detailed_exitcode  # changes must not fail the sync
    (mount,) = plan["volumeMounts"]
    assert args.filename == [mount["mountPath"]] and mount["readOnly"] is True
    assert args.operator_namespace == OPERATOR_NAMESPACE
    volumes = objects()["Job"]["spec"]["template"]["spec"]["volumes"]
    assert volumes == [{"name": mount["name"], "configMap": {"name": "baseten-plan-manifests"}}]


def test_the_key_is_the_read_only_one_from_a_secret() -> None:
    (env,) = [e for e in container()["env"] if e["name"] == "BASETEN_API_KEY"]
    assert env["valueFrom"]["secretKeyRef"] == {
        "name": "baseten-plan-read-only-key",
        "key": "api-key",
    }


def test_the_job_runs_as_its_service_account_with_exactly_the_reads_of_a_plan() -> None:
    found = objects()
    account = found["ServiceAccount"]["metadata"]
    job = found["Job"]
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == account["name"]
    assert job["metadata"]["namespace"] == account["namespace"]
    subject = {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    for binding, role in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        assert found[binding]["subjects"] == [subject]
        assert found[binding]["roleRef"]["name"] == found[role]["metadata"]["name"]
    granted = {
        (group, resource, verb)
        for rule in found["ClusterRole"]["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    # Every BasetenModel and BasetenSecret is listed (siblings and claims span namespaces);
    # a Namespace's policy and a setup script's ConfigMap are read by name.
    assert granted == {
        ("models.baseten.com", "basetenmodels", "list"),
        ("models.baseten.com", "basetensecrets", "list"),
        ("", "namespaces", "get"),
        ("", "configmaps", "get"),
    }
    (keys,) = found["Role"]["rules"]
    assert found["Role"]["metadata"]["namespace"] == OPERATOR_NAMESPACE
    assert (keys["resources"], keys["verbs"]) == (["secrets"], ["get"])
    assert keys["resourceNames"]  # named Secrets only, never every Secret there
