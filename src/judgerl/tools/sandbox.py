"""Sandboxed execution of untrusted (model-written) Python.

Two kinds, one API (``get_sandbox(...).run(code) -> ExecResult``); ``docs/sandbox.md`` lists what
each guarantees and what it does not.

``"bwrap"`` (real isolation; what ``kind="auto"`` uses)
    Each pool slot is one long-lived bubblewrap sandbox running a warm Python "zygote"
    (:mod:`judgerl.tools._zygote`) in new network, pid, ipc, uts and cgroup namespaces, with a
    cleared environment, a new session, ``--die-with-parent``, a minimal read-only filesystem and a
    size-capped tmpfs at /tmp. Every run is a fresh fork with rlimits, an empty private directory,
    (as root) an unprivileged uid of its own worker, and a seccomp filter (io_uring, new
    namespaces, ptrace, keyrings, SysV/POSIX IPC, mounts, sockets other than AF_UNIX, ... are
    refused). Where cgroup v2 is writable the
    run's memory and process count are budgeted as a whole (``memory.max``, ``pids.max``), where
    only cgroup v1 is writable through its ``memory`` and ``pids`` hierarchies
    (``memory.limit_in_bytes`` + ``memory.memsw.limit_in_bytes``, ``pids.max``); elsewhere per
    process (RLIMIT_AS x RLIMIT_NPROC). Every ``ExecResult.budget`` states which one held.

``"fallback"`` (NOT a security boundary)
    The same zygote directly on the host, with rlimits, the seccomp filter, an unprivileged uid
    when we are root and a bypassable ``sys.addaudithook`` guard. ``kind="auto"`` never picks it
    silently: without bubblewrap it raises ``SandboxUnavailableError`` unless the caller opts in
    (``allow_unsafe=True``, the CLI's ``--unsafe-sandbox``, or ``JUDGERL_UNSAFE_SANDBOX=1``).

Timeouts use ``time.monotonic`` deadlines + ``poll`` + SIGKILL, never SIGALRM, so ``run`` works from
any thread. Workers are handed to callers in FIFO order (:class:`judgerl.tools.workers.WorkerPool`); a
run that kills, wedges or dirties its worker gets its result and the worker is replaced.
"""

from __future__ import annotations

import logging
import os
import resource
import shutil
import tempfile
import threading
import weakref
from collections.abc import Sequence
from dataclasses import fields
from typing import Literal

from judgerl.tools import _sandbox_host as host
from judgerl.tools._sandbox_base import (
    ExecResult,
    Executor,
    SandboxClosedError,
    SandboxError,
    SandboxLimits,
    SandboxUnavailableError,
    check_timeout,
)
from judgerl.tools._sandbox_cgroup import CgroupSlot, cgroup_parent
from judgerl.tools._sandbox_env import (
    _bwrap_args,
    _interpreter_paths,
    _is_root,
    _python_executable,
    _site_packages_dirs,
    _stdlib_dirs,
    bwrap_available,
    bwrap_unavailable_reason,
)
from judgerl.tools._sandbox_seccomp import run_filter_bpf
from judgerl.tools.workers import PoolClosedError, WorkerPool

__all__ = [
    "UNSAFE_ENV",
    "ExecResult",
    "Executor",
    "Sandbox",
    "SandboxClosedError",
    "SandboxError",
    "SandboxLimits",
    "SandboxUnavailableError",
    "bwrap_available",
    "get_sandbox",
    "unsafe_opt_in",
]

logger = logging.getLogger(__name__)

SandboxKind = Literal["bwrap", "fallback"]
#: Environment variable that opts in to the fallback sandbox (value 1/true/yes).
UNSAFE_ENV = "JUDGERL_UNSAFE_SANDBOX"
_UID_BASE = 1_000_000_000  # per-worker uids: _UID_BASE + pid * 256 + n, far from real accounts
_UIDS_PER_PROCESS = 256  # pid * 256 + 255 stays below 2**32 - 1 for any pid (pid_max <= 2**22)
_FALLBACK_WARNING = (
    "judgerl sandbox kind='fallback' is NOT a security boundary: code runs on the host with "
    "rlimits, a seccomp filter, a cleared environment, a private temp dir%s and a sys.addaudithook "
    "guard. Audit hooks are bypassable (closure cells, _posixsubprocess.fork_exec, dir_fd-relative "
    "calls, /dev/shm, pidfd_send_signal); there is no network, pid or mount isolation and no disk "
    "quota. Install bubblewrap (apt-get install bubblewrap) for real isolation."
)
_fallback_warned = False


class UidPool:
    """Unprivileged uids for sandbox workers, each held by one live worker at a time.

    ``acquire`` hands out the lowest free uid of this process's range (``base + pid * size`` ..
    ``+ size - 1``: ranges of live processes never overlap); ``release`` returns it once every
    process that ran as it is gone. A uid is never given to a second worker while the first one
    may still have processes (which would share its RLIMIT_NPROC budget and could signal it).

    Args:
        base: first uid of pid 0's range.
        size: uids per process (= most workers alive at once in this process).

    Raises:
        SandboxError: from ``acquire``, when all ``size`` uids are held by live workers.
    """

    def __init__(self, base: int = _UID_BASE, size: int = _UIDS_PER_PROCESS) -> None:
        self._base, self._size = base, size
        self._lock = threading.Lock()
        self._pid = -1
        self._free: list[int] = []
        self._held: set[int] = set()

    def acquire(self) -> int:
        """A uid no live worker holds (lowest first)."""
        with self._lock:
            if self._pid != os.getpid():  # first use, or a forked child: its own range
                self._pid = os.getpid()
                first = self._base + self._pid * self._size
                self._free = list(range(first + self._size - 1, first - 1, -1))
                self._held = set()
            if not self._free:
                raise SandboxError(f"all {self._size} sandbox uids of this process are held by "
                                   "live workers")
            uid = self._free.pop()
            self._held.add(uid)
            return uid

    def release(self, uid: int) -> None:
        """Give ``uid`` back (its worker's processes are gone). Releasing twice is a no-op."""
        with self._lock:
            if uid in self._held:
                self._held.discard(uid)
                self._free.append(uid)
                self._free.sort(reverse=True)

    def held(self) -> set[int]:
        """The uids currently held."""
        with self._lock:
            return set(self._held)


_uids = UidPool()


def unsafe_opt_in() -> bool:
    """Whether ``$JUDGERL_UNSAFE_SANDBOX`` opts in to the fallback (``1``, ``true`` or ``yes``)."""
    return os.environ.get(UNSAFE_ENV, "").strip().lower() in ("1", "true", "yes")


def _refusal() -> str:
    reason = bwrap_unavailable_reason() or "unknown reason"
    return (f"bubblewrap is not available here ({reason}); the fallback sandbox is not a security "
            f"boundary: install bubblewrap, or pass --unsafe-sandbox / set {UNSAFE_ENV}=1 to run "
            f"model-written code without isolation")


class Sandbox:
    """A pool of warm sandbox workers; ``run`` is thread-safe.

    Build one with ``get_sandbox``. Use as a context manager or call ``close()``.

    Attributes:
        kind: ``"bwrap"`` or ``"fallback"``.
        limits: the default ``SandboxLimits`` for every run.
        pool_size: maximum number of warm workers (concurrent runs); more callers wait in FIFO
            order for a free one.
        budget: ``"cgroup-v2"`` (per-run ``memory.max``/``pids.max``), ``"cgroup-v1"``
            (per-run ``memory.limit_in_bytes`` + ``memory.memsw.limit_in_bytes``, ``pids.max``)
            or ``"rlimit"`` (per-process RLIMIT_AS x RLIMIT_NPROC; no writable cgroup here).
    """

    def __init__(
        self,
        kind: SandboxKind,
        limits: SandboxLimits,
        *,
        pool_size: int,
        python_paths: Sequence[str] = (),
        preload: Sequence[str] = (),
    ) -> None:
        if kind not in ("bwrap", "fallback"):
            raise ValueError(f"Sandbox kind must be 'bwrap' or 'fallback', got {kind!r}")
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
            raise ValueError(f"pool_size must be an integer >= 1, got {pool_size!r}")
        for name, res in (("max_open_files", "RLIMIT_NOFILE"), ("max_processes", "RLIMIT_NPROC")):
            hard = resource.getrlimit(getattr(resource, res))[1]
            if hard != resource.RLIM_INFINITY and getattr(limits, name) > hard:
                # Runs inherit this process's hard limit and cannot raise it: every run would fail.
                raise ValueError(f"SandboxLimits.{name}={getattr(limits, name)} is above this "
                                 f"process's hard {res} ({hard})")
        self.kind: SandboxKind = kind
        self.limits = limits
        self.pool_size = pool_size
        self._root = _is_root()
        extra = [os.path.realpath(p) for p in python_paths]
        for p in extra:
            if not os.path.isdir(p):
                raise ValueError(f"python_paths entry {p!r} is not a directory")
        self._extra = extra
        self._preload = list(preload)
        self._bpf = run_filter_bpf()  # SeccompUnavailableError (a SandboxUnavailableError)
        self._cgroup_parent = cgroup_parent()
        self.budget = self._cgroup_parent.mechanism if self._cgroup_parent is not None else "rlimit"
        self._tmp_root: str | None = None
        if kind == "fallback":
            shm = "/dev/shm"  # tmpfs: cheap mkdir/rmdir, nothing left on disk
            base = shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None
            self._tmp_root = tempfile.mkdtemp(prefix="judgerl-sandbox-", dir=base)
            os.chmod(self._tmp_root, 0o711)  # traversable, not listable: runs cannot find each other
        self._reapers: list[threading.Thread] = []
        wself = weakref.ref(self)  # the pool must not keep the Sandbox alive (finalizer)

        def start() -> host.HostWorker:
            sandbox = wself()
            if sandbox is None:
                raise SandboxClosedError("this Sandbox was garbage-collected")
            return sandbox._start_worker()

        self._pool: WorkerPool[host.HostWorker] = WorkerPool(start, lambda w: w.kill(), pool_size)
        self._finalizer = weakref.finalize(self, _shutdown, self._pool, self._tmp_root,
                                           self._reapers)
        if kind == "fallback":
            _warn_fallback(self._root)

    def _start_worker(self) -> host.HostWorker:
        """Start one zygote (called by the pool, on demand)."""
        import base64

        bwrap = self.kind == "bwrap"
        cfg = {
            "tmp_root": "/tmp" if bwrap else self._tmp_root,
            "guard": not bwrap,
            "read_roots": _stdlib_dirs() + self._extra + ["/dev/null", "/dev/urandom", "/dev/zero"],
            "python_paths": self._extra,
            "preload": self._preload,
            "own_pid_namespace": bwrap,
            "nproc_base_from_proc": not bwrap and not self._root,
            "path_fds": not bwrap and self._root,
            "seccomp_bpf": base64.b64encode(self._bpf).decode(),
        }
        exe = _python_executable()
        if bwrap:
            files = [(f"{host.ZYGOTE_IN_SANDBOX}/_zygote/{name}", data)
                     for name, data in host.zygote_files()]
            dests = [dest for dest, _ in files]

            def argv(fds: list[int]) -> list[str]:
                return (_bwrap_args(self.limits.disk_bytes, _interpreter_paths() + self._extra,
                                    self._root, list(zip(fds, dests)))
                        + host.bootstrap_argv(exe, host.ZYGOTE_IN_SANDBOX))
        else:
            files = []

            def argv(fds: list[int]) -> list[str]:
                return host.bootstrap_argv(exe, str(host.ZYGOTE_DIR.parent))
        cgroup = None
        if self._cgroup_parent is not None:
            try:
                cgroup = CgroupSlot(self._cgroup_parent, self.limits.max_processes, extra_pids=4)
            except OSError as e:
                raise SandboxError(f"cannot create the worker's cgroup: {e}") from e
        try:
            uid = _uids.acquire() if self._root else None  # HostWorker gives it back when reaped
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            raise
        cfg["uid"] = cfg["gid"] = uid
        # One budget for all the run holds in RAM, files on the private tmpfs included.
        return host.HostWorker(argv, cfg, files, cgroup, self.limits.memory_bytes, self._reapers,
                               on_reaped=None if uid is None else (lambda: _uids.release(uid)))

    def run(self, code: str, timeout_s: float | None = None, stdin: str | None = None) -> ExecResult:
        """Execute ``code`` (a Python module body) in a fresh sandboxed process.

        Args:
            code: Python source, run like ``python -c`` (``__name__ == "__main__"``) in an empty
                private working directory that is wiped afterwards.
            timeout_s: wall-clock limit in seconds for this run (default ``limits.timeout_s``).
            stdin: text fed to the process's standard input (UTF-8); None means empty stdin.

        Returns:
            ExecResult with stdout/stderr (each capped at ``limits.output_bytes`` bytes), the exit
            status, ``timed_out``, ``truncated``, ``duration_s`` (seconds) and the ``budget`` in
            force. Errors in the code, limits being hit and a crashed worker are reported in the
            result, never raised.

        Raises:
            TypeError: ``code`` or ``stdin`` is not a str.
            ValueError: ``timeout_s`` is not a positive, finite number of seconds up to
                ``MAX_SECONDS`` (one week; NaN and inf are refused).
            SandboxClosedError: the sandbox was closed.
            SandboxError: a worker process could not be (re)started.
        """
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, got {type(code).__name__}")
        if stdin is not None and not isinstance(stdin, str):
            raise TypeError(f"stdin must be a str or None, got {type(stdin).__name__}")
        timeout = check_timeout(self.limits.timeout_s if timeout_s is None else timeout_s, "timeout_s")
        stale = 0
        for _ in range(self.pool_size + 2):  # dead idle workers are replaced, not counted
            try:
                worker = self._pool.acquire()
            except PoolClosedError as e:
                raise SandboxClosedError("this Sandbox is closed") from e
            if not worker.alive():  # it died between runs (killed from outside, OOM, ...)
                self._pool.discard(worker)
                continue
            try:
                result, healthy = worker.execute(code, stdin, timeout, self.limits)
            except host.StaleWorker as e:
                self._pool.discard(worker)
                stale += 1
                if stale < 2:
                    continue
                return ExecResult("", f"SandboxError: the sandbox worker failed twice ({e or 'died'}; "
                                  "replaced)", -1, False, False, 0.0)
            except BaseException:
                self._pool.discard(worker)
                raise
            if healthy and not self._pool.closed:
                self._pool.release(worker)
            else:
                self._pool.discard(worker)
            return result
        raise SandboxError("no sandbox worker stayed alive long enough to take the run")

    def close(self) -> None:
        """Kill all workers (a run in progress gets an error result) and remove the sandbox's
        temporary files and cgroups, waiting at most a few seconds. Idempotent."""
        self._finalizer()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Sandbox(kind={self.kind!r}, pool_size={self.pool_size}, budget={self.budget!r}, "
                f"limits={self.limits!r})")


def _shutdown(pool: WorkerPool, tmp_root: str | None, reapers: list[threading.Thread]) -> None:
    pool.close(kill_busy=True)
    for thread in list(reapers):
        thread.join(host._REAP_S + 1.0)
    if tmp_root is not None:
        shutil.rmtree(tmp_root, ignore_errors=True)


def _warn_fallback(root: bool) -> None:
    global _fallback_warned
    if not _fallback_warned:
        _fallback_warned = True
        logger.warning(_FALLBACK_WARNING, ", an unprivileged uid" if root else "")


def get_sandbox(
    kind: Literal["auto", "bwrap", "fallback"] = "auto",
    *,
    allow_unsafe: bool = False,
    pool_size: int | None = None,
    site_packages: bool = False,
    python_paths: Sequence[str] = (),
    preload: Sequence[str] = (),
    **limits: float,
) -> Sandbox:
    """Create a sandbox for untrusted Python (see ``docs/sandbox.md`` for what each kind isolates).

    Args:
        kind: ``"auto"`` (bwrap; without it, see ``allow_unsafe``), ``"bwrap"`` (raises if
            unusable) or ``"fallback"`` (an explicit choice of the non-isolating fallback: logs a
            warning once; for trusted code and tests).
        allow_unsafe: with ``kind="auto"`` where bubblewrap is unavailable, use the fallback
            instead of raising. Also enabled by ``JUDGERL_UNSAFE_SANDBOX=1``; the CLI's
            ``--unsafe-sandbox`` sets it. Judging with tools must not set it on its own.
        pool_size: maximum number of warm workers = concurrent runs (default: CPUs available).
        site_packages: also expose this environment's site-packages (read-only) so the code can
            import installed packages such as numpy or sympy (``.pth`` files are not processed).
        python_paths: extra directories, bound read-only and prepended to ``sys.path``.
        preload: module names imported once in each warm worker (e.g. ``("sympy",)``) so runs
            don't pay the import cost; imported before any user code, never by it.
        **limits: ``SandboxLimits`` fields: ``timeout_s`` (s), ``cpu_time_s`` (s), ``memory_bytes``,
            ``output_bytes``, ``max_processes``, ``max_open_files``, ``file_bytes``, ``disk_bytes``.

    Returns:
        A ``Sandbox``; workers start lazily on first use (bwrap: ~50 ms each).

    Raises:
        ValueError: unknown ``kind``, unknown limit name, bad limit value (see ``SandboxLimits``;
            ``max_open_files``/``max_processes`` above this process's hard RLIMIT_NOFILE/
            RLIMIT_NPROC too), or a
            ``python_paths`` entry that is not a directory.
        SandboxUnavailableError: ``kind="bwrap"`` but bubblewrap (or libseccomp) does not work
            here; or ``kind="auto"`` without bubblewrap and without the opt-in (one-line message
            saying how to opt in); also for ``kind="fallback"`` when libseccomp is missing.
    """
    known = {f.name for f in fields(SandboxLimits)}
    unknown = sorted(set(limits) - known)
    if unknown:
        raise ValueError(f"unknown sandbox limit(s) {unknown}; expected some of {sorted(known)}")
    lim = SandboxLimits(**limits)  # type: ignore[arg-type]
    if kind not in ("auto", "bwrap", "fallback"):
        raise ValueError(f"kind must be 'auto', 'bwrap' or 'fallback', got {kind!r}")
    if not isinstance(allow_unsafe, bool):
        raise TypeError(f"allow_unsafe must be a bool, got {type(allow_unsafe).__name__}")
    if kind == "auto":
        if bwrap_available():
            kind = "bwrap"
        elif allow_unsafe or unsafe_opt_in():
            kind = "fallback"
        else:
            raise SandboxUnavailableError(_refusal())
    elif kind == "bwrap" and not bwrap_available():
        raise SandboxUnavailableError(
            f"kind='bwrap' is not usable here: {bwrap_unavailable_reason()} (apt-get install "
            "bubblewrap libseccomp2; in a container it needs user namespaces or root)"
        )
    paths = list(python_paths) + (_site_packages_dirs() if site_packages else [])
    size = pool_size if pool_size is not None else max(1, len(os.sched_getaffinity(0)))
    return Sandbox(kind, lim, pool_size=size, python_paths=paths, preload=preload)
