"""The short soak of the suite: the whole `make soak` story on 10 CRs, one leader SIGKILL and
no freeze (test_leader_freeze.py has that), faults throughout, every check of the soak."""

from __future__ import annotations

from pathlib import Path

import pytest

from testsupport.soak.run import SHORT, run_soak

pytestmark = [pytest.mark.soak, pytest.mark.timeout(120)]


def test_short_soak_keeps_every_promise(tmp_path: Path) -> None:
    result = run_soak(SHORT, tmp_path)
    print(result.report())
    assert result.ok, result.report()
