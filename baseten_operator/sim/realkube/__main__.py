"""`python -m baseten_operator.sim.realkube build | run --kubeconfig FILE`.

`build` makes the pinned binaries (once per machine); `run` builds if needed, starts etcd and
kube-apiserver, writes an admin kubeconfig to FILE once the server is ready, and stays in the
foreground until SIGTERM or SIGINT, then stops both and removes their data. `hack/real-kube.sh`
and `make real-kube` call it."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from baseten_operator.sim.signals import stop_on_signals

from .build import BuildError, ensure_built
from .controlplane import ControlPlane, ControlPlaneError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="real-kube", description="A real kube-apiserver and etcd on loopback"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build", help="build the pinned binaries into the cache if missing")
    run = commands.add_parser("run", help="run a control plane until SIGTERM or SIGINT")
    run.add_argument(
        "--kubeconfig", required=True, type=Path, help="write the admin kubeconfig here"
    )
    args = parser.parse_args(argv)

    stopping = stop_on_signals()
    try:
        binaries = ensure_built()
        if args.command == "build":
            print(f"kube-apiserver: {binaries.kube_apiserver}\netcd: {binaries.etcd}")
            return 0
        if stopping.is_set():
            return 0
        workdir = Path(tempfile.mkdtemp(prefix="real-kube-"))
        plane = ControlPlane(binaries, workdir)
        print(f"starting etcd and kube-apiserver {binaries.kubernetes_version}", file=sys.stderr)
        plane.start()
    except (BuildError, ControlPlaneError, OSError) as error:
        print(f"real-kube: {error}", file=sys.stderr)
        return 1
    try:
        plane.write_kubeconfig(args.kubeconfig.resolve())
        print(f"kube-apiserver {binaries.kubernetes_version} ready at {plane.url}", flush=True)
        print(f"kubeconfig: {args.kubeconfig.resolve()}", flush=True)
        stopping.wait()
    finally:
        plane.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
