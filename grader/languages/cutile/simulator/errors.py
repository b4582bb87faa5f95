"""The simulator's errors: what it does not implement, and what cuTile rejects."""

from __future__ import annotations


class SimulatorUnsupported(NotImplementedError):
    """The kernel used a part of cuda.tile that the simulator does not implement."""


class SimulatorError(ValueError):
    """The kernel did something cuTile rejects (a tile size that is not a power of two...)."""


class SimulatorAttributeError(SimulatorError, AttributeError):
    """The kernel read an attribute that cuTile's arrays or tiles do not have."""
