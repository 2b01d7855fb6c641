"""Sandboxed code execution (``sandbox``) and, built on it, the tool-integrated judging loop."""

from judgerl.tools.sandbox import (
    ExecResult,
    Sandbox,
    SandboxClosedError,
    SandboxError,
    SandboxLimits,
    SandboxUnavailableError,
    bwrap_available,
    get_sandbox,
)

__all__ = [
    "ExecResult",
    "Sandbox",
    "SandboxClosedError",
    "SandboxError",
    "SandboxLimits",
    "SandboxUnavailableError",
    "bwrap_available",
    "get_sandbox",
]
