"""apply_structural_schema: pruning, defaulting and each OpenAPI keyword, as an apiserver."""

from __future__ import annotations

from typing import Any

import pytest

from baseten_operator.sim.kube.schema import apply_structural_schema, status_message


def root(spec_schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": spec_schema}}


def obj(spec: Any) -> dict[str, Any]:
    return {"apiVersion": "x.io/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": spec}


def admit(spec_schema: dict[str, Any], spec: Any) -> tuple[dict[str, Any], list[dict[str, str]]]:
    o = obj(spec)
    causes = apply_structural_schema(root(spec_schema), o, None)
    return o, [dict(c) for c in causes]


def one_field(schema: dict[str, Any], value: Any) -> list[dict[str, str]]:
    """Causes for `{spec: {f: value}}` with `f` described by `schema`."""
    return admit({"type": "object", "properties": {"f": schema}}, {"f": value})[1]


# --- pruning ---------------------------------------------------------------------------


def test_unknown_fields_are_pruned_at_every_level_and_root_fields_kept() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}},
    }
    o = {
        "apiVersion": "x.io/v1",
        "kind": "Thing",
        "metadata": {"name": "t", "labels": {"k": "v"}},
        "spec": {"a": {"b": "x", "junk": 1}, "junk": 2},
        "other": 3,
    }
    assert apply_structural_schema(root(schema), o, None) == []
    assert o == {
        "apiVersion": "x.io/v1",
        "kind": "Thing",
        "metadata": {"name": "t", "labels": {"k": "v"}},
        "spec": {"a": {"b": "x"}},
    }


def test_preserve_unknown_fields_keeps_unknowns_only_at_its_own_level() -> None:
    schema = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {"known": {"type": "object", "properties": {"x": {"type": "integer"}}}},
    }
    o, causes = admit(schema, {"extra": {"deep": [1]}, "known": {"x": 1, "drop": True}})
    assert causes == []
    assert o["spec"] == {"extra": {"deep": [1]}, "known": {"x": 1}}


def test_untyped_preserve_node_takes_any_json() -> None:
    free = {"x-kubernetes-preserve-unknown-fields": True}
    for value in ({"a": [1, {"b": None}]}, [1, "x"], "s", 3, 2.5, True):
        o, causes = admit({"type": "object", "properties": {"free": free}}, {"free": value})
        assert causes == []
        assert o["spec"]["free"] == value


def test_object_without_properties_is_emptied() -> None:
    o, causes = admit({"type": "object"}, {"a": 1})
    assert causes == [] and o["spec"] == {}


def test_embedded_resource_keeps_its_type_and_object_meta() -> None:
    schema = {
        "type": "object",
        "properties": {
            "template": {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "properties": {"data": {"type": "string"}},
            }
        },
    }
    template = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"}, "data": "d"}
    o, causes = admit(schema, {"template": {**template, "junk": 1}})
    assert causes == [] and o["spec"]["template"] == template


def test_items_and_map_values_are_pruned() -> None:
    schema = {
        "type": "object",
        "properties": {
            "list": {
                "type": "array",
                "items": {"type": "object", "properties": {"a": {"type": "string"}}},
            },
            "map": {
                "type": "object",
                "additionalProperties": {"type": "object", "properties": {"a": {"type": "string"}}},
            },
        },
    }
    o, causes = admit(schema, {"list": [{"a": "x", "b": 1}], "map": {"k": {"a": "y", "b": 2}}})
    assert causes == []
    assert o["spec"] == {"list": [{"a": "x"}], "map": {"k": {"a": "y"}}}


def test_non_nullable_null_is_dropped_and_nullable_null_kept() -> None:
    schema = {
        "type": "object",
        "properties": {
            "plain": {"type": "string"},
            "defaulted": {"type": "string", "default": "d"},
            "nullable": {"type": "string", "nullable": True, "default": "unused"},
        },
    }
    o, causes = admit(schema, {"plain": None, "defaulted": None, "nullable": None})
    assert causes == []
    assert o["spec"] == {"defaulted": "d", "nullable": None}


# --- defaulting ------------------------------------------------------------------------


NESTED_DEFAULTS = {
    "type": "object",
    "properties": {
        "mode": {"type": "string", "default": "Reconcile"},
        "child": {
            "type": "object",
            "properties": {
                "size": {"type": "integer", "default": 3},
                "leaf": {"type": "object", "properties": {"on": {"type": "boolean"}}},
            },
        },
        "withDefault": {
            "type": "object",
            "default": {},
            "properties": {"n": {"type": "integer", "default": 7}},
        },
        "items": {
            "type": "array",
            "items": {"type": "object", "properties": {"w": {"type": "integer", "default": 1}}},
        },
    },
}


def test_defaults_fill_absent_fields_and_nested_ones_only_under_present_parents() -> None:
    o, causes = admit(NESTED_DEFAULTS, {"items": [{}, {"w": 5}]})
    assert causes == []
    # `child` has no default: its own defaults do not conjure it; `withDefault` gets its n.
    assert o["spec"] == {
        "mode": "Reconcile",
        "withDefault": {"n": 7},
        "items": [{"w": 1}, {"w": 5}],
    }


def test_defaults_apply_inside_an_existing_parent_and_never_override() -> None:
    o, causes = admit(NESTED_DEFAULTS, {"mode": "Observe", "child": {"leaf": {}}})
    assert causes == []
    assert o["spec"]["mode"] == "Observe"
    assert o["spec"]["child"] == {"size": 3, "leaf": {}}


def test_default_values_are_copies() -> None:
    first, _ = admit(NESTED_DEFAULTS, {})
    first["spec"]["withDefault"]["n"] = 99
    second, _ = admit(NESTED_DEFAULTS, {})
    assert second["spec"]["withDefault"] == {"n": 7}


# --- types -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_name", "value", "actual"),
    [
        ("integer", 1.5, "number"),
        ("integer", True, "boolean"),
        ("integer", "1", "string"),
        ("number", "1.5", "string"),
        ("string", 1, "integer"),
        ("boolean", "true", "string"),
        ("object", [1], "array"),
        ("array", {"a": 1}, "object"),
    ],
)
def test_type_mismatch_is_type_invalid(type_name: str, value: Any, actual: str) -> None:
    schema: dict[str, Any] = {"type": type_name}
    if type_name == "array":
        schema["items"] = {"type": "string"}
    causes = one_field(schema, value)
    assert causes[0] == {
        "reason": "FieldValueTypeInvalid",
        "message": f'Invalid value: "{actual}": spec.f in body must be of type {type_name}: '
        f'"{actual}"',
        "field": "spec.f",
    }


@pytest.mark.parametrize(
    ("type_name", "value"),
    [("integer", 3), ("number", 3), ("number", 2.5), ("string", ""), ("boolean", False)],
)
def test_values_of_the_right_type_pass(type_name: str, value: Any) -> None:
    assert one_field({"type": type_name}, value) == []


def test_nullable_accepts_null_from_a_list_item_too() -> None:
    assert one_field({"type": "array", "items": {"type": "string", "nullable": True}}, [None]) == []
    causes = one_field({"type": "array", "items": {"type": "string"}}, [None])
    assert causes[0]["field"] == "spec.f[0]"
    assert causes[0]["reason"] == "FieldValueTypeInvalid"


def test_int_or_string() -> None:
    schema = {"x-kubernetes-int-or-string": True}
    assert one_field(schema, 3) == []
    assert one_field(schema, "30%") == []
    causes = one_field(schema, 1.5)
    assert causes[0]["reason"] == "FieldValueTypeInvalid"
    assert "must be of type integer,string" in causes[0]["message"]


def test_formats_int32_int64_are_accepted_loosely() -> None:
    assert one_field({"type": "integer", "format": "int32"}, 2**40) == []
    assert one_field({"type": "integer", "format": "int64"}, -5) == []


def test_date_time_format() -> None:
    schema = {"type": "string", "format": "date-time"}
    assert one_field(schema, "2025-04-01T12:00:00Z") == []
    causes = one_field(schema, "yesterday")
    assert causes == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "yesterday": spec.f in body must be of type date-time: '
            '"yesterday"',
            "field": "spec.f",
        }
    ]


# --- value keywords ----------------------------------------------------------------------


def test_enum_is_not_supported_with_the_apiserver_text() -> None:
    causes = one_field({"type": "string", "enum": ["A", "B"]}, "X")
    assert causes[0] == {
        "reason": "FieldValueNotSupported",
        "message": 'Unsupported value: "X": supported values: "A", "B"',
        "field": "spec.f",
    }
    assert one_field({"type": "string", "enum": ["A", "B"]}, "B") == []


def test_enum_does_not_confuse_booleans_and_numbers() -> None:
    causes = one_field({"type": "integer", "enum": [1, 2]}, 3)
    assert causes[0]["message"] == 'Unsupported value: 3: supported values: "1", "2"'
    assert one_field({"type": "integer", "enum": [1]}, 1) == []


@pytest.mark.parametrize(
    ("schema", "value", "detail"),
    [
        ({"minimum": 0}, -1, "should be greater than or equal to 0"),
        ({"minimum": 0, "exclusiveMinimum": True}, 0, "should be greater than 0"),
        ({"maximum": 100}, 101, "should be less than or equal to 100"),
        ({"maximum": 100, "exclusiveMaximum": True}, 100, "should be less than 100"),
        ({"multipleOf": 5}, 7, "should be a multiple of 5"),
    ],
)
def test_numeric_bounds(schema: dict[str, Any], value: int, detail: str) -> None:
    causes = one_field({"type": "integer", **schema}, value)
    assert causes == [
        {
            "reason": "FieldValueInvalid",
            "message": f"Invalid value: {value}: spec.f in body {detail}",
            "field": "spec.f",
        }
    ]


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"minimum": 0}, 0),
        ({"minimum": 0, "exclusiveMinimum": True}, 1),
        ({"maximum": 100}, 100),
        ({"maximum": 100, "exclusiveMaximum": True}, 99),
        ({"multipleOf": 5}, 10),
    ],
)
def test_numeric_bounds_inclusive_edges_pass(schema: dict[str, Any], value: int) -> None:
    assert one_field({"type": "integer", **schema}, value) == []


def test_number_bound_prints_floats_like_go() -> None:
    causes = one_field({"type": "number", "minimum": 0.5}, 0.25)
    assert causes[0]["message"] == (
        "Invalid value: 0.25: spec.f in body should be greater than or equal to 0.5"
    )


def test_pattern_is_searched_like_go_regexp() -> None:
    schema = {"type": "string", "pattern": "^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"}
    assert one_field(schema, "prod-1") == []
    assert one_field({"type": "string", "pattern": "b"}, "abc") == []  # unanchored
    causes = one_field(schema, "Prod")
    assert causes[0]["message"] == (
        "Invalid value: \"Prod\": spec.f in body should match '^[a-z0-9]([a-z0-9-]*[a-z0-9])?$'"
    )


def test_min_and_max_length_count_characters() -> None:
    causes = one_field({"type": "string", "minLength": 1}, "")
    assert causes[0] == {
        "reason": "FieldValueInvalid",
        "message": 'Invalid value: "": spec.f in body should be at least 1 chars long',
        "field": "spec.f",
    }
    assert one_field({"type": "string", "maxLength": 2}, "éé") == []
    causes = one_field({"type": "string", "maxLength": 2}, "abc")
    assert causes[0] == {
        "reason": "FieldValueTooLong",
        "message": "Too long: may not be more than 2 bytes",
        "field": "spec.f",
    }


def test_min_and_max_items() -> None:
    schema = {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2}
    assert one_field(schema, [1, 2]) == []
    causes = one_field(schema, [])
    assert causes[0]["reason"] == "FieldValueInvalid"
    assert causes[0]["message"] == "Invalid value: []: spec.f in body should have at least 1 items"
    causes = one_field(schema, [1, 2, 3])
    assert causes[0] == {
        "reason": "FieldValueTooMany",
        "message": "Too many: 3: must have at most 2 items",
        "field": "spec.f",
    }


def test_item_errors_name_the_index() -> None:
    causes = one_field({"type": "array", "items": {"type": "integer", "minimum": 0}}, [0, -1])
    assert [c["field"] for c in causes] == ["spec.f[1]"]


# --- objects ---------------------------------------------------------------------------


def test_required_fields() -> None:
    schema = {
        "type": "object",
        "required": ["a", "b"],
        "properties": {"a": {"type": "string"}, "b": {"type": "string", "default": "x"}},
    }
    causes = admit({"type": "object", "properties": {"o": schema}}, {"o": {}})[1]
    # b's default is applied before validation, as on a real server.
    assert causes[0] == {
        "reason": "FieldValueRequired",
        "message": "Required value",
        "field": "spec.o.a",
    }


def test_additional_properties_validate_map_values() -> None:
    schema = {"type": "object", "additionalProperties": {"type": "string"}}
    assert one_field(schema, {"K": "v", "L": ""}) == []
    causes = one_field(schema, {"K": 1})
    assert causes[0]["field"] == "spec.f.K"
    assert causes[0]["reason"] == "FieldValueTypeInvalid"


def test_list_type_map_rejects_duplicate_keys() -> None:
    schema = {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "type": "object",
            "required": ["type"],
            "properties": {"type": {"type": "string"}, "status": {"type": "string"}},
        },
    }
    assert one_field(schema, [{"type": "Ready"}, {"type": "Progressing"}]) == []
    causes = one_field(schema, [{"type": "Ready"}, {"type": "Ready", "status": "True"}])
    assert causes == [
        {
            "reason": "FieldValueDuplicate",
            "message": 'Duplicate value: {"type":"Ready"}',
            "field": "spec.f[1]",
        }
    ]


def test_list_type_set_rejects_duplicates() -> None:
    schema = {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
    assert one_field(schema, ["a", "b"]) == []
    assert one_field(schema, ["a", "a"])[0]["field"] == "spec.f[1]"


def test_errors_accumulate_across_fields() -> None:
    schema = {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string"},
            "n": {"type": "integer", "minimum": 1},
            "m": {"type": "string", "enum": ["A"]},
        },
    }
    _, causes = admit(schema, {"n": 0, "m": "B"})
    assert sorted(c["field"] for c in causes) == ["<nil>", "spec.m", "spec.n", "spec.name"]


def test_status_message_like_the_apiserver() -> None:
    one = [{"reason": "FieldValueRequired", "message": "Required value", "field": "spec.a"}]
    assert (
        status_message("Thing.x.io", "t", one)  # type: ignore[arg-type]
        == 'Thing.x.io "t" is invalid: spec.a: Required value'
    )
    two = [*one, {"reason": "FieldValueInvalid", "message": "Invalid value: 1: bad", "field": "b"}]
    assert (
        status_message("Thing.x.io", "t", two)  # type: ignore[arg-type]
        == 'Thing.x.io "t" is invalid: [spec.a: Required value, b: Invalid value: 1: bad]'
    )
