"""The value never leaves (docs/contract.md 13.9): not in a log line at any level, an Event,
the status, a metric or an error, whatever the pass did."""

from __future__ import annotations

import json
from typing import Any

import pytest
import structlog
from prometheus_client import generate_latest
from pydantic import SecretStr

from baseten_operator.baseten.errors import BasetenAPIError
from baseten_operator.controller.shared.endings import ReconcileError
from baseten_operator.runtime.metrics import REGISTRY

VALUE = "s3cr3t-Value-0d9f1c"


def outputs(sh: Any, logs: list[dict[str, Any]], errors: list[str]) -> str:
    sh.ages.collect()
    return "\n".join(
        [
            json.dumps(logs, default=repr),
            json.dumps(sh.recorder.events),
            json.dumps([obj for obj in sh.kube.objects.values()]),
            json.dumps(sh.kube.status_writes),
            generate_latest(REGISTRY).decode(),
            "".join(metric.name + repr(metric.samples) for metric in sh.ages.collect()),
            *errors,
            repr(sh.baseten.calls),
        ]
    )


def test_no_output_holds_the_value(sh: Any) -> None:
    errors: list[str] = []
    sh.secrets.put("hf", {"token": VALUE})
    sh.create(deletionPolicy="Delete", reassertInterval="1m")
    with structlog.testing.capture_logs() as logs:
        sh.run()  # written
        sh.secrets.put("hf", {"token": VALUE + "-rotated"})
        sh.run()  # rotated
        # A failed write's text comes from the client, whose transport masks the value in
        # every form (test_baseten_client_secrets.py); here: the status and Event it makes.
        sh.baseten.fail("upsert_secret", BasetenAPIError(500, "internal"))
        sh.secrets.put("hf", {"token": VALUE + "-again"})
        with pytest.raises(ReconcileError) as failed:
            sh.run()
        errors.append(str(failed.value))
        sh.edit(lambda obj: obj["spec"].update(mode="Observe"))
        sh.secrets.put("hf", {"token": VALUE + "-observed"})
        sh.run()
        sh.edit(lambda obj: obj["spec"].update(mode="Reconcile"))
        sh.delete()
        sh.run()
    text = outputs(sh, logs, errors)
    assert sh.baseten.secret_value("hf_token") is None  # it ran to the end
    assert VALUE not in text
    # The operator hands the client a SecretStr, never the bare value.
    upserts = sh.baseten.called("upsert_secret")
    assert upserts and all(isinstance(value, SecretStr) for _name, value in upserts)
