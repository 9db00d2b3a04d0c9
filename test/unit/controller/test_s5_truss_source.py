"""Section 5: trussConfig sources, as far as the reconciler drives the pusher."""

from __future__ import annotations

import base64

import pytest

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.runtime.controller import Result

SCRIPT = (
    "#!/bin/bash\nset -e\npip install -r /app/data/requirements.txt && echo ready > /tmp/ready\n"
)
# docs/truss.md vector 1: the user guide's short example, which truss 0.18 would refuse
# to push (no start command or probes) but which names an existing deployment just fine.
VECTOR_1 = {
    "resources": {"accelerator": "H100:1"},
    "baseImage": {"image": "us-docker.pkg.dev/my-project/my-repo/vllm:0.16.0"},
    "dockerServer": {"predictEndpoint": "/v1/completions", "serverPort": 8000},
    "setupScript": {"configMapRef": {"name": "my-model-setup", "key": "setup.sh"}},
}
VECTOR_1_NAME = "depl-vllm-0.16.0-e92a0daf"
# The same with the docker_server fields truss requires: what the push tests push.
TRUSS = {
    **VECTOR_1,
    "dockerServer": {
        "startCommand": "sh -c 'bash /app/data/setup.sh'",
        "readinessEndpoint": "/health",
        "livenessEndpoint": "/health",
        "predictEndpoint": "/v1/completions",
        "serverPort": 8000,
    },
}
NAME = "depl-vllm-0.16.0-68322655"
KEY = "default/my-model"


def truss_spec() -> dict:
    return {"modelName": "my-llm", "trussConfig": TRUSS, "environment": {"name": "production"}}


@pytest.fixture
def t(h):
    h.configmaps.add("my-model-setup", {"setup.sh": SCRIPT})
    h.create(truss_spec())
    return h


def test_go_operator_deployment_is_found_by_its_compatible_name(h) -> None:
    h.configmaps.add("my-model-setup", {"setup.sh": SCRIPT})
    h.create({**truss_spec(), "trussConfig": VECTOR_1})
    h.baseten.add_model()
    h.baseten.add_deployment(name=VECTOR_1_NAME)
    h.run()
    assert h.pusher.launched == []
    assert h.status()["sourceDeploymentName"] == VECTOR_1_NAME
    assert h.status()["trussPushStatus"] == "TRUSS_PUSH_DONE"


def test_new_model_is_pushed(t) -> None:
    assert t.run().requeue_after == 10
    (request,) = t.pusher.launched
    assert request.deployment_name == NAME
    assert request.key == KEY
    assert request.model_name == "my-llm"
    assert request.model_id is None
    assert request.setup_script == SCRIPT
    assert request.truss_config == TRUSS
    assert t.word() == "DEPLOYING"
    assert t.message() == f"truss push started for {NAME}"
    assert t.event("TrussPushStarted") == (
        "Normal",
        f"Creating model 'my-llm' and deployment '{NAME}' via truss push",
    )
    status = t.status()
    assert status["trussPushStatus"] == "TRUSS_PUSHING"
    assert status["trussConfigHash"] == "68322655"
    assert status["sourceDeploymentName"] == NAME
    assert status["trussPushTime"] == "2026-01-01T00:00:00Z"
    # persisted before the launch; nothing more to write afterwards
    assert t.kube.status_writes[0]["trussPushStatus"] == "TRUSS_PUSHING"


def test_existing_model_push_names_only_the_deployment(t) -> None:
    t.baseten.add_model()
    t.run()
    assert t.pusher.launched[0].model_id == "m1"
    assert t.event("TrussPushStarted")[1] == f"Creating deployment '{NAME}' via truss push"


def test_push_in_progress(t) -> None:
    t.run()
    t.clock.advance(60)
    assert t.run().requeue_after == 10
    assert t.message() == f"truss push in progress for {NAME}"
    assert len(t.pusher.launched) == 1


def test_a_push_on_record_that_runs_nowhere_is_pushed_again_at_once(t) -> None:
    # A new leader (or a restarted replica) finds TRUSS_PUSHING that no process of its
    # own runs: the replica that pushed stopped, and its push died with it.
    t.run()
    t.pusher.running.clear()
    t.run()
    assert t.event("TrussPushFailed") == (
        "Warning",
        f"Truss push for '{NAME}' is on record but runs nowhere "
        "(the replica that started it stopped), retrying",
    )
    assert len(t.pusher.launched) == 2
    assert t.message() == f"truss push started for {NAME}"


@pytest.mark.parametrize("error", ["build rejected", None])
def test_a_push_that_ends_while_a_pass_looks_is_collected_not_taken_for_a_dead_one(
    t, error: str | None
) -> None:
    t.run()
    t.baseten.add_model()  # what a push that worked leaves

    def finished_just_now(name: str) -> bool:
        # The push ends between the pass's collecting of outcomes and its in-flight check.
        t.pusher.finish(KEY, NAME, error=error, model_id="m1")
        return False

    t.pusher.in_flight = finished_just_now  # type: ignore[method-assign]
    t.run()
    assert len(t.pusher.launched) == 1  # no second push of the same name
    assert not [m for _, _, m in t.events if "runs nowhere" in m]
    if error is None:
        assert t.status()["trussPushStatus"] == "TRUSS_PUSH_DONE"
    else:
        assert t.event("TrussPushFailed")[1].startswith(f"Truss push for '{NAME}' failed")
        assert t.status()["trussPushFailureCount"] == 1


def test_a_repeated_push_intent_is_still_checked_before_the_launch(t) -> None:
    t.run()
    t.pusher.running.clear()  # the replica that pushed stopped; its push died with it
    # The next pass records the same launch (same hash, name and second): unchanged, yet
    # written against the version it read, which is stale.
    t.kube.conflicts = 1
    assert t.run() == Result(requeue=True)
    assert len(t.pusher.launched) == 1
    t.run()
    assert len(t.pusher.launched) == 2


def test_a_push_on_record_is_not_pushed_again_while_it_runs(t) -> None:
    t.run()
    t.clock.advance(3600)  # however long ago: the pusher's own timeout bounds it
    t.run()
    assert t.message() == f"truss push in progress for {NAME}"
    assert len(t.pusher.launched) == 1


def test_push_success_records_model_and_done(t) -> None:
    t.run()
    t.pusher.finish(KEY, NAME, model_id="m1")
    t.baseten.add_model()
    t.baseten.add_deployment(name=NAME, status="BUILDING")
    t.run()
    assert t.event("TrussPushCompleted") == (
        "Normal",
        f"Deployment '{NAME}' created successfully via truss push",
    )
    status = t.status()
    assert status["trussPushStatus"] == "TRUSS_PUSH_DONE"
    assert status["modelID"] == "m1"
    # then on: environment created, as for any source
    assert t.message() == "Created environment production"


def test_completion_is_announced_once_when_a_pass_found_the_deployment_first(t) -> None:
    t.baseten.add_model()
    t.run()
    t.baseten.add_deployment(name=NAME, status="BUILDING")  # visible while truss still runs
    t.run()
    assert t.reasons().count("TrussPushCompleted") == 1
    t.pusher.finish(KEY, NAME, model_id="m1")
    t.run()
    assert "TrussPushCompleted" not in t.reasons()
    assert t.status()["trussPushStatus"] == "TRUSS_PUSH_DONE"


def test_push_failure_backs_off(t) -> None:
    t.run()
    t.pusher.finish(KEY, NAME, error="build rejected")
    assert t.run().requeue_after == 120
    assert t.word() == "FAILED"
    assert t.message() == (
        f"truss push failed for {NAME} (attempt 1): build rejected; "
        "next retry at 2026-01-01T00:02:00Z"
    )
    assert t.event("TrussPushFailed") == (
        "Warning",
        f"Truss push for '{NAME}' failed (attempt 1), retrying in 2m0s: build rejected",
    )
    t.clock.advance(60)
    assert t.run().requeue_after == 60
    assert len(t.pusher.launched) == 1
    t.clock.advance(60)
    t.run()
    assert len(t.pusher.launched) == 2


def test_known_deployment_is_not_pushed_again(t) -> None:
    t.baseten.add_model()
    t.baseten.add_deployment(name=NAME)
    t.run()
    assert t.pusher.launched == []
    assert t.status()["trussPushStatus"] == "TRUSS_PUSH_DONE"
    t.run()
    # cached: no second lookup of the deployment by name for the source
    assert t.baseten.called("find_deployment").count(("m1", NAME)) == 2  # source validation only


def test_deployment_check_error(t) -> None:
    t.baseten.add_model()
    t.baseten.fail("find_deployment", BasetenAPIError(500, "boom"))
    assert t.run().requeue_after == 30
    assert t.word() == "PENDING"
    assert t.message() == f"unable to check deployment {NAME}: HTTP 500: boom"


def test_no_push_capacity(t) -> None:
    t.pusher.capacity = False
    assert t.run().requeue_after == 10
    assert t.word() == "PENDING"
    assert t.message() == f"waiting for push capacity for {NAME}"
    assert t.pusher.launched == []


def test_same_name_pushed_by_another_cr_is_waited_for(t) -> None:
    t.pusher.running.add(NAME)
    t.run()
    assert t.message() == f"truss push in progress for {NAME}"
    assert t.pusher.launched == []


def test_missing_configmap(h) -> None:
    h.create(truss_spec(), status={"activeDeploymentName": "old"})
    with pytest.raises(Exception, match="not found"):
        h.run()
    assert h.word() == "FAILED"
    assert h.message() == "active: old | truss push failed: ConfigMap 'my-model-setup' not found"
    assert h.event("SetupScriptNotFound") == (
        "Warning",
        "ConfigMap 'my-model-setup' not found: configmaps \"my-model-setup\" not found",
    )


def test_missing_configmap_key(h) -> None:
    h.configmaps.add("my-model-setup", {"other.sh": ""})
    h.create(truss_spec())
    with pytest.raises(Exception, match="not found"):
        h.run()
    assert h.message() == (
        "truss push failed: key 'setup.sh' not found in ConfigMap 'my-model-setup'"
    )
    assert h.event("SetupScriptNotFound") == (
        "Warning",
        "key 'setup.sh' not found in ConfigMap 'my-model-setup'",
    )


def test_a_script_under_binary_data_is_read_decoded_with_the_same_name(h) -> None:
    encoded = base64.b64encode(SCRIPT.encode()).decode()
    h.configmaps.add("my-model-setup", binary_data={"setup.sh": encoded})
    h.create(truss_spec())
    h.run()
    assert h.pusher.launched[0].setup_script == SCRIPT
    assert h.pusher.launched[0].deployment_name == NAME


def test_data_wins_over_binary_data(h) -> None:
    other = base64.b64encode(b"echo other").decode()
    h.configmaps.add("my-model-setup", {"setup.sh": SCRIPT}, binary_data={"setup.sh": other})
    h.create(truss_spec())
    h.run()
    assert h.pusher.launched[0].setup_script == SCRIPT


def test_a_key_in_neither_data_nor_binary_data_is_not_found(h) -> None:
    h.configmaps.add("my-model-setup", {"a": ""}, binary_data={"b": ""})
    h.create(truss_spec())
    with pytest.raises(Exception, match="not found"):
        h.run()
    assert h.message() == (
        "truss push failed: key 'setup.sh' not found in ConfigMap 'my-model-setup'"
    )


def test_binary_data_that_is_not_text_says_so(h) -> None:
    h.configmaps.add("my-model-setup", binary_data={"setup.sh": base64.b64encode(b"\xff").decode()})
    h.create(truss_spec())
    with pytest.raises(Exception, match="not UTF-8 text"):
        h.run()
    assert h.message() == (
        "truss push failed: key 'setup.sh' of ConfigMap 'my-model-setup' is not UTF-8 text"
    )


def test_inline_script_changes_the_name(h) -> None:
    spec = truss_spec()
    spec["trussConfig"] = {**TRUSS, "setupScript": {"inline": "echo hi"}}
    h.create(spec)
    h.run()
    assert h.pusher.launched[0].setup_script == "echo hi"
    assert h.pusher.launched[0].deployment_name.startswith("depl-vllm-0.16.0-")
    assert h.pusher.launched[0].deployment_name != NAME


def test_setup_configmap_index_and_mapping() -> None:
    from baseten_operator.controller.basetenmodel.setup import (
        model_name_index,
        setup_configmap_index,
    )

    obj = {
        "metadata": {"namespace": "ns", "name": "a"},
        "spec": {"modelName": "m", "trussConfig": TRUSS},
    }
    assert setup_configmap_index(obj) == ["ns/my-model-setup"]
    assert model_name_index(obj) == ["m"]
    assert setup_configmap_index({"metadata": {"namespace": "ns"}, "spec": {}}) == []
