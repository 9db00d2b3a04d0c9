"""A BasetenSecret's value, taken from its Secret: checked before anything is sent.

The value becomes a `pydantic.SecretStr` the moment it is decoded, so no repr, log line or
exception shows it; only the request body the Baseten client builds unwraps it.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from pydantic import SecretStr

from baseten_operator.api.base import SecretKeyRef
from baseten_operator.api.constants import SecretState
from baseten_operator.api.secret_types import SECRET_VALUE_MAX_BYTES
from baseten_operator.controller.basetensecret import messages


class ValueUnusable(Exception):
    """The Secret cannot give a value to write: `state` and `message` say why (never the
    value); `waiting` when the Secret may yet get one by itself (it, or its key, is
    missing), so the CR waits rather than failing."""

    def __init__(self, state: SecretState, message: str, *, waiting: bool) -> None:
        super().__init__(message)
        self.state = state
        self.message = message
        self.waiting = waiting


def value_of(namespace: str, ref: SecretKeyRef, secret: dict[str, Any] | None) -> SecretStr:
    """The value of `ref`'s key in `secret` (None: the Secret does not exist)."""
    if secret is None:
        raise _waiting(messages.secret_missing(namespace, ref.name, ref.key))
    encoded = (secret.get("data") or {}).get(ref.key)
    if encoded is None:
        raise _waiting(messages.key_missing(namespace, ref.name, ref.key))
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError, TypeError):
        raw = None
    if not raw:
        # An undecodable entry is no value either; the API server never stores one.
        raise _failed(messages.value_empty(namespace, ref.name, ref.key))
    if len(raw) > SECRET_VALUE_MAX_BYTES:
        raise _failed(
            messages.value_too_large(namespace, ref.name, ref.key, len(raw), SECRET_VALUE_MAX_BYTES)
        )
    try:
        return SecretStr(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise _failed(messages.value_not_text(namespace, ref.name, ref.key)) from None


def _waiting(message: str) -> ValueUnusable:
    return ValueUnusable(SecretState.WAITING_FOR_SECRET, message, waiting=True)


def _failed(message: str) -> ValueUnusable:
    return ValueUnusable(SecretState.FAILED, message, waiting=False)
