"""`python -m baseten_operator.sim.kube`: run the emulator until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import sys

import structlog

from baseten_operator.sim.signals import stop_on_signals

from .server import KubeApiServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Kubernetes API emulator")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--kubeconfig", help="write a kubeconfig pointing at the server here")
    parser.add_argument("--history-limit", type=int, default=10000)
    parser.add_argument("--bookmark-interval", type=float, default=10.0)
    args = parser.parse_args(argv)
    # stdout carries exactly one line, the URL, for whoever launched us.
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))

    server = KubeApiServer(
        args.host,
        args.port,
        history_limit=args.history_limit,
        bookmark_interval=args.bookmark_interval,
    )
    stopping = stop_on_signals()
    url = server.start()
    if args.kubeconfig:
        server.write_kubeconfig(args.kubeconfig)
    print(url, flush=True)
    stopping.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
