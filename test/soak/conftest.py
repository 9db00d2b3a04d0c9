"""Puts the soak harness and the e2e helpers it builds on (test/e2e/e2e_harness.py) on sys.path."""

import sys
from pathlib import Path

HERE = Path(__file__).parent
for folder in (HERE, HERE.parent / "e2e"):
    sys.path.insert(0, str(folder))
