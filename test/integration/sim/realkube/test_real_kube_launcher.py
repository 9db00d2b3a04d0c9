"""`hack/real-kube.sh --kubeconfig FILE`, as an outside check uses it: a real API server that
kubectl reaches with the written kubeconfig, gone with its data on SIGTERM; a clear failure
when it cannot start."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from testsupport.e2e.harness import KUBECTL
from testsupport.paths import REPO
from testsupport.polling import wait_for

LAUNCHER = REPO / "hack" / "real-kube.sh"


def launch(tmp_path: Path, **env: str) -> tuple[subprocess.Popen[str], Path]:
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen(
        [str(LAUNCHER), "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path), **env},
    )
    return process, kubeconfig


def test_serves_kubectl_until_sigterm_then_removes_its_data(tmp_path: Path) -> None:
    process, kubeconfig = launch(tmp_path)
    try:
        wait_for(lambda: kubeconfig.exists() or process.poll() is not None, timeout=60)
        assert kubeconfig.exists(), process.communicate()[0]
        namespaces = subprocess.run(
            [KUBECTL, "--kubeconfig", str(kubeconfig), "get", "namespace", "default", "-o", "name"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert namespaces.stdout.strip() == "namespace/default", namespaces.stderr
        assert list(tmp_path.glob("real-kube-*")), "the control plane's working directory"
    finally:
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=60)[0]
    assert process.returncode == 0, output
    assert "ready at https://127.0.0.1:" in output
    assert not list(tmp_path.glob("real-kube-*")), "data left behind"


def test_says_why_it_cannot_start(tmp_path: Path) -> None:
    # An empty cache and no Go on PATH: nothing to run, nothing to build it with.
    path = ":".join(p for p in os.environ["PATH"].split(":") if not Path(p, "go").exists())
    process, kubeconfig = launch(tmp_path, XDG_CACHE_HOME=str(tmp_path / "cache"), PATH=path)
    output = process.communicate(timeout=60)[0]
    assert process.returncode == 1
    assert "real-kube: building a real API server needs Go (the `go` command) on PATH" in output
    assert not kubeconfig.exists()
