"""The secure-metrics flags of `baseten-operator run`, spelled as controller-runtime's."""

from __future__ import annotations

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
