"""Command-line flag types, and the flags `run` and `sandbox` share.

A shared flag is defined once here (name, type, choices, help); each command adds it with
its own default (`Flag.add`): `run` defaults to a pod's values (`config.OperatorOptions`),
the sandbox to loopback addresses and a fast clock.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from baseten_operator.api.base import DURATION_PATTERN, duration_seconds

LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("json", "console")
# zap's level names (controller-runtime's --zap-log-level) as this operator's.
_ZAP_LEVELS = {
    "debug": "debug",
    "info": "info",
    "warn": "warning",
    "warning": "warning",
    "error": "error",
    "dpanic": "error",
    "panic": "error",
    "fatal": "error",
}


def positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def duration(text: str) -> float:
    """A positive duration in seconds: Kubernetes' form (`15s`, `1m30s`, as kube-controller-
    manager's leader election flags take it) or a bare number of seconds."""
    try:
        seconds = float(text)
    except ValueError:
        if not re.fullmatch(DURATION_PATTERN, text):
            raise argparse.ArgumentTypeError(
                f"must be a duration such as 15s or 1m30s, got {text!r}"
            ) from None
        seconds = duration_seconds(text)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return seconds


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def namespace_or_all(text: str) -> str | None:
    """A namespace flag: empty means every namespace, as the flag's absence does."""
    return text or None


def flag_bool(text: str) -> bool:
    """Go flag syntax for booleans: `--flag`, `--flag=true`, `--flag=false`."""
    lowered = text.strip().lower()
    if lowered in ("true", "1", "t", "yes"):
        return True
    if lowered in ("false", "0", "f", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text}")


def zap_level(text: str) -> str:
    """A zap level, or a verbosity (an integer > 0, zap's debug levels), as a log level."""
    lowered = text.strip().lower()
    if lowered in _ZAP_LEVELS:
        return _ZAP_LEVELS[lowered]
    if lowered.isdigit() and int(lowered) > 0:
        return "debug"
    raise argparse.ArgumentTypeError(
        f"expected {', '.join(_ZAP_LEVELS)} or an integer > 0, got {text}"
    )


def add_bool_flag(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    name: str,
    default: bool,
    help: str,
    dest: str | None = None,
) -> None:
    parser.add_argument(
        name,
        type=flag_bool,
        nargs="?",
        const=True,
        default=default,
        metavar="BOOL",
        help=help,
        dest=dest or name.removeprefix("--").replace("-", "_"),
    )


@dataclass(frozen=True)
class Flag:
    """A flag more than one command takes: everything but its default."""

    name: str
    help: str | None = None
    type: Callable[[str], Any] = str
    choices: tuple[str, ...] | None = None

    def add(self, parser: argparse.ArgumentParser, default: Any) -> None:
        parser.add_argument(
            self.name, type=self.type, choices=self.choices, default=default, help=self.help
        )


METRICS_BIND_ADDRESS = Flag(
    "--metrics-bind-address", "address of the Prometheus /metrics endpoint ('0' disables it)"
)
HEALTH_PROBE_BIND_ADDRESS = Flag(
    "--health-probe-bind-address", "address of /healthz and /readyz ('0' disables them)"
)
LOG_LEVEL = Flag("--log-level", choices=LOG_LEVELS)
TIME_SCALE = Flag(
    "--time-scale",
    "multiply every delay the operator waits (tests, sandbox)",
    type=positive_float,
)
