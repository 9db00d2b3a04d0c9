"""What every kind's types share: the model base and its wire form, the bounds of strings
and maps, Kubernetes durations, and a reference to one key of a Secret.

Every bound here is a bound of the CRDs the types generate (api/crd.py), which the API
server enforces.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pydantic.alias_generators import to_camel

# Bounds on every string and map of every resource (the CRD's maxLength / maxProperties): one
# oversized field must never make an object the API server refuses to store, nor flood
# statuses and logs. Names follow their owner's limits (Kubernetes: 253 for object names and
# keys, 63 for labels-like environment names); free text gets room for any sensible use.
NAME_MAX = 255  # Baseten model and deployment names
ENVIRONMENT_NAME_MAX = 63
KUBE_NAME_MAX = 253  # ConfigMap names and keys, secret names, variable names, hosts
IMAGE_MAX = 1024
SCRIPT_MAX = 262144  # setupScript.inline (a ConfigMap holds larger ones)
VALUE_MAX = 8192  # an environment variable's or secret map's value
COMMAND_MAX = 4096
PATH_MAX = 1024  # endpoints, free text like descriptions
SHORT_MAX = 64  # enum-like words: accelerator, python version, auth method, statuses
MESSAGE_MAX = 1024  # status.message and condition messages (the operator cuts longer ones)
TIME_MAX = 64  # RFC 3339 timestamps
MAP_MAX = 100  # properties of any map, items of any list

# Kubernetes durations (metav1.Duration, as Flux's `interval`): numbers with units, `24h`,
# `90m`, `1h30m`. Units below a second are left out: no duration of ours is that short.
DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(h|m|s))+$"
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(h|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0}
# Kubernetes Secret keys: alphanumerics, `-`, `_` and `.` (validation.IsConfigMapKey).
SECRET_KEY_PATTERN = r"^[-._a-zA-Z0-9]+$"


def duration_seconds(text: str) -> float:
    """Seconds in a duration DURATION_PATTERN accepts (`1h30m`: 5400)."""
    return sum(float(n) * _UNIT_SECONDS[unit] for n, unit in _DURATION_PART.findall(text))


# Map keys and values, list items: bounded like fields (keys become a CEL rule in the CRD).
KubeName = Annotated[str, StringConstraints(max_length=KUBE_NAME_MAX)]
MapValue = Annotated[str, StringConstraints(max_length=VALUE_MAX)]
Tag = Annotated[str, StringConstraints(max_length=NAME_MAX)]
BoundedMap = dict[KubeName, MapValue]


class ApiModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        use_enum_values=False,
    )


def to_wire(model: BaseModel) -> dict[str, Any]:
    """The object as the API server stores it: camelCase keys, unset fields omitted."""
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


class SecretKeyRef(ApiModel):
    """One key of a Secret in the resource's own namespace."""

    name: str = Field(
        ...,
        min_length=1,
        max_length=KUBE_NAME_MAX,
        description="Name of the Secret, in the resource's namespace.",
    )
    key: str = Field(
        ...,
        min_length=1,
        max_length=KUBE_NAME_MAX,
        pattern=SECRET_KEY_PATTERN,
        description="Key of the Secret.",
    )
