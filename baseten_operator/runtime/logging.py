"""Structured logging: structlog for our code, the stdlib's loggers routed through it.

One line per record on stdout. JSON by default, in the keys zap writes for Go operators
(`severity` upper-case, `ts`, `logger`, `msg`, then whatever context is bound, and
`stacktrace` for a logged exception), so log pipelines and queries written for them read
these lines too; a console renderer for humans. Every record, ours or a library's,
passes a redaction step last, so an API key or token can never reach the output: values
under credential-looking keys, `Bearer ...`/`Api-Key ...` in text, and anywhere in a line
the values registered with `register_secret` (literally, base64- or URL-encoded, the
forms a credential takes in a header, a URL or an echoed request).
"""

from __future__ import annotations

import base64
import json
import logging
import re
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Literal, TextIO
from urllib.parse import quote, quote_plus

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

from baseten_operator.runtime.text import cut, cut_tail

REDACTED = "[redacted]"
SENSITIVE_KEY_PARTS = ("api_key", "apikey", "authorization", "token", "password", "secret")
# "Bearer abc", "Api-Key abc", "Authorization: Api-Key abc" in free text.
_CREDENTIAL_IN_TEXT = re.compile(r"\b(Bearer|Api-Key)(\s+)[^\s'\",}]+", re.IGNORECASE)

# Shorter values would mask ordinary text; no real credential is this short.
MIN_SECRET_LENGTH = 4

# How `ts` is written (zap's time encoders); rfc3339nano by default: RFC 3339 that keeps
# sub-second order.
TimeEncoding = Literal["rfc3339", "rfc3339nano", "iso8601", "epoch", "millis", "nano"]
TIME_ENCODINGS: tuple[TimeEncoding, ...] = (
    "rfc3339",
    "rfc3339nano",
    "iso8601",
    "epoch",
    "millis",
    "nano",
)
# A logged exception's traceback is kept from this level up (zap's stacktrace level).
STACKTRACE_LEVELS = ("info", "error", "panic")
_LEVEL_ORDER = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50, "panic": 50}
# zap's capital level names where Python's differ.
_SEVERITY = {"warning": "WARN", "critical": "DPANIC"}

# Libraries that are chatty at INFO/DEBUG: keep them at WARNING unless debugging.
_NOISY_LOGGERS = ("urllib3", "kubernetes", "requests")


def _is_sensitive_key(key: object) -> bool:
    lowered = str(key).lower().replace("-", "_")
    return any(part in lowered for part in SENSITIVE_KEY_PARTS)


def secret_forms(secret: str) -> list[str]:
    """`secret` as it may appear in text: literal, base64 (standard, URL-safe, with or
    without padding), URL-quoted, and escaped inside a JSON or Python string (a server
    echoing a request body, a repr); longest first, so that no form is half-masked."""
    if len(secret) < MIN_SECRET_LENGTH:
        return []
    return sorted(_secret_forms(secret), key=len, reverse=True)


def _secret_forms(secret: str) -> set[str]:
    raw = secret.encode()
    encoded = {base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()}
    encoded |= {form.rstrip("=") for form in encoded}
    escaped = {
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret)[1:-1],
    }
    return {secret, quote(secret, safe=""), quote_plus(secret), *encoded, *escaped}


def appears_in(text: str, secret: str) -> bool:
    """Whether any form of `secret` (as secret_forms lists them, whatever its length) is
    in `text`."""
    return bool(secret) and any(form in text for form in _secret_forms(secret))


def mask_secret(text: str, secret: str, replacement: str = REDACTED) -> str:
    """`text` with every form of `secret` replaced."""
    for form in secret_forms(secret):
        text = text.replace(form, replacement)
    return text


class _RegisteredSecrets:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._secrets: set[str] = set()
        self.pattern: re.Pattern[str] | None = None

    def add(self, secret: str) -> None:
        forms = secret_forms(secret)
        if not forms:
            return
        with self._lock:
            self._secrets.add(secret)
            every = sorted(
                {form for known in self._secrets for form in secret_forms(known)},
                key=len,
                reverse=True,
            )
            self.pattern = re.compile("|".join(re.escape(form) for form in every))


_REGISTERED = _RegisteredSecrets()


def register_secret(secret: str) -> None:
    """Mask `secret` (in every form of `secret_forms`) wherever it appears in a record."""
    _REGISTERED.add(secret.strip())


def redact(value: Any) -> Any:
    """A copy of `value` with credential-looking keys and text, and registered secrets, masked."""
    if isinstance(value, str):
        pattern = _REGISTERED.pattern
        if pattern is not None:
            value = pattern.sub(REDACTED, value)
        return _CREDENTIAL_IN_TEXT.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", value)
    if isinstance(value, Mapping):
        return {
            key: REDACTED if _is_sensitive_key(key) else redact(item) for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return type(value)(redact(item) for item in value)
    return value


def redact_secrets(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """structlog processor: mask secrets in every field (the `event` text included)."""
    redacted: EventDict = redact(event_dict)
    return redacted


def _masking_registered_secrets(renderer: Processor) -> Processor:
    """`renderer`, with registered secrets masked in the line it renders: a value that was
    not a string before rendering (an object whose repr holds the key) is caught here."""

    def render(logger: WrappedLogger, method: str, event_dict: EventDict) -> Any:
        line = renderer(logger, method, event_dict)
        pattern = _REGISTERED.pattern
        if pattern is None or not isinstance(line, str):
            return line
        return pattern.sub(REDACTED, line)

    return render


def _cut(value: Any) -> Any:
    if isinstance(value, str):
        return cut(value)
    if isinstance(value, Mapping):
        return {key: _cut(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_cut(item) for item in value)
    return value


def cut_fields(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """structlog processor: no field longer than 1,024 characters (a traceback keeps its end,
    where the failure is)."""
    return {
        key: cut_tail(value) if key == "exception" and isinstance(value, str) else _cut(value)
        for key, value in event_dict.items()
    }


def _stamp_time(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    event_dict["timestamp"] = time.time()  # rendered per the output's encoding
    return event_dict


def _shared_processors() -> list[Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        _merge_bound,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.PositionalArgumentsFormatter(),
        _stamp_time,
    ]


def encode_time(timestamp: float, encoding: TimeEncoding) -> str | float | int:
    """`timestamp` (Unix seconds) as zap's encoder of that name writes it, in UTC."""
    if encoding == "epoch":
        return timestamp
    if encoding == "millis":
        return timestamp * 1000
    if encoding == "nano":
        return int(timestamp * 1_000_000_000)
    moment = datetime.fromtimestamp(timestamp, UTC)
    if encoding == "rfc3339":
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    if encoding == "iso8601":
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time_encoding(name: str) -> TimeEncoding:
    """`name` as a time encoding; ValueError for an unknown one."""
    for encoding in TIME_ENCODINGS:
        if encoding == name:
            return encoding
    raise ValueError(f"unknown time encoding {name!r}")


def _go_fields(encoding: TimeEncoding, stacktrace_level: str) -> Processor:
    """The record in zap's JSON keys and order: severity, ts, logger, msg, then the rest."""
    threshold = _LEVEL_ORDER[stacktrace_level]

    def rename(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
        level = str(event_dict.pop("level", "info"))
        ordered: EventDict = {
            "severity": _SEVERITY.get(level, level.upper()),
            "ts": encode_time(float(event_dict.pop("timestamp", time.time())), encoding),
            "logger": event_dict.pop("logger", ""),
            "msg": event_dict.pop("event", ""),
        }
        stacktrace = event_dict.pop("exception", None)
        ordered.update(event_dict)
        if stacktrace is not None and _LEVEL_ORDER.get(level, 0) >= threshold:
            ordered["stacktrace"] = stacktrace
        return ordered

    return rename


def _iso_time(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """The console's timestamp, readable."""
    event_dict["timestamp"] = encode_time(float(event_dict["timestamp"]), "rfc3339nano")
    return event_dict


def configure_logging(
    level: str = "info",
    fmt: Literal["json", "console"] = "json",
    *,
    stream: TextIO | None = None,
    time_encoding: str = "rfc3339nano",
    stacktrace_level: str = "error",
) -> None:
    """Configure structlog and the stdlib root logger; safe to call more than once.

    Lines go to `stream` (default stdout, where Go operators log).
    """
    numeric_level = logging.getLevelName(level.upper())
    if not isinstance(numeric_level, int):
        raise ValueError(f"unknown log level {level!r}")
    if stacktrace_level not in STACKTRACE_LEVELS:
        raise ValueError(f"unknown stacktrace level {stacktrace_level!r}")
    layout: list[Processor] = (
        [
            _go_fields(parse_time_encoding(time_encoding), stacktrace_level),
            structlog.processors.JSONRenderer(),
        ]
        if fmt == "json"
        else [_iso_time, structlog.dev.ConsoleRenderer(colors=False)]
    )
    *shaping, renderer = layout
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *_shared_processors(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        # Not cached: a reconfiguration (tests, CLI) must reach loggers already used.
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_shared_processors(),
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            redact_secrets,
            # After redaction, so a cut can never leave part of a secret behind.
            cut_fields,
            *shaping,
            _masking_registered_secrets(renderer),
        ],
    )
    handler = logging.StreamHandler(stream or sys.stdout)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(numeric_level)
    library_level = numeric_level if numeric_level <= logging.DEBUG else logging.WARNING
    for name in _NOISY_LOGGERS:
        logging.getLogger(name).setLevel(max(numeric_level, library_level))


# What `bound_context` blocks bind, in one context variable: structlog's own binding costs
# a context variable and a token per key, on every pass, though most passes log nothing.
_BOUND: ContextVar[dict[str, Any] | None] = ContextVar("bound_log_keys", default=None)


@contextmanager
def bound_context(**values: Any) -> Iterator[None]:
    """Bind `values` to every log line of this thread (and context) for the block.

    A callable value is called once, when a line first needs it: an ID no line logs is
    never made.
    """
    token = _BOUND.set({**(_BOUND.get() or {}), **values})
    try:
        yield
    finally:
        _BOUND.reset(token)


def bound_keys() -> dict[str, Any]:
    """What the enclosing `bound_context` blocks bind, callables resolved."""
    keys = _BOUND.get()
    if not keys:
        return {}
    for key, value in keys.items():
        if callable(value):
            keys[key] = value()  # replaces a key's value: the dict keeps its size
    return dict(keys)


def _merge_bound(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    for key, value in bound_keys().items():
        event_dict.setdefault(key, value)
    return event_dict
