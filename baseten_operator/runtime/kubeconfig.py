"""Where the Kubernetes API server is and how to reach it: from a kubeconfig or a pod.

`locate()` looks where kubectl does: the files of $KUBECONFIG, merged as kubectl merges
them (missing ones skipped, the first file to name an entry or the current context wins),
else ~/.kube/config, else the pod's service account. The result, a `ClusterAccess`, is
settled once: the server's URL (with any path prefix), the TLS context, the proxy and the
credentials.

A kubeconfig is read here for what most clusters use: a token, a token file, a client
certificate, basic auth, an exec credential plugin (execplugin.py); CA data or files,
insecure-skip-tls-verify (refused together with a CA, as kubectl refuses it),
tls-server-name and proxy-url. A user that names an `auth-provider` (OIDC, the retired
cloud plugins) is handed to the `kubernetes` package's loader, which knows those
protocols; it is imported only then, since importing it costs more start-up time and
memory than the rest of the operator's Kubernetes client (0.2 s, 14 MB). Without a
`proxy-url`, the proxy variables apply (runtime/proxyenv.py), as for kubectl. Relative
file names in a kubeconfig are relative to the directory of the file that wrote them.
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import certifi
import yaml

from baseten_operator.runtime.execplugin import ExecCredentials, ExecPluginError
from baseten_operator.runtime.pemfiles import pem_files
from baseten_operator.runtime.proxyenv import Proxy, ProxySettingError, proxy_for, proxy_from_url
from baseten_operator.runtime.trust import trusted_context

if TYPE_CHECKING:
    from kubernetes.client import Configuration

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
HOME_KUBECONFIG = "~/.kube/config"


# kubectl's words for a kubeconfig that both trusts a CA and skips verification.
INSECURE_WITH_CA = "specifying a root certificates file with the insecure flag is not allowed"


class KubeConfigError(Exception):
    """No usable cluster configuration; the message says what is missing or wrong."""


class Credentials(Protocol):
    @property
    def changes(self) -> bool:
        """Whether `headers()` can answer differently later (a rotated or renewed token)."""
        ...

    def headers(self) -> dict[str, str]: ...

    def renew(self) -> bool:
        """The server refused these credentials: get fresh ones now, if they can be had.
        True when something was renewed (a retry may succeed); KubeConfigError when
        renewing failed."""
        ...


@dataclass(frozen=True)
class FixedCredentials:
    """A token or basic auth written in the kubeconfig (or none: client certificates)."""

    fields: Mapping[str, str]
    changes: ClassVar[bool] = False

    def headers(self) -> dict[str, str]:
        return dict(self.fields)

    def renew(self) -> bool:
        return False


class TokenFile:
    """A bearer token read from a file that is rewritten while the process runs (the
    service account's projected token, a kubeconfig's tokenFile). It is read once when
    built, so a missing file fails the start, not the first request; later, a read that
    fails keeps the last token: a rotation swaps the file atomically, so that is brief."""

    changes: ClassVar[bool] = True

    def __init__(self, path: Path) -> None:
        self.path = path
        self._token = ""
        self._lock = threading.Lock()
        self.headers()

    def headers(self) -> dict[str, str]:
        with self._lock:
            try:
                self._token = self.path.read_text().strip()
            except OSError as exc:
                if not self._token:
                    raise KubeConfigError(f"cannot read the token file {self.path}: {exc}") from exc
            return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    def renew(self) -> bool:
        return False  # read on every ask already: a refused token is the file's


class PluginCredentials:
    """An exec plugin's credentials (execplugin.py), failures told as KubeConfigErrors."""

    changes: ClassVar[bool] = True

    def __init__(self, plugin: ExecCredentials) -> None:
        self._plugin = plugin

    def headers(self) -> dict[str, str]:
        try:
            return self._plugin.headers()
        except ExecPluginError as exc:
            raise KubeConfigError(f"renewing the kubeconfig's credentials failed: {exc}") from exc

    def renew(self) -> bool:
        try:
            self._plugin.renew()
        except ExecPluginError as exc:
            raise KubeConfigError(f"renewing the kubeconfig's credentials failed: {exc}") from exc
        return True


class LoaderCredentials:
    """Credentials the `kubernetes` package's loader keeps (auth providers): asking for
    them runs its refresh hook, which renews them before they expire."""

    def __init__(self, configuration: Configuration) -> None:
        self._configuration = configuration
        self.changes = configuration.refresh_api_key_hook is not None

    def headers(self) -> dict[str, str]:
        try:
            bearer = self._configuration.auth_settings().get("BearerToken")  # runs the hook
        except Exception as exc:  # an exec plugin that fails, an OIDC issuer out of reach
            raise KubeConfigError(f"renewing the kubeconfig's credentials failed: {exc}") from exc
        return {"Authorization": bearer["value"]} if bearer and bearer["value"] else {}

    def renew(self) -> bool:
        return False  # the provider's own refresh runs on every ask


@dataclass(frozen=True)
class ClusterAccess:
    server: str  # the API server's URL, with the path prefix some proxies serve it under
    tls: ssl.SSLContext | None  # None for a plain-HTTP server
    server_hostname: str | None  # the name its certificate is checked against, if not the host
    proxy: Proxy | None
    credentials: Credentials
    proxy_tls: ssl.SSLContext | None = None  # what an https:// proxy is verified against


def locate(environ: Mapping[str, str] = os.environ) -> ClusterAccess:
    """The kubeconfig `kubeconfig_path` finds, else the pod's service account."""
    path = kubeconfig_path(environ)
    return in_cluster(environ) if path is None else from_kubeconfig(path, environ=environ)


def kubeconfig_path(environ: Mapping[str, str] = os.environ) -> str | None:
    """$KUBECONFIG (a list of files, as it is), else ~/.kube/config if it exists, else
    None. Wherever a kubeconfig path is taken, a list separated by os.pathsep is too."""
    paths = environ.get("KUBECONFIG", "")
    if paths.strip(os.pathsep):
        return paths
    home = os.path.expanduser(HOME_KUBECONFIG)
    return home if os.path.exists(home) else None


def in_cluster(
    environ: Mapping[str, str] = os.environ, account_dir: Path = SERVICE_ACCOUNT_DIR
) -> ClusterAccess:
    host = environ.get("KUBERNETES_SERVICE_HOST", "")
    port = environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise KubeConfigError(
            "no kubeconfig ($KUBECONFIG, ~/.kube/config) and not in a pod "
            "(KUBERNETES_SERVICE_HOST/PORT are not set)"
        )
    token = TokenFile(account_dir / "token")
    ca_file = account_dir / "ca.crt"
    if not ca_file.exists():
        raise KubeConfigError(f"the service account's CA certificate {ca_file} is missing")
    server = f"https://{f'[{host}]' if ':' in host else host}:{port}"
    proxy, proxy_tls = _proxy(server, None, environ)
    return ClusterAccess(
        server=server,
        tls=_tls_context(ca_file=str(ca_file)),
        server_hostname=None,
        credentials=token,
        proxy=proxy,
        proxy_tls=proxy_tls,
    )


def from_kubeconfig(
    path: str, context: str | None = None, *, environ: Mapping[str, str] = os.environ
) -> ClusterAccess:
    config = _read(path)
    name = context or config.current_context
    if not name:
        raise KubeConfigError(f"{path}: no context named and no current-context")
    ctx = config.named("contexts", name)[0].get("context") or {}
    cluster_entry, cluster_file = config.named("clusters", ctx.get("cluster"))
    cluster = cluster_entry.get("cluster") or {}
    user: dict[str, Any] = {}
    user_file = cluster_file
    if ctx.get("user"):
        user_entry, user_file = config.named("users", ctx["user"])
        user = user_entry.get("user") or {}
    if "auth-provider" in user:
        return _through_kubernetes_loader(path, name, cluster, environ)
    server = str(cluster.get("server") or "")
    if not server.startswith(("https://", "http://")):
        raise KubeConfigError(f"{path}: cluster of context {name!r} has no http(s) server")
    cluster_files, user_files = _Files(cluster_file), _Files(user_file)
    tls = None
    if server.startswith("https://"):
        ca_file = cluster_files.path(cluster, "certificate-authority")
        ca_data = cluster_files.data(cluster, "certificate-authority-data")
        insecure = bool(cluster.get("insecure-skip-tls-verify", False))
        if insecure and (ca_file or ca_data):
            raise KubeConfigError(f"{path}: cluster of context {name!r}: {INSECURE_WITH_CA}")
        tls = _tls_context(
            ca_file=ca_file,
            ca_data=ca_data,
            cert=user_files.pem(user, "client-certificate"),
            key=user_files.pem(user, "client-key"),
            verify=not insecure,
        )
    proxy, proxy_tls = _proxy(server, cluster.get("proxy-url"), environ)
    return ClusterAccess(
        server=server.rstrip("/"),
        tls=tls,
        server_hostname=cluster.get("tls-server-name") or None,
        proxy=proxy,
        proxy_tls=proxy_tls,
        credentials=_credentials(user, user_files, tls),
    )


def context_namespace(path: str) -> str | None:
    """The namespace of the kubeconfig's current context, if it names one."""
    config = _read(path)
    name = config.current_context
    if not name:
        return None
    namespace = (config.named("contexts", name)[0].get("context") or {}).get("namespace")
    return str(namespace) if namespace else None


# -- the parts of a kubeconfig ------------------------------------------------------------

_SECTIONS = ("clusters", "users", "contexts")


@dataclass
class _Merged:
    """One or more kubeconfig files merged as kubectl merges them: the first file to name
    an entry (or to set the current context) wins. Each entry keeps the file it came
    from, whose directory its relative file names are relative to."""

    where: str
    current_context: str | None = None
    entries: dict[str, dict[Any, tuple[dict[str, Any], Path]]] = field(
        default_factory=lambda: {section: {} for section in _SECTIONS}
    )

    def add(self, config: Mapping[str, Any], source: Path) -> None:
        if self.current_context is None and config.get("current-context"):
            self.current_context = str(config["current-context"])
        for section in _SECTIONS:
            for entry in config.get(section) or []:
                if isinstance(entry, dict) and "name" in entry:
                    self.entries[section].setdefault(entry["name"], (entry, source))

    def named(self, section: str, name: Any) -> tuple[dict[str, Any], Path]:
        found = self.entries[section].get(name)
        if found is None:
            raise KubeConfigError(f"{self.where}: no entry named {name!r} in {section}")
        return found


def _read(path: str) -> _Merged:
    """The kubeconfig at `path`, or the files of a list (os.pathsep between them) merged,
    skipping those that do not exist as kubectl does."""
    files = [file for file in path.split(os.pathsep) if file]
    if len(files) > 1:
        files = [file for file in files if os.path.exists(file)]
        if not files:
            raise KubeConfigError(f"cannot read the kubeconfig {path}: none of its files exists")
    merged = _Merged(path)
    for file in files:
        merged.add(_read_file(file), Path(file))
    return merged


def _read_file(path: str) -> dict[str, Any]:
    try:
        config = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise KubeConfigError(f"cannot read the kubeconfig {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise KubeConfigError(f"the kubeconfig {path} is not YAML: {exc}") from exc
    if not isinstance(config, dict):
        raise KubeConfigError(f"the kubeconfig {path} is not a mapping")
    return config


class _Files:
    """A kubeconfig file's references to files (relative to its directory) and inline
    data."""

    def __init__(self, source: Path) -> None:
        self.base = source.parent
        self.source = str(source)

    def path(self, section: Mapping[str, Any], field: str) -> str | None:
        value = section.get(field)
        return str(self.base / os.path.expanduser(value)) if value else None

    def data(self, section: Mapping[str, Any], field: str) -> bytes | None:
        value = section.get(field)
        if not value:
            return None
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise KubeConfigError(f"{self.source}: {field} is not base64: {exc}") from exc

    def pem(self, section: Mapping[str, Any], field: str) -> bytes | None:
        """`<field>-data`, else the contents of the file `<field>` names."""
        data = self.data(section, f"{field}-data")
        if data is not None:
            return data
        path = self.path(section, field)
        if path is None:
            return None
        try:
            return Path(path).read_bytes()
        except OSError as exc:
            raise KubeConfigError(f"{self.source}: cannot read {field} {path}: {exc}") from exc


def _credentials(user: Mapping[str, Any], files: _Files, tls: ssl.SSLContext | None) -> Credentials:
    if "exec" in user:
        try:
            plugin = ExecCredentials(user["exec"], files.base, tls)
        except ExecPluginError as exc:
            raise KubeConfigError(f"{files.source}: {exc}") from exc
        return PluginCredentials(plugin)
    if user.get("token"):
        return FixedCredentials({"Authorization": f"Bearer {user['token']}"})
    token_file = files.path(user, "tokenFile")
    if token_file:
        return TokenFile(Path(token_file))
    if user.get("username"):
        pair = f"{user['username']}:{user.get('password') or ''}".encode()
        return FixedCredentials({"Authorization": "Basic " + base64.b64encode(pair).decode()})
    return FixedCredentials({})  # a client certificate, or an open server


def _tls_context(
    *,
    ca_file: str | None = None,
    ca_data: bytes | None = None,
    cert: bytes | None = None,
    key: bytes | None = None,
    verify: bool = True,
) -> ssl.SSLContext:
    """Trust the cluster's CA (certifi's bundle if it names none); present the client
    certificate if there is one."""
    try:
        if ca_data is not None:
            context = ssl.create_default_context(cadata=ca_data.decode())
        else:
            context = ssl.create_default_context(cafile=ca_file or certifi.where())
        if not verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if cert is not None:
            if key is None:
                raise KubeConfigError("a client certificate without its key")
            with pem_files(cert, key) as (cert_file, key_file):
                context.load_cert_chain(cert_file, key_file)
    except (ssl.SSLError, OSError, UnicodeDecodeError) as exc:
        raise KubeConfigError(f"the cluster's TLS settings do not load: {exc}") from exc
    return context


def _proxy(
    server: str, proxy_url: str | None, environ: Mapping[str, str]
) -> tuple[Proxy | None, ssl.SSLContext | None]:
    """The proxy to the server (the kubeconfig's proxy-url, else the proxy variables), and
    for an https:// one what its certificate is verified against."""
    try:
        url = proxy_url or proxy_for(server, environ)
        proxy = proxy_from_url(url) if url else None
    except ProxySettingError as exc:
        raise KubeConfigError(str(exc)) from exc
    if proxy is None or not proxy.url.startswith("https://"):
        return proxy, None
    return proxy, trusted_context(environ)


def _through_kubernetes_loader(
    path: str, context: str, cluster: Mapping[str, Any], environ: Mapping[str, str]
) -> ClusterAccess:
    """An auth-provider user: the `kubernetes` package loads it."""
    from kubernetes import client, config  # here only: see the module docstring

    configuration = client.Configuration()
    try:
        config.load_kube_config(
            config_file=path, context=context, client_configuration=configuration
        )
    except config.ConfigException as exc:
        raise KubeConfigError(f"{path}: {exc}") from exc
    server = configuration.host
    tls = None
    if server.startswith("https://"):
        tls = _tls_context(ca_file=configuration.ssl_ca_cert, verify=configuration.verify_ssl)
    proxy, proxy_tls = _proxy(server, cluster.get("proxy-url"), environ)
    return ClusterAccess(
        server=server.rstrip("/"),
        tls=tls,
        server_hostname=configuration.tls_server_name or None,
        proxy=proxy,
        proxy_tls=proxy_tls,
        credentials=LoaderCredentials(configuration),
    )
