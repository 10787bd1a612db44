"""Sandbox for model-written code: bubblewrap namespaces + rlimits + seccomp + wall clock (see core.py)."""

from surrogate_dagster.sandbox.core import (
    Sandbox,
    SandboxError,
    SandboxLimits,
    SandboxResult,
)

__all__ = ["Sandbox", "SandboxError", "SandboxLimits", "SandboxResult"]
