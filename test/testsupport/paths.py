"""Where the repository is, so that no test counts how deep it sits in the tree."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
