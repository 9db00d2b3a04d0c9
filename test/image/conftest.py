"""The image tier: the operator's image, built from the Dockerfile as `make image` builds it,
looked into and run as the shipped Deployment runs it.

Its build runs once, when the tier's tests have been collected and before any test runs, so
that a cold build (minutes: the stand-in base, the wheelhouse) counts against no test's
timeout; `make test` started the same build in the background, and this one waits for it.
Where this machine cannot build the image (no podman and no root to install it), every test of
the tier skips, saying what is missing; a build that fails fails them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from testsupport.clusters import say
from testsupport.image import Podman, TierImage, build_tier
from testsupport.paths import REPO

TIER = REPO / "test" / "image"
BUILT = pytest.StashKey[TierImage]()


def pytest_collection_finish(session: pytest.Session) -> None:
    if any(TIER in item.path.parents for item in session.items):
        say("image tier: building the image (or waiting for make test's build)")
        session.config.stash[BUILT] = built = build_tier()
        say(f"image tier: {built.skip_reason or ('failed' if built.failure else 'built')}")


@pytest.fixture(scope="session")
def podman() -> Podman:
    return Podman()


@pytest.fixture(scope="session")
def image(request: pytest.FixtureRequest, podman: Podman) -> Iterator[dict[str, Any]]:
    """The record of the image built (hack/image_tool/build.py's `Record`)."""
    built = request.config.stash[BUILT]
    if built.skip_reason is not None:
        pytest.skip(built.skip_reason)
    if built.failure is not None:
        pytest.fail(built.failure, pytrace=False)
    assert built.record is not None
    # A container made from it (never started) keeps the image while the tier runs: a build in
    # another checkout moves the tag and removes the image it named, unless something uses it.
    pin = f"image-tier-pin-{uuid.uuid4().hex[:8]}"
    podman.run("create", "--name", pin, built.record["id"])
    try:
        yield built.record
    finally:
        podman.run("rm", "--force", pin, check=False)
