"""A small controller library on urllib3, in client-go's and controller-runtime's image
(docs/design.md, "Runtime semantics").

`client` (a dynamic JSON client), `pools` (urllib3 pools per server and what they may
repeat), `proxyenv` (which proxy, as kubectl reads the variables), `trust` (the default CA
bundle), `kubeconfig` and `execplugin` (where the API server is, how to authenticate),
`resource` (where a kind lives in the API; plain data, no
client), `errors` (the API's errors as types), `informer` (list+watch caches),
`workqueue` (rate-limited queue), `controller` (workers, reconcile outcomes), `leaderelection`
(Lease), `fence` (the write fence: only a replica proven to lead writes), `recorder`
(aggregating Events), `manager` (ties them together, shuts down cleanly), `options` (the
manager's options and their generic defaults; plain data),
`metrics` (the Prometheus registry and `/metrics`), `health` (probes), `httpserver` (the
servers' common base), `logging` (structlog with redaction), `clock` (injectable time,
`FakeClock` for tests).

Must not import anything else of this package, nor name the product it serves (the
`runtime-stands-alone` import contract in pyproject.toml; a test greps for the word):
another operator should be able to reuse it.
"""

__all__ = [
    "client",
    "clock",
    "controller",
    "errors",
    "fence",
    "informer",
    "logging",
    "manager",
    "metrics",
    "options",
    "recorder",
    "resource",
]
