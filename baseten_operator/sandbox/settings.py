"""What `baseten-operator sandbox` can set, apart from the sandbox itself: the command line
reads these defaults without importing the simulators (which `run` never needs)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Package data: a copy of config/samples (`make manifests` keeps it equal), so that an
# installed sandbox finds its samples without a checkout.
DEFAULT_SAMPLES = Path(__file__).resolve().parent / "samples"


@dataclass(frozen=True)
class SandboxSettings:
    """What `baseten-operator sandbox` can set; its flags default to these defaults."""

    work_dir: Path = Path(".sandbox")
    # Fast: a 5-minute wait lasts 6 seconds, in the operator and the simulator alike.
    time_scale: float = 0.02
    # "emulator": the embedded one, instant; "real": kube-apiserver and etcd built from source
    # (a checkout and Go needed; minutes the first time).
    kube: str = "emulator"
    kube_port: int = 0  # 0: any free port
    baseten_port: int = 0
    # Loopback, any free port: the sandbox's servers are for the one user at this machine.
    metrics_bind_address: str = "127.0.0.1:0"
    health_probe_bind_address: str = "127.0.0.1:0"
    log_level: str = "info"

    @property
    def kubeconfig(self) -> Path:
        return self.work_dir / "kubeconfig"

    @property
    def operator_log(self) -> Path:
        return self.work_dir / "operator.log"
