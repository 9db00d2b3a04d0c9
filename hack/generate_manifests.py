"""`make manifests`: write the BasetenModel CRD generated from the API types.

Writes config/crd/bases/models.baseten.com_basetenmodels.yaml and config/crd/kustomization.yaml.
With --check, writes nothing and exits 1 when a committed file is stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from baseten_operator.api.crd import CRD_NAME, GENERATED_HEADER, manifest_text

REPO = Path(__file__).resolve().parent.parent
CRD_DIR = REPO / "config" / "crd"
CRD_FILE = f"{CRD_NAME.split('.', 1)[1]}_{CRD_NAME.split('.', 1)[0]}.yaml"


def kustomization_text() -> str:
    return f"{GENERATED_HEADER}resources:\n  - bases/{CRD_FILE}\n"


def expected_files() -> dict[Path, str]:
    return {
        CRD_DIR / "bases" / CRD_FILE: manifest_text(),
        CRD_DIR / "kustomization.yaml": kustomization_text(),
    }


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
    if args.check and stale:
        names = ", ".join(str(path.relative_to(REPO)) for path in stale)
        print(f"stale: {names}; run `make manifests`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
