"""What both controllers are built from.

`ports` declares the Protocols of what a pass talks to (Kubernetes, Baseten, the pusher,
the recorder, the caches); `passes.ObjectPass` is one object during one pass, and the one
way a step reports the status word and message; `status` renders a kind's conditions and
writes its status (`ObjectStatusWriter`, a kind supplying its word); `specs` parses a
kind's spec; `endings` how a pass ends; `finalizers` the operator's finalizer;
`ownership` the oldest-owner rule; `namespace_policy` and `tenancy` what a namespace
decides (read once per pass as a `Tenant`); `timing` every delay; `messages` the texts
both kinds say.

Must not import: `basetenmodel` or `basetensecret` (nor what the controller package may
not).
"""

__all__ = [
    "endings",
    "finalizers",
    "messages",
    "namespace_policy",
    "ownership",
    "passes",
    "ports",
    "specs",
    "status",
    "tenancy",
    "timing",
]
