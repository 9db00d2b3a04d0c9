"""The BasetenModel API (docs/contract.md section 1): names and words, pydantic types, the CRD.

`constants` holds the group, version, kind, finalizer, modes, status words and event reasons;
`types` the spec and status as pydantic v2 models (camelCase on the wire); `crd` generates
the CustomResourceDefinition in `config/crd/bases` from the types.

Must not import: `baseten`, `truss`, `controller`, `sim`, `sandbox`, `cli`, `main`. From
`runtime` only `runtime.resource` (plain data), never the kube client: the CRD generator and
the simulators load these types without the `kubernetes` package's cost.
"""

__all__ = ["constants", "crd", "types"]
