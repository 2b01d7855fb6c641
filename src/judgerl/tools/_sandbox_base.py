"""Public value types and errors of the sandbox (``judgerl.tools.sandbox`` re-exports them)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Protocol, runtime_checkable

__all__ = ["ExecResult", "Executor", "SandboxClosedError", "SandboxError", "SandboxLimits",
           "SandboxUnavailableError"]


class SandboxError(RuntimeError):
    """A sandbox worker could not be started or talked to."""


class SandboxUnavailableError(SandboxError):
    """No sandbox of the requested kind can be had here: ``kind="bwrap"`` without a working
    bubblewrap (or seccomp), or ``kind="auto"`` where only the fallback would be left and the
    caller did not opt in to it (``allow_unsafe=True`` / ``JUDGERL_UNSAFE_SANDBOX=1``)."""


class SandboxClosedError(SandboxError):
    """``run`` was called after ``close``."""


#: Largest ``timeout_s`` / ``cpu_time_s`` accepted, in seconds (one week): longer waits would
#: overflow ``poll(2)``'s int milliseconds in the host and the zygote.
MAX_SECONDS = 7 * 24 * 3600
#: Largest byte limit accepted (1 EiB): rlimits and cgroup limits are signed 64-bit in the kernel.
MAX_BYTES = 1 << 60
#: Largest ``max_processes`` / ``max_open_files`` accepted (the kernel caps pids at 2**22 and
#: open files at ``fs.nr_open``, 2**20 by default).
MAX_PROCESSES = 1 << 20
_MAX = {"timeout_s": MAX_SECONDS, "cpu_time_s": MAX_SECONDS, "max_processes": MAX_PROCESSES,
        "max_open_files": MAX_PROCESSES}


def check_timeout(value: object, what: str) -> float:
    """``value`` as a float number of seconds in (0, MAX_SECONDS].

    Raises:
        ValueError: not a number (bools included), NaN, infinite, <= 0 or > ``MAX_SECONDS``;
            the message names ``what``.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 < value <= MAX_SECONDS:
        raise ValueError(f"{what} must be a positive, finite number of seconds <= {MAX_SECONDS}, "
                         f"got {value!r}")
    return float(value)


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits applied to every run (all per run, per process unless stated).

    Attributes:
        timeout_s: wall-clock limit in seconds (monotonic clock; the process group is SIGKILLed).
        cpu_time_s: CPU-time limit in whole seconds (RLIMIT_CPU; SIGXCPU, then SIGKILL 1 s later).
        memory_bytes: memory limit in bytes. Always an address-space limit per process
            (RLIMIT_AS; allocations beyond it fail, Python raises ``MemoryError``); where a cgroup
            (v2, or v1's memory hierarchy) is writable also the whole run's budget: all its
            processes, memfds, shared memory and files on the private tmpfs together (past it the
            kernel kills one of its processes). Without cgroups a run's total is bounded only by
            ``memory_bytes * max_processes`` for process memory, and memfd pages are not bounded
            by it at all (see ``ExecResult.budget`` and docs/sandbox.md).
        output_bytes: cap in bytes on each of stdout and stderr; the rest is read and discarded and
            ``ExecResult.truncated`` is set.
        max_processes: process/thread limit of the run, including its own main thread: the
            run's cgroup ``pids.max`` where a cgroup is usable, and RLIMIT_NPROC on the run's
            unprivileged uid in any case.
        max_open_files: file-descriptor limit (RLIMIT_NOFILE).
        file_bytes: largest file the run may write, in bytes (RLIMIT_FSIZE).
        disk_bytes: size in bytes of the worker's private tmpfs (bwrap only; the fallback has no
            disk quota beyond ``file_bytes`` per file).

    Raises:
        ValueError: a limit is not a positive, finite number (NaN and inf included), not whole
            where it must be, or above its maximum (``MAX_SECONDS`` for the two times,
            ``MAX_PROCESSES`` for counts, ``MAX_BYTES`` for sizes); the message names the field.
    """

    timeout_s: float = 10.0
    cpu_time_s: int = 10
    memory_bytes: int = 512 * 1024 * 1024
    output_bytes: int = 64 * 1024
    max_processes: int = 32
    max_open_files: int = 64
    file_bytes: int = 16 * 1024 * 1024
    disk_bytes: int = 64 * 1024 * 1024

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or value <= 0:
                raise ValueError(f"SandboxLimits.{f.name} must be a positive, finite number, "
                                 f"got {value!r}")
            if f.name != "timeout_s" and not float(value).is_integer():
                raise ValueError(f"SandboxLimits.{f.name} must be a whole number, got {value!r}")
            top = _MAX.get(f.name, MAX_BYTES)
            if value > top:
                raise ValueError(f"SandboxLimits.{f.name} must be <= {top}, got {value!r}")
        if self.max_open_files < 8:
            raise ValueError(f"SandboxLimits.max_open_files must be >= 8, got {self.max_open_files}")
        if self.memory_bytes < 64 * 1024 * 1024:
            raise ValueError(
                f"SandboxLimits.memory_bytes must be >= 64 MiB (the interpreter needs it), "
                f"got {self.memory_bytes}"
            )

    def to_wire(self) -> dict:
        """The limits as a JSON-able dict for the worker (integers for the rlimits)."""
        return {
            f.name: (float(getattr(self, f.name)) if f.name == "timeout_s" else int(getattr(self, f.name)))
            for f in fields(self)
        }


@dataclass(frozen=True)
class ExecResult:
    """The outcome of one sandboxed run.

    Attributes:
        stdout: captured standard output (UTF-8, undecodable bytes replaced), at most
            ``output_bytes`` bytes before decoding.
        stderr: captured standard error, same cap; when the sandbox stopped the run (timeout, CPU
            limit, signal, dead worker) a one-line explanation is appended as its last line.
        exit_code: the process exit status (0..255), or ``-N`` when killed by signal N (SIGKILL on
            wall-clock timeout, SIGXCPU/SIGKILL on the CPU limit).
        timed_out: True when the wall-clock limit was hit.
        truncated: True when stdout or stderr exceeded the output cap.
        duration_s: wall-clock seconds from fork to exit, measured in the worker.
        budget: which mechanism enforced the run's memory/process budget: ``"cgroup-v2"``
            (``memory.max`` = ``memory_bytes`` for the whole run, ``pids.max`` =
            ``max_processes``), ``"cgroup-v1"`` (``memory.limit_in_bytes`` and
            ``memory.memsw.limit_in_bytes``, ``pids.max``; same meaning) or ``"rlimit"`` (no
            writable cgroup here: RLIMIT_AS per process and RLIMIT_NPROC per uid, so the run's
            process memory is at most ``memory_cap_bytes`` and memfd pages are unbounded). Empty
            for results built by hand. Not part of equality.
        memory_cap_bytes: the most memory, in bytes, the run could hold in total under
            ``budget`` (``memory_bytes``, or ``memory_bytes * max_processes`` for ``"rlimit"``).
            Not part of equality.
        memory_peak_bytes: the most memory the run held at once, in bytes (its worker cgroup's
            peak above the idle worker: processes, memfds, tmpfs files and page cache it caused),
            or None where not measured (``"rlimit"``; cgroup v2 before Linux 6.12). Not part of
            equality.
        oom_kills: processes of the run the kernel killed for exceeding the cgroup budget (each
            reported in ``stderr``'s last line as ``MemoryError: ...``). Not part of equality.
    """

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool
    truncated: bool
    duration_s: float
    budget: str = field(default="", compare=False)
    memory_cap_bytes: int = field(default=0, compare=False)
    memory_peak_bytes: int | None = field(default=None, compare=False)
    oom_kills: int = field(default=0, compare=False)

    @property
    def ok(self) -> bool:
        """True when the code exited with status 0 within the time limit."""
        return self.exit_code == 0 and not self.timed_out


@runtime_checkable
class Executor(Protocol):
    """What a tool-using judge needs of a code executor: ``run(code) -> ExecResult``.

    :class:`judgerl.tools.sandbox.Sandbox` is the one judgerl ships (:func:`judgerl.tools.get_sandbox`);
    tests use small fakes. ``run`` must never raise for the code's own failures (they are in the
    result: exit code, stderr, ``timed_out``); it may raise :class:`SandboxError` when the executor
    itself cannot run.
    """

    def run(self, code: str) -> ExecResult:
        """Execute ``code`` (Python source) and return what it printed and how it ended."""
        ...
