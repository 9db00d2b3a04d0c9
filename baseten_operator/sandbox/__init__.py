"""The sandbox: the operator on an embedded Kubernetes emulator and Baseten simulator."""
