"""runtime/ is a generic controller library: it names no product (docs/design.md, "Layout").

The import contract (pyproject.toml, `runtime-stands-alone`) keeps its imports clean; this
keeps its words clean, so that a product default (a Lease name, a metric prefix, a comment
about a product API) cannot creep back in.
"""

from __future__ import annotations

import re
from pathlib import Path

import baseten_operator.runtime

RUNTIME = Path(baseten_operator.runtime.__file__).parent
# The package's own import paths are the only place the product's name may appear.
IMPORT_PATH = re.compile(r"\bbaseten_operator(\.\w+)*\b")


def test_no_runtime_module_names_the_product() -> None:
    offenders = [
        f"{path.name}:{number}: {line.strip()}"
        for path in sorted(RUNTIME.glob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if "baseten" in IMPORT_PATH.sub("", line).lower()
    ]
    assert not offenders, "runtime/ must stay product-neutral:\n" + "\n".join(offenders)
