"""`python -m baseten_operator.sim.baseten --port N --api-key KEY [--time-scale F]`."""

from __future__ import annotations

import argparse

from baseten_operator.sim.baseten.simulator import BasetenSimulator
from baseten_operator.sim.signals import stop_on_signals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the Baseten simulator.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--api-key", default="sim-api-key")
    parser.add_argument("--time-scale", type=float, default=1.0)
    parser.add_argument(
        "--no-rate-limits", action="store_true", help="disable Baseten's rate limits"
    )
    parser.add_argument(
        "--advertise-host",
        help="the address clients reach it at, if not --host (truss uploads go there)",
    )
    args = parser.parse_args(argv)
    stopping = stop_on_signals()
    simulator = BasetenSimulator(
        args.api_key,
        host=args.host,
        port=args.port,
        time_scale=args.time_scale,
        rate_limits=not args.no_rate_limits,
        advertise_host=args.advertise_host,
    )
    print(simulator.start(), flush=True)
    stopping.wait()
    simulator.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
