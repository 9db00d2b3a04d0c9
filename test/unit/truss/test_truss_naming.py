"""Config hash and deployment names, byte-compatible with the Go operator (docs/truss.md)."""

from __future__ import annotations

import random
import string
from typing import Any

import pytest

from baseten_operator.api.types import TrussConfig
from baseten_operator.truss.naming import (
    TRUSS_NAME_PATTERN,
    InvalidPushName,
    config_hash,
    deployment_name,
    go_json,
    go_json_string,
    image_name_and_tag,
    validate_push_names,
)

VECTOR_1_J = (
    '{"resources":{"accelerator":"H100:1"},'
    '"baseImage":{"image":"us-docker.pkg.dev/my-project/my-repo/vllm:0.16.0"},'
    '"dockerServer":{"predictEndpoint":"/v1/completions","serverPort":8000},'
    '"setupScript":{"configMapRef":{"name":"my-model-setup","key":"setup.sh"}}}'
)
VECTOR_2_J = (
    '{"pythonVersion":"py312","resources":{"accelerator":"H100:1","useGpu":true},'
    '"secrets":{"docker-registry-secret":""},"environmentVariables":{"DD_SITE":"us5.datadoghq.com"},'
    '"baseImage":{"image":"us-docker.pkg.dev/my-project/my-repo/vllm:0.16.0",'
    '"dockerAuth":{"authMethod":"GCP_SERVICE_ACCOUNT_JSON","secretName":"docker-registry-secret",'
    '"registry":"us-docker.pkg.dev"}},'
    '"dockerServer":{"startCommand":"sh -c \'bash /app/data/setup.sh\'",'
    '"readinessEndpoint":"/health",'
    '"livenessEndpoint":"/health","predictEndpoint":"/v1/completions","serverPort":8000},'
    '"runtime":{"predictConcurrency":256},"modelMetadata":{"tags":["openai-compatible"]},'
    '"setupScript":{"inline":"#!/bin/bash\\necho \\"done\\""}}'
)


def _minimal(**extra: Any) -> dict[str, Any]:
    return {"resources": {"accelerator": "L4"}, "baseImage": {"image": "img"}, **extra}


# --- the two reference vectors ---------------------------------------------------------


def test_vector_1_json_hash_and_name(simple_config: dict[str, Any], simple_script: str) -> None:
    assert go_json(simple_config) == VECTOR_1_J
    assert config_hash(simple_config, simple_script) == "e92a0daf"
    assert deployment_name(simple_config, simple_script) == "depl-vllm-0.16.0-e92a0daf"


def test_vector_2_json_hash_and_name(complete_config: dict[str, Any], complete_script: str) -> None:
    assert go_json(complete_config) == VECTOR_2_J
    assert config_hash(complete_config, complete_script) == "461d8dcb"
    assert deployment_name(complete_config, complete_script) == "depl-vllm-0.16.0-461d8dcb"


@pytest.mark.parametrize("fixture", ["simple_config", "complete_config"])
def test_pydantic_model_hashes_like_the_dict(fixture: str, request: pytest.FixtureRequest) -> None:
    config = request.getfixturevalue(fixture)
    model = TrussConfig.model_validate(config)
    assert go_json(model) == go_json(config)
    assert deployment_name(model, "x") == deployment_name(config, "x")


def test_key_order_of_the_input_does_not_matter(complete_config: dict[str, Any]) -> None:
    reversed_config = dict(reversed(list(complete_config.items())))
    assert go_json(reversed_config) == VECTOR_2_J


def test_setup_script_changes_the_hash(simple_config: dict[str, Any]) -> None:
    assert config_hash(simple_config, "a") != config_hash(simple_config, "b")
    assert config_hash(simple_config, "") == config_hash(simple_config, "")


# --- Go's omitempty / pointer / value-struct rules -------------------------------------


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        # Value structs and their non-omitempty fields are always written.
        ({}, '{"resources":{},"baseImage":{"image":""}}'),
        # omitempty strings, maps and lists vanish when empty.
        (
            _minimal(pythonVersion="", secrets={}, environmentVariables={}),
            '{"resources":{"accelerator":"L4"},"baseImage":{"image":"img"}}',
        ),
        # Pointer fields keep a present false / 0.
        (
            _minimal(
                resources={"accelerator": "L4", "useGpu": False},
                dockerServer={"noBuild": False, "serverPort": 0, "startCommand": ""},
                runtime={"predictConcurrency": 0},
            ),
            '{"resources":{"accelerator":"L4","useGpu":false},"baseImage":{"image":"img"},'
            '"dockerServer":{"noBuild":false,"serverPort":0},"runtime":{"predictConcurrency":0}}',
        ),
        # A present empty object is written as {}.
        (
            _minimal(dockerServer={}, runtime={}, modelMetadata={"tags": []}, setupScript={}),
            '{"resources":{"accelerator":"L4"},"baseImage":{"image":"img"},"dockerServer":{},'
            '"runtime":{},"modelMetadata":{},"setupScript":{}}',
        ),
        # dockerAuth and configMapRef fields are always written; inline is a *string.
        (
            _minimal(
                baseImage={"image": "img", "dockerAuth": {}},
                setupScript={"configMapRef": {}, "inline": ""},
            ),
            '{"resources":{"accelerator":"L4"},"baseImage":{"image":"img","dockerAuth":'
            '{"authMethod":"","secretName":"","registry":""}},'
            '"setupScript":{"configMapRef":{"name":"","key":""},"inline":""}}',
        ),
        # None is absence.
        (
            _minimal(pythonVersion=None, dockerServer=None, modelMetadata=None),
            '{"resources":{"accelerator":"L4"},"baseImage":{"image":"img"}}',
        ),
    ],
)
def test_go_omitempty_rules(config: dict[str, Any], expected: str) -> None:
    assert go_json(config) == expected


def test_maps_are_sorted_by_utf8_bytes() -> None:
    config = _minimal(environmentVariables={"é": "1", "z": "2", "Z": "3", "a": "4", "_": "5"})
    assert go_json(config).endswith(
        '"environmentVariables":{"Z":"3","_":"5","a":"4","z":"2","é":"1"},'
        '"baseImage":{"image":"img"}}'
    )


def test_example_model_input_is_sorted_at_every_level_with_go_numbers() -> None:
    example = {
        "prompt": "hi",
        "b": {"z": 1, "a": [{"y": True, "x": None}, 0.5, 1.0, 1e21, 1.5e-7, -3]},
        "a": [],
    }
    config = _minimal(modelMetadata={"exampleModelInput": example, "tags": ["t"]})
    assert go_json(config).endswith(
        '"modelMetadata":{"exampleModelInput":{"a":[],"b":{"a":[{"x":null,"y":true},0.5,1,'
        '1e+21,1.5e-7,-3],"z":1},"prompt":"hi"},"tags":["t"]}}'
    )


@pytest.mark.parametrize(
    ("example", "encoded"), [({}, "{}"), ([], "[]"), ("", '""'), (0, "0"), (False, "false")]
)
def test_a_present_example_model_input_is_written_even_when_empty(
    example: Any, encoded: str
) -> None:
    config = _minimal(modelMetadata={"exampleModelInput": example})
    assert go_json(config).endswith(f'"modelMetadata":{{"exampleModelInput":{encoded}}}}}')


# --- Go string escaping ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", '"plain"'),
        ('quote " and \\ backslash', '"quote \\" and \\\\ backslash"'),
        ("\n\r\t\b\f", '"\\n\\r\\t\\b\\f"'),
        ("\x00\x01\x1f", '"\\u0000\\u0001\\u001f"'),
        ("\x7f", '"\x7f"'),
        ("<a href='x'>&</a>", "\"\\u003ca href='x'\\u003e\\u0026\\u003c/a\\u003e\""),
        ("line\u2028para\u2029", '"line\\u2028para\\u2029"'),
        ("héllo 日本 🚀", '"héllo 日本 🚀"'),
        ("lone \ud800 surrogate", '"lone \\ufffd surrogate"'),
        ("/slash/", '"/slash/"'),
    ],
)
def test_go_string_escaping(text: str, expected: str) -> None:
    assert go_json_string(text) == expected


def test_escaping_applies_to_keys_values_and_the_script_is_raw_utf8() -> None:
    config = _minimal(secrets={"<k>": "v&"}, dockerServer={"startCommand": "a\u2028b"})
    encoded = go_json(config)
    assert '"secrets":{"\\u003ck\\u003e":"v\\u0026"}' in encoded
    assert '"startCommand":"a\\u2028b"' in encoded
    # Non-ASCII in the script is hashed as its UTF-8 bytes.
    assert config_hash(config, "é") != config_hash(config, "e")


# --- the Go operator's newer vectors (CPU-only resources) -----------------------------------


def test_go_next_vectors_keep_gpu_names_and_hash_cpu_only_configs() -> None:
    with_script = {"resources": {"accelerator": "H100:2"}, "baseImage": {"image": "test:latest"}}
    assert go_json(with_script) == (
        '{"resources":{"accelerator":"H100:2"},"baseImage":{"image":"test:latest"}}'
    )
    assert config_hash(with_script, "echo hello") == "60c81d3c"
    gpu = {
        "pythonVersion": "py312",
        "resources": {"accelerator": "H100:1", "useGpu": True},
        "baseImage": {"image": "us-docker.pkg.dev/img:v6"},
    }
    assert config_hash(gpu, "") == "f88ab883"
    cpu_only = {
        "resources": {"cpu": "2", "memory": "4Gi", "useGpu": False},
        "baseImage": {"image": "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.29.0"},
    }
    assert go_json(cpu_only) == (
        '{"resources":{"useGpu":false,"cpu":"2","memory":"4Gi"},'
        '"baseImage":{"image":"public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.29.0"}}'
    )
    assert config_hash(cpu_only, "") == "9cb42d46"
    assert deployment_name(cpu_only, "") == "depl-vllm-cpu-release-repo-v0.29.0-9cb42d46"


def test_cpu_and_memory_change_the_hash() -> None:
    base = {"resources": {"cpu": "2"}, "baseImage": {"image": "img"}}
    more_cpu = {"resources": {"cpu": "4"}, "baseImage": {"image": "img"}}
    with_memory = {"resources": {"cpu": "2", "memory": "8Gi"}, "baseImage": {"image": "img"}}
    assert len({config_hash(c, "") for c in (base, more_cpu, with_memory)}) == 3


def test_images_pinned_only_by_digest_differ_by_hash_not_by_name() -> None:
    first = {"resources": {"cpu": "1"}, "baseImage": {"image": "r.io/vllm@sha256:" + "a" * 64}}
    second = {"resources": {"cpu": "1"}, "baseImage": {"image": "r.io/vllm@sha256:" + "b" * 64}}
    names = {deployment_name(first, ""), deployment_name(second, "")}
    assert len(names) == 2
    assert all(name.startswith("depl-vllm-latest-") for name in names)


# --- image name and tag ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("us-docker.pkg.dev/my-project/my-repo/vllm:0.16.0", ("vllm", "0.16.0")),
        ("nginx", ("nginx", "latest")),
        ("nginx:1.25", ("nginx", "1.25")),
        ("library/nginx", ("nginx", "latest")),
        ("localhost:5000/vllm", ("vllm", "latest")),
        ("localhost:5000/team/vllm:v1", ("vllm", "v1")),
        ("repo/vllm@sha256:0123456789abcdef0123456789", ("vllm", "latest")),
        ("repo/vllm:1.0@sha256:0123456789abcdef", ("vllm", "1.0")),
        ("localhost:5000/vllm@sha256:abcdef", ("vllm", "latest")),
        ("r.io/vllm:0.11.2.1@sha256:abcdef", ("vllm", "0.11.2.1")),
        ("", ("", "")),
    ],
)
def test_image_name_and_tag(image: str, expected: tuple[str, str]) -> None:
    assert image_name_and_tag(image) == expected


def test_empty_image_gives_depl_hash() -> None:
    config = {"resources": {"accelerator": "L4"}, "baseImage": {"image": ""}}
    assert deployment_name(config, "") == f"depl-{config_hash(config, '')}"


def test_digest_and_port_images_give_names_truss_accepts() -> None:
    for image in ("localhost:5000/vllm", "r.io/vllm@sha256:" + "a" * 64):
        name = deployment_name({"resources": {}, "baseImage": {"image": image}}, "")
        assert TRUSS_NAME_PATTERN.match(name), name
        assert name.startswith("depl-vllm-")


def _random_image(rng: random.Random) -> str:
    alphabet = string.ascii_letters + string.digits + "._-:/@+ é<>\"'\\"
    if rng.random() < 0.3:  # anything at all
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
    host = rng.choice(
        ["", "docker.io/", "localhost:5000/", "us-docker.pkg.dev/p/", "10.0.0.1:443/"]
    )
    path = "/".join(
        "".join(rng.choice(string.ascii_lowercase + "._-") for _ in range(rng.randint(1, 8)))
        for _ in range(rng.randint(1, 3))
    )
    tag = rng.choice(["", ":latest", ":0.16.0", ":v1_rc-2", ":"])
    digest = rng.choice(
        ["", "@sha256:" + "".join(rng.choice("0123456789abcdef") for _ in range(64))]
    )
    return host + path + tag + digest


def test_every_produced_name_matches_truss_regex() -> None:
    rng = random.Random(20260101)
    for _ in range(3000):
        image = _random_image(rng)
        name = deployment_name({"resources": {}, "baseImage": {"image": image}}, "")
        assert TRUSS_NAME_PATTERN.match(name), (image, name)


def test_names_match_the_reference_where_the_reference_is_valid() -> None:
    """Reference rule: tag after the last ':', name = last '/' segment, 'latest' without tag."""
    rng = random.Random(7)
    for _ in range(500):
        segments = [
            "".join(rng.choice(string.ascii_lowercase + "-.") for _ in range(rng.randint(1, 6)))
            for _ in range(rng.randint(1, 4))
        ]
        tag = rng.choice(["", "1.0", "v2-rc_1", "latest"])
        image = "/".join(segments) + (f":{tag}" if tag else "")
        ref, colon, ref_tag = image.rpartition(":")
        expected = (ref.rsplit("/", 1)[-1], ref_tag) if colon else (segments[-1], "latest")
        assert image_name_and_tag(image) == expected


# --- names pasted into GraphQL -----------------------------------------------------------


@pytest.mark.parametrize("model_name", ["my-llm-model", "Model 1.0 (prod)", "模型", "a_b"])
def test_valid_push_names_pass(model_name: str) -> None:
    validate_push_names(model_name, "production")
    validate_push_names(model_name, None)


@pytest.mark.parametrize(
    ("model_name", "environment", "field"),
    [
        ('my"model', "production", "modelName"),
        ("my'model", "production", "modelName"),
        ("back\\slash", "production", "modelName"),
        ("brace{", "production", "modelName"),
        ("brace}", "production", "modelName"),
        ("new\nline", "production", "modelName"),
        ("tab\there", "production", "modelName"),
        ("sep\u2028", "production", "modelName"),
        ("ok", 'prod"', "environment.name"),
        ("ok", "prod\x00", "environment.name"),
    ],
)
def test_unsafe_push_names_are_rejected(model_name: str, environment: str, field: str) -> None:
    with pytest.raises(InvalidPushName) as caught:
        validate_push_names(model_name, environment)
    assert str(caught.value).startswith(field + " ")
    assert "cannot be sent to Baseten" in str(caught.value)


@pytest.mark.parametrize("model_name", ["", "   "])
def test_empty_model_name_is_rejected(model_name: str) -> None:
    with pytest.raises(InvalidPushName, match="modelName must not be empty"):
        validate_push_names(model_name, "production")
