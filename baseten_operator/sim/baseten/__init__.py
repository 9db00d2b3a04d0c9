"""Baseten simulator: Management API + truss push protocol + lifecycle + faults."""

from baseten_operator.sim.baseten.engine import LifecycleDurations, SimEngine
from baseten_operator.sim.baseten.simulator import BasetenSimulator

__all__ = ["BasetenSimulator", "LifecycleDurations", "SimEngine"]
