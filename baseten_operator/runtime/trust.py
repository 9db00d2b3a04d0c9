"""The CA certificates trusted where no configuration names its own (a public API, an
https proxy): the bundle the usual variables name, else certifi's."""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping

import certifi

# Checked in this order, as `requests` does, plus OpenSSL's own variable.
CA_BUNDLE_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE")


def ca_bundle(environ: Mapping[str, str]) -> str:
    """The file or directory of trusted CA certificates."""
    for variable in CA_BUNDLE_VARIABLES:
        value = environ.get(variable, "").strip()
        if value:
            return value
    return certifi.where()


def trusted_context(environ: Mapping[str, str]) -> ssl.SSLContext:
    """A verifying TLS context that trusts `ca_bundle`'s certificates."""
    trusted = ca_bundle(environ)
    if os.path.isdir(trusted):
        return ssl.create_default_context(capath=trusted)
    return ssl.create_default_context(cafile=trusted)
