"""The operator's two controllers, one package per kind, and what they share.

- `basetenmodel`: the BasetenModel controller (docs/contract.md sections 1 to 12).
- `basetensecret`: the BasetenSecret controller (docs/contract.md section 13).
- `shared`: what both are built from: the Protocols of what a pass talks to, a pass over
  one object, status writing and conditions, the spec parser, how a pass ends, finalizers,
  the one-owner rule, namespace policy and tenancy, every delay, the texts both say.

Neither kind imports the other; both import `shared`, which imports neither (import-linter
contracts, pyproject.toml). `main.py` wires them on one Manager; `plan` replays their passes.

Uses `api`, `baseten`, `truss` and `runtime`. Must not import: `sim`, `sandbox`, `cli`,
`main`, nor `truss` the PyPI package (pushes go through `truss.pusher`).
"""

__all__ = ["basetenmodel", "basetensecret", "shared"]
