"""The cluster configuration: kubeconfig fields, the pod's service account, and the
`kubernetes` package's loader for exec users, checked by reaching scripted (TLS) servers."""

from __future__ import annotations

import base64
import json
import ssl
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from baseten_operator.runtime import kubeconfig
from baseten_operator.runtime.client import KubeClient
from baseten_operator.runtime.errors import ConnectionFailed
from baseten_operator.runtime.kubeconfig import KubeConfigError, context_namespace, in_cluster
from baseten_operator.runtime.resource import CONFIGMAPS
from baseten_operator.runtime.tlscert import self_signed_pem
from testsupport.scripted_http import ScriptedServer, every_request

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def write_kubeconfig(path: Path, server: str, user: dict[str, Any], **cluster: Any) -> str:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server, **cluster}}],
                "users": [{"name": "u", "user": user}],
                "contexts": [
                    {"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "team"}}
                ],
                "current-context": "x",
            }
        )
    )
    return str(path)


def sent_headers(server: ScriptedServer) -> dict[str, str]:
    head = server.requests[-1][0].decode().split("\r\n")[1:]
    return {
        name.lower(): value.strip() for name, _, value in (line.partition(":") for line in head)
    }


@pytest.fixture
def tls_server(
    serve: Callable[..., ScriptedServer], tmp_path_factory: pytest.TempPathFactory
) -> tuple[ScriptedServer, bytes, Path]:
    """A TLS server for 127.0.0.1 and api.test, its certificate PEM, and its directory."""
    cert_pem, key_pem = self_signed_pem(("api.test",))
    directory = tmp_path_factory.mktemp("server")
    (directory / "tls.crt").write_bytes(cert_pem)
    (directory / "tls.key").write_bytes(key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(directory / "tls.crt", directory / "tls.key")
    return serve(every_request(OK), context), cert_pem, directory


def test_a_token_reaches_a_server_trusted_by_its_ca_data(
    tls_server: tuple[ScriptedServer, bytes, Path], tmp_path: Path
) -> None:
    server, cert_pem, _ = tls_server
    path = write_kubeconfig(
        tmp_path / "config", server.url, {"token": "t0"},
        **{"certificate-authority-data": b64(cert_pem)},
    )  # fmt: skip
    assert KubeClient.from_kubeconfig(path).get(CONFIGMAPS, "a", "ns") == {}
    assert sent_headers(server)["authorization"] == "Bearer t0"
    assert context_namespace(path) == "team"


def test_the_server_certificate_is_verified_unless_told_not_to(
    tls_server: tuple[ScriptedServer, bytes, Path], tmp_path: Path
) -> None:
    server, cert_pem, directory = tls_server
    untrusted = write_kubeconfig(tmp_path / "a", server.url, {})  # certifi's CAs only
    with pytest.raises(ConnectionFailed, match="CERTIFICATE_VERIFY_FAILED"):
        KubeClient.from_kubeconfig(untrusted).get(CONFIGMAPS, "a", "ns")
    wrong_name = write_kubeconfig(
        tmp_path / "b", server.url, {},
        **{"certificate-authority": str(directory / "tls.crt"), "tls-server-name": "other.test"},
    )  # fmt: skip
    with pytest.raises(ConnectionFailed, match="other.test"):
        KubeClient.from_kubeconfig(wrong_name).get(CONFIGMAPS, "a", "ns")
    right_name = write_kubeconfig(
        tmp_path / "c", server.url, {},
        **{"certificate-authority": str(directory / "tls.crt"), "tls-server-name": "api.test"},
    )  # fmt: skip
    assert KubeClient.from_kubeconfig(right_name).get(CONFIGMAPS, "a", "ns") == {}
    skip = write_kubeconfig(tmp_path / "d", server.url, {}, **{"insecure-skip-tls-verify": True})
    assert KubeClient.from_kubeconfig(skip).get(CONFIGMAPS, "a", "ns") == {}


@pytest.mark.parametrize("inline", [True, False], ids=["data", "relative-files"])
def test_a_client_certificate_is_presented(
    serve: Callable[..., ScriptedServer], tmp_path: Path, inline: bool
) -> None:
    server_cert, server_key = self_signed_pem()
    client_cert, client_key = self_signed_pem(("operator",))
    (tmp_path / "server.crt").write_bytes(server_cert)
    (tmp_path / "server.key").write_bytes(server_key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "server.crt", tmp_path / "server.key")
    context.verify_mode = ssl.CERT_REQUIRED  # no client certificate, no connection
    context.load_verify_locations(cadata=client_cert.decode())
    server = serve(every_request(OK), context)
    if inline:
        user = {"client-certificate-data": b64(client_cert), "client-key-data": b64(client_key)}
    else:
        (tmp_path / "certs").mkdir()
        (tmp_path / "certs" / "client.crt").write_bytes(client_cert)
        (tmp_path / "certs" / "client.key").write_bytes(client_key)
        user = {"client-certificate": "certs/client.crt", "client-key": "certs/client.key"}
    path = write_kubeconfig(
        tmp_path / "config", server.url, user,
        **{"certificate-authority-data": b64(server_cert)},
    )  # fmt: skip
    assert KubeClient.from_kubeconfig(path).get(CONFIGMAPS, "a", "ns") == {}
    assert "authorization" not in sent_headers(server)


def test_basic_auth_and_a_token_file_read_again_when_rotated(
    serve: Callable[..., ScriptedServer], tmp_path: Path
) -> None:
    server = serve(every_request(OK))
    basic = write_kubeconfig(tmp_path / "a", server.url, {"username": "ann", "password": "pw"})
    KubeClient.from_kubeconfig(basic).get(CONFIGMAPS, "a", "ns")
    assert sent_headers(server)["authorization"] == "Basic " + b64(b"ann:pw")
    (tmp_path / "token").write_text("t1\n")
    access = kubeconfig.from_kubeconfig(
        write_kubeconfig(tmp_path / "b", server.url, {"tokenFile": "token"})
    )
    assert access.credentials.changes
    assert access.credentials.headers() == {"Authorization": "Bearer t1"}
    (tmp_path / "token").write_text("t2")
    assert access.credentials.headers() == {"Authorization": "Bearer t2"}


def test_the_proxy_is_the_kubeconfigs_else_the_environments(tmp_path: Path) -> None:
    server = "https://api.test:6443/prefix"
    environ = {"HTTPS_PROXY": "http://env-proxy:3128"}
    plain = write_kubeconfig(tmp_path / "a", server, {})
    access = kubeconfig.from_kubeconfig(plain, environ=environ)
    assert access.proxy is not None and access.proxy.url == "http://env-proxy:3128"
    assert access.server == server
    bypassed = kubeconfig.from_kubeconfig(plain, environ={**environ, "NO_PROXY": ".test"})
    assert bypassed.proxy is None
    named = write_kubeconfig(tmp_path / "b", server, {}, **{"proxy-url": "http://u:p@kc:8080"})
    proxy = kubeconfig.from_kubeconfig(named, environ=environ).proxy
    assert proxy is not None and proxy.url == "http://kc:8080"
    assert proxy.headers == {"Proxy-Authorization": "Basic " + b64(b"u:p")}


def test_an_exec_user_goes_through_the_kubernetes_loader(
    serve: Callable[..., ScriptedServer], tmp_path: Path
) -> None:
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "kind": "ExecCredential",
        "status": {"token": "from-exec"},
    }
    exec_user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": sys.executable,
            "args": ["-c", f"print({json.dumps(json.dumps(credential))})"],
        }
    }
    server = serve(every_request(OK))
    path = write_kubeconfig(tmp_path / "config", server.url, exec_user)
    client = KubeClient.from_kubeconfig(path)
    assert isinstance(client.access.credentials, kubeconfig.LoaderCredentials)
    assert client.get(CONFIGMAPS, "a", "ns") == {}
    assert sent_headers(server)["authorization"] == "Bearer from-exec"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{", "is not YAML"),
        ("[1]", "is not a mapping"),
        ("clusters: []", "no context named and no current-context"),
        ("current-context: gone\ncontexts: []", "no entry named 'gone' in contexts"),
        (
            "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
            "clusters: [{name: c, cluster: {}}]",
            "has no http(s) server",
        ),
        (
            "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
            "clusters: [{name: c, cluster: {server: 'https://a.test', "
            "certificate-authority-data: '%%%'}}]\nusers: [{name: u, user: {}}]",
            "certificate-authority-data is not base64",
        ),
        (
            "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
            "clusters: [{name: c, cluster: {server: 'https://a.test'}}]\n"
            "users: [{name: u, user: {client-certificate: missing.crt}}]",
            "cannot read client-certificate",
        ),
        (
            "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
            "clusters: [{name: c, cluster: {server: 'https://a.test'}}]\n"
            "users: [{name: u, user: {tokenFile: missing-token}}]",
            "cannot read the token file",
        ),
    ],
    ids=[
        "yaml",
        "list",
        "no-context",
        "unknown-context",
        "no-server",
        "base64",
        "missing-file",
        "missing-token-file",
    ],
)
def test_a_kubeconfig_that_cannot_be_used_says_why(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "config"
    path.write_text(text)
    with pytest.raises(KubeConfigError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        kubeconfig.from_kubeconfig(str(path))


def test_a_kubeconfig_that_is_not_there_says_so(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match="cannot read the kubeconfig"):
        kubeconfig.from_kubeconfig(str(tmp_path / "absent"))


def test_in_a_pod_the_service_account_is_used(tmp_path: Path) -> None:
    cert_pem, _ = self_signed_pem()
    environ = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(KubeConfigError, match="cannot read the token file"):
        in_cluster(environ, tmp_path)
    (tmp_path / "token").write_text("sa-token")
    with pytest.raises(KubeConfigError, match="CA certificate"):
        in_cluster(environ, tmp_path)
    (tmp_path / "ca.crt").write_bytes(cert_pem)
    access = in_cluster(environ, tmp_path)
    assert access.server == "https://10.0.0.1:443"
    assert access.credentials.changes
    assert access.credentials.headers() == {"Authorization": "Bearer sa-token"}
    assert access.tls is not None and access.tls.verify_mode == ssl.CERT_REQUIRED
    ipv6 = in_cluster({**environ, "KUBERNETES_SERVICE_HOST": "fd00::1"}, tmp_path)
    assert ipv6.server == "https://[fd00::1]:443"
