"""Observe, Pause and deletion of a BasetenSecret (docs/contract.md 13.7, 13.8)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr

from baseten_operator.controller.shared.endings import ReconcileError


def test_observe_reports_what_it_would_write_and_writes_nothing(sh: Any) -> None:
    sh.secrets.put("hf", {"token": "v"})
    sh.create(mode="Observe", finalizer=False)
    sh.run()
    assert sh.status()["state"] == "OUT_OF_SYNC"
    assert (
        sh.status()["message"]
        == "observe: would write Baseten secret hf_token (missing from Baseten)"
    )
    assert sh.baseten.writes == []
    assert not sh.kube.get(None, "hf-token", "default")["metadata"]["finalizers"]


def test_observe_reports_a_value_changed_since_its_own_last_write(sh: Any) -> None:
    sh.secrets.put("hf", {"token": "v"})
    sh.create()
    sh.run()
    sh.edit(lambda obj: obj["spec"].update(mode="Observe"))
    sh.secrets.put("hf", {"token": "rotated"})
    sh.run()
    assert sh.status()["state"] == "OUT_OF_SYNC"
    assert sh.status()["message"] == "observe: would write Baseten secret hf_token (value changed)"
    assert sh.baseten.secret_value("hf_token") == "v"


def test_pause_reads_nothing_and_calls_nothing(sh: Any) -> None:
    sh.secrets.put("hf", {"token": "v"})
    sh.create(mode="Pause")
    sh.run()
    assert sh.status()["state"] == "PAUSED"
    assert sh.baseten.calls == [] and sh.secrets.reads == 0


def deleted_after_sync(sh: Any, **spec: Any) -> None:
    sh.secrets.put("hf", {"token": "v"})
    sh.create(**spec)
    sh.run()
    assert sh.status()["state"] == "SYNCED"
    sh.delete()


def test_retain_leaves_the_baseten_secret(sh: Any) -> None:
    deleted_after_sync(sh)
    sh.run()
    assert sh.baseten.called("delete_secret") == []
    assert sh.baseten.secret_value("hf_token") == "v"
    assert ("default", "hf-token") not in sh.kube.objects


@pytest.mark.parametrize("mode", ["Observe", "Pause"])
def test_observe_and_pause_always_retain(sh: Any, mode: str) -> None:
    deleted_after_sync(sh, deletionPolicy="Delete")
    sh.edit(lambda obj: obj["spec"].update(mode=mode))
    sh.run()
    assert sh.baseten.called("delete_secret") == []
    assert ("default", "hf-token") not in sh.kube.objects


def test_delete_removes_a_secret_no_model_names(sh: Any) -> None:
    deleted_after_sync(sh, deletionPolicy="Delete")
    sh.add_model("other-model", "another_secret")
    sh.run()
    assert sh.baseten.called("delete_secret") == [("hf_token",)]
    assert sh.baseten.secret_value("hf_token") is None
    assert sh.events == [("Normal", "SecretDeleted", "deleted Baseten secret hf_token")]
    assert ("default", "hf-token") not in sh.kube.objects


def test_delete_never_removes_a_secret_this_cr_never_wrote(sh: Any) -> None:
    sh.baseten.add_secret("hf_token", "made-in-the-ui")
    sh.create(deletionPolicy="Delete")  # its Secret never appears: it never writes
    sh.run()
    assert sh.status()["state"] == "WAITING_FOR_SECRET"
    sh.delete()
    sh.run()
    assert sh.baseten.called("delete_secret") == []
    assert sh.baseten.secret_value("hf_token") == "made-in-the-ui"
    assert ("default", "hf-token") not in sh.kube.objects


def test_delete_waits_for_a_namespace_the_cache_has_not_seen(sh: Any) -> None:
    deleted_after_sync(sh, deletionPolicy="Delete")
    sh.namespaces.unseen.add("default")
    assert sh.run().requeue_after == sh.timing.namespace_unknown
    assert sh.baseten.called("delete_secret") == []
    assert ("default", "hf-token") in sh.kube.objects  # the finalizer holds
    sh.namespaces.unseen.discard("default")
    sh.run()
    assert sh.baseten.called("delete_secret") == [("hf_token",)]


def test_delete_is_blocked_while_a_model_names_the_secret(sh: Any) -> None:
    deleted_after_sync(sh, deletionPolicy="Delete")
    sh.add_model("llm-b", "hf_token", namespace="team-b")
    sh.add_model("llm-a", "hf_token")
    result = sh.run()
    status = sh.status()
    assert status["state"] == "DELETE_BLOCKED"
    assert status["message"] == (
        "deletion blocked: Baseten secret hf_token is still named by BasetenModel "
        "default/llm-a (trussConfig.secrets), BasetenModel team-b/llm-b (trussConfig.secrets)"
    )
    assert sh.reasons() == ["SecretDeleteBlocked"]
    assert sh.baseten.called("delete_secret") == []
    assert result.requeue_after == sh.timing.delete_blocked
    # The models let go: the next pass (the model watch brings it) deletes.
    sh.models.clear()
    sh.run()
    assert sh.baseten.called("delete_secret") == [("hf_token",)]
    assert ("default", "hf-token") not in sh.kube.objects


def test_a_model_in_another_team_does_not_block(sh: Any) -> None:
    sh.baseten.teams["red"] = "team-red"
    deleted_after_sync(sh, deletionPolicy="Delete", team="red")
    sh.namespaces.annotate("team-b", team="blue")
    sh.add_model("llm-b", "hf_token", namespace="team-b")
    sh.run()
    assert sh.baseten.called("delete_team_secret") == [("team-red", "hf_token")]


def test_a_model_without_a_team_blocks_every_team(sh: Any) -> None:
    sh.baseten.teams["red"] = "team-red"
    deleted_after_sync(sh, deletionPolicy="Delete", team="red")
    sh.add_model("llm", "hf_token")
    sh.run()
    assert sh.status()["state"] == "DELETE_BLOCKED"


def test_a_cr_that_stands_down_never_deletes_the_owners_secret(sh: Any) -> None:
    sh.secrets.put("hf", {"token": "v"})
    sh.create(name="older", created="2026-01-01T00:00:00Z")
    sh.create(name="younger", created="2026-01-02T00:00:00Z", deletionPolicy="Delete")
    sh.run("older")
    sh.run("younger")
    sh.delete("younger")
    sh.run("younger")
    assert sh.baseten.called("delete_secret") == []
    assert ("default", "younger") not in sh.kube.objects


def test_a_failed_delete_keeps_the_finalizer(sh: Any) -> None:
    from baseten_operator.baseten.errors import BasetenAPIError

    deleted_after_sync(sh, deletionPolicy="Delete")
    sh.baseten.fail("delete_secret", BasetenAPIError(500, "boom"))
    with pytest.raises(ReconcileError):
        sh.run()
    assert sh.status()["state"] == "FAILED"
    assert ("default", "hf-token") in sh.kube.objects
    sh.run()
    assert ("default", "hf-token") not in sh.kube.objects


# --- only where it wrote: the team (and name) on record ----------------------------------


def test_the_status_records_where_the_value_went(sh: Any) -> None:
    sh.baseten.teams["red"] = "team-red"
    sh.secrets.put("hf", {"token": "v"})
    sh.create(team="red")
    sh.run()
    assert (sh.status()["writtenName"], sh.status()["writtenTeam"]) == ("hf_token", "red")


def test_a_team_set_after_the_write_deletes_nothing_and_says_so(sh: Any) -> None:
    """Synced with no team; `team: red` added; the Secret unreadable, so no new write in
    red; then the CR is deleted: team-red/hf_token was never this CR's to delete."""
    sh.baseten.teams["red"] = "team-red"
    sh.baseten.upsert_team_secret("team-red", "hf_token", SecretStr("someone-elses"))
    deleted_after_sync(sh, deletionPolicy="Delete")
    assert "writtenTeam" not in sh.status() and sh.status()["writtenName"] == "hf_token"
    sh.edit(lambda obj: obj["spec"].update(team="red"))
    sh.secrets.forbidden.add("default")
    sh.run()
    assert sh.baseten.called("delete_team_secret") == []
    assert sh.baseten.called("delete_secret") == []
    assert sh.events == [
        (
            "Warning",
            "SecretDeleteBlocked",
            "Not deleting Baseten secret hf_token in team red: this BasetenSecret last wrote "
            "its value to Baseten secret hf_token in the organisation",
        )
    ]
    assert ("default", "hf-token") not in sh.kube.objects  # let go, retaining both


def test_a_namespace_team_changed_since_the_write_deletes_nothing(sh: Any) -> None:
    sh.baseten.teams.update(red="team-red", blue="team-blue")
    sh.namespaces.annotate("default", team="red")
    deleted_after_sync(sh, deletionPolicy="Delete")
    sh.namespaces.annotate("default", team="blue")
    sh.secrets.forbidden.add("default")
    sh.run()
    assert sh.baseten.called("delete_team_secret") == []
    assert sh.reasons() == ["SecretDeleteBlocked"]


def test_a_status_from_before_the_record_deletes_what_its_fingerprint_proves(sh: Any) -> None:
    deleted_after_sync(sh, deletionPolicy="Delete")
    sh.edit(lambda obj: obj["status"].pop("writtenName"))
    sh.run()
    assert sh.baseten.called("delete_secret") == [("hf_token",)]


def test_a_status_from_before_the_record_that_nothing_proves_deletes_nothing(sh: Any) -> None:
    deleted_after_sync(sh, deletionPolicy="Delete")
    sh.edit(lambda obj: obj["status"].pop("writtenName"))
    sh.secrets.forbidden.add("default")
    sh.run()
    assert sh.baseten.called("delete_secret") == []
    assert sh.events[-1][1:] == (
        "SecretDeleteBlocked",
        "Not deleting Baseten secret hf_token in the organisation: this BasetenSecret last "
        "wrote its value to a place its status does not record (and its Secret cannot prove)",
    )
