"""Sandboxed execution of untrusted (model-written) Python.

Two kinds, one API (``get_sandbox(...).run(code) -> ExecResult``):

``"bwrap"`` (real isolation, used by ``kind="auto"`` whenever bubblewrap works here)
    Each pool slot is one long-lived bubblewrap sandbox running a warm Python "zygote"
    (``_sandbox_worker.py``) in new network, pid, ipc, uts and cgroup namespaces, with a cleared
    environment, a new session, ``--die-with-parent``, a minimal read-only filesystem (the shared
    libraries under /usr/lib*, the Python install, optionally extra read-only ``python_paths``), a
    private /proc, a minimal /dev and a size-capped tmpfs at /tmp. For every run the zygote forks a
    fresh child that gets rlimits, an empty private run directory, and (when we are root) an
    unprivileged per-slot uid, so RLIMIT_NPROC really caps processes and the child can neither
    signal the zygote nor read other runs' files. Nothing in /root, /home, /work or /etc is visible.
    A worker whose run left SysV IPC objects behind is replaced before the next run.

``"fallback"`` (NOT a security boundary; used when bubblewrap is missing or on request)
    The same warm zygote runs directly on the host: rlimits, cleared environment, ``python -I -S``,
    a private run directory, an unprivileged per-slot uid when we are root, and a
    ``sys.addaudithook`` guard that blocks sockets/DNS, subprocess/exec/fork/kill, ctypes, writes
    outside the run directory and reads outside an allow-list. Audit hooks are bypassable (native
    extensions, ``dir_fd`` tricks, races); there is no network, pid or mount namespace and no disk
    quota. A warning saying so is logged once when such a sandbox is created.

Timeouts use ``time.monotonic`` deadlines + ``poll`` + SIGKILL, never SIGALRM, so ``run`` works from
any thread; a pool of warm workers (one per CPU by default) serves concurrent callers. A run that
kills or wedges its worker gets an error result and the worker is restarted for the next run.
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import os
import queue
import select
import shutil
import signal
import struct
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Literal

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

logger = logging.getLogger(__name__)

SandboxKind = Literal["bwrap", "fallback"]
_WORKER_SCRIPT = Path(__file__).with_name("_sandbox_worker.py")
_WORKER_IN_SANDBOX = "/run/judgerl/worker.py"
_HDR = struct.Struct(">I")
_START_TIMEOUT_S = 30.0  # seconds to wait for a fresh worker's "ready" (the CPU may be busy)
_GRACE_S = 3.0  # seconds past the run's own timeout before the host kills a silent worker
_UID_BASE = 1_000_000_000  # per-slot uids: _UID_BASE + pid * 256 + n, far from real accounts
_FALLBACK_WARNING = (
    "judgerl sandbox kind='fallback' is NOT a security boundary: code runs on the host with "
    "rlimits, a cleared environment, a private temp dir%s and a sys.addaudithook guard. Audit hooks "
    "are bypassable (native extensions, dir_fd-relative calls, races); there is no network, pid or "
    "mount isolation and no disk quota. Install bubblewrap (apt-get install bubblewrap) for real "
    "isolation."
)
_fallback_warned = False
_uid_counter = itertools.count()
_uid_lock = threading.Lock()


class SandboxError(RuntimeError):
    """A sandbox worker could not be started or talked to."""


class SandboxUnavailableError(SandboxError):
    """``kind="bwrap"`` was requested but bubblewrap is missing or does not work here."""


class SandboxClosedError(SandboxError):
    """``run`` was called after ``close``."""


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits applied to every run (all per run, per process unless stated).

    Attributes:
        timeout_s: wall-clock limit in seconds (monotonic clock; the process group is SIGKILLed).
        cpu_time_s: CPU-time limit in whole seconds (RLIMIT_CPU; SIGXCPU, then SIGKILL 1 s later).
        memory_bytes: address-space limit in bytes (RLIMIT_AS); allocations beyond it fail
            (Python raises ``MemoryError``).
        output_bytes: cap in bytes on each of stdout and stderr; the rest is read and discarded and
            ``ExecResult.truncated`` is set.
        max_processes: process/thread limit (RLIMIT_NPROC) for the run's unprivileged uid,
            including the run's own main thread.
        max_open_files: file-descriptor limit (RLIMIT_NOFILE).
        file_bytes: largest file the run may write, in bytes (RLIMIT_FSIZE).
        disk_bytes: size in bytes of the worker's private tmpfs (bwrap only; the fallback has no
            disk quota beyond ``file_bytes`` per file).

    Raises:
        ValueError: a limit is not a positive number (the message names the field).
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
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"SandboxLimits.{f.name} must be a positive number, got {value!r}")
            if f.name != "timeout_s" and not float(value).is_integer():
                raise ValueError(f"SandboxLimits.{f.name} must be a whole number, got {value!r}")
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
    """

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool
    truncated: bool
    duration_s: float

    @property
    def ok(self) -> bool:
        """True when the code exited with status 0 within the time limit."""
        return self.exit_code == 0 and not self.timed_out


# --------------------------------------------------------------------------- environment probes
def _is_root() -> bool:
    return os.geteuid() == 0


def _python_executable() -> str:
    """The real interpreter binary (a venv's ``bin/python`` is a symlink into the base install)."""
    return os.path.realpath(sys.executable)


def _stdlib_dirs() -> list[str]:
    """The base interpreter's stdlib directories (never a venv's: its site-packages stay hidden)."""
    base = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix,
            "installed_base": sys.base_prefix, "installed_platbase": sys.base_exec_prefix}
    paths = sysconfig.get_paths(vars=base)
    return sorted({os.path.realpath(paths["stdlib"]), os.path.realpath(paths["platstdlib"])})


def _site_packages_dirs() -> list[str]:
    paths = sysconfig.get_paths()
    return sorted({os.path.realpath(paths["purelib"]), os.path.realpath(paths["platlib"])})


def _mirror_root_entry(name: str) -> list[str]:
    """bwrap args recreating ``/name`` read-only as on the host (a symlink or a bind), if present."""
    host = f"/{name}"
    if os.path.islink(host):
        return ["--symlink", os.readlink(host), host]
    if os.path.isdir(host):
        return ["--ro-bind", host, host]
    return []


def _bwrap_args(tmp_bytes: int, ro_paths: Sequence[str], root: bool) -> list[str]:
    """The bubblewrap command prefix for one worker (see the module docstring for the policy)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailableError("bubblewrap (bwrap) is not installed; apt-get install bubblewrap")
    args = [
        bwrap,
        "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
        "--die-with-parent", "--new-session", "--clearenv", "--hostname", "sandbox",
    ]
    if root:
        # Real root outside: no user namespace, so the zygote can give each run its own
        # unprivileged uid (RLIMIT_NPROC does not apply to uid 0). Keep only the caps it needs.
        args += ["--cap-drop", "ALL"]
        for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_CHOWN", "CAP_DAC_OVERRIDE",
                    "CAP_FOWNER"):
            args += ["--cap-add", cap]
    else:
        args += ["--unshare-user", "--disable-userns"]
    args += ["--perms", "0755", "--dir", "/usr", "--perms", "0755", "--dir", "/run"]
    # The private /tmp comes first: bwrap applies mounts in order, so a tmpfs mounted after the
    # read-only binds would hide any of them that live under /tmp (e.g. a venv in /tmp).
    args += ["--size", str(int(tmp_bytes)), "--tmpfs", "/tmp"]
    for lib in ("usr/lib", "usr/lib64", "usr/lib32"):
        if os.path.isdir(f"/{lib}") and not os.path.islink(f"/{lib}"):
            args += ["--ro-bind", f"/{lib}", f"/{lib}"]
    for name in ("lib", "lib64", "lib32"):
        args += _mirror_root_entry(name)
    bound: list[str] = ["/usr/lib", "/usr/lib64", "/usr/lib32"]
    made_dirs: set[str] = set()
    for real in sorted({os.path.realpath(p) for p in ro_paths}, key=len):
        if not os.path.exists(real):
            continue
        if any(real == b or real.startswith(b + "/") for b in bound):
            continue
        # bwrap creates missing mount-point parents with mode 0700, which the unprivileged run
        # uid could not traverse: create them 0755 first (they are empty, on bwrap's root tmpfs).
        for parent in reversed(Path(real).parents[:-1]):
            if str(parent) not in made_dirs and not any(str(parent).startswith(b + "/") for b in bound):
                args += ["--perms", "0755", "--dir", str(parent)]
                made_dirs.add(str(parent))
        args += ["--ro-bind", real, real]
        bound.append(real)
    args += [
        "--ro-bind", str(_WORKER_SCRIPT), _WORKER_IN_SANDBOX,
        "--proc", "/proc",
        "--dev", "/dev",
        "--chdir", "/tmp",
    ]
    return args


def _interpreter_paths() -> list[str]:
    """Read-only paths the interpreter needs: its binary, its install prefix and its stdlib."""
    exe = _python_executable()
    paths = [exe, os.path.realpath(sys.base_prefix)]
    if os.path.realpath(sys.base_prefix) in ("/", "/usr"):
        paths = [exe]  # a system Python: the stdlib lives under /usr/lib, which is bound anyway
    return paths + _stdlib_dirs()


@functools.lru_cache(maxsize=1)
def bwrap_available() -> bool:
    """Whether bubblewrap is installed and can build our sandbox here (probed once, ~50 ms).

    Returns:
        True when ``bwrap`` runs the interpreter with the namespaces ``kind="bwrap"`` uses.
    """
    try:
        args = _bwrap_args(16 * 1024 * 1024, _interpreter_paths(), _is_root())
    except SandboxUnavailableError:
        return False
    try:
        proc = subprocess.run(
            args + [_python_executable(), "-I", "-S", "-c", "pass"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            timeout=30, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    if proc.returncode != 0:
        logger.info("bubblewrap probe failed: %s", proc.stderr.decode(errors="replace").strip())
    return proc.returncode == 0


def _alloc_uid() -> int:
    """A per-slot uid unique among live processes on this machine (pid-derived)."""
    with _uid_lock:
        n = next(_uid_counter) % 256
    return _UID_BASE + os.getpid() * 256 + n


# --------------------------------------------------------------------------- one warm worker
def _read_exact(fd: int, n: int, deadline: float) -> bytes | None:
    """Read exactly n bytes from a blocking pipe before the monotonic deadline.

    Returns None on EOF; raises TimeoutError when the deadline passes.
    """
    buf = bytearray()
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(left * 1000):
            raise TimeoutError
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


class _Worker:
    """One pool slot: a warm zygote process (restarted when it dies)."""

    def __init__(self, argv_prefix: list[str], cfg: dict) -> None:
        self._argv_prefix = argv_prefix
        self._cfg = cfg
        self.proc: subprocess.Popen | None = None
        self._log: tempfile._TemporaryFileWrapper | None = None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        self.kill()
        self._log = tempfile.TemporaryFile(prefix="judgerl-sandbox-worker-")
        argv = self._argv_prefix + [json.dumps(self._cfg)]
        try:
            # bwrap --die-with-parent uses PR_SET_PDEATHSIG, which fires when the *thread* that
            # spawned it exits: spawn from one long-lived thread, not the caller's (maybe a pool's).
            self.proc = _spawner().submit(
                subprocess.Popen,
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},  # no host secrets, ever
                cwd=self._cfg["tmp_root"] if self._cfg["guard"] else "/",
                start_new_session=True, close_fds=True,
            ).result()
        except OSError as exc:
            raise SandboxError(f"cannot start sandbox worker {argv[0]!r}: {exc}") from exc
        try:
            raw = _read_exact(self.proc.stdout.fileno(), _HDR.size, time.monotonic() + _START_TIMEOUT_S)
            body = raw and _read_exact(self.proc.stdout.fileno(), _HDR.unpack(raw)[0],
                                       time.monotonic() + _START_TIMEOUT_S)
        except TimeoutError:
            body = None
        if not body or not json.loads(body).get("ready"):
            detail = self._stderr_tail()
            self.kill()
            raise SandboxError(f"sandbox worker failed to start: {detail or 'no output'}")

    def _stderr_tail(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read()[-2000:].decode(errors="replace").strip()

    def kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()
            if self._cfg.get("uid") is not None and not self._cfg["own_pid_namespace"]:
                _kill_uid(self._cfg["uid"], self._cfg["gid"])
        if self._log is not None:
            self._log.close()
            self._log = None

    def execute(self, code: str, stdin: str | None, timeout_s: float, limits: SandboxLimits) -> ExecResult:
        """Send one request; restart the worker first if it is not alive."""
        if not self.alive():
            self.start()
        req = {"code": code, "stdin": stdin, "timeout_s": timeout_s, "limits": limits.to_wire()}
        raw = json.dumps(req).encode()
        try:
            self._write_all(raw)
        except OSError:  # BrokenPipeError: it died between runs; retry once on a fresh worker
            self.start()
            self._write_all(raw)
        deadline = time.monotonic() + timeout_s + _GRACE_S
        try:
            fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
            head = _read_exact(fd, _HDR.size, deadline)
            body = head and _read_exact(fd, _HDR.unpack(head)[0], deadline)
            header = json.loads(body) if body else None
            out = header and _read_exact(fd, header["stdout_len"], deadline)
            err = header and _read_exact(fd, header["stderr_len"], deadline)
        except TimeoutError:
            self.kill()
            return ExecResult("", f"TimeoutError: execution exceeded the wall-clock limit of "
                              f"{timeout_s:g} s (worker unresponsive, restarted)", -signal.SIGKILL,
                              True, False, timeout_s + _GRACE_S)
        except (OSError, ValueError, AttributeError):  # the pipe was closed under us (close())
            header = None
        if header is None or out is None or err is None:
            self.kill()
            return ExecResult("", "SandboxError: the sandbox worker died during the run "
                              "(restarted)", -signal.SIGKILL, False, False, 0.0)
        if header.get("recycle"):
            self.kill()  # the worker exits after this reply; the next run starts a fresh one
        stderr = err.decode("utf-8", errors="replace")
        if header["note"]:
            stderr += ("" if not stderr or stderr.endswith("\n") else "\n") + header["note"] + "\n"
        return ExecResult(
            stdout=out.decode("utf-8", errors="replace"),
            stderr=stderr,
            exit_code=int(header["exit_code"]),
            timed_out=bool(header["timed_out"]),
            truncated=bool(header["truncated"]),
            duration_s=float(header["duration_s"]),
        )

    def _write_all(self, raw: bytes) -> None:
        if self.proc is None or self.proc.stdin is None:
            raise BrokenPipeError("sandbox worker is not running")
        fd = self.proc.stdin.fileno()
        data = memoryview(_HDR.pack(len(raw)) + raw)
        while data:
            data = data[os.write(fd, data):]


@functools.lru_cache(maxsize=1)
def _spawner() -> ThreadPoolExecutor:
    """The process-lifetime thread that starts every worker (see ``_Worker.start``)."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="judgerl-sandbox-spawner")


def _kill_uid(uid: int, gid: int) -> None:
    """SIGKILL every host process running as ``uid`` (via a helper that becomes that uid)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)
        except BaseException:
            pass
        os._exit(0)
    os.waitpid(pid, 0)


def _shutdown(workers: list[_Worker], tmp_root: str | None) -> None:
    for w in workers:
        w.kill()
    if tmp_root is not None:
        shutil.rmtree(tmp_root, ignore_errors=True)


# --------------------------------------------------------------------------- public API
class Sandbox:
    """A pool of warm sandbox workers; ``run`` is thread-safe.

    Build one with ``get_sandbox``. Use as a context manager or call ``close()``.

    Attributes:
        kind: ``"bwrap"`` or ``"fallback"``.
        limits: the default ``SandboxLimits`` for every run.
        pool_size: number of warm workers (concurrent runs); more callers wait for a free one.
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
        if pool_size < 1:
            raise ValueError(f"pool_size must be >= 1, got {pool_size}")
        self.kind: SandboxKind = kind
        self.limits = limits
        self.pool_size = pool_size
        self._closed = False
        self._idle: queue.LifoQueue[_Worker] = queue.LifoQueue()
        self._workers: list[_Worker] = []
        root = _is_root()
        extra = [os.path.realpath(p) for p in python_paths]
        for p in extra:
            if not os.path.isdir(p):
                raise ValueError(f"python_paths entry {p!r} is not a directory")
        self._tmp_root: str | None = None
        exe = _python_executable()
        if kind == "bwrap":
            prefix = _bwrap_args(limits.disk_bytes, _interpreter_paths() + extra, root)
            prefix += [exe, "-I", "-S", "-B", _WORKER_IN_SANDBOX]
            tmp_root = "/tmp"
        else:
            shm = "/dev/shm"  # tmpfs: cheap mkdir/rmdir, nothing left on disk
            base = shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None
            self._tmp_root = tmp_root = tempfile.mkdtemp(prefix="judgerl-sandbox-", dir=base)
            os.chmod(tmp_root, 0o711)  # traversable, not listable: runs cannot find each other
            prefix = [exe, "-I", "-S", "-B", str(_WORKER_SCRIPT)]
        read_roots = _stdlib_dirs() + extra + ["/dev/null", "/dev/urandom", "/dev/zero"]
        for _ in range(pool_size):
            uid = _alloc_uid() if root else None
            cfg = {
                "uid": uid,
                "gid": uid,
                "tmp_root": tmp_root,
                "guard": kind == "fallback",
                "read_roots": read_roots,
                "python_paths": extra,
                "preload": list(preload),
                "own_pid_namespace": kind == "bwrap",
                "nproc_base_from_proc": kind == "fallback" and not root,
                "path_fds": kind == "fallback" and root,
            }
            worker = _Worker(prefix, cfg)
            self._workers.append(worker)
            self._idle.put(worker)
        self._finalizer = weakref.finalize(self, _shutdown, list(self._workers), self._tmp_root)
        if kind == "fallback":
            _warn_fallback(root)

    def run(self, code: str, timeout_s: float | None = None, stdin: str | None = None) -> ExecResult:
        """Execute ``code`` (a Python module body) in a fresh sandboxed process.

        Args:
            code: Python source, run like ``python -c`` (``__name__ == "__main__"``) in an empty
                private working directory that is wiped afterwards.
            timeout_s: wall-clock limit in seconds for this run (default ``limits.timeout_s``).
            stdin: text fed to the process's standard input (UTF-8); None means empty stdin.

        Returns:
            ExecResult with stdout/stderr (each capped at ``limits.output_bytes`` bytes), the exit
            status, ``timed_out``, ``truncated`` and ``duration_s`` (seconds). Errors in the code,
            limits being hit and a crashed worker are reported in the result, never raised.

        Raises:
            TypeError: ``code`` or ``stdin`` is not a str.
            ValueError: ``timeout_s`` is not a positive number.
            SandboxClosedError: the sandbox was closed.
            SandboxError: a worker process could not be (re)started.
        """
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, got {type(code).__name__}")
        if stdin is not None and not isinstance(stdin, str):
            raise TypeError(f"stdin must be a str or None, got {type(stdin).__name__}")
        timeout = self.limits.timeout_s if timeout_s is None else timeout_s
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
        if self._closed:
            raise SandboxClosedError("this Sandbox is closed")
        worker = self._idle.get()
        try:
            if self._closed:
                raise SandboxClosedError("this Sandbox is closed")
            return worker.execute(code, stdin, float(timeout), self.limits)
        finally:
            self._idle.put(worker)

    def close(self) -> None:
        """Kill all workers and remove the sandbox's temporary files. Idempotent."""
        self._closed = True
        self._finalizer()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Sandbox(kind={self.kind!r}, pool_size={self.pool_size}, limits={self.limits!r})"


def _warn_fallback(root: bool) -> None:
    global _fallback_warned
    if not _fallback_warned:
        _fallback_warned = True
        logger.warning(_FALLBACK_WARNING, ", an unprivileged uid" if root else "")


def get_sandbox(
    kind: Literal["auto", "bwrap", "fallback"] = "auto",
    *,
    pool_size: int | None = None,
    site_packages: bool = False,
    python_paths: Sequence[str] = (),
    preload: Sequence[str] = (),
    **limits: float,
) -> Sandbox:
    """Create a sandbox for untrusted Python (see the module docstring for what each kind isolates).

    Args:
        kind: ``"bwrap"`` (bubblewrap namespaces; raises if unusable), ``"fallback"`` (rlimits + an
            audit-hook guard; not a security boundary, logs a warning once) or ``"auto"`` (bwrap when
            it works here, else fallback).
        pool_size: number of warm workers = maximum concurrent runs (default: CPUs available).
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
        ValueError: unknown ``kind``, unknown limit name, bad limit value, or a ``python_paths``
            entry that is not a directory.
        SandboxUnavailableError: ``kind="bwrap"`` but bubblewrap is missing or fails its probe.
    """
    known = {f.name for f in fields(SandboxLimits)}
    unknown = sorted(set(limits) - known)
    if unknown:
        raise ValueError(f"unknown sandbox limit(s) {unknown}; expected some of {sorted(known)}")
    lim = SandboxLimits(**limits)  # type: ignore[arg-type]
    if kind not in ("auto", "bwrap", "fallback"):
        raise ValueError(f"kind must be 'auto', 'bwrap' or 'fallback', got {kind!r}")
    if kind == "auto":
        kind = "bwrap" if bwrap_available() else "fallback"
    elif kind == "bwrap" and not bwrap_available():
        raise SandboxUnavailableError(
            "bubblewrap is missing or cannot create namespaces here (apt-get install bubblewrap; "
            "in a container it needs user namespaces or root); use kind='fallback' or 'auto'"
        )
    paths = list(python_paths) + (_site_packages_dirs() if site_packages else [])
    size = pool_size if pool_size is not None else max(1, len(os.sched_getaffinity(0)))
    return Sandbox(kind, lim, pool_size=size, python_paths=paths, preload=preload)
