"""The forked child of one run: limits, uid, seccomp filter, then the user's code.

Runs only in the zygote's fork; never returns (always ``os._exit``).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

from _zygote.cleanup import count_uid_processes
from _zygote.guard import install_guard

PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_libc = ctypes.CDLL(None, use_errno=True)
_seccomp: tuple | None = None  # (program struct, buffer) kept alive for the child's prctl


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def prctl(option: int, arg2: object = 0) -> None:
    """``prctl(option, arg2, 0, 0, 0)``; raises OSError on failure."""
    zero = ctypes.c_ulong(0)
    value = arg2 if not isinstance(arg2, int) else ctypes.c_ulong(arg2)
    if _libc.prctl(ctypes.c_int(option), value, zero, zero, zero) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}) failed: {os.strerror(err)}")


def prepare_seccomp(bpf: bytes) -> None:
    """Build the ``sock_fprog`` for ``bpf`` once in the zygote (children inherit it)."""
    global _seccomp
    if not bpf or len(bpf) % 8 or len(bpf) // 8 > 4096:
        raise ValueError(f"bad seccomp program ({len(bpf)} bytes)")
    buf = ctypes.create_string_buffer(bpf, len(bpf))
    prog = _SockFprog(len(bpf) // 8, ctypes.addressof(buf))
    _seccomp = (prog, buf)


def install_seccomp() -> None:
    """Set no_new_privs and load the run filter (fails closed: raises if it cannot)."""
    if _seccomp is None:
        raise RuntimeError("no seccomp program was prepared")
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    zero = ctypes.c_ulong(0)
    if _libc.prctl(ctypes.c_int(PR_SET_SECCOMP), ctypes.c_ulong(SECCOMP_MODE_FILTER),
                   ctypes.byref(_seccomp[0]), zero, zero) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"loading the seccomp filter failed: {os.strerror(err)}")


def run_child(req: dict, cfg: dict, run_dir: str, fds: tuple[int, int, int]) -> None:
    """Runs in the forked child; never returns (always ``os._exit``)."""
    try:
        import io
        import resource

        os.setsid()
        # SIGXFSZ stays ignored (CPython's default): an oversized write raises OSError(EFBIG).
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGXCPU, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        stdin_fd, out_fd, err_fd = fds
        os.dup2(stdin_fd, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        first_free = 3
        if cfg.get("path_fds"):
            first_free = _pin_sys_path(first_free)
        os.closerange(first_free, 1 << 16)
        os.chdir(run_dir)
        lim = req["limits"]
        cpu = int(lim["cpu_time_s"])

        def _set(res: int, value: int) -> None:
            resource.setrlimit(res, (value, value))

        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        _set(resource.RLIMIT_AS, int(lim["memory_bytes"]))
        _set(resource.RLIMIT_FSIZE, int(lim["file_bytes"]))
        _set(resource.RLIMIT_NOFILE, int(lim["max_open_files"]))
        _set(resource.RLIMIT_CORE, 0)
        nproc = int(lim["max_processes"])
        if cfg.get("uid") is None and cfg.get("nproc_base_from_proc"):
            nproc += count_uid_processes(os.getuid())
        _set(resource.RLIMIT_NPROC, nproc)
        # The run (and all it forks) is the OOM killer's first choice when the worker's memory
        # cgroup is full, not the zygote: raising one's own score needs no privilege.
        try:
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("1000")
        except OSError:
            pass
        if cfg.get("uid") is not None:
            os.setgroups([])
            os.setgid(cfg["gid"])
            os.setuid(cfg["uid"])
        # setuid() and the zygote's own PR_SET_DUMPABLE=0 left this process undumpable, which
        # makes its /proc/self/fd root-owned; the run is its own process again, so turn it back on
        # (it only concerns this process: the zygote stays undumpable and unreachable).
        prctl(PR_SET_DUMPABLE, 1)
        install_seccomp()
        os.umask(0o077)
        np_random = sys.modules.get("numpy.random")
        if np_random is not None:  # a preloaded numpy: don't hand every run the same RNG state
            np_random.seed()
        os.environ.clear()
        os.environ.update(
            {
                "PATH": "/usr/bin:/bin",
                "HOME": run_dir,
                "TMPDIR": run_dir,
                "LANG": "C.UTF-8",
                "LC_ALL": "C.UTF-8",
                "OMP_NUM_THREADS": "1",
                "OPENBLAS_NUM_THREADS": "1",
                "MKL_NUM_THREADS": "1",
            }
        )
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8",
                                     errors="replace")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace")
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace", line_buffering=True)
        sys.argv = ["-c"]
        sys.dont_write_bytecode = True
        code = req["code"]
        import linecache

        linecache.cache["<sandbox>"] = (len(code), None, code.splitlines(True), "<sandbox>")
        if cfg.get("guard"):
            install_guard(run_dir, cfg["read_roots"])
    except BaseException as exc:  # setup failed: report and leave
        try:
            os.write(2, f"sandbox setup failed: {type(exc).__name__}: {exc}\n".encode())
        finally:
            os._exit(120)
    os._exit(_run_user_code(code))


def _pin_sys_path(first_fd: int) -> int:
    """Fallback as root: reach the stdlib through pinned directory fds (``/proc/self/fd/N``).

    The interpreter may live under a directory the unprivileged uid cannot traverse (e.g. pyenv
    in /root, mode 0700). A ``/proc/self/fd/N`` magic link to an already-open directory skips the
    ancestors' permission checks without granting access to anything else. Returns the first fd
    number left free.
    """
    fd_no = first_fd
    remap: list[tuple[str, str]] = []
    for path in sys.path:
        if not os.path.isdir(path):
            continue
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        os.dup2(fd, fd_no, inheritable=False)
        os.close(fd)
        remap.append((os.path.realpath(path), f"/proc/self/fd/{fd_no}"))
        fd_no += 1
    sys.path[:] = [dst for _, dst in remap]  # same order as before
    remap.sort(key=lambda pair: -len(pair[0]))  # most specific directory first

    def pinned(path: str) -> str:
        real = os.path.realpath(path)
        for src, dst in remap:
            if real == src or real.startswith(src + os.sep):
                return dst + real[len(src):]
        return path

    # Packages imported before the fork (e.g. ``encodings``) must find their submodules too.
    for module in list(sys.modules.values()):
        search = getattr(module, "__path__", None)
        if isinstance(search, list):
            search[:] = [pinned(p) for p in search]
    sys.path_importer_cache.clear()
    return fd_no


def _run_user_code(code: str) -> int:
    """``exec`` the code like ``python -c`` would; returns the process exit status (0..255).

    The code runs in a fresh ``__main__`` module; an uncaught exception prints its traceback
    (without this function's frame) and gives status 1, ``SystemExit`` follows CPython's rules;
    then non-daemon threads are joined and ``atexit`` handlers run, as at interpreter exit.
    """
    import types

    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main
    status = _guarded(lambda: exec(compile(code, "<sandbox>", "exec"), main.__dict__))
    status = _guarded(_finish_threads_and_atexit) or status
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            status = status or 120
    return status


def _guarded(fn) -> int:  # noqa: ANN001
    """Call ``fn``; map SystemExit / uncaught exceptions to an exit status like CPython."""
    try:
        fn()
    except SystemExit as exc:
        return _exit_status(exc.code)
    except BaseException as exc:  # user errors: print a traceback without our own frames
        try:
            import traceback

            report = traceback.TracebackException(type(exc), exc, exc.__traceback__)
            report.stack = traceback.StackSummary.from_list(
                [f for f in report.stack if not f.filename.startswith(_HERE)]  # the zygote's frames
            )
            sys.stderr.write("".join(report.format()))
        except BaseException:
            try:
                os.write(2, f"{type(exc).__name__}\n".encode())
            except OSError:
                pass
        return 1
    return 0


def _finish_threads_and_atexit() -> None:
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()  # type: ignore[attr-defined]  # join non-daemon threads like CPython
    import atexit

    atexit._run_exitfuncs()


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except BaseException:
        pass
    return 1
