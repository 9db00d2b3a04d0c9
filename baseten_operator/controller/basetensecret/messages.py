"""Every status message and Event text of a BasetenSecret (docs/contract.md section 13).

None takes a value: what a message can name is the Baseten secret's name, the Secret and
its key, sizes, and the errors of calls whose requests never carry the value in a form
an error repeats.
"""

from __future__ import annotations

from collections.abc import Sequence

from baseten_operator.api.constants import SECRET_READER_CLUSTER_ROLE


def where(namespace: str, secret: str, key: str) -> str:
    return f"Secret {namespace}/{secret} key '{key}'"


def secret_missing(namespace: str, secret: str, key: str) -> str:
    return f"waiting for Secret {namespace}/{secret} (not found; it holds key '{key}')"


def key_missing(namespace: str, secret: str, key: str) -> str:
    return f"waiting for {where(namespace, secret, key)} (the Secret has no such key)"


def value_empty(namespace: str, secret: str, key: str) -> str:
    return f"{where(namespace, secret, key)} is empty: Baseten secrets need a value"


def value_not_text(namespace: str, secret: str, key: str) -> str:
    return f"{where(namespace, secret, key)} is not UTF-8 text: Baseten secrets are strings"


def value_too_large(namespace: str, secret: str, key: str, size: int, limit: int) -> str:
    return f"{where(namespace, secret, key)} holds {size} bytes, more than the {limit} allowed"


def forbidden(namespace: str, secret: str, subject_kind: str, subject: str) -> str:
    """What to grant: the operator reads Secrets only in namespaces that bind it the role."""
    return (
        f"cannot read Secret {namespace}/{secret}: create a RoleBinding in namespace "
        f"{namespace} granting ClusterRole {SECRET_READER_CLUSTER_ROLE} to {subject_kind} "
        f"{subject}"
    )


def synced(name: str, namespace: str, secret: str, key: str) -> str:
    return f"Baseten secret {name} holds the value of {where(namespace, secret, key)}"


def synced_event(name: str, namespace: str, secret: str, key: str, why: str) -> str:
    return f"wrote Baseten secret {name} from {where(namespace, secret, key)} ({why})"


# Why a value is written (the reason in SecretSynced and in Observe's report).
WHY_MISSING = "missing from Baseten"
WHY_CHANGED = "value changed"
WHY_NEVER_WRITTEN = "never written by this BasetenSecret"
WHY_REASSERT = "reassertInterval elapsed"


def would_write(name: str, why: str) -> str:
    return f"observe: would write Baseten secret {name} ({why})"


def observed_in_sync(name: str) -> str:
    return f"observe: Baseten secret {name} exists and holds the value last written"


def observed_unverifiable(name: str) -> str:
    return (
        f"observe: Baseten secret {name} exists; whether it holds this Secret's value is "
        "unknown (Baseten never returns values)"
    )


def sync_failed(name: str, error: object) -> str:
    return f"writing Baseten secret {name} failed: {error}"


def list_failed(error: object) -> str:
    return f"listing Baseten secrets failed: {error}"


def conflict(name: str, team: str | None, owner: str) -> str:
    return f"Baseten secret {name}{_in_team(team)} is managed by BasetenSecret {owner}"


def paused() -> str:
    return "reconciliation paused: the Secret is not read and Baseten is not called"


def delete_blocked(name: str, users: Sequence[str]) -> str:
    return f"deletion blocked: Baseten secret {name} is still named by {', '.join(users)}"


def deleted_event(name: str) -> str:
    return f"deleted Baseten secret {name}"


def delete_failed(name: str, error: object) -> str:
    return f"deleting Baseten secret {name} failed: {error}"


def model_user(namespace: str, name: str) -> str:
    return f"BasetenModel {namespace}/{name} (trussConfig.secrets)"


def secret_user(namespace: str, name: str) -> str:
    return f"BasetenSecret {namespace}/{name}"


# Where a status from before `writtenName` says the value went: nowhere it can prove.
WRITTEN_UNKNOWN = "a place its status does not record (and its Secret cannot prove)"


def team_text(team: str | None) -> str:
    return f"team {team}" if team else "the organisation"


def where_written(name: str, team: str | None) -> str:
    return f"Baseten secret {name} in {team_text(team)}"


def delete_elsewhere_event(name: str, written: str, team: str) -> str:
    return (
        f"Not deleting Baseten secret {name} in {team}: this BasetenSecret last wrote its "
        f"value to {written}"
    )


def _in_team(team: str | None) -> str:
    return f" (team {team})" if team else ""
