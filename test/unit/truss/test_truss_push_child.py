"""The push child's protocol and error reporting (without reaching truss)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest
from pydantic import BaseModel, ValidationError

from baseten_operator.truss.push_child import (
    API_KEY_ENV,
    describe_exception,
    hold_leash,
    short_error,
)


def run_child(stdin: str, api_key: str = "sk-secret") -> tuple[int, dict[str, object], str]:
    done = subprocess.run(
        [sys.executable, "-m", "baseten_operator.truss.push_child"],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, API_KEY_ENV: api_key},
        check=False,
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout  # only the result reaches stdout
    return done.returncode, json.loads(lines[0]), done.stderr


def test_short_error_keeps_the_last_line_redacted_and_bounded() -> None:
    assert short_error("Traceback:\n  frame\nValueError: bad sk-1 \n\n", "sk-1") == (
        "ValueError: bad <redacted>"
    )
    assert short_error("", "k") == ""
    assert len(short_error("x" * 2000, "k")) == 500


def test_validation_errors_are_summarised_on_one_line() -> None:
    class Server(BaseModel):
        readiness_endpoint: str
        server_port: int

    with pytest.raises(ValidationError) as caught:
        Server.model_validate({"server_port": "no"})
    assert describe_exception(caught.value, "k") == (
        "invalid Server: readiness_endpoint: Field required; "
        "server_port: Input should be a valid integer, unable to parse string as an integer"
    )


def test_exception_without_text_is_named_by_its_type() -> None:
    assert describe_exception(KeyError(), "k") == "KeyError"


def test_child_answers_a_malformed_request_with_a_failure() -> None:
    code, result, _ = run_child("{not json")
    assert code == 1
    assert result["succeeded"] is False
    assert "Invalid JSON" in str(result["error"])


@pytest.mark.parametrize(
    ("model_name", "deployment_name", "error"),
    [
        ('bad"name', "depl-x", "modelName 'bad\"name' contains '\"'"),
        ("ok", "depl/x", "deployment name 'depl/x' is not valid for truss"),
    ],
)
def test_child_refuses_unsafe_names_before_pushing(
    model_name: str, deployment_name: str, error: str
) -> None:
    request = {
        "remote_url": "http://127.0.0.1:1",
        "model_name": model_name,
        "deployment_name": deployment_name,
        "truss_config": {"resources": {"accelerator": "L4"}, "baseImage": {"image": "i"}},
        "setup_script": "",
        "workdir": "/nonexistent",  # refused before anything is written
    }
    code, result, _ = run_child(json.dumps(request))
    assert code == 1
    assert str(result["error"]).startswith(error)


def _leash() -> tuple[int, int]:
    read_end, write_end = os.pipe()
    return read_end, write_end


def test_a_leash_that_goes_silent_lets_the_push_go() -> None:
    read_end, write_end = _leash()
    loose = threading.Event()
    holder = threading.Thread(target=hold_leash, args=(read_end, 0.2, loose.set), daemon=True)
    holder.start()
    try:
        for _ in range(3):  # heartbeats keep it held
            os.write(write_end, b".")
            assert not loose.wait(0.05)
        assert loose.wait(5.0)  # then silence
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_leash_whose_every_writer_is_gone_lets_the_push_go_at_once() -> None:
    read_end, write_end = _leash()
    loose = threading.Event()
    # A slack no test would wait out: only the closed pipe can end the hold.
    holder = threading.Thread(target=hold_leash, args=(read_end, 3600.0, loose.set), daemon=True)
    holder.start()
    os.close(write_end)  # the operator process died
    try:
        assert loose.wait(5.0)
    finally:
        os.close(read_end)
