"""The simulators' optional dependencies: what to install when one is missing.

The operator's own install does not carry them (pyproject.toml's `sim` extra does). A part of
a simulator that needs one imports it through `missing_extra`'s error, so the emulator stops
at start with the command to run instead of quietly skipping what it cannot do.
"""

from __future__ import annotations

INSTALL_COMMAND = "pip install 'baseten-operator[sim]'"
CHECKOUT_INSTALL_COMMAND = "pip install -e '.[sim]'"


class MissingExtraError(ImportError):
    """An optional dependency of the simulators is not installed."""


def missing_extra(purpose: str, cause: ImportError) -> MissingExtraError:
    """The error to raise when importing `cause.name` failed: names the install command."""
    return MissingExtraError(
        f"{purpose} needs the Python package {cause.name!r}, which is not installed. "
        f"Install the simulators' extra: {INSTALL_COMMAND} "
        f"(from a source checkout: {CHECKOUT_INSTALL_COMMAND})."
    )
