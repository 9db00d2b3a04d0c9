"""The environment of a truss push child: an allow-list, never the operator's own.

The operator's environment holds `BASETEN_API_KEY` (and in a pod whatever else is set on
the container); a child only needs to find its interpreter and the network. So it gets
the search path and home, the locale, proxy and CA settings, the interpreter's own
settings (a source checkout's PYTHONPATH, a virtualenv), and the push's own variables,
the API key among them, passed under the push's name only.
"""

from __future__ import annotations

from collections.abc import Mapping

INHERITED = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "TMPDIR",
        "TEMP",
        "TMP",
        "TZ",
        "LANG",
        "LANGUAGE",
        # Proxies, both spellings (curl and requests read the lower case, others the upper).
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "all_proxy",
        # Certificate authorities (a corporate proxy's CA).
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        # The interpreter: how the child finds the operator's package.
        "PYTHONPATH",
        "PYTHONHOME",
        "VIRTUAL_ENV",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONUNBUFFERED",
    }
)
INHERITED_PREFIXES = ("LC_",)


def child_environment(parent: Mapping[str, str], own: Mapping[str, str]) -> dict[str, str]:
    """The allowed part of `parent`, then the push's `own` variables."""
    inherited = {
        name: value
        for name, value in parent.items()
        if name in INHERITED or name.startswith(INHERITED_PREFIXES)
    }
    return {**inherited, **own}
