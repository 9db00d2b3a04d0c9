"""Fixtures: one running operator (emulator + simulator + the real loop) per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testsupport.operator_harness import OperatorHarness, running_operator


@pytest.fixture(scope="module")
def harness(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorHarness]:
    """A module may set HARNESS_OPTIONS (OperatorHarness fields) to tune its operator."""
    options = getattr(request.module, "HARNESS_OPTIONS", {})
    with running_operator(workdir=tmp_path_factory.mktemp("operator"), **options) as running:
        yield running


@pytest.fixture
def namespace(harness: OperatorHarness) -> str:
    return harness.new_namespace()
