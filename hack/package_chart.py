"""`make helm-package`: lint the Helm chart, then package it as DIST/baseten-operator-{ver}.tgz."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import helm_python as helm

CHART = Path(__file__).resolve().parent.parent / "deploy" / "charts" / "baseten-operator"
WARNING = 2  # helm lint severities: 1 info, 2 warning, 3 error


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("destination", type=Path, help="directory for the archive")
    args = parser.parse_args(argv)
    report = helm.lint(CHART, strict=True)
    problems = report["errors"] + [
        f"{m['path']}: {m['error']}" for m in report["messages"] if m["severity"] >= WARNING
    ]
    if problems:
        print("helm lint:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    args.destination.mkdir(parents=True, exist_ok=True)
    print(helm.package(CHART, destination=args.destination))
    return 0


if __name__ == "__main__":
    sys.exit(main())
