"""A client of a user's own Prometheus: instant queries for promotion analysis
(docs/contract.md section 14, the `prometheus` check).

`client.PrometheusClient.query` asks `GET {address}/api/v1/query` for one number, over the
same kept-alive, proxied, deadline-bound connections as the Baseten client
(`baseten.connections`, `baseten.deadlines`), with a bearer token and a CA of the user's.

Must not import: `controller`, `truss`, `sim`, `sandbox`, `cli`, `main`.
"""

__all__ = ["client"]
