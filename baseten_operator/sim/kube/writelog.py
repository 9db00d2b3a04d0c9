"""Every write request the emulator received, with its User-Agent (`GET /_sim/writes`).

A test tells the writers apart by User-Agent: two operator replicas that send their
leader-election identity in it can be checked for writes after they lost the Lease.
"""

from __future__ import annotations

import time

from baseten_operator.sim.recordlog import RecordLog

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


class WriteLog(RecordLog):
    def record(
        self,
        *,
        verb: str,
        resource: str,
        namespace: str | None,
        name: str | None,
        subresource: str | None,
        user_agent: str | None,
    ) -> None:
        """Log a write on arrival (before injected failures), stamped with wall-clock time."""
        self.append(
            {
                "time": time.time(),
                "verb": verb,
                "resource": resource,
                "namespace": namespace,
                "name": name,
                "subresource": subresource,
                "user_agent": user_agent,
            }
        )
