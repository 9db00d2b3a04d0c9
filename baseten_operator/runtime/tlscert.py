"""Server TLS for the runtime's HTTPS endpoints: TLS 1.2 or newer, HTTP/1.1 only.

`CertificateFiles` serves a certificate and key from a directory (a mounted Secret, as
cert-manager writes it) and picks up a rotated pair on the next connection: both files
(a few KB) are read per connection and a changed pair builds a new context; comparing
contents, not timestamps, cannot miss a rewrite within one timestamp tick. A pair that
fails to load (half-written during a rotation) leaves the previous one in use.

`self_signed()` makes a throw-away certificate for when no files are given, when the first
connection comes: Prometheus then scrapes with certificate verification off, as
kubebuilder's default ServiceMonitor does.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading
from pathlib import Path

import structlog

from baseten_operator.runtime.httpserver import TLSContextSource
from baseten_operator.runtime.pemfiles import pem_files

_log = structlog.get_logger(__name__)

SELF_SIGNED_VALIDITY = datetime.timedelta(days=365)


def server_context(cert_file: str | Path, key_file: str | Path) -> ssl.SSLContext:
    """A server context for one certificate/key pair (PEM files)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    # HTTP/2 is not served (controller-runtime turns it off by default too: its stream
    # handling has had denial-of-service bugs); ALPN says so to clients that ask.
    context.set_alpn_protocols(["http/1.1"])
    context.load_cert_chain(str(cert_file), str(key_file))
    return context


class CertificateFiles:
    """The TLS context of `directory/cert_name` + `directory/key_name`, reloaded on change."""

    def __init__(self, directory: str, cert_name: str = "tls.crt", key_name: str = "tls.key"):
        self.cert_file = Path(directory) / cert_name
        self.key_file = Path(directory) / key_name
        self._lock = threading.Lock()
        self._loaded: tuple[bytes, bytes] | None = None
        self._context: ssl.SSLContext | None = None
        self()  # a pair that does not load fails the start, not the first scrape

    def __call__(self) -> ssl.SSLContext:
        with self._lock:
            try:
                pair = (self.cert_file.read_bytes(), self.key_file.read_bytes())
            except OSError as error:
                return self._keep_previous(error)
            if pair == self._loaded and self._context is not None:
                return self._context
            try:
                context = server_context(self.cert_file, self.key_file)
            except (OSError, ssl.SSLError) as error:
                return self._keep_previous(error)
            if self._context is not None:
                _log.info("serving certificate reloaded", cert_file=str(self.cert_file))
            self._context, self._loaded = context, pair
            return context

    def _keep_previous(self, error: Exception) -> ssl.SSLContext:
        if self._context is None:
            raise error
        _log.warning("serving certificate unreadable: keeping the previous one", error=str(error))
        return self._context


class SelfSigned:
    """A fixed context with a fresh self-signed certificate for this host (P-256, one year),
    made when the first connection needs it: the certificate library costs 8 MB of memory
    and 50 ms of start-up, which an operator nobody scrapes never pays."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._context: ssl.SSLContext | None = None

    def __call__(self) -> ssl.SSLContext:
        with self._lock:
            if self._context is None:
                cert_pem, key_pem = self_signed_pem()
                with pem_files(cert_pem, key_pem) as (cert_file, key_file):
                    self._context = server_context(cert_file, key_file)
            return self._context


def self_signed() -> TLSContextSource:
    return SelfSigned()


def self_signed_pem(hostnames: tuple[str, ...] = ()) -> tuple[bytes, bytes]:
    """(certificate, key) PEM for `hostnames` plus this host, localhost and 127.0.0.1."""
    # Imported here, when a certificate is made (see SelfSigned).
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    names = list(dict.fromkeys((*hostnames, socket.gethostname(), "localhost")))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    now = datetime.datetime.now(datetime.UTC)
    alternative_names: list[x509.GeneralName] = [x509.DNSName(name) for name in names]
    alternative_names.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + SELF_SIGNED_VALIDITY)
        .add_extension(x509.SubjectAlternativeName(alternative_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return (
        certificate.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
