"""The Baseten secrets a push needs (docs/contract.md section 5).

A truss config's `secrets` names secrets "whose values are stored in Baseten". Pushed while
one is missing, the deployment can only fail when it loads: so the push waits until every
one exists, whoever creates them (a BasetenSecret, a person in the UI or the CLI). One
list of the secrets, the namespace's team's for a team-bound namespace, per push decision:
a model that pushes nothing never asks.
"""

from __future__ import annotations

from collections.abc import Iterable

from baseten_operator.controller.shared.ports import BasetenAPI


def missing_secrets(baseten: BasetenAPI, wanted: Iterable[str]) -> list[str]:
    """The names of `wanted` that Baseten's list lacks, sorted; no call when none is wanted.

    Raises BasetenAPIError (or RateLimited) when the list cannot be read: what is missing
    is then unknown.
    """
    names = set(wanted)
    if not names:
        return []
    present = {secret.name for secret in baseten.list_secrets()}
    return sorted(names - present)
