"""The sandbox's packaged samples are config/samples: kustomize and users read config/samples,
an installed sandbox (no checkout) reads its package's copy; `make manifests` copies."""

from __future__ import annotations

from pathlib import Path

import yaml

from baseten_operator.sandbox.cluster import SECRET_READER_ROLE
from baseten_operator.sandbox.command import DEFAULT_SAMPLES
from testsupport.paths import REPO

SAMPLES = REPO / "config" / "samples"


def contents(directory: Path) -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(directory.iterdir())}


def test_the_packaged_samples_are_config_samples() -> None:
    assert contents(DEFAULT_SAMPLES) == contents(
        SAMPLES
    ), "baseten_operator/sandbox/samples is stale: run `make manifests` and commit the result"


def test_the_sandbox_reads_its_packaged_copy() -> None:
    assert DEFAULT_SAMPLES == REPO / "baseten_operator" / "sandbox" / "samples"
    assert (DEFAULT_SAMPLES / "kustomization.yaml").is_file()


def test_the_sandbox_grants_secret_reading_as_an_install_does() -> None:
    """The ClusterRole the sandbox creates is config/rbac's, under the install's prefix."""
    shipped = yaml.safe_load((REPO / "config" / "rbac" / "secret_reader_role.yaml").read_text())
    prefix = yaml.safe_load((REPO / "config" / "default" / "kustomization.yaml").read_text())
    assert SECRET_READER_ROLE["metadata"]["name"] == (
        prefix["namePrefix"] + shipped["metadata"]["name"]
    )
    assert SECRET_READER_ROLE["rules"] == shipped["rules"]
