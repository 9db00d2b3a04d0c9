"""A kubeconfig user's exec credential plugin (client.authentication.k8s.io), run as
kubectl runs it.

The plugin is run when the kubeconfig is loaded (a plugin that fails stops the start,
not the first request), again when what it returned expires, and again when the API
server refuses it (`renew`: a token revoked early, a certificate rotated). A token goes
into the Authorization header; a client certificate and key are loaded into the
cluster's TLS context, which the connections made from then on present. A run that fails
raises ExecPluginError with the plugin's own words: the request it was for fails with
them instead of going out with credentials known to be stale.
"""

from __future__ import annotations

import datetime
import json
import os
import ssl
import subprocess
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from baseten_operator.runtime.pemfiles import pem_files

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
# A plugin that asks for a browser or a prompt waits for a person: bounded, it fails.
RUN_TIMEOUT = 60.0
# Renewed this long before the credential says it expires: a request takes a while to
# arrive, and clocks differ.
EXPIRY_MARGIN = datetime.timedelta(seconds=10)
# What a plugin may print on each of stdout and stderr: a credential is a few KB; more is a
# plugin gone wrong, stopped rather than held in memory.
MAX_OUTPUT_BYTES = 1024 * 1024
_STDERR_CHARS = 300


class ExecPluginError(Exception):
    """The plugin could not be run, failed, or answered something unusable."""


class ExecCredentials:
    """What one exec plugin provides, renewed as it expires or is refused. Thread-safe."""

    changes = True

    def __init__(
        self,
        spec: Mapping[str, Any],
        base: Path,
        tls: ssl.SSLContext | None,
        *,
        now: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    ) -> None:
        command = str(spec.get("command") or "")
        if not command:
            raise ExecPluginError("the exec plugin names no command")
        version = spec.get("apiVersion")
        if version not in API_VERSIONS:
            raise ExecPluginError(f"exec plugin apiVersion {version!r} is not supported")
        # A relative path with a directory in it is relative to the kubeconfig's directory,
        # a bare name is looked up on PATH.
        if os.sep in command and not os.path.isabs(command):
            command = str(base / command)
        self._argv = [command, *(str(arg) for arg in spec.get("args") or [])]
        self._environ = {
            **os.environ,
            **{str(e["name"]): str(e["value"]) for e in spec.get("env") or [] if "name" in e},
            "KUBERNETES_EXEC_INFO": json.dumps(
                {"apiVersion": version, "kind": "ExecCredential", "spec": {"interactive": False}}
            ),
        }
        self._version = version
        self._tls = tls
        self._now = now
        self._lock = threading.Lock()
        self._token = ""
        self._expires: datetime.datetime | None = None
        self._run()

    def headers(self) -> dict[str, str]:
        with self._lock:
            if self._expires is not None and self._now() >= self._expires - EXPIRY_MARGIN:
                self._run()
            return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    def renew(self) -> None:
        with self._lock:
            self._run()

    def _run(self) -> None:
        name = os.path.basename(self._argv[0])
        try:
            returncode, stdout, stderr = _run(self._argv, self._environ)
        except (OSError, subprocess.SubprocessError) as exc:
            raise ExecPluginError(f"exec plugin {name} could not run: {exc}") from exc
        if max(len(stdout), len(stderr)) > MAX_OUTPUT_BYTES:
            raise ExecPluginError(f"exec plugin {name} printed more than {MAX_OUTPUT_BYTES} bytes")
        if returncode != 0:
            said = stderr.decode(errors="replace").strip()[-_STDERR_CHARS:]
            raise ExecPluginError(f"exec plugin {name} failed: exit {returncode}: {said}")
        status = self._status(name, stdout)
        token = status.get("token") or ""
        cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
        if not token and not (cert and key):
            raise ExecPluginError(f"exec plugin {name} returned neither a token nor a certificate")
        if cert and key and self._tls is not None:
            try:
                with pem_files(str(cert).encode(), str(key).encode()) as (cert_file, key_file):
                    self._tls.load_cert_chain(cert_file, key_file)
            except (ssl.SSLError, OSError) as exc:
                raise ExecPluginError(f"exec plugin {name}'s certificate: {exc}") from exc
        self._token = str(token)
        self._expires = _timestamp(name, status.get("expirationTimestamp"))

    def _status(self, name: str, output: bytes) -> dict[str, Any]:
        try:
            credential = json.loads(output)
        except ValueError:
            raise ExecPluginError(f"exec plugin {name} did not print JSON") from None
        if not isinstance(credential, dict) or credential.get("kind") != "ExecCredential":
            raise ExecPluginError(f"exec plugin {name} did not print an ExecCredential")
        if credential.get("apiVersion") != self._version:
            raise ExecPluginError(
                f"exec plugin {name} answered {credential.get('apiVersion')!r}, "
                f"not the {self._version!r} asked for"
            )
        status = credential.get("status")
        if not isinstance(status, dict):
            raise ExecPluginError(f"exec plugin {name}'s ExecCredential has no status")
        return status


def _run(argv: list[str], environ: Mapping[str, str]) -> tuple[int, bytes, bytes]:
    """`subprocess.run(capture_output=True, timeout=RUN_TIMEOUT)`, but each output read only
    up to one byte past MAX_OUTPUT_BYTES: a plugin that prints more is killed there."""
    with subprocess.Popen(
        argv, env=environ, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        outputs = [b"", b""]

        def read(index: int, pipe: IO[bytes]) -> None:
            outputs[index] = pipe.read(MAX_OUTPUT_BYTES + 1)
            if len(outputs[index]) > MAX_OUTPUT_BYTES:
                process.kill()

        assert process.stdout is not None and process.stderr is not None
        readers = [
            threading.Thread(target=read, args=(index, pipe), daemon=True)
            for index, pipe in enumerate((process.stdout, process.stderr))
        ]
        for reader in readers:
            reader.start()
        try:
            returncode = process.wait(RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
        finally:
            for reader in readers:
                reader.join()
    return returncode, outputs[0], outputs[1]


def _timestamp(name: str, value: Any) -> datetime.datetime | None:
    if not value:
        return None
    try:
        moment = datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise ExecPluginError(f"exec plugin {name}: bad expirationTimestamp {value!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)
