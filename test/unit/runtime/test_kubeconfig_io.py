"""The cluster configuration: kubeconfig fields and lists, exec credential plugins, the
pod's service account, checked by reaching scripted (TLS) servers."""

from __future__ import annotations

import base64
import json
import os
import ssl
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from baseten_operator.runtime import execplugin, kubeconfig
from baseten_operator.runtime.client import KubeClient
from baseten_operator.runtime.errors import ConnectionFailed, Unauthorized
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


def exec_plugin(directory: Path, *answers: dict[str, Any]) -> dict[str, Any]:
    """A kubeconfig `exec` entry whose plugin prints the next of `answers` on each run
    (the last one from then on); an answer {"fail": words} exits 1 saying them."""
    (directory / "answers.json").write_text(json.dumps(answers))
    script = directory / "plugin.py"
    script.write_text(
        "import json, pathlib, sys\n"
        "here = pathlib.Path(__file__).parent\n"
        "runs = here / 'runs'\n"
        "n = int(runs.read_text()) if runs.exists() else 0\n"
        "runs.write_text(str(n + 1))\n"
        "answers = json.loads((here / 'answers.json').read_text())\n"
        "answer = answers[min(n, len(answers) - 1)]\n"
        "if 'fail' in answer:\n"
        "    sys.exit(answer['fail'])\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1',\n"
        "                  'kind': 'ExecCredential', 'status': answer}))\n"
    )
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(script)],
        }
    }


def plugin_runs(directory: Path) -> int:
    return int((directory / "runs").read_text())


UNAUTHORIZED = (
    b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: 35\r\n\r\n"
    b'{"kind":"Status","reason":"Unauth"}'
)


def by_token(good: str) -> Callable[[Any], None]:
    """A script answering 200 to `Bearer {good}` and 401 to anything else."""

    def script(peer: Any) -> None:
        while (request := peer.read_request()) is not None:
            peer.send(OK if f"Bearer {good}".encode() in request[0] else UNAUTHORIZED)

    return script


def test_an_exec_plugins_token_is_sent(
    serve: Callable[..., ScriptedServer], tmp_path: Path
) -> None:
    server = serve(every_request(OK))
    path = write_kubeconfig(tmp_path / "config", server.url, exec_plugin(tmp_path, {"token": "t"}))
    client = KubeClient.from_kubeconfig(path)
    assert isinstance(client.access.credentials, kubeconfig.PluginCredentials)
    assert client.get(CONFIGMAPS, "a", "ns") == {}
    assert sent_headers(server)["authorization"] == "Bearer t"


def test_a_401_runs_the_exec_plugin_again_and_retries_once(
    serve: Callable[..., ScriptedServer], tmp_path: Path
) -> None:
    # The first token was revoked before it expired: the server refuses it.
    server = serve(by_token("second"))
    user = exec_plugin(tmp_path, {"token": "first"}, {"token": "second"}, {"token": "third"})
    client = KubeClient.from_kubeconfig(write_kubeconfig(tmp_path / "config", server.url, user))
    assert client.get(CONFIGMAPS, "a", "ns") == {}
    assert plugin_runs(tmp_path) == 2
    assert [request[0].count(b"Bearer first") for request in server.requests] == [1, 0]
    # A server that refuses the renewed credentials too: one renewal per request, no loop.
    stubborn = serve(by_token("nobody"))
    client = KubeClient.from_kubeconfig(write_kubeconfig(tmp_path / "other", stubborn.url, user))
    with pytest.raises(Unauthorized):
        client.get(CONFIGMAPS, "a", "ns")
    assert len(stubborn.requests) == 2


def test_a_client_certificate_from_an_exec_plugin_is_renewed_when_refused(
    serve: Callable[..., ScriptedServer], tmp_path: Path
) -> None:
    server_cert, server_key = self_signed_pem(("127.0.0.1",))
    (tmp_path / "server.crt").write_bytes(server_cert)
    (tmp_path / "server.key").write_bytes(server_key)
    old_cert, old_key = self_signed_pem(("old-client",))
    new_cert, new_key = self_signed_pem(("new-client",))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "server.crt", tmp_path / "server.key")
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(cadata=old_cert.decode() + new_cert.decode())

    def script(peer: Any) -> None:
        # The API server authenticates the certificate per request: the rotated-out one
        # is refused.
        subject = dict(item[0] for item in peer.sock.getpeercert()["subject"])
        while peer.read_request() is not None:
            peer.send(OK if subject["commonName"] == "new-client" else UNAUTHORIZED)

    server = serve(script, context)
    user = exec_plugin(
        tmp_path,
        {"clientCertificateData": old_cert.decode(), "clientKeyData": old_key.decode()},
        {"clientCertificateData": new_cert.decode(), "clientKeyData": new_key.decode()},
    )
    path = write_kubeconfig(
        tmp_path / "config", server.url, user, **{"certificate-authority-data": b64(server_cert)}
    )
    assert KubeClient.from_kubeconfig(path).get(CONFIGMAPS, "a", "ns") == {}
    assert plugin_runs(tmp_path) == 2
    assert server.connections == 2  # the renewed certificate came on a new connection


def test_an_exec_plugin_that_fails_to_renew_fails_the_request_with_its_words(
    serve: Callable[..., ScriptedServer], tmp_path: Path
) -> None:
    expired = {"token": "old", "expirationTimestamp": "2020-01-01T00:00:00Z"}
    user = exec_plugin(tmp_path, expired, {"fail": "your session ended: log in again"})
    server = serve(every_request(OK))
    client = KubeClient.from_kubeconfig(write_kubeconfig(tmp_path / "config", server.url, user))
    with pytest.raises(ConnectionFailed, match="exit 1: your session ended: log in again"):
        client.get(CONFIGMAPS, "a", "ns")
    assert server.requests == []  # never sent with the expired token


def test_an_exec_plugin_that_prints_past_the_bound_is_refused(
    serve: Callable[..., ScriptedServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(execplugin, "MAX_OUTPUT_BYTES", 1000)
    user = exec_plugin(tmp_path, {"token": "x" * 2000})
    path = write_kubeconfig(tmp_path / "config", serve(every_request(OK)).url, user)
    with pytest.raises(KubeConfigError, match="printed more than 1000 bytes"):
        KubeClient.from_kubeconfig(path)


def test_an_exec_plugin_that_never_answers_is_stopped_at_the_run_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(execplugin, "RUN_TIMEOUT", 0.2)
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": ["-c", "import time; time.sleep(60)"],  # a plugin waiting for a person
        }
    }
    path = write_kubeconfig(tmp_path / "config", "http://127.0.0.1:1", user)
    with pytest.raises(KubeConfigError, match="could not run: .*timed out after 0.2 seconds"):
        KubeClient.from_kubeconfig(path)


def test_kubeconfig_lists_are_merged_as_kubectl_merges_them(
    serve: Callable[..., ScriptedServer], tmp_path: Path
) -> None:
    server = serve(every_request(OK))
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (second / "token").write_text("from-second")
    (first / "config").write_text(
        yaml.safe_dump(
            {
                "current-context": "x",
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "users": [{"name": "other", "user": {"token": "unused"}}],
            }
        )
    )
    (second / "config").write_text(
        yaml.safe_dump(
            {
                "current-context": "ignored: the first file's wins",
                "clusters": [{"name": "c", "cluster": {"server": server.url}}],
                # Relative to the file that names it.
                "users": [{"name": "u", "user": {"tokenFile": "token"}}],
                "contexts": [{"name": "x", "context": {"cluster": "gone", "user": "u"}}],
            }
        )
    )
    missing = tmp_path / "missing"
    listed = os.pathsep.join(str(p) for p in (missing, first / "config", second / "config"))
    access = kubeconfig.locate({"KUBECONFIG": listed})
    assert access.server == server.url
    assert access.credentials.headers() == {"Authorization": "Bearer from-second"}
    with pytest.raises(KubeConfigError, match="none of its files exists"):
        kubeconfig.locate({"KUBECONFIG": os.pathsep.join([str(missing), str(missing)])})


def test_skipping_tls_verification_while_naming_a_ca_is_refused(tmp_path: Path) -> None:
    cert_pem, _ = self_signed_pem()
    insecure = {"insecure-skip-tls-verify": True, "certificate-authority-data": b64(cert_pem)}
    path = write_kubeconfig(tmp_path / "config", "https://api.test", {}, **insecure)
    with pytest.raises(KubeConfigError, match="with the insecure flag is not allowed"):
        kubeconfig.from_kubeconfig(path)


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
