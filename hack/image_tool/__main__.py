"""`python -m image_tool build | wheelhouse | sbom | tier` (PYTHONPATH=hack; the Makefile's
`image`, `wheelhouse` and `sbom` targets and `make test` call it).

Exit status: 0 done, 1 failed, 3 this machine cannot build the image (the message says what
to install; the image tier skips, quoting it).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from baseten_operator.sim.realkube.build import cache_home

from . import REPO, engines, sbom, wheelhouse
from .build import build, version

CANNOT = 3
# What `make test` builds and the image tier runs: podman (its containers reach the host's
# loopback through slirp4netns), air-gapped from a wheelhouse kept in the cache.
TIER_WHEELHOUSE = cache_home() / "image" / "wheelhouse"
OUT = REPO / "dist" / "image"


def say(message: str) -> None:
    print(f"image: {message}", file=sys.stderr, flush=True)


def tier() -> None:
    engine = engines.podman()
    if shutil.which("slirp4netns") is None:
        raise engines.CannotBuild(f"running the image needs slirp4netns: {engines.INSTALL}")
    say(f"the wheelhouse: {TIER_WHEELHOUSE}")
    wheelhouse.fill(TIER_WHEELHOUSE)
    build(engine, tag=default_tag(), wheelhouse_dir=TIER_WHEELHOUSE, out=OUT, say=say)


def default_tag() -> str:
    return f"baseten-operator:{version()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="image_tool", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    image = commands.add_parser("build", help="build the image")
    image.add_argument("--tag", default=default_tag())
    image.add_argument("--engine", choices=["docker", "podman"], help="default: what runs here")
    image.add_argument("--wheelhouse", type=Path, help="air-gapped: every wheel from here")
    image.add_argument("--out", type=Path, default=OUT, help="for the SBOM and the record")
    house = commands.add_parser("wheelhouse", help="fill a wheelhouse and check it")
    house.add_argument("directory", type=Path)
    bom = commands.add_parser("sbom", help="write the SBOM of the locked closure")
    bom.add_argument("output", type=Path)
    commands.add_parser("tier", help="what `make test` builds for the image tier")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            engine = engines.find(args.engine)
            build(engine, tag=args.tag, wheelhouse_dir=args.wheelhouse, out=args.out, say=say)
        elif args.command == "wheelhouse":
            wheelhouse.fill(args.directory)
            say(f"{args.directory} holds every file the locks pin")
        elif args.command == "sbom":
            sbom.write(args.output)
        else:
            tier()
    except engines.CannotBuild as error:
        say(f"cannot build here: {error}")
        return CANNOT
    except (wheelhouse.Incomplete, RuntimeError, subprocess.SubprocessError) as error:
        say(f"failed: {error}")
        if args.command == "build" and args.wheelhouse is None:
            say(
                "if pip in the build could not reach the index (no network in build "
                "containers, or a proxy's CA they do not trust), build air-gapped: "
                "make wheelhouse && make image WHEELHOUSE=wheelhouse"
            )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
