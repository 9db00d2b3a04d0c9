"""Self-signed TLS for loopback servers in tests."""

from __future__ import annotations

import ssl

from baseten_operator.runtime.pemfiles import pem_files
from baseten_operator.runtime.tlscert import self_signed_pem


def serving_context(*names: str) -> tuple[ssl.SSLContext, bytes]:
    """A server's TLS context with a certificate for `names`, and that certificate (PEM)
    for its clients to trust."""
    cert, key = self_signed_pem(names)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with pem_files(cert, key) as (cert_file, key_file):
        context.load_cert_chain(cert_file, key_file)
    return context, cert
