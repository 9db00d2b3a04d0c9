"""`make image`, `make wheelhouse` and the image tier's build: the operator's image built from
the Dockerfile with whatever engine the machine has (`python -m image_tool`, PYTHONPATH=hack).

- `engines`: Docker where its daemon answers, else podman with this project's settings;
- `bases`: the base the Dockerfile pins, or a stand-in made from Debian's packages where that
  cannot be pulled (cached outside the checkout);
- `wheelhouse`: every file the locks pin, downloaded and hash-checked, for air-gapped builds;
- `sbom`: the CycloneDX SBOM of the locked closure;
- `build`: the build itself, its labels, and the record it leaves beside the SBOM.
"""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # the checkout: the build's context
