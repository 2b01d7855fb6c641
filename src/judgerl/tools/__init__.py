"""Sandboxed code execution (``sandbox``) and, built on it, the tool-integrated judging loop."""

from judgerl.tools.sandbox import (
    ExecResult,
    Executor,
    Sandbox,
    SandboxClosedError,
    SandboxError,
    SandboxLimits,
    SandboxUnavailableError,
    bwrap_available,
    get_sandbox,
)
from judgerl.tools.tir import run_tool_loop

__all__ = [
    "ExecResult",
    "Executor",
    "Sandbox",
    "SandboxClosedError",
    "SandboxError",
    "SandboxLimits",
    "SandboxUnavailableError",
    "bwrap_available",
    "get_sandbox",
    "run_tool_loop",
]
