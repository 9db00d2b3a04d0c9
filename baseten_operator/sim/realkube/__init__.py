"""A real Kubernetes control plane (kube-apiserver and etcd) for the tests and the sandbox.

Not a simulator: the genuine binaries, built from source through the Go module proxy at the
release `hack/kube-apiserver/go.mod` pins (`build.py`), and started on loopback with RBAC,
service-account token signing and an admin client certificate (`controlplane.py`). It sits
beside the emulator because it serves the same people (tests, e2e runs, the sandbox); the
operator's own code never imports it, and it must not import the operator's (only the standard
library, cryptography for its keys and PyYAML for kubeconfigs).
"""

from .build import Binaries, BuildError, ensure_built
from .controlplane import ControlPlane, ControlPlaneError

__all__ = ["Binaries", "BuildError", "ControlPlane", "ControlPlaneError", "ensure_built"]
