"""Structural-schema handling of custom resources, as a real kube-apiserver does it.

On create/update the API server, with the version's `openAPIV3Schema`:
1. prunes fields the schema does not know (unless `x-kubernetes-preserve-unknown-fields`),
   and non-nullable nulls;
2. applies `default`s top-down (a defaulted object gets its own nested defaults);
3. validates the OpenAPI keywords, then the CEL rules (`x-kubernetes-validations`) unless an
   error already "blocks" them.
Causes and messages reproduce the apiserver's `field.Error` texts, so clients grepping for
them behave as they would against a cluster.
"""

from __future__ import annotations

import copy
import datetime
import functools
import json
import re
from collections.abc import Iterator
from typing import Any, TypedDict

from baseten_operator.sim.kube import cel


class Cause(TypedDict):
    reason: str
    message: str
    field: str


REQUIRED = "FieldValueRequired"
INVALID = "FieldValueInvalid"
NOT_SUPPORTED = "FieldValueNotSupported"
TYPE_INVALID = "FieldValueTypeInvalid"
TOO_LONG = "FieldValueTooLong"
TOO_MANY = "FieldValueTooMany"
DUPLICATE = "FieldValueDuplicate"
FORBIDDEN = "FieldValueForbidden"

# Errors that make the apiserver skip CEL rules (their cost could not be bounded).
_BLOCKING = frozenset({NOT_SUPPORTED, REQUIRED, TOO_LONG, TOO_MANY, TYPE_INVALID})
_RULES_NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)
# Root fields the apiserver handles itself, whatever the schema says.
_ROOT_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
_NO_PATH = "<nil>"

Schema = dict[str, Any]


def apply_structural_schema(schema: Schema, obj: dict[str, Any], old: dict | None) -> list[Cause]:
    """Prune and default `obj` in place, then validate it (with `old` for transition rules)."""
    prune(schema, obj, root=True)
    apply_defaults(schema, obj, root=True)
    causes = validate(schema, obj)
    if any(cause["reason"] in _BLOCKING for cause in causes):
        causes.append(_cause(INVALID, _NO_PATH, f"Invalid value: null: {_RULES_NOT_CHECKED}"))
    else:
        causes.extend(check_rules(schema, obj, old))
    return causes


def status_message(qualified_kind: str, name: str, causes: list[Cause]) -> str:
    """The 422 Status message: `Kind.group "name" is invalid: <causes>`."""
    parts = list(dict.fromkeys(f"{cause['field']}: {cause['message']}" for cause in causes))
    body = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return f'{qualified_kind} "{name}" is invalid: {body}'


# ---------------------------------------------------------------------------------------
# Paths and value rendering (as apimachinery's field.Path and field.Error print them).


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _index(path: str, index: int) -> str:
    return f"{path}[{index}]"


def _go_value(value: Any) -> str:
    """A value as `%v`/`%q` print it in field.Error.ErrorBody."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _cause(reason: str, path: str, message: str) -> Cause:
    return {"reason": reason, "message": message, "field": path or _NO_PATH}


def _invalid(path: str, value: Any, detail: str, reason: str = INVALID) -> Cause:
    return _cause(reason, path, f"Invalid value: {_go_value(value)}: {detail}")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


# ---------------------------------------------------------------------------------------
# Schema navigation.


def _preserves_unknown(schema: Schema) -> bool:
    return schema.get("x-kubernetes-preserve-unknown-fields") is True


def _field_schema(schema: Schema, key: str) -> Schema | None:
    """The schema of an object's field: a declared property, else the map's value schema."""
    declared = (schema.get("properties") or {}).get(key)
    if declared is not None:
        return declared
    additional = schema.get("additionalProperties")
    return additional if isinstance(additional, dict) else None


def _fields(schema: Schema, obj: dict[str, Any], root: bool) -> Iterator[tuple[str, Schema]]:
    """(key, schema) of the fields of `obj` the schema describes."""
    for key in list(obj):
        if root and key in _ROOT_FIELDS:
            continue
        sub = _field_schema(schema, key)
        if sub is not None:
            yield key, sub


def _items_schema(schema: Schema) -> Schema | None:
    items = schema.get("items")
    return items if isinstance(items, dict) else None


# ---------------------------------------------------------------------------------------
# 1. Pruning.


def prune(schema: Schema, value: Any, *, root: bool = False) -> None:
    """Drop unknown fields and non-nullable nulls, in place."""
    if isinstance(value, dict) and schema.get("type") in (None, "object"):
        keep = _ROOT_FIELDS if root or schema.get("x-kubernetes-embedded-resource") else ()
        preserve = _preserves_unknown(schema)
        for key in list(value):
            if key in keep:
                continue
            sub = _field_schema(schema, key)
            if sub is None:
                if not preserve:
                    del value[key]
            elif value[key] is None and not sub.get("nullable"):
                del value[key]  # defaulting may then fill it in, as on a real server
            else:
                prune(sub, value[key])
    elif isinstance(value, list) and (items := _items_schema(schema)) is not None:
        for item in value:
            prune(items, item)


# ---------------------------------------------------------------------------------------
# 2. Defaulting.


def apply_defaults(schema: Schema, value: Any, *, root: bool = False) -> None:
    """Fill absent properties that have a `default`, top-down, in place."""
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key not in value and "default" in sub and not (root and key in _ROOT_FIELDS):
                value[key] = copy.deepcopy(sub["default"])
        for key, sub in _fields(schema, value, root):
            apply_defaults(sub, value[key])
    elif isinstance(value, list) and (items := _items_schema(schema)) is not None:
        for item in value:
            apply_defaults(items, item)


# ---------------------------------------------------------------------------------------
# 3a. OpenAPI validation.


def validate(schema: Schema, obj: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    _validate_node(schema, obj, "", causes, root=True)
    return causes


def _type_error(schema: Schema, value: Any) -> str | None:
    """The expected type name when `value` does not have the schema's type, else None."""
    if schema.get("x-kubernetes-int-or-string"):
        ok = isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
        return None if ok else "integer,string"
    expected = schema.get("type")
    if expected is None:
        return None
    actual = _json_type(value)
    if actual == expected or (expected == "number" and actual == "integer"):
        return None
    return str(expected)


def _validate_node(
    schema: Schema, value: Any, path: str, causes: list[Cause], *, root: bool = False
) -> None:
    if value is None and (schema.get("nullable") or not _is_typed(schema)):
        return
    expected = _type_error(schema, value)
    if expected is not None:
        actual = _json_type(value)
        detail = f'{path} in body must be of type {expected}: "{actual}"'
        causes.append(_invalid(path, actual, detail, TYPE_INVALID))
        return
    if "enum" in schema and not any(_json_equal(value, allowed) for allowed in schema["enum"]):
        causes.append(_not_supported(path, value, schema["enum"]))
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        causes.extend(_number_causes(schema, value, path))
    elif isinstance(value, str):
        causes.extend(_string_causes(schema, value, path))
    elif isinstance(value, list):
        _validate_array(schema, value, path, causes)
    elif isinstance(value, dict):
        _validate_object(schema, value, path, causes, root=root)


def _is_typed(schema: Schema) -> bool:
    return "type" in schema or bool(schema.get("x-kubernetes-int-or-string"))


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality, all the way down: Python's True == 1, but JSON's booleans are not numbers."""
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(_json_equal(item, b[key]) for key, item in a.items())
        )
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_json_equal, a, b))
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def _not_supported(path: str, value: Any, allowed: list[Any]) -> Cause:
    names = ", ".join(
        json.dumps(v if isinstance(v, str) else _go_value(v), ensure_ascii=False) for v in allowed
    )
    return _cause(
        NOT_SUPPORTED, path, f"Unsupported value: {_go_value(value)}: supported values: {names}"
    )


def _number_causes(schema: Schema, value: float, path: str) -> Iterator[Cause]:
    if "minimum" in schema:
        bound = schema["minimum"]
        if schema.get("exclusiveMinimum") and value <= bound:
            yield _invalid(path, value, f"{path} in body should be greater than {_go_value(bound)}")
        elif value < bound:
            detail = f"{path} in body should be greater than or equal to {_go_value(bound)}"
            yield _invalid(path, value, detail)
    if "maximum" in schema:
        bound = schema["maximum"]
        if schema.get("exclusiveMaximum") and value >= bound:
            yield _invalid(path, value, f"{path} in body should be less than {_go_value(bound)}")
        elif value > bound:
            detail = f"{path} in body should be less than or equal to {_go_value(bound)}"
            yield _invalid(path, value, detail)
    factor = schema.get("multipleOf")
    if factor and (value / factor) != int(value / factor):
        yield _invalid(path, value, f"{path} in body should be a multiple of {_go_value(factor)}")


@functools.lru_cache(maxsize=256)
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text)


def _string_causes(schema: Schema, value: str, path: str) -> Iterator[Cause]:
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        limit = schema["maxLength"]
        unit = "byte" if limit == 1 else "bytes"
        yield _cause(TOO_LONG, path, f"Too long: may not be more than {limit} {unit}")
    if "minLength" in schema and len(value) < schema["minLength"]:
        detail = f"{path} in body should be at least {schema['minLength']} chars long"
        yield _invalid(path, value, detail)
    if "pattern" in schema and not _pattern(schema["pattern"]).search(value):
        yield _invalid(path, value, f"{path} in body should match '{schema['pattern']}'")
    if schema.get("format") == "date-time" and not _is_date_time(value):
        yield _invalid(path, value, f'{path} in body must be of type date-time: "{value}"')


def _is_date_time(text: str) -> bool:
    # RFC 3339 needs a date, a time and an offset (or Z).
    try:
        parsed = datetime.datetime.fromisoformat(text)
    except ValueError:
        return False
    return "T" in text.upper() and parsed.tzinfo is not None


def _validate_array(schema: Schema, value: list[Any], path: str, causes: list[Cause]) -> None:
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        detail = f"Too many: {len(value)}: must have at most {schema['maxItems']} items"
        causes.append(_cause(TOO_MANY, path, detail))
    if "minItems" in schema and len(value) < schema["minItems"]:
        detail = f"{path} in body should have at least {schema['minItems']} items"
        causes.append(_invalid(path, value, detail))
    causes.extend(_duplicate_causes(schema, value, path))
    items = _items_schema(schema)
    if items is not None:
        for i, item in enumerate(value):
            _validate_node(items, item, _index(path, i), causes)


def _list_key(schema: Schema, item: Any) -> Any:
    """The identity of a list item for `x-kubernetes-list-type` set/map; None when untyped."""
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        return _go_value(item)
    if list_type == "map" and isinstance(item, dict):
        keys = schema.get("x-kubernetes-list-map-keys") or []
        return _go_value({key: item.get(key) for key in keys})
    return None


def _duplicate_causes(schema: Schema, value: list[Any], path: str) -> Iterator[Cause]:
    seen: set[str] = set()
    for i, item in enumerate(value):
        key = _list_key(schema, item)
        if key is None:
            continue
        if key in seen:
            yield _cause(DUPLICATE, _index(path, i), f"Duplicate value: {key}")
        seen.add(key)


def _validate_object(
    schema: Schema, value: dict[str, Any], path: str, causes: list[Cause], *, root: bool
) -> None:
    for key in schema.get("required") or []:
        if key not in value:
            causes.append(_cause(REQUIRED, _child(path, key), "Required value"))
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        detail = f"Too many: {len(value)}: must have at most {schema['maxProperties']} items"
        causes.append(_cause(TOO_MANY, path, detail))
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        detail = f"{path} in body should have at least {schema['minProperties']} properties"
        causes.append(_invalid(path, value, detail))
    for key, sub in _fields(schema, value, root):
        _validate_node(sub, value[key], _child(path, key), causes)


# ---------------------------------------------------------------------------------------
# 3b. CEL rules (x-kubernetes-validations).


def check_rules(schema: Schema, obj: dict[str, Any], old: dict | None) -> list[Cause]:
    causes: list[Cause] = []
    _check_node_rules(schema, obj, old, "", causes, root=True)
    return causes


def _check_node_rules(
    schema: Schema, value: Any, old: Any, path: str, causes: list[Cause], *, root: bool = False
) -> None:
    if value is None:
        return
    # Ratcheting (CRDValidationRatcheting, on by default since Kubernetes 1.30): an update
    # is not held to the rules of a value it leaves as it was. So a status write or a
    # metadata patch does not re-run the spec's rules, and an object stored before a rule
    # was added can still be written as long as it does not touch the offending value.
    if old is not None and _json_equal(value, old):
        return
    for rule in schema.get("x-kubernetes-validations") or []:
        cause = _rule_failure(rule, _schema_type(schema), value, old, path)
        if cause is not None:
            causes.append(cause)
    if isinstance(value, dict):
        old_map = old if isinstance(old, dict) else {}
        for key, sub in _fields(schema, value, root):
            _check_node_rules(sub, value[key], old_map.get(key), _child(path, key), causes)
    elif isinstance(value, list) and (items := _items_schema(schema)) is not None:
        old_items = _correlated_items(schema, old)
        for i, item in enumerate(value):
            old_item = old_items.get(_list_key(schema, item)) if old_items else None
            _check_node_rules(items, item, old_item, _index(path, i), causes)


def _schema_type(schema: Schema) -> str:
    return str(schema.get("type", ""))


def _correlated_items(schema: Schema, old: Any) -> dict[Any, Any]:
    """Old items by key: only `listType: map` lists correlate old and new items."""
    if schema.get("x-kubernetes-list-type") != "map" or not isinstance(old, list):
        return {}
    return {_list_key(schema, item): item for item in old}


def _rule_failure(
    rule: dict[str, Any], type_name: str, value: Any, old: Any, path: str
) -> Cause | None:
    text = str(rule["rule"]).strip()
    try:
        compiled = cel.compile_rule(text)
        if compiled.is_transition and old is None:
            return None
        if cel.holds(compiled, value, old):
            return None
    except cel.RuleError as exc:
        return _invalid(path, type_name, f"{exc} evaluating rule: {_rule_name(rule)}")
    field_path = str(rule.get("fieldPath") or "")
    if field_path:
        path = path + field_path if path else field_path.lstrip(".")
    return _reason_cause(rule.get("reason"), path, type_name, _rule_message(rule, value, old))


def _rule_name(rule: dict[str, Any]) -> str:
    return str(rule.get("message") or rule["rule"]).strip()


def _rule_message(rule: dict[str, Any], value: Any, old: Any) -> str:
    expression = rule.get("messageExpression")
    if expression:
        try:
            message = cel.message_of(cel.compile_rule(expression), value, old).strip()
        except cel.RuleError:
            message = ""
        if message:
            return message
    if rule.get("message"):
        return str(rule["message"]).strip()
    return f"failed rule: {_rule_name(rule)}"


def _reason_cause(reason: str | None, path: str, type_name: str, message: str) -> Cause:
    if reason == FORBIDDEN:
        return _cause(FORBIDDEN, path, f"Forbidden: {message}")
    if reason == REQUIRED:
        return _cause(REQUIRED, path, f"Required value: {message}")
    if reason == DUPLICATE:
        return _cause(DUPLICATE, path, f"Duplicate value: {_go_value(type_name)}")
    return _invalid(path, type_name, message)


# ---------------------------------------------------------------------------------------
# CRD creation: rules that do not compile make the apiserver refuse the definition.


def rule_compile_causes(schema: Schema, path: str = "openAPIV3Schema") -> list[Cause]:
    """Causes for every rule or messageExpression of `schema` that does not compile."""
    causes: list[Cause] = []
    for i, rule in enumerate(schema.get("x-kubernetes-validations") or []):
        for key in ("rule", "messageExpression"):
            if not rule.get(key):
                continue
            try:
                cel.compile_rule(str(rule[key]).strip())
            except cel.RuleError as exc:
                field = f"{path}.x-kubernetes-validations[{i}].{key}"
                causes.append(_invalid(field, rule[key], str(exc)))
    for name, sub in (schema.get("properties") or {}).items():
        causes += rule_compile_causes(sub, f"{path}.properties[{name}]")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            causes += rule_compile_causes(schema[key], f"{path}.{key}")
    return causes
