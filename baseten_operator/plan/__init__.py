"""`baseten-operator plan`: the actions the next Reconcile pass would take, taken by nobody.

A plan runs the real pass (controller/basetenmodel/reconciler.py) against a recording world
(world.py): Baseten reads go through, Baseten writes are recorded as actions and never
sent, status and finalizer writes land in memory, pushes are named and never launched.
See docs/plan.md.

Must not import `sim` or `sandbox`: a plan runs against the real Baseten and cluster.
"""

__all__ = ["actions", "command", "inputs", "planner", "render", "tenancy", "world"]
