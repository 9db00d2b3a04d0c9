"""Pieces of the simulator's wire protocols: GraphQL parsing, S3 framing, rate limits, faults."""

from __future__ import annotations

import io
import re
import tarfile

import pytest

from baseten_operator.runtime.clock import FakeClock
from baseten_operator.sim.baseten.faults import FaultInjector
from baseten_operator.sim.baseten.graphql import GraphQLError, parse_root_field
from baseten_operator.sim.baseten.ratelimit import Limit, RateLimiter
from baseten_operator.sim.baseten.s3 import S3Store, decode_aws_chunked, unpack_truss


def test_parses_truss_mutation_with_literals_and_variables() -> None:
    query = """
        mutation ($trussUserEnv: String, $userDeployMetadata: JSONString) {
            create_model_version_from_truss(
                model_id: "abc1234"
                s3_key: "models/k.tgz"
                config: "eyJhIjogMX0="
                scale_down_old_production: true
                preserve_env_instance_type: false
                deploy_timeout_minutes: 30
                name: "v-1.\\"q\\""
                truss_user_env: $trussUserEnv
                user_deploy_metadata: $userDeployMetadata
            ) { model_version { id oracle { id hostname } } }
        }
    """
    field = parse_root_field(query, {"trussUserEnv": "{}", "userDeployMetadata": None})
    assert field.name == "create_model_version_from_truss"
    assert field.args == {
        "model_id": "abc1234",
        "s3_key": "models/k.tgz",
        "config": "eyJhIjogMX0=",
        "scale_down_old_production": True,
        "preserve_env_instance_type": False,
        "deploy_timeout_minutes": 30,
        "name": 'v-1."q"',
        "truss_user_env": "{}",
        "user_deploy_metadata": None,
    }


@pytest.mark.parametrize(
    ("query", "name", "args"),
    [
        ("{ models(all: true) { id, name team { id name } } }", "models", {"all": True}),
        ("query Teams { teams { id name default } }", "teams", {}),
        ("{ model_s3_upload_credentials { s3_key } }", "model_s3_upload_credentials", {}),
        (
            '{ m: models(team_id: "t", tags: [A, B]) { id } }',
            "models",
            {"team_id": "t", "tags": ["A", "B"]},
        ),
    ],
)
def test_parses_root_field(query: str, name: str, args: dict) -> None:
    field = parse_root_field(query)
    assert (field.name, field.args) == (name, args)


def test_rejects_garbage() -> None:
    with pytest.raises(GraphQLError):
        parse_root_field("{ models(all: ")


def test_decodes_aws_chunked_framing() -> None:
    body = b"5;chunk-signature=ab\r\nhello\r\n6\r\n world\r\n0\r\nx-amz-checksum-crc32:AAAA\r\n\r\n"
    assert decode_aws_chunked(body) == b"hello world"


def test_unpacks_gzipped_truss_archive() -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in (("./config.yaml", "a: 1\n"), ("data/setup.sh", "echo hi\n")):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert unpack_truss(buffer.getvalue()) == {
        "config.yaml": "a: 1\n",
        "data/setup.sh": "echo hi\n",
    }


def test_rate_limit_per_key_and_endpoint_in_sim_time() -> None:
    clock = FakeClock()
    limiter = RateLimiter(clock, time_scale=0.5)
    assert all(limiter.check("k", "retry") is None for _ in range(10))
    clock.advance(10)  # 20 simulated seconds into the minute
    assert limiter.check("k", "retry") == 40
    assert limiter.check("other-key", "retry") is None
    assert limiter.check("k", "activate") is None
    clock.advance(20)  # the window (60 s simulated = 30 s of clock) has passed
    assert limiter.check("k", "retry") is None


def test_rate_limits_can_be_overridden_and_disabled() -> None:
    clock = FakeClock()
    limiter = RateLimiter(clock)
    limiter.configure(overrides={"get_model": Limit(1, 10.0)})
    assert limiter.check("k", "get_model") is None
    assert limiter.check("k", "get_model") == 10
    limiter.configure(enabled=False)
    assert limiter.check("k", "get_model") is None


def test_faults_are_consumed_in_order_and_match_wildcards() -> None:
    faults = FaultInjector()
    faults.inject("promote", "5xx", 2, status=502)
    faults.inject("*", "drop", 1)
    first = faults.take(["promote"])
    assert first is not None and (first.kind, first.status) == ("5xx", 502)
    assert faults.take(["get_model"]).kind == "drop"  # type: ignore[union-attr]
    assert faults.take(["promote"]).kind == "5xx"  # type: ignore[union-attr]
    assert faults.take(["promote"]) is None
    with pytest.raises(ValueError):
        faults.inject("promote", "explode", 1)


def test_s3_multipart_upload_assembles_parts_in_order() -> None:
    store = S3Store()
    started = store.handle("POST", "/bucket/models/k.tgz", "uploads", {}, b"")
    upload_id = re.search(rb"<UploadId>(\w+)</UploadId>", started.body).group(1).decode()  # type: ignore[union-attr]
    for number, data in ((2, b"world"), (1, b"hello ")):
        part = store.handle(
            "PUT", "/bucket/models/k.tgz", f"partNumber={number}&uploadId={upload_id}", {}, data
        )
        assert part.status == 200 and part.headers["ETag"].startswith('"')
    done = store.handle("POST", "/bucket/models/k.tgz", f"uploadId={upload_id}", {}, b"<xml/>")
    assert done.status == 200
    assert store.object("models/k.tgz") == b"hello world"
    unknown = store.handle("PUT", "/bucket/k", "partNumber=1&uploadId=nope", {}, b"x")
    assert unknown.status == 404
