"""The flags of `baseten-operator run` (the secure-metrics ones spelled as
controller-runtime's) and of the sandbox: their defaults, and one definition of each."""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import asdict, fields

import pytest

from baseten_operator.cli import build_parser, options_from_args
from baseten_operator.config import OperatorOptions
from baseten_operator.main import manager_options


def _options(*flags: str) -> OperatorOptions:
    return options_from_args(build_parser().parse_args(["run", *flags]))


def test_metrics_are_secure_by_default_on_8443() -> None:
    options = _options()
    assert options.metrics_secure is True
    assert options.metrics_bind_address == ":8443"
    assert (options.metrics_cert_path, options.metrics_cert_name, options.metrics_cert_key) == (
        "",
        "tls.crt",
        "tls.key",
    )
    assert options.enable_http2 is False
    assert manager_options(options).metrics_secure is True


@pytest.mark.parametrize(
    ("flags", "secure"),
    [
        (["--metrics-secure=false"], False),
        (["--metrics-secure", "false"], False),
        (["--metrics-secure=true"], True),
        (["--metrics-secure"], True),
    ],
)
def test_metrics_secure_takes_go_style_booleans(flags: list[str], secure: bool) -> None:
    assert _options(*flags).metrics_secure is secure


def test_certificate_flags_reach_the_manager() -> None:
    options = _options(
        "--metrics-cert-path=/certs",
        "--metrics-cert-name=cert.pem",
        "--metrics-cert-key=key.pem",
        "--enable-http2",
    )
    managed = manager_options(options)
    assert (managed.metrics_cert_path, managed.metrics_cert_name, managed.metrics_cert_key) == (
        "/certs",
        "cert.pem",
        "key.pem",
    )
    assert options.enable_http2 is True


def test_a_non_boolean_is_a_usage_error() -> None:
    with pytest.raises(SystemExit):
        _options("--metrics-secure=maybe")


# What `run` and the sandbox default to: pinned, so that moving a default cannot change it.
RUN_DEFAULTS = {
    "metrics_bind_address": ":8443",
    "metrics_secure": True,
    "metrics_cert_path": "",
    "metrics_cert_name": "tls.crt",
    "metrics_cert_key": "tls.key",
    "enable_http2": False,
    "health_probe_bind_address": ":8081",
    "leader_elect": False,
    "leader_election_id": "020848ba.baseten.com",
    "leader_election_namespace": "",
    "namespace": None,
    "max_concurrent_reconciles": 5,
    "max_concurrent_pushes": 4,
    "log_level": "info",
    "log_format": "json",
    "log_development": False,
    "log_stacktrace_level": "error",
    "log_time_encoding": "rfc3339nano",
    "ignored_flags": (),
    "time_scale": 1.0,
    "kubeconfig": None,
    "shutdown_timeout": 30.0,
    "baseten_timeout": 30.0,
    "require_namespace_policy": False,
    # The Lease timings have no flag: client-go's defaults, from the manager's options.
    "lease_duration": 15.0,
    "renew_deadline": 10.0,
    "retry_period": 2.0,
}
SANDBOX_DEFAULTS = {
    "time_scale": 0.02,
    "work_dir": ".sandbox",
    "kube_port": 0,
    "baseten_port": 0,
    "metrics_bind_address": "127.0.0.1:0",
    "health_probe_bind_address": "127.0.0.1:0",
    "log_level": "info",
    "scenario": None,
    "step_timeout": None,
}
SHARED_FLAGS = (
    "--time-scale",
    "--metrics-bind-address",
    "--health-probe-bind-address",
    "--log-level",
)


def subcommand(name: str) -> argparse.ArgumentParser:
    commands = build_parser()._subparsers._group_actions[0]  # type: ignore[union-attr]
    parser: argparse.ArgumentParser = commands.choices[name]  # type: ignore[attr-defined]
    return parser


def test_run_defaults_are_the_operators() -> None:
    assert asdict(_options()) == RUN_DEFAULTS


def test_the_manager_gets_the_run_options_with_the_lease_in_the_pods_namespace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("POD_NAMESPACE", "ops")
    assert manager_options(_options()).leader_election_namespace == "ops"
    assert manager_options(_options("--leader-election-namespace=leases")) == _options(
        "--leader-election-namespace=leases"
    )


def test_every_run_flag_sets_an_option_and_none_is_dropped() -> None:
    dests = {action.dest for action in subcommand("run")._actions if action.dest != "help"}
    assert dests <= {field.name for field in fields(OperatorOptions)}
    options = _options("--watch-namespace=models", "--log-level=debug", "--time-scale=0.5")
    assert (options.namespace, options.log_level, options.time_scale) == ("models", "debug", 0.5)
    assert _options("--watch-namespace=").namespace is None  # empty: every namespace


def test_sandbox_defaults_are_its_own() -> None:
    parsed = vars(build_parser().parse_args(["sandbox"]))
    assert {key: parsed[key] for key in SANDBOX_DEFAULTS} == SANDBOX_DEFAULTS


@pytest.mark.parametrize(
    ("flags", "level", "log_format"),
    [
        (["--zap-log-level=debug"], "debug", "json"),
        (["--zap-log-level=warn"], "warning", "json"),
        (["--zap-log-level=panic"], "error", "json"),
        (["--zap-log-level=3"], "debug", "json"),
        (["--zap-encoder=console"], "info", "console"),
        (["--zap-devel"], "debug", "console"),
        (["--zap-devel=false"], "info", "json"),
        # Development mode's defaults never override a level or encoder given explicitly,
        # whichever comes first.
        (["--zap-log-level=error", "--zap-devel"], "error", "console"),
        (["--zap-devel", "--zap-encoder=json"], "debug", "json"),
        (["--zap-devel", "--log-level=warning"], "warning", "console"),
        (["--log-format=console", "--zap-encoder=json"], "info", "json"),
    ],
)
def test_the_go_operators_zap_flags_set_the_logging_options(
    flags: list[str], level: str, log_format: str
) -> None:
    options = _options(*flags)
    assert (options.log_level, options.log_format) == (level, log_format)


def test_zap_stacktrace_and_time_flags_and_refused_values() -> None:
    options = _options("--zap-stacktrace-level=info", "--zap-time-encoding=epoch")
    assert (options.log_stacktrace_level, options.log_time_encoding) == ("info", "epoch")
    for bad in ("--zap-log-level=loud", "--zap-time-encoding=sundial", "--zap-encoder=xml"):
        with pytest.raises(SystemExit):
            _options(bad)


def test_webhook_flags_are_accepted_and_remembered_as_ignored() -> None:
    options = _options(
        "--webhook-cert-path=/tmp/k8s-webhook-server/serving-certs",
        "--webhook-cert-name=tls.crt",
        "--webhook-cert-key",
        "tls.key",
    )
    assert options.ignored_flags == (
        "--webhook-cert-path",
        "--webhook-cert-name",
        "--webhook-cert-key",
    )


@pytest.mark.parametrize("flag", SHARED_FLAGS)
def test_a_flag_of_run_and_the_sandbox_is_defined_once(flag: str) -> None:
    def definition(command: str) -> tuple[object, ...]:
        (action,) = [a for a in subcommand(command)._actions if flag in a.option_strings]
        return action.dest, action.type, action.choices, action.help, action.nargs

    assert definition("run") == definition("sandbox")


def test_the_command_line_of_run_imports_no_simulator() -> None:
    """`run` builds every command's flags; the sandbox's must not bring the simulators (and
    their CEL interpreter) into every operator process."""
    probe = (
        "import sys, baseten_operator.cli as cli; cli.build_parser(); "
        "print(sorted(m for m in sys.modules if m.startswith(('baseten_operator.sim', 'celpy'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


def test_leader_election_timings_take_durations_and_reach_the_manager() -> None:
    options = _options(
        "--leader-elect-lease-duration=1m30s",
        "--leader-elect-renew-deadline",
        "20s",
        "--leader-elect-retry-period=2.5",
    )
    manager = manager_options(options)
    assert (manager.lease_duration, manager.renew_deadline, manager.retry_period) == (
        90.0,
        20.0,
        2.5,
    )
    defaults = _options()
    assert (defaults.lease_duration, defaults.renew_deadline, defaults.retry_period) == (
        15.0,
        10.0,
        2.0,
    )


@pytest.mark.parametrize("value", ["0s", "-3", "fast", "15x"])
def test_a_bad_leader_election_duration_is_a_usage_error(value: str) -> None:
    with pytest.raises(SystemExit):
        _options(f"--leader-elect-lease-duration={value}")


def test_timings_out_of_order_refuse_to_start(capsys: pytest.CaptureFixture[str]) -> None:
    from baseten_operator.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["run", "--leader-elect-lease-duration=5s", "--leader-elect-renew-deadline=5s"])
    assert exited.value.code == 2
    assert "lease-duration > --leader-elect-renew-deadline" in capsys.readouterr().err
