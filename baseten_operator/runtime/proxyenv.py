"""Which proxy a request goes through, as the usual environment variables say.

HTTPS_PROXY / HTTP_PROXY / ALL_PROXY (either case; the lowercase one wins, as in
`requests`) name the proxy for a URL's scheme, unless NO_PROXY covers its host. A proxy
written without a scheme (`proxy.corp:3128`, the common form) is an http:// one, as
`requests`, urllib3 and Go read it. NO_PROXY is read as kubectl (Go's httpproxy) reads
it, which understands more than `requests`: `*`; an IP address or CIDR network, IPv6 ones
in brackets or not; `host:port` and `[v6]:port`; a domain, which covers its subdomains,
written bare, with a leading `.` or with a leading `*.`.

Connecting through the proxy (CONNECT tunnels, TLS to an https:// proxy, IPv6 proxies)
is urllib3's business; this module only chooses, once per client, not per request.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import SplitResult, unquote, urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}
PROXY_SCHEMES = ("http", "https")


class ProxySettingError(ValueError):
    """A proxy variable or proxy-url names something no client can use."""


def proxy_for(url: str, environ: Mapping[str, str]) -> str | None:
    """The proxy URL a request to `url` goes through (with a scheme), or None for none."""
    proxies = _proxies_from(environ)
    parts = urlsplit(url)
    if parts.hostname and _bypassed(parts, proxies.get("no", "")):
        return None
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    return with_scheme(proxy) if proxy else None


def with_scheme(proxy: str) -> str:
    """`proxy`, as http:// when it names no scheme; refused when its scheme is not one an
    HTTP client can speak to (a SOCKS proxy, a typo)."""
    proxy = proxy.strip()
    if "://" not in proxy:
        proxy = "http://" + proxy
    parts = urlsplit(proxy)
    if parts.scheme.lower() not in PROXY_SCHEMES or not parts.hostname:
        raise ProxySettingError(f"unusable proxy {_without_credentials(parts)!r}")
    return proxy


@dataclass(frozen=True)
class Proxy:
    """A forwarding proxy: its URL (no credentials) and the headers it is sent."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)


def proxy_from_url(url: str) -> Proxy:
    """The proxy of `url`, its user:password (if any) moved into Proxy-Authorization."""
    parts = urlsplit(with_scheme(url))
    headers = {}
    if parts.username is not None:
        credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        headers = {"Proxy-Authorization": "Basic " + base64.b64encode(credentials).decode()}
    return Proxy(_without_credentials(parts), headers)


def _without_credentials(parts: SplitResult) -> str:
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    return parts._replace(netloc=netloc).geturl()


def _proxies_from(environ: Mapping[str, str]) -> dict[str, str]:
    """urllib's `getproxies_environment` over `environ`: {"https": url, "no": hosts, ...},
    a lowercase variable winning over its uppercase twin."""
    proxies: dict[str, str] = {}
    for name, value in environ.items():
        key = name.lower()
        if value and key.endswith("_proxy") and (name == key or key not in environ):
            proxies[key.removesuffix("_proxy")] = value
    return proxies


def _bypassed(parts: SplitResult, no_proxy: str) -> bool:
    """Whether an entry of NO_PROXY covers the URL's host and port."""
    host = (parts.hostname or "").lower()
    port = str(parts.port or _DEFAULT_PORTS.get(parts.scheme) or "")
    address = _address(host)
    for entry in (e.strip().lower() for e in no_proxy.replace(" ", ",").split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        network = _network(entry)
        if network is not None:
            if address is not None and address in network:
                return True
            continue
        name, entry_port = _split_port(entry)
        if entry_port and entry_port != port:
            continue
        entry_address = _address(name)
        if entry_address is not None:
            if entry_address == address:
                return True
            continue
        if _domain_covers(name, host):
            return True
    return False


def _domain_covers(name: str, host: str) -> bool:
    """`example.com` covers it and its subdomains; `.example.com` and `*.example.com`
    only its subdomains."""
    if name.startswith("*."):
        name = name[1:]
    if name.startswith("."):
        return host.endswith(name)
    return host == name or host.endswith("." + name)


def _split_port(entry: str) -> tuple[str, str]:
    """(host, port) of `host:port` or `[v6]:port`; (entry, "") when it names no port (a
    bare IPv6 address has colons but no port)."""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        return host, rest.removeprefix(":") if rest.startswith(":") else ""
    host, colon, port = entry.rpartition(":")
    if colon and host.count(":") == 0 and port.isdigit():
        return host, port
    return entry, ""


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None


def _network(entry: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """A CIDR entry (`10.0.0.0/8`, `fd00::/8`); None for anything else."""
    if "/" not in entry:
        return None
    try:
        return ipaddress.ip_network(entry.strip("[]"), strict=False)
    except ValueError:
        return None
