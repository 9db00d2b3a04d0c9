"""Which proxy a request goes through, as the usual environment variables say.

HTTPS_PROXY / HTTP_PROXY / ALL_PROXY (either case; the lowercase one wins) name the proxy
for a URL's scheme, unless NO_PROXY covers its host. `requests`, urllib and the Kubernetes
client read the same variables the same way, so both API clients keep behaving as they did
on those libraries.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Mapping
from urllib.parse import SplitResult, unquote, urlsplit

from baseten_operator.runtime.http1 import Proxy

_DEFAULT_PORTS = {"http": 80, "https": 443}


def proxy_for(url: str, environ: Mapping[str, str]) -> str | None:
    """The proxy a request to `url` goes through, per the proxy variables; None for none."""
    proxies = _proxies_from(environ)
    parts = urlsplit(url)
    if parts.hostname and _bypassed(parts, proxies):
        return None
    return proxies.get(parts.scheme) or proxies.get("all") or None


def _proxies_from(environ: Mapping[str, str]) -> dict[str, str]:
    """urllib's `getproxies_environment` over `environ`: {"https": url, "no": hosts, ...},
    a lowercase variable winning over its uppercase twin."""
    proxies: dict[str, str] = {}
    for name, value in environ.items():
        key = name.lower()
        if value and key.endswith("_proxy") and (name == key or key not in environ):
            proxies[key.removesuffix("_proxy")] = value
    return proxies


def _bypassed(parts: SplitResult, proxies: Mapping[str, str]) -> bool:
    """Whether NO_PROXY covers the URL's host: `*`, the host or a parent domain (with or
    without a leading dot, optionally with the port), or an IP address or network."""
    host = (parts.hostname or "").lower()
    for entry in (e.strip().lower() for e in proxies.get("no", "").split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        name, _, port = entry.rpartition(":") if _has_port(entry) else (entry, "", "")
        if port and str(parts.port or _DEFAULT_PORTS.get(parts.scheme)) != port:
            continue
        if _in_network(host, name):
            return True
        name = name.lstrip(".")
        if host == name or host.endswith("." + name):
            return True
    return False


def _has_port(entry: str) -> bool:
    """`host:port` (one colon, digits after it); an IPv6 address has several colons."""
    return entry.count(":") == 1 and entry.rpartition(":")[2].isdigit()


def _in_network(host: str, entry: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")) in ipaddress.ip_network(
            entry.strip("[]"), strict=False
        )
    except ValueError:
        return False  # not an address, or not a network


def proxy_from_url(url: str) -> Proxy:
    """The proxy of `url`, its user:password (if any) moved into Proxy-Authorization."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    headers = {}
    if parts.username is not None:
        credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        headers["Proxy-Authorization"] = "Basic " + base64.b64encode(credentials.encode()).decode()
    return Proxy(parts._replace(netloc=netloc).geturl(), headers)
