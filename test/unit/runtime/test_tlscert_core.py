"""Serving certificates: TLS 1.2+, a rotated pair picked up by the next connection."""

from __future__ import annotations

import os
import socket
import ssl
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509

from baseten_operator.runtime import tlscert
from baseten_operator.runtime.httpserver import Response, RoutedHTTPServer
from baseten_operator.runtime.tlscert import (
    CertificateFiles,
    self_signed,
    self_signed_pem,
    server_context,
)


def _write_pair(directory: Path, hostname: str) -> None:
    cert, key = self_signed_pem((hostname,))
    (directory / "serving.crt").write_bytes(cert)
    (directory / "serving.key").write_bytes(key)


@pytest.fixture
def cert_dir(tmp_path: Path) -> Path:
    _write_pair(tmp_path, "first.example")
    return tmp_path


@pytest.fixture
def server(cert_dir: Path) -> Iterator[RoutedHTTPServer]:
    server = RoutedHTTPServer(
        "127.0.0.1:0",
        {"/metrics": lambda path, query: Response(200, b"ok")},
        name="tls",
        tls=CertificateFiles(str(cert_dir), "serving.crt", "serving.key"),
    )
    server.start()
    yield server
    server.stop()


def _served_name(server: RoutedHTTPServer) -> str:
    assert server.bound_address is not None
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.check_hostname, client.verify_mode = False, ssl.CERT_NONE
    with (
        socket.create_connection(server.bound_address, timeout=5) as raw,
        client.wrap_socket(raw) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    subject = x509.load_der_x509_certificate(der).subject
    return str(subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value)


def test_a_rotated_certificate_is_served_from_the_next_connection(
    server: RoutedHTTPServer, cert_dir: Path
) -> None:
    assert server.scheme == "https"
    assert _served_name(server) == "first.example"
    _write_pair(cert_dir, "second.example")
    assert _served_name(server) == "second.example"
    # A half-written rotation does not take the endpoint down: the last good pair stays.
    (cert_dir / "serving.key").write_text("not a key")
    assert _served_name(server) == "second.example"


def test_a_missing_certificate_fails_the_start(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        CertificateFiles(str(tmp_path))  # built as the metrics server starts


def test_server_contexts_refuse_anything_older_than_tls_1_2(cert_dir: Path) -> None:
    context = server_context(cert_dir / "serving.crt", cert_dir / "serving.key")
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2


def test_the_self_signed_certificate_is_served_without_writing_a_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pod's root filesystem is read-only: the generated key must need no writable disk."""

    def no_disk(*args: object, **kwargs: object) -> None:
        raise AssertionError("the self-signed pair was written to a temporary directory")

    monkeypatch.setattr(tempfile, "TemporaryDirectory", no_disk)
    descriptors_before = len(os.listdir("/proc/self/fd"))
    server = RoutedHTTPServer(
        "127.0.0.1:0",
        {"/metrics": lambda path, query: Response(200, b"ok")},
        name="tls",
        tls=self_signed(),
    )
    server.start()
    try:
        assert _served_name(server) == socket.gethostname()
    finally:
        server.stop()
    assert len(os.listdir("/proc/self/fd")) <= descriptors_before  # the memory files are closed


def test_the_self_signed_certificate_is_made_once_at_the_first_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[tuple[bytes, bytes]] = []

    def counting(hostnames: tuple[str, ...] = ()) -> tuple[bytes, bytes]:
        made.append(self_signed_pem(hostnames))
        return made[-1]

    monkeypatch.setattr(tlscert, "self_signed_pem", counting)
    source = self_signed()
    assert made == []  # nothing at start: a server nobody connects to never makes one
    first = source()
    assert source() is first
    assert len(made) == 1
