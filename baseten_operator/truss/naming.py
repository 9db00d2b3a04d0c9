"""Deployment names for trussConfig pushes, byte-compatible with the reference Go operator.

A deployment is named ``depl-{image name}-{image tag}-{hash}`` (``depl-{hash}`` when the
image is empty). The hash is the first 8 hex digits of SHA-256 over ``J + S``: ``J`` is
what Go's ``encoding/json`` writes for the CR's ``TrussConfig`` struct and ``S`` the setup
script. Teams migrate from the Go operator; a different hash would re-push every model,
so ``J`` is reproduced byte for byte (docs/truss.md):

- keys in the Go struct's field order; ``omitempty`` fields are left out when absent or
  when a string / map / list is empty, while pointer fields (``useGpu``, ``noBuild``,
  ``serverPort``, ``predictConcurrency``, ``inline``, ``exampleModelInput`` and the
  nested objects) are written whenever present, so a present ``false``, ``0`` or ``""``
  is kept and a present empty object is written as ``{}``;
- ``resources`` and ``baseImage`` are value structs in Go: always written, as are
  ``image``, every ``dockerAuth`` field and both ``configMapRef`` fields; in ``resources``,
  ``accelerator``, ``cpu`` and ``memory`` are omitted when empty (CPU-only models);
- map keys and every key inside ``exampleModelInput`` sorted by their UTF-8 bytes;
- compact output, Go's string escaping (HTML-safe ``<>&``, U+2028/U+2029, lowercase
  ``\\u00XX`` for control characters, invalid UTF-8 as U+FFFD), integers as integers and
  floats in Go's shortest form (``1.0`` is ``1``, ``1e21`` is ``1e+21``).

Image name and tag follow the reference (tag after the last ``:``, name = last ``/``
segment, ``latest`` when there is no tag) wherever the reference gives a valid name.
Where it does not, this module decides, so every name matches truss's
``^[0-9a-zA-Z_\\-\\.]*$``:

- a digest (``@sha256:<hex>``) is cut off before looking for the tag, as the Go operator
  does: an image pinned only by digest gets the tag ``latest`` (the hash still tells two
  digests apart) and a tag next to a digest (``vllm:1.0@sha256:...``) wins;
- only a ``:`` inside the last path segment separates a tag, so a registry port
  (``localhost:5000/vllm``) is never taken for one;
- any remaining character truss would refuse is replaced by ``-``.

The hash covers the whole image string, so two images that end up with the same
cosmetic name/tag still get different deployment names.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum, auto
from typing import Any, Protocol

HASH_LENGTH = 8
DEFAULT_TAG = "latest"
TRUSS_NAME_PATTERN = re.compile(r"^[0-9a-zA-Z_\-\.]*$")
_INVALID_NAME_CHAR = re.compile(r"[^0-9a-zA-Z_\-\.]")


class _DumpableModel(Protocol):
    def model_dump(
        self, *, mode: str, by_alias: bool, exclude_none: bool, exclude_unset: bool
    ) -> dict[str, Any]: ...


TrussConfigLike = Mapping[str, Any] | _DumpableModel


# --- The Go struct layout -------------------------------------------------------------


class _Kind(Enum):
    STRING = auto()
    BOOL = auto()
    INT = auto()
    STRING_MAP = auto()
    STRING_LIST = auto()
    FREE_JSON = auto()
    OBJECT = auto()


@dataclass(frozen=True)
class _Field:
    key: str
    kind: _Kind
    # Go: a field without omitempty (written even when absent, as its zero value).
    always: bool = False
    # Go: a pointer field (omitempty drops only nil, so a present zero value is kept).
    pointer: bool = False
    fields: tuple[_Field, ...] = ()


def _obj(key: str, *fields: _Field, always: bool = False) -> _Field:
    return _Field(key, _Kind.OBJECT, always=always, pointer=not always, fields=fields)


_TRUSS_CONFIG_FIELDS: tuple[_Field, ...] = (
    _Field("pythonVersion", _Kind.STRING),
    _obj(
        "resources",
        # Before CPU-only models `accelerator` had no omitempty; it is never empty on a GPU
        # config, so both layouts give existing configs the same bytes.
        _Field("accelerator", _Kind.STRING),
        _Field("useGpu", _Kind.BOOL, pointer=True),
        _Field("cpu", _Kind.STRING),
        _Field("memory", _Kind.STRING),
        always=True,
    ),
    _Field("secrets", _Kind.STRING_MAP),
    _Field("environmentVariables", _Kind.STRING_MAP),
    _obj(
        "baseImage",
        _Field("image", _Kind.STRING, always=True),
        _obj(
            "dockerAuth",
            _Field("authMethod", _Kind.STRING, always=True),
            _Field("secretName", _Kind.STRING, always=True),
            _Field("registry", _Kind.STRING, always=True),
        ),
        always=True,
    ),
    _obj(
        "dockerServer",
        _Field("noBuild", _Kind.BOOL, pointer=True),
        _Field("startCommand", _Kind.STRING),
        _Field("readinessEndpoint", _Kind.STRING),
        _Field("livenessEndpoint", _Kind.STRING),
        _Field("predictEndpoint", _Kind.STRING),
        _Field("serverPort", _Kind.INT, pointer=True),
    ),
    _obj("runtime", _Field("predictConcurrency", _Kind.INT, pointer=True)),
    _obj(
        "modelMetadata",
        _Field("exampleModelInput", _Kind.FREE_JSON, pointer=True),
        _Field("tags", _Kind.STRING_LIST),
    ),
    _obj(
        "setupScript",
        _obj(
            "configMapRef",
            _Field("name", _Kind.STRING, always=True),
            _Field("key", _Kind.STRING, always=True),
        ),
        _Field("inline", _Kind.STRING, pointer=True),
    ),
)


# --- Go encoding/json ----------------------------------------------------------------

_GO_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_GO_SHORT_ESCAPES |= {"\b": "\\b", "\f": "\\f"}
# Control characters, the HTML-unsafe ones, U+2028/2029 and lone surrogates (which are
# invalid UTF-8: Go writes them as U+FFFD, escaped).
_GO_ESCAPED = re.compile('[\x00-\x1f"\\\\<>&\u2028\u2029\ud800-\udfff]')


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    if char in _GO_SHORT_ESCAPES:
        return _GO_SHORT_ESCAPES[char]
    if "\ud800" <= char <= "\udfff":
        return "\\ufffd"
    return f"\\u{ord(char):04x}"


def go_json_string(text: str) -> str:
    """A JSON string literal exactly as Go's encoding/json writes it (HTML-safe)."""
    return '"' + _GO_ESCAPED.sub(_escape_char, text) + '"'


def _go_float(value: float) -> str:
    """Go's float64 encoding: shortest round-trip digits, exponent only outside [1e-6, 1e21)."""
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"unsupported JSON number {value!r}")
    magnitude = abs(value)
    if magnitude == 0 or 1e-6 <= magnitude < 1e21:
        text = format(Decimal(repr(value)), "f")
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return text
    mantissa, exponent = repr(value).split("e")
    sign = "-" if exponent.startswith("-") else "+"
    return f"{mantissa}e{sign}{int(exponent.lstrip('+-'))}"


def _utf8_sort_key(key: str) -> bytes:
    return key.encode("utf-8", "surrogatepass")


def _free_json(value: Any) -> str:
    """Arbitrary JSON as the Kubernetes API server hands it back: keys sorted at every level."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        return go_json_string(value)
    if isinstance(value, Mapping):
        items = sorted(value.items(), key=lambda item: _utf8_sort_key(str(item[0])))
        return "{" + ",".join(f"{go_json_string(str(k))}:{_free_json(v)}" for k, v in items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_free_json(item) for item in value) + "]"
    raise TypeError(f"unsupported JSON value of type {type(value).__name__}")


def _string_map(value: Mapping[str, Any]) -> str:
    # Go map[string]string: a null value decodes to "".
    items = sorted(value.items(), key=lambda item: _utf8_sort_key(item[0]))
    pairs = (f"{go_json_string(k)}:{go_json_string('' if v is None else str(v))}" for k, v in items)
    return "{" + ",".join(pairs) + "}"


def _is_omitted(field: _Field, value: Any) -> bool:
    if field.always:
        return False
    if value is None:
        return True
    if field.pointer:
        return False
    return len(value) == 0  # omitempty on a string, map or list


def _encode_value(field: _Field, value: Any) -> str:
    match field.kind:
        case _Kind.STRING:
            return go_json_string("" if value is None else str(value))
        case _Kind.BOOL:
            return "true" if value else "false"
        case _Kind.INT:
            return str(int(value))
        case _Kind.STRING_MAP:
            return _string_map(value or {})
        case _Kind.STRING_LIST:
            return "[" + ",".join(go_json_string(str(item)) for item in value or ()) + "]"
        case _Kind.FREE_JSON:
            return _free_json(value)
        case _Kind.OBJECT:
            return _encode_object(field.fields, value or {})
    raise AssertionError(field.kind)


def _encode_object(fields: tuple[_Field, ...], data: Mapping[str, Any]) -> str:
    parts = []
    for field in fields:
        value = data.get(field.key)
        if not _is_omitted(field, value):
            parts.append(f"{go_json_string(field.key)}:{_encode_value(field, value)}")
    return "{" + ",".join(parts) + "}"


# --- Public API ----------------------------------------------------------------------


def truss_config_dict(truss_config: TrussConfigLike) -> Mapping[str, Any]:
    """The camelCase dict of a trussConfig given as a dict or as a pydantic model."""
    if isinstance(truss_config, Mapping):
        return truss_config
    # exclude_unset: a default filled in by the model (say `noBuild: False`) is not in
    # the CR, and Go would not write it either.
    return truss_config.model_dump(
        mode="json", by_alias=True, exclude_none=True, exclude_unset=True
    )


def go_json(truss_config: TrussConfigLike) -> str:
    """``J``: the trussConfig as the Go operator's ``json.Marshal`` writes it."""
    return _encode_object(_TRUSS_CONFIG_FIELDS, truss_config_dict(truss_config))


def _go_utf8(text: str) -> bytes:
    # A Go string never holds a lone surrogate: decoding turned it into U+FFFD.
    return re.sub("[\ud800-\udfff]", "\ufffd", text).encode("utf-8")


def config_hash(truss_config: TrussConfigLike, setup_script: str) -> str:
    """First 8 hex digits of SHA-256(J + setup script)."""
    digest = hashlib.sha256(_go_utf8(go_json(truss_config)) + _go_utf8(setup_script or ""))
    return digest.hexdigest()[:HASH_LENGTH]


def _sanitize(part: str) -> str:
    return _INVALID_NAME_CHAR.sub("-", part)


def image_name_and_tag(image: str) -> tuple[str, str]:
    """(name, tag) of an image reference, both valid in a truss deployment name.

    Returns ("", "") for an empty image. See the module docstring for the rules.
    """
    if not image:
        return "", ""
    reference = image.partition("@")[0]
    repository, _, last_segment = reference.rpartition("/")
    name, colon, tag = last_segment.rpartition(":")
    if not colon:
        name, tag = last_segment, ""
    return _sanitize(name), _sanitize(tag or DEFAULT_TAG)


def name_for_hash(image: str, hash_: str) -> str:
    name, tag = image_name_and_tag(image)
    if not name:
        return f"depl-{hash_}"
    return f"depl-{name}-{tag}-{hash_}"


def deployment_name(truss_config: TrussConfigLike, setup_script: str) -> str:
    """``depl-{image name}-{image tag}-{hash}``, or ``depl-{hash}`` for an empty image."""
    config = truss_config_dict(truss_config)
    image = (config.get("baseImage") or {}).get("image") or ""
    return name_for_hash(image, config_hash(config, setup_script))


# --- Names pasted into truss's GraphQL -----------------------------------------------


class InvalidPushName(ValueError):
    """A model or environment name that cannot be sent through truss's GraphQL safely."""


# truss inlines these names into GraphQL text without escaping; anything that can end
# a string literal, start an escape or an interpolation, or hide in logs is refused.
_FORBIDDEN_PUSH_CHARS = frozenset("\"'`\\{}$")


def _offending_char(value: str) -> str | None:
    for char in value:
        if char in _FORBIDDEN_PUSH_CHARS:
            return char
        # Cc: control characters; Zl/Zp: line and paragraph separators.
        if unicodedata.category(char) in ("Cc", "Zl", "Zp", "Cs"):
            return char
    return None


def validate_push_names(model_name: str, environment: str | None) -> None:
    """Raise InvalidPushName when a name cannot be pasted into truss's GraphQL queries."""
    if not model_name or model_name.isspace():
        raise InvalidPushName("modelName must not be empty")
    for field, value in (("modelName", model_name), ("environment.name", environment)):
        if value is None:
            continue
        char = _offending_char(value)
        if char is not None:
            raise InvalidPushName(
                f"{field} {value!r} contains {char!r}: quotes, backslashes, braces, '$' and "
                "control characters cannot be sent to Baseten through truss"
            )
