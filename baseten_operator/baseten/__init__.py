"""Client of the Baseten Management API (docs/baseten-api.md).

`client.BasetenClient` has one method per operation; `transport` does auth, throttling,
retries and the request metrics (defined in `metrics`); `connections` sends its requests
through one `requests` transport adapter per client, so per key (its kept-alive connections,
TLS trust and proxy); `deadlines` the total deadline of each call; `models` parses
responses (`deployment_metrics` the metrics answer, and reading it safely); `errors` are
what every failed call raises; `settings` turns a spec's
environment into API payloads and finds drift; `ratelimit` holds the client-side token
buckets.

Must not import: `controller`, `truss`, `sim`, `sandbox`, `cli`, `main`, nor the
`kubernetes` package. From `runtime` only the clock, the write fence, the metrics registry,
logging's secret masking, and the HTTP pieces both clients share (`pools`' retry policy,
`proxyenv`, `trust`).
"""

__all__ = ["client", "deployment_metrics", "errors", "metrics", "models", "settings"]
