"""baseten-operator: a Kubernetes operator that keeps Baseten deployments as BasetenModels say.

Entry points: `cli` (the `baseten-operator` command), `main` (`run`: wires the operator from
`config.OperatorOptions`, the manager's options with the operator's defaults and its own);
`flags` holds the flag types and the flags `run` and `sandbox` share. The layers, bottom up
(docs/design.md, "Layout"):

- `runtime`: generic controller machinery; imports nothing else of this package;
- `api`: the BasetenModel resource; `baseten`: the Management API client; `truss`: names,
  config.yaml and the isolated pusher;
- `controller`: the reconciler (docs/contract.md), on all of the above;
- `sim` (the Kubernetes emulator and the Baseten simulator) and `sandbox`: for tests and
  demos; the operator's own code never imports them.

Each package's `__init__` says what it is, what it must not import, and in `__all__` what other
packages import from it (its other modules are internal). Importing a package imports none of
its modules: `import baseten_operator` costs nothing.
"""

__all__ = [
    "api",
    "baseten",
    "cli",
    "config",
    "controller",
    "flags",
    "main",
    "runtime",
    "sandbox",
    "sim",
    "truss",
]
