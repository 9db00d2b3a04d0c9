"""The BasetenSecret controller (docs/contract.md section 13): a Kubernetes Secret's value
written to a Baseten secret.

`setup` wires it on the Manager the BasetenModel controller runs on (the same informers and
tenancy), `watches` keeps one by-name watch per referenced Secret; `reconciler` runs one
pass; `context` holds what a pass works with; `values` reads a Secret's value (or says why
it cannot be used); `fingerprint` the keyed hash of what was written; `ownership` one owner
per (team, name); `deletion` deleting the Baseten secret; `status`, `messages` and
`telemetry` its status word, texts and metrics.

Builds on `shared`. Must not import: `basetenmodel` (nor what the controller package may
not).
"""

__all__ = ["reconciler", "setup"]
