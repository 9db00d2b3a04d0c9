"""`make manifests`: write the CRDs generated from the API types, and the copies.

Writes config/crd/bases/models.baseten.com_basetenmodels.yaml,
config/crd/bases/models.baseten.com_basetensecrets.yaml and config/crd/kustomization.yaml,
and keeps the Helm chart (deploy/charts/baseten-operator) in step: its version and appVersion
are the project's (pyproject.toml), and its files/ hold copies of the CRDs, the manager's RBAC
rules (config/rbac/role.yaml) and the monitoring of deploy/monitoring, since a chart's
templates can read only files inside the chart. The sandbox's samples
(baseten_operator/sandbox/samples, package data: an installed sandbox has no checkout) are a
copy of config/samples, where kustomize and users find them.
With --check, writes nothing and exits 1 when a committed file is stale (or a packaged sample
is left over from one config/samples no longer has).
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

from baseten_operator.api.crd import CRD_NAME, GENERATED_HEADER, manifest_text
from baseten_operator.api.secret_crd import SECRET_CRD_NAME, secret_manifest_text

REPO = Path(__file__).resolve().parent.parent
CRD_DIR = REPO / "config" / "crd"


def crd_file(crd_name: str) -> str:
    """`plural.group` -> `group_plural.yaml`, kubebuilder's file name."""
    plural, group = crd_name.split(".", 1)
    return f"{group}_{plural}.yaml"


CRD_FILE = crd_file(CRD_NAME)
SECRET_CRD_FILE = crd_file(SECRET_CRD_NAME)
CHART_DIR = REPO / "deploy" / "charts" / "baseten-operator"
# Chart file -> the repository file it copies.
CHART_COPIES = {
    "files/manager-role.yaml": REPO / "config" / "rbac" / "role.yaml",
    "files/prometheus-rules.yaml": REPO / "deploy" / "monitoring" / "prometheus-rules.yaml",
    "files/grafana-dashboard.json": REPO / "deploy" / "monitoring" / "grafana-dashboard.json",
}
SAMPLES_DIR = REPO / "config" / "samples"
PACKAGED_SAMPLES_DIR = REPO / "baseten_operator" / "sandbox" / "samples"


def kustomization_text() -> str:
    return f"{GENERATED_HEADER}resources:\n  - bases/{CRD_FILE}\n  - bases/{SECRET_CRD_FILE}\n"


def project_version() -> str:
    with (REPO / "pyproject.toml").open("rb") as file:
        return str(tomllib.load(file)["project"]["version"])


def chart_yaml_text() -> str:
    """Chart.yaml with version and appVersion set to the project's version."""
    text = (CHART_DIR / "Chart.yaml").read_text()
    version = project_version()
    text = re.sub(r"(?m)^version: .*$", f"version: {version}", text)
    return re.sub(r"(?m)^appVersion: .*$", f'appVersion: "{version}"', text)


def expected_files() -> dict[Path, str]:
    crd = manifest_text()
    secret_crd = secret_manifest_text()
    files = {
        CRD_DIR / "bases" / CRD_FILE: crd,
        CRD_DIR / "bases" / SECRET_CRD_FILE: secret_crd,
        CRD_DIR / "kustomization.yaml": kustomization_text(),
        CHART_DIR / "Chart.yaml": chart_yaml_text(),
        CHART_DIR / "files" / "basetenmodel-crd.yaml": crd,
        CHART_DIR / "files" / "basetensecret-crd.yaml": secret_crd,
    }
    for name, source in CHART_COPIES.items():
        files[CHART_DIR / name] = source.read_text()
    for sample in sorted(SAMPLES_DIR.iterdir()):
        files[PACKAGED_SAMPLES_DIR / sample.name] = sample.read_text()
    return files


def leftover_files() -> list[Path]:
    """Packaged samples whose original left config/samples."""
    kept = {sample.name for sample in SAMPLES_DIR.iterdir()}
    if not PACKAGED_SAMPLES_DIR.is_dir():
        return []
    return sorted(path for path in PACKAGED_SAMPLES_DIR.iterdir() if path.name not in kept)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail when a file is stale")
    args = parser.parse_args(argv)
    stale = []
    for path, text in expected_files().items():
        if path.exists() and path.read_text() == text:
            continue
        stale.append(path)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path.relative_to(REPO)}")
    for path in leftover_files():
        stale.append(path)
        if not args.check:
            path.unlink()
            print(f"removed {path.relative_to(REPO)}")
    if args.check and stale:
        names = ", ".join(str(path.relative_to(REPO)) for path in stale)
        print(f"stale: {names}; run `make manifests`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
