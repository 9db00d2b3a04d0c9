"""x-kubernetes-validations: CEL rules with self/oldSelf, messages and reasons."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from baseten_operator.api.crd import root_schema
from baseten_operator.sim.kube import cel
from baseten_operator.sim.kube.schema import apply_structural_schema, rule_compile_causes

PROPS = {
    "a": {"type": "string"},
    "b": {"type": "string"},
    "n": {"type": "integer"},
    "tags": {"type": "array", "items": {"type": "string"}},
}


def spec_with_rules(*rules: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": copy.deepcopy(PROPS),
                "x-kubernetes-validations": list(rules),
            }
        },
    }


def run(
    schema: dict[str, Any], spec: dict[str, Any], old_spec: dict[str, Any] | None = None
) -> list[Any]:
    old = None if old_spec is None else {"spec": old_spec}
    return list(apply_structural_schema(schema, {"spec": spec}, old))


@pytest.mark.parametrize(
    ("rule", "passing", "failing"),
    [
        ("has(self.a) != has(self.b)", {"a": "x"}, {"a": "x", "b": "y"}),
        ("size(self.tags) <= 2", {"tags": ["1", "2"]}, {"tags": ["1", "2", "3"]}),
        ("size(self.a) > 0", {"a": "x"}, {"a": ""}),
        ("self.n == 3", {"n": 3}, {"n": 4}),
        ("has(self.a) && self.n > 0 || !has(self.b)", {"a": "x", "n": 1}, {"b": "y", "n": 1}),
        ("(has(self.a) ? 1 : 0) + (has(self.b) ? 1 : 0) == 1", {"b": "y"}, {}),
        ("!has(self.n) || self.n % 2 == 0", {"n": 2}, {"n": 3}),
    ],
)
def test_rule_operators(rule: str, passing: dict[str, Any], failing: dict[str, Any]) -> None:
    schema = spec_with_rules({"rule": rule})
    assert run(schema, passing) == []
    assert run(schema, failing) == [
        {
            "reason": "FieldValueInvalid",
            "message": f'Invalid value: "object": failed rule: {rule}',
            "field": "spec",
        }
    ]


def test_message_replaces_the_default_text() -> None:
    schema = spec_with_rules({"rule": "has(self.a)", "message": "  a is needed "})
    assert run(schema, {})[0]["message"] == 'Invalid value: "object": a is needed'


def test_message_expression_wins_and_falls_back_when_empty() -> None:
    rule = {
        "rule": "self.n < 3",
        "message": "static",
        "messageExpression": "'n is ' + string(self.n)",
    }
    assert run(spec_with_rules(rule), {"n": 5})[0]["message"] == 'Invalid value: "object": n is 5'
    rule["messageExpression"] = "''"
    assert run(spec_with_rules(rule), {"n": 5})[0]["message"] == 'Invalid value: "object": static'


def test_reason_and_field_path() -> None:
    rule = {
        "rule": "has(self.a)",
        "reason": "FieldValueRequired",
        "fieldPath": ".a",
        "message": "set a",
    }
    assert run(spec_with_rules(rule), {}) == [
        {"reason": "FieldValueRequired", "message": "Required value: set a", "field": "spec.a"}
    ]
    rule = {"rule": "!has(self.b)", "reason": "FieldValueForbidden", "message": "no b"}
    assert run(spec_with_rules(rule), {"b": "x"}) == [
        {"reason": "FieldValueForbidden", "message": "Forbidden: no b", "field": "spec"}
    ]


def test_rules_on_scalar_nodes_see_the_value_as_self() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "name": {
                        "type": "string",
                        "x-kubernetes-validations": [{"rule": "self.startsWith('bm-')"}],
                    }
                },
            }
        },
    }
    assert run(schema, {"name": "bm-1"}) == []
    assert run(schema, {"name": "x"})[0] == {
        "reason": "FieldValueInvalid",
        "message": "Invalid value: \"string\": failed rule: self.startsWith('bm-')",
        "field": "spec.name",
    }


def test_rules_are_not_run_on_absent_fields() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "x-kubernetes-validations": [{"rule": "false"}]}
                },
            }
        },
    }
    assert run(schema, {}) == []


def test_transition_rules_only_run_on_update() -> None:
    schema = spec_with_rules({"rule": "self.a == oldSelf.a", "message": "a is immutable"})
    assert run(schema, {"a": "x"}) == []  # create: no oldSelf
    assert run(schema, {"a": "x"}, {"a": "x"}) == []
    assert (
        run(schema, {"a": "y"}, {"a": "x"})[0]["message"]
        == 'Invalid value: "object": a is immutable'
    )


def test_an_update_is_not_held_to_the_rules_of_values_it_leaves_unchanged() -> None:
    # Ratcheting: the stored spec breaks a rule added after it was written.
    schema = spec_with_rules({"rule": "self.n < 3", "message": "n too big"})
    stored = {"a": "x", "n": 5}
    assert run(schema, dict(stored), stored) == []
    changed = run(schema, {"a": "y", "n": 5}, stored)
    assert [c["message"] for c in changed] == ['Invalid value: "object": n too big']


def test_unchanged_children_of_a_changed_value_keep_their_ratchet() -> None:
    schema = spec_with_rules({"rule": "self.a != 'bad'", "message": "a is bad"})
    schema["properties"]["spec"]["properties"]["n"]["x-kubernetes-validations"] = [
        {"rule": "self < 3", "message": "n too big"}
    ]
    stored = {"a": "x", "n": 5}
    # The spec changed (its rule runs and holds); n did not (its rule is not enforced).
    assert run(schema, {"a": "y", "n": 5}, stored) == []
    assert [c["field"] for c in run(schema, {"a": "y", "n": 6}, stored)] == ["spec.n"]
    assert [c["field"] for c in run(schema, {"a": "bad", "n": 5}, stored)] == ["spec"]


def test_a_status_write_does_not_run_the_specs_rules() -> None:
    schema = spec_with_rules({"rule": "false", "message": "never"})
    schema["properties"]["status"] = {"type": "object", "properties": {"s": {"type": "string"}}}
    stored = {"spec": {"a": "x"}, "status": {"s": "old"}}
    written = {"spec": {"a": "x"}, "status": {"s": "new"}}
    assert apply_structural_schema(schema, written, stored) == []


def test_old_values_correlate_through_list_map_keys() -> None:
    item = {
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string"}, "v": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.v >= oldSelf.v", "message": "v only grows"}],
    }
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": item,
                    }
                },
            }
        },
    }
    old = {"items": [{"name": "a", "v": 2}, {"name": "b", "v": 5}]}
    # Reordered, one grown, one new: nothing shrank.
    assert (
        run(
            schema,
            {"items": [{"name": "b", "v": 6}, {"name": "c", "v": 0}, {"name": "a", "v": 2}]},
            old,
        )
        == []
    )
    causes = run(schema, {"items": [{"name": "b", "v": 4}]}, old)
    assert [(c["field"], c["message"]) for c in causes] == [
        ("spec.items[0]", 'Invalid value: "object": v only grows')
    ]


def test_evaluation_error_is_reported_with_the_rule() -> None:
    schema = spec_with_rules({"rule": "self.a == 'x'"})
    causes = run(schema, {"b": "y"})
    assert len(causes) == 1
    assert causes[0]["field"] == "spec"
    assert causes[0]["message"].startswith('Invalid value: "object": ')
    assert causes[0]["message"].endswith("evaluating rule: self.a == 'x'")


def test_non_boolean_rule_is_an_error() -> None:
    causes = run(spec_with_rules({"rule": "self.n"}), {"n": 1})
    assert "not bool" in causes[0]["message"]


def test_blocking_schema_errors_skip_the_rules() -> None:
    schema = spec_with_rules({"rule": "false", "message": "never"})
    schema["properties"]["spec"]["properties"]["n"]["enum"] = [1]
    causes = run(schema, {"n": 2})
    assert [c["reason"] for c in causes] == ["FieldValueNotSupported", "FieldValueInvalid"]
    assert causes[1]["field"] == "<nil>"
    assert "some validation rules were not checked" in causes[1]["message"]


def test_non_blocking_schema_errors_still_run_the_rules() -> None:
    schema = spec_with_rules({"rule": "false", "message": "never"})
    schema["properties"]["spec"]["properties"]["n"]["minimum"] = 5
    causes = run(schema, {"n": 2})
    assert [c["field"] for c in causes] == ["spec.n", "spec"]


def test_programs_are_compiled_once_per_rule_text() -> None:
    first = cel.compile_rule("has(self.cacheProbe)")
    assert cel.compile_rule("has(self.cacheProbe)") is first
    assert first.is_transition is False
    assert cel.compile_rule("self == oldSelf").is_transition is True


def test_syntax_error_is_a_rule_error() -> None:
    with pytest.raises(cel.RuleError):
        cel.compile_rule("self.a ==")


def test_rule_compile_causes_name_the_broken_rule() -> None:
    schema = spec_with_rules({"rule": "has(self.a)"})
    assert rule_compile_causes(schema) == []
    schema["properties"]["spec"]["properties"]["tags"]["items"]["x-kubernetes-validations"] = [
        {"rule": "self ==", "message": "m"},
        {"rule": "true", "messageExpression": "'a' +"},
    ]
    causes = rule_compile_causes(schema)
    assert [c["field"] for c in causes] == [
        "openAPIV3Schema.properties[spec].properties[tags].items.x-kubernetes-validations[0].rule",
        "openAPIV3Schema.properties[spec].properties[tags].items"
        ".x-kubernetes-validations[1].messageExpression",
    ]
    assert all("compilation failed" in c["message"] for c in causes)


def test_generated_crd_rules_compile() -> None:
    assert rule_compile_causes(root_schema()) == []
