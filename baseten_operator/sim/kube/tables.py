"""`as=Table` responses (what `kubectl get` prints) from printer columns.

Columns use a JSONPath subset: `.a.b`, `.a[0]`, `.a['k.with.dots']`, `.a[*]`, and filters
such as `.status.conditions[?(@.type=="Ready")].status`.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from .resources import PrinterColumn, ResourceType

Obj = dict[str, Any]

_STEP = re.compile(
    r"""\.(?P<field>[A-Za-z0-9_\-/]+)
      | \[(?P<index>-?\d+|\*)\]
      | \[['"](?P<key>[^'"]+)['"]\]
      | \[\?\(@(?P<path>(?:\.[A-Za-z0-9_\-]+)+)\s*(?P<op>==|!=)\s*
          (?P<literal>"[^"]*"|'[^']*'|[^)\s]+)\)\]
    """,
    re.VERBOSE,
)


def _literal(text: str) -> Any:
    if text[0] in "'\"":
        return text[1:-1]
    try:
        return json.loads(text)
    except ValueError:
        return text


def _dig(value: Any, path: str) -> Any:
    for part in path.strip(".").split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def jsonpath(obj: Any, expression: str) -> list[Any]:
    """All values `expression` selects in `obj` (missing paths select nothing)."""
    expression = expression.strip()
    if expression.startswith("{") and expression.endswith("}"):
        expression = expression[1:-1]
    current = [obj]
    pos = 0
    while pos < len(expression):
        step = _STEP.match(expression, pos)
        if step is None:
            return []
        pos = step.end()
        found: list[Any] = []
        for value in current:
            if step.group("field") is not None or step.group("key") is not None:
                name = step.group("field") or step.group("key")
                if isinstance(value, dict) and name in value:
                    found.append(value[name])
            elif step.group("index") is not None:
                if isinstance(value, list):
                    if step.group("index") == "*":
                        found.extend(value)
                    elif -len(value) <= int(step.group("index")) < len(value):
                        found.append(value[int(step.group("index"))])
            elif isinstance(value, list):
                wanted, equal = _literal(step.group("literal")), step.group("op") == "=="
                found.extend(v for v in value if (_dig(v, step.group("path")) == wanted) == equal)
        current = found
    return current


def human_duration(seconds: float) -> str:
    """Kubernetes' short age format (`5s`, `3m20s`, `2d4h`, ...)."""
    if seconds < -1:
        return "<invalid>"
    s = max(int(seconds), 0)
    minutes, hours, days = s // 60, s // 3600, s // 86400
    if s < 120:
        return f"{s}s"
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 192:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    years = days // 365
    return f"{years}y{days % 365}d" if years < 8 and days % 365 else f"{years}y"


def _cell(column: PrinterColumn, obj: Obj, now: float) -> Any:
    results = jsonpath(obj, column.json_path)
    if not results or results[0] is None:
        return None
    value = results[0]
    if column.type == "date" and isinstance(value, str):
        try:
            stamp = datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return value
        return human_duration(now - stamp)
    if column.type == "integer" and isinstance(value, int | float):
        return int(value)
    if column.type == "number" and isinstance(value, int | float):
        return value
    if column.type == "boolean" and isinstance(value, bool):
        return value
    if len(results) > 1:
        return ",".join(r if isinstance(r, str) else json.dumps(r) for r in results)
    return value if isinstance(value, str) else json.dumps(value)


def column_definitions(rt: ResourceType) -> list[Obj]:
    name = {
        "name": "Name",
        "type": "string",
        "format": "name",
        "description": "Name must be unique within a namespace.",
        "priority": 0,
    }
    return [name] + [
        {
            "name": c.name,
            "type": c.type,
            "format": c.format,
            "description": c.description,
            "priority": c.priority,
        }
        for c in rt.columns
    ]


def row(rt: ResourceType, obj: Obj, now: float, include: str) -> Obj:
    cells = [obj.get("metadata", {}).get("name")] + [_cell(c, obj, now) for c in rt.columns]
    if include == "Object":
        shown: Obj | None = obj
    elif include == "None":
        shown = None
    else:
        shown = partial_metadata(obj)
    return {"cells": cells, "object": shown}


def partial_metadata(obj: Obj) -> Obj:
    """What `as=PartialObjectMetadata` answers: the object's metadata alone."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def partial_metadata_list(objs: list[Obj], list_metadata: Obj) -> Obj:
    return {
        "kind": "PartialObjectMetadataList",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_metadata,
        "items": [partial_metadata(obj) for obj in objs],
    }


def table(
    rt: ResourceType,
    objs: list[Obj],
    now: float,
    *,
    include: str = "Metadata",
    list_metadata: Obj | None = None,
    with_columns: bool = True,
) -> Obj:
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_metadata or {},
        "columnDefinitions": column_definitions(rt) if with_columns else [],
        "rows": [row(rt, o, now, include) for o in objs],
    }
