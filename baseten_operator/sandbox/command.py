"""`baseten-operator sandbox` (placeholder until the sandbox lands)."""

from __future__ import annotations

import argparse


def add_sandbox_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", choices=["tour"], default=None)


def run_sandbox(args: argparse.Namespace) -> int:
    raise SystemExit("sandbox: not built yet")
