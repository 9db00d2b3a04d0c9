from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator

import pytest
import structlog

from baseten_operator.runtime.logging import (
    bound_context,
    configure_logging,
    encode_time,
    parse_time_encoding,
    redact,
)


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


def test_json_lines_carry_zaps_keys_in_zaps_order(output: io.StringIO) -> None:
    with bound_context(controller="basetenmodel", reconcileID="r-1"):
        structlog.get_logger("baseten_operator.controller").info("pass done", model="llama")
    structlog.get_logger("x").debug("below the level")
    [line] = lines(output)
    assert list(line)[:4] == ["severity", "ts", "logger", "msg"]
    assert line["msg"] == "pass done"
    assert line["severity"] == "INFO"
    assert line["logger"] == "baseten_operator.controller"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", line["ts"])
    assert (line["controller"], line["reconcileID"], line["model"]) == (
        "basetenmodel",
        "r-1",
        "llama",
    )
    assert not {"event", "level", "timestamp"} & line.keys()


def test_lines_go_to_stdout_by_default(
    restore_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("info", "json")
    structlog.get_logger("x").warning("careful")
    captured = capsys.readouterr()
    assert json.loads(captured.out)["severity"] == "WARN" and captured.err == ""


@pytest.mark.parametrize(
    ("encoding", "expected"),
    [
        ("rfc3339", "2026-12-03T12:00:01Z"),
        ("rfc3339nano", "2026-12-03T12:00:01.250000Z"),
        ("iso8601", "2026-12-03T12:00:01.250Z"),
        ("epoch", 1796299201.25),
        ("millis", 1796299201250.0),
    ],
)
def test_zap_time_encodings(encoding: str, expected: object) -> None:
    assert encode_time(1796299201.25, parse_time_encoding(encoding)) == expected


def test_nano_time_is_whole_nanoseconds() -> None:
    nanos = encode_time(1796299201.25, "nano")
    assert isinstance(nanos, int) and abs(nanos - 1796299201250000000) < 1000


def test_an_exception_keeps_its_stacktrace_from_the_stacktrace_level_up(
    restore_logging: None,
) -> None:
    stream = io.StringIO()
    configure_logging("info", "json", stream=stream, stacktrace_level="error")
    logger = structlog.get_logger("x")
    for level in ("warning", "error"):
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            getattr(logger, level)("failed", exc_info=True)
    warning, error = lines(stream)
    assert "stacktrace" not in warning and "exception" not in warning
    assert "RuntimeError: boom" in error["stacktrace"]


def test_unknown_time_encoding_and_stacktrace_level_are_refused() -> None:
    with pytest.raises(ValueError):
        configure_logging("info", time_encoding="sundial")
    with pytest.raises(ValueError):
        configure_logging("info", stacktrace_level="loud")


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
    assert line["msg"] == "calling Baseten with Bearer [redacted]"
    assert line["detail"] == "server said: Api-Key [redacted] is invalid"


def test_stdlib_loggers_go_through_the_same_pipeline(output: io.StringIO) -> None:
    logging.getLogger("truss.remote").error("push failed for %s with Bearer %s", "llama", "xyz")
    logging.getLogger("urllib3.connectionpool").info("chatty library line")
    [line] = lines(output)
    assert line["logger"] == "truss.remote"
    assert line["severity"] == "ERROR"
    assert line["msg"] == "push failed for llama with Bearer [redacted]"


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
    assert line["msg"] == "s" * 1023 + "…"
    assert line["name"] == "n" * 1023 + "…"
    assert line["nested"] == {"k": ["v" * 1023 + "…"]}
    assert line["count"] == 3
    assert len(line["stacktrace"]) == 1024
    assert line["stacktrace"].startswith("…") and line["stacktrace"].endswith("x")
    assert len(output.getvalue()) < 6000
