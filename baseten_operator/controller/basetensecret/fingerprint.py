"""The fingerprint of a secret value in a BasetenSecret's status (docs/contract.md 13.3).

An HMAC-SHA256, keyed by the operator's own Baseten API key, of the Baseten secret's team,
name and value. Anyone who can read the BasetenSecret sees the fingerprint; a plain hash
of the value would let them test guesses of it (a short token, a password from a list)
offline. Keyed by the API key, which only the operator and whoever already controls the
Baseten account hold, the fingerprint tells such a reader nothing; and the key is the one
secret every replica of the operator has, so a new leader or a restart recognises what
the last one wrote. Rotating the API key changes every fingerprint: each secret is then
written once more, which is harmless.
"""

from __future__ import annotations

import hashlib
import hmac

from pydantic import SecretStr

PREFIX = "hmac-sha256:"
# What keys the HMAC: the API key as configured, never stored anywhere the operator writes.
_DOMAIN = b"baseten-operator/secret-fingerprint/v1\x00"


def fingerprint_key(api_key: str) -> bytes:
    """The HMAC key derived from the operator's API key (a separate domain: the fingerprint
    is no MAC any Baseten request could be confused with)."""
    return hashlib.sha256(_DOMAIN + api_key.encode()).digest()


def fingerprint(key: bytes, team: str | None, name: str, value: SecretStr) -> str:
    message = b"\x00".join(
        ((team or "").encode(), name.encode(), value.get_secret_value().encode())
    )
    return PREFIX + hmac.new(key, message, hashlib.sha256).hexdigest()
