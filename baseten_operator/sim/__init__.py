"""Stand-ins for the two services the operator talks to, for tests, e2e runs and the sandbox.

`kube`: a Kubernetes API server emulator (docs/kube-emulation.md); `baseten`: a Baseten
simulator (Management API, truss push protocol, lifecycle, faults). Both are real HTTP servers
on loopback.

The simulators must not import the operator: from this package they use only
`runtime.clock` (so a `FakeClock` drives them). The operator's own code never imports `sim`.
"""

__all__ = ["baseten", "kube"]
