"""Test-only sandboxes: a fixed answer, or the (trusted) code run in process."""

from __future__ import annotations

import contextlib
import io

from judgerl.tools.sandbox import ExecResult


class FixedSandbox:
    """Answers every code run with the same stdout (to show the teacher reads the real output)."""

    def __init__(self, stdout: str) -> None:
        self.stdout = stdout
        self.codes: list[str] = []

    def run(self, code: str) -> ExecResult:
        self.codes.append(code)
        return ExecResult(self.stdout, "", 0, False, False, 0.0)


class ExecSandbox(FixedSandbox):
    """Runs the (teacher's own, trusted) code in process and returns its real stdout."""

    def __init__(self) -> None:
        super().__init__("")

    def run(self, code: str) -> ExecResult:
        self.codes.append(code)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            exec(code, {})  # noqa: S102 - only the programmatic teacher's check code reaches it
        return ExecResult(buf.getvalue(), "", 0, False, False, 0.0)
