"""The BasetenModel controller: docs/contract.md in code, one module per section or concern.

`setup.build_controller` / `setup_with_manager` wire it on a `runtime` Manager, `watches`
what wakes its CRs when tenancy changes; `reconciler.BasetenModelReconciler` runs one pass;
`context` holds what a pass works with (`Pass`, whose methods are how a step changes the
status); `status` its status word; `messages` every status and event text; `admission`
the tenancy gate, `ownership` one owner per environment. The other modules are the
contract's steps (`model_id`, `environment`, `cancellation`, `source`, `promotion`,
`retries`, `truss_source`, `push_preflight`, `push_secrets`, `observe`, `deletion`,
`orphans`) and its metrics (`telemetry`).

Builds on `shared`. Must not import: `basetensecret` (nor what the controller package may
not).
"""

__all__ = ["reconciler", "setup"]
