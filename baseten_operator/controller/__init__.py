"""The BasetenModel reconciler: docs/contract.md in code, one module per section or concern.

`setup.build_controller` / `setup_with_manager` wire it on a `runtime` Manager;
`reconciler.BasetenModelReconciler` runs one pass; `ports` declares the Protocols of what a
pass talks to (Kubernetes, Baseten, the pusher, the recorder, the caches); `context` holds
what a pass works with (`Pass`, whose methods are how a step changes the status);
`endings` how a pass ends; `timing` every delay; `messages` every status and event text;
`status` the status writes of a pass. The other modules are the contract's
steps (`model_id`, `environment`, `source`, `promotion`, `retries`, `truss_source`,
`push_preflight`, `observe`, `deletion`, `orphans`) and its metrics (`telemetry`).

Uses `api`, `baseten`, `truss` and `runtime`. Must not import: `sim`, `sandbox`, `cli`,
`main`, nor `truss` the PyPI package (pushes go through `truss.pusher`).
"""

__all__ = ["setup", "timing"]
