from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from baseten_operator.runtime.logging import bound_context, configure_logging, redact


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """Put the process's logging configuration back after a test reconfigures it."""
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    saved_structlog = structlog.get_config()
    yield
    root.handlers, root.level = saved_handlers, saved_level
    structlog.configure(**saved_structlog)


@pytest.fixture
def output(restore_logging: None) -> io.StringIO:
    stream = io.StringIO()
    configure_logging("info", "json", stream=stream)
    return stream


def lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_structlog_lines_are_json_with_the_standard_fields(output: io.StringIO) -> None:
    with bound_context(controller="basetenmodel", reconcile_id="r-1"):
        structlog.get_logger("baseten_operator.controller").info("pass done", model="llama")
    structlog.get_logger("x").debug("below the level")
    [line] = lines(output)
    assert line["event"] == "pass done"
    assert line["level"] == "info"
    assert line["logger"] == "baseten_operator.controller"
    assert line["timestamp"].endswith("Z")
    assert (line["controller"], line["reconcile_id"], line["model"]) == (
        "basetenmodel",
        "r-1",
        "llama",
    )


def test_secrets_are_redacted_by_key_and_by_shape(output: io.StringIO) -> None:
    structlog.get_logger("x").warning(
        "calling Baseten with Bearer sk-abc123",
        api_key="sk-abc123",
        headers={"Authorization": "Api-Key sk-abc123", "Accept": "application/json"},
        client_secret="hunter2",
        bearerToken="t0k3n",
        detail="server said: Api-Key sk-abc123 is invalid",
    )
    [line] = lines(output)
    assert "sk-abc123" not in json.dumps(line)
    assert "hunter2" not in json.dumps(line) and "t0k3n" not in json.dumps(line)
    assert line["api_key"] == "[redacted]"
    assert line["headers"] == {"Authorization": "[redacted]", "Accept": "application/json"}
    assert line["event"] == "calling Baseten with Bearer [redacted]"
    assert line["detail"] == "server said: Api-Key [redacted] is invalid"


def test_stdlib_loggers_go_through_the_same_pipeline(output: io.StringIO) -> None:
    logging.getLogger("truss.remote").error("push failed for %s with Bearer %s", "llama", "xyz")
    logging.getLogger("urllib3.connectionpool").info("chatty library line")
    [line] = lines(output)
    assert line["logger"] == "truss.remote"
    assert line["level"] == "error"
    assert line["event"] == "push failed for llama with Bearer [redacted]"


def test_console_format_is_one_readable_line(restore_logging: None) -> None:
    stream = io.StringIO()
    configure_logging("debug", "console", stream=stream)
    structlog.get_logger("x").info("hello", token="abc")
    [line] = stream.getvalue().splitlines()
    assert "hello" in line and "[redacted]" in line and "abc" not in line


def test_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError):
        configure_logging("loud")


def test_redact_leaves_harmless_values_alone() -> None:
    value = {"model": "llama", "replicas": 3, "items": [{"password": "p"}, "Bearer q"]}
    assert redact(value) == {
        "model": "llama",
        "replicas": 3,
        "items": [{"password": "[redacted]"}, "Bearer [redacted]"],
    }


class _Opaque:
    """A value that only becomes text when rendered (its repr carries the secret)."""

    def __init__(self, secret: str) -> None:
        self.secret = secret

    def __repr__(self) -> str:
        return f"Opaque(secret={self.secret})"


def test_a_registered_secret_is_masked_in_every_form_anywhere_in_a_line(
    output: io.StringIO, unique_name: str
) -> None:
    import base64
    from urllib.parse import quote

    from baseten_operator.runtime.logging import register_secret

    secret = f"key/{unique_name}+=?"
    register_secret(secret)
    encoded = base64.b64encode(secret.encode()).decode()
    urlsafe = base64.urlsafe_b64encode(secret.encode()).decode().rstrip("=")
    log = structlog.get_logger("x")
    log.info(f"echoed {secret} in the event", body=f"Authorization: Basic {encoded}")
    log.info("a url", url=f"https://api.example/v1?key={quote(secret, safe='')}&x=1")
    log.info("nested", detail={"items": [f"token-ish {urlsafe}"]}, opaque=_Opaque(secret))
    logging.getLogger("urllib3.connectionpool").warning("retrying %s", secret)
    text = output.getvalue()
    for form in (secret, encoded, urlsafe, quote(secret, safe="")):
        assert form not in text
    assert text.count("[redacted]") >= 6


def test_every_field_is_cut_to_1024_characters_and_a_traceback_keeps_its_end(
    output: io.StringIO,
) -> None:
    try:
        raise ValueError("the cause " + "x" * 3000)
    except ValueError:
        structlog.get_logger("x").exception(
            "s" * 2000, name="n" * 1_000_000, nested={"k": ["v" * 2000]}, count=3
        )
    [line] = lines(output)
    assert line["event"] == "s" * 1023 + "…"
    assert line["name"] == "n" * 1023 + "…"
    assert line["nested"] == {"k": ["v" * 1023 + "…"]}
    assert line["count"] == 3
    assert len(line["exception"]) == 1024
    assert line["exception"].startswith("…") and line["exception"].endswith("x")
    assert len(output.getvalue()) < 6000
