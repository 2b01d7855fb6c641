"""The warm sandbox worker ("zygote"): runs untrusted Python in fresh forked children.

This file is executed as a standalone script (``python -I -S -B _sandbox_worker.py CONFIG_JSON``),
inside bubblewrap for ``kind="bwrap"`` or directly on the host for ``kind="fallback"``. It imports
only the standard library and never imports judgerl, so it can run with nothing but the Python
install bound into the sandbox.

The worker itself never executes user code. For each request it:

1. creates a fresh, empty private run directory (owned by the slot's unprivileged uid, mode 0700);
2. forks a child that starts a new session, applies rlimits (RLIMIT_AS, RLIMIT_CPU, RLIMIT_FSIZE,
   RLIMIT_NOFILE, RLIMIT_NPROC, RLIMIT_CORE=0), points fds 0/1/2 at pipes, closes every other fd,
   drops to the unprivileged uid (when the worker runs as root), clears the environment, installs
   the audit-hook guard (fallback only) and ``exec``\\ s the code;
3. collects stdout/stderr up to the output cap (bytes, per stream; the rest is read and discarded),
   enforces the wall-clock deadline with ``time.monotonic`` + ``poll`` + SIGKILL (no signals/alarms);
4. kills every process the run left behind, wipes the run directory and replies.

Wire protocol (both directions): 4-byte big-endian length, then a JSON header; the reply header
carries ``stdout_len``/``stderr_len`` and is followed by those raw bytes.
"""

from __future__ import annotations

import json
import os
import select
import signal
import struct
import sys
import time

_HDR = struct.Struct(">I")
_MAX_REQUEST = 64 * 1024 * 1024  # bytes; a larger request means a corrupt stream
_DRAIN_AFTER_EXIT_S = 0.5  # seconds to keep draining pipes after the child exited


# --------------------------------------------------------------------------- wire helpers
def _read_exact(fd: int, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _send(fd: int, header: dict, *payloads: bytes) -> None:
    raw = json.dumps(header).encode()
    _write_all(fd, _HDR.pack(len(raw)) + raw + b"".join(payloads))


# --------------------------------------------------------------------------- audit-hook guard
def _install_guard(run_dir: str, read_roots: list[str]) -> None:
    """Install a ``sys.addaudithook`` guard (fallback kind only). NOT a security boundary.

    Blocks: sockets, DNS, subprocess/exec/spawn/fork/kill, ctypes, opening files for writing
    outside ``run_dir``, reading/listing paths outside ``run_dir`` + ``read_roots``, and
    filesystem mutations (rename, remove, symlink, chmod, ...) outside ``run_dir``. Paths are
    resolved with ``os.path.realpath`` (so symlinks out of the run directory are caught), but
    ``dir_fd``-relative calls, races and ctypes-free native extensions can bypass it.
    """
    realpath = os.path.realpath
    sep = os.sep
    run_root = realpath(run_dir)
    roots = tuple(realpath(r) for r in read_roots) + (run_root,)
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    blocked = frozenset(
        {
            "socket.__new__", "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg",
            "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr",
            "socket.gethostbyname_ex", "socket.getnameinfo", "subprocess.Popen", "os.system",
            "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.kill",
            "os.killpg", "pty.spawn", "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle",
            "ctypes.cdata", "ctypes.call_function", "resource.setrlimit", "resource.prlimit",
            "os.chroot", "os.mknod", "os.mkfifo", "shutil.chown", "os.chown",
        }
    )
    # shm_open() creates files in the host's /dev/shm without an "open" audit event
    blocked_modules = frozenset({"_posixshmem", "_ctypes"})
    mutating = {
        # event -> indices of path arguments that must stay inside the run directory
        "os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.chmod": (0,),
        "os.rename": (0, 1), "os.replace": (0, 1), "os.link": (0, 1), "os.symlink": (0, 1),
        "os.truncate": (0,), "os.utime": (0,), "os.setxattr": (0,), "os.removexattr": (0,),
        "shutil.rmtree": (0,), "shutil.move": (0, 1), "shutil.copyfile": (1,),
        "shutil.copytree": (1,), "shutil.make_archive": (0,), "os.chdir": (0,),
    }
    reading = {"os.listdir": 0, "os.scandir": 0, "glob.glob": 0, "os.listxattr": 0,
               "os.getxattr": 0}

    def _inside(path: object, allowed: tuple[str, ...]) -> bool:
        if isinstance(path, int) or path is None:
            return True  # an fd the process already holds
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            try:
                path = os.fspath(path)  # type: ignore[arg-type]
            except TypeError:
                return False
            if isinstance(path, bytes):
                path = os.fsdecode(path)
        real = realpath(path)
        return any(real == r or real.startswith(r + sep) for r in allowed)

    def _deny(event: str, detail: object = None) -> None:
        what = event if detail is None else f"{event} {detail!r}"
        raise PermissionError(f"sandbox (fallback guard): {what} is not allowed")

    def hook(event: str, args: tuple) -> None:
        if event in blocked:
            _deny(event)
        if event == "open":
            path, mode, flags = args
            wants_write = bool(flags & write_flags) or (
                isinstance(mode, str) and any(c in mode for c in "wax+")
            )
            if not _inside(path, (run_root,) if wants_write else roots):
                _deny("open", path)
        elif event in reading:
            if not _inside(args[reading[event]] or ".", roots):
                _deny(event, args[reading[event]])
        elif event in mutating:
            allowed = roots if event == "os.chdir" else (run_root,)
            for i in mutating[event]:
                if i < len(args) and not _inside(args[i], allowed):
                    _deny(event, args[i])
        elif event == "import" and args[0] in blocked_modules:
            _deny("import", args[0])
        elif event == "sys.addaudithook":
            _deny(event)

    sys.addaudithook(hook)


# --------------------------------------------------------------------------- the child
def _child(req: dict, cfg: dict, run_dir: str, fds: tuple[int, int, int]) -> None:
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
            nproc += _count_uid_processes(os.getuid())
        _set(resource.RLIMIT_NPROC, nproc)
        if cfg.get("uid") is not None:
            os.setgroups([])
            os.setgid(cfg["gid"])
            os.setuid(cfg["uid"])
            if cfg.get("path_fds"):
                _make_dumpable()
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
            _install_guard(run_dir, cfg["read_roots"])
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


def _make_dumpable() -> None:
    """setuid() cleared the dumpable flag, making /proc/self/fd root-owned; turn it back on."""
    import ctypes

    if ctypes.CDLL(None, use_errno=True).prctl(4, 1, 0, 0, 0) != 0:  # PR_SET_DUMPABLE = 4
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")


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
                [f for f in report.stack if f.filename != __file__]  # the worker's/guard's frames
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


def _count_uid_processes(uid: int) -> int:
    n = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as f:
                for line in f:
                    if line.startswith(b"Uid:"):
                        n += int(line.split()[1]) == uid
                        break
        except OSError:
            continue
    return n


# --------------------------------------------------------------------------- cleanup
def _kill_leftovers(cfg: dict, child_pid: int) -> None:
    """SIGKILL every process the run left behind (children, daemons, setsid escapes) and wait
    until they are gone, so they neither touch the next run nor count against its RLIMIT_NPROC.

    bwrap: the private pid namespace holds only bwrap's init (pid 1), this zygote and the run's
    processes, so a /proc listing is exact and cheap. Fallback as root: every process of the
    slot's uid is killed by a helper that becomes that uid and calls kill(-1) (atomic with respect
    to fork). Fallback as non-root: only the run's process group (documented weakness).
    """
    try:
        os.killpg(child_pid, signal.SIGKILL)
    except OSError:
        pass
    if cfg.get("own_pid_namespace"):
        me = os.getpid()
        deadline = time.monotonic() + 2.0
        swept = False
        while time.monotonic() < deadline:
            others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)]
            if not others:
                return
            if cfg.get("uid") is not None and not swept:
                _kill_as_uid(cfg)
                swept = True
            else:
                for p in others:
                    try:
                        os.kill(p, signal.SIGKILL)
                    except OSError:
                        pass
            time.sleep(0.0005)
    elif cfg.get("uid") is not None:
        _kill_as_uid(cfg)


def _kill_as_uid(cfg: dict) -> None:
    """kill(-1, SIGKILL) from a helper running as the slot uid: hits all that uid's processes."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(cfg["gid"])
            os.setuid(cfg["uid"])
            os.kill(-1, signal.SIGKILL)
        except BaseException:
            pass
        os._exit(0)
    os.waitpid(pid, 0)


class _RunDir:
    """The zygote's private run directory, reused while it is provably untouched.

    ``fresh()`` returns an empty directory owned by the slot uid with mode 0700. After a run,
    ``reset()`` wipes and recreates it unless it is still empty and its inode metadata (mode,
    owner, ctime, mtime) is exactly as left, which is the common case and saves two syscalls'
    worth of filesystem work (rmdir/mkdir are slow on overlay filesystems).
    """

    def __init__(self, cfg: dict) -> None:
        self.path = os.path.join(cfg["tmp_root"], f"run-{os.getpid()}")
        self._cfg = cfg
        self._sig: tuple | None = None

    def _signature(self) -> tuple | None:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mode, st.st_uid, st.st_gid, st.st_ctime_ns, st.st_mtime_ns,
                st.st_nlink)

    def fresh(self) -> str:
        if self._sig is None or self._signature() != self._sig or os.listdir(self.path):
            self.wipe()
            os.mkdir(self.path, 0o700)
            if self._cfg.get("uid") is not None:
                os.chown(self.path, self._cfg["uid"], self._cfg["gid"])
            self._sig = self._signature()
        return self.path

    def wipe(self) -> None:
        import shutil

        self._sig = None
        if os.path.lexists(self.path):
            shutil.rmtree(self.path, ignore_errors=True)
            if os.path.lexists(self.path):
                os.unlink(self.path)


# --------------------------------------------------------------------------- one request
def _handle(req: dict, cfg: dict, rundir: _RunDir) -> tuple[dict, bytes, bytes]:
    lim = req["limits"]
    cap = int(lim["output_bytes"])
    timeout_s = float(req["timeout_s"])
    run_dir = rundir.fresh()
    stdin_data = (req.get("stdin") or "").encode()
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    pid = os.fork()
    if pid == 0:
        _child(req, cfg, run_dir, (in_r, out_w, err_w))
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    bufs = {out_r: bytearray(), err_r: bytearray()}
    truncated = False
    stdin_view = memoryview(stdin_data)
    if not stdin_view:
        os.close(in_w)
        in_w = -1
    for fd in (out_r, err_r) + ((in_w,) if in_w >= 0 else ()):
        os.set_blocking(fd, False)
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(out_r, select.POLLIN)
    poller.register(err_r, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    if in_w >= 0:
        poller.register(in_w, select.POLLOUT)
    open_pipes = {out_r, err_r}
    timed_out = False
    rusage = None
    exited_at: float | None = None
    status: int | None = None
    while open_pipes or status is None:
        now = time.monotonic()
        if status is None and now >= deadline:
            timed_out = True
            poller.unregister(pidfd)
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            _, status, rusage = os.wait4(pid, 0)
            _kill_leftovers(cfg, pid)
            exited_at = time.monotonic()
            continue
        if status is not None and exited_at is not None and now - exited_at > _DRAIN_AFTER_EXIT_S:
            break
        wait_s = (deadline - now) if status is None else _DRAIN_AFTER_EXIT_S
        for fd, ev in poller.poll(max(0.0, wait_s) * 1000):
            if fd == pidfd:
                poller.unregister(pidfd)
                _, status, rusage = os.wait4(pid, 0)
                _kill_leftovers(cfg, pid)
                exited_at = time.monotonic()
            elif fd == in_w:
                try:
                    n = os.write(in_w, stdin_view[:65536])
                    stdin_view = stdin_view[n:]
                except (BlockingIOError, InterruptedError):
                    n = 0
                except OSError:
                    stdin_view = memoryview(b"")
                if not stdin_view:
                    poller.unregister(in_w)
                    os.close(in_w)
                    in_w = -1
            elif fd in open_pipes:
                try:
                    chunk = os.read(fd, 65536)
                except (BlockingIOError, InterruptedError):
                    continue
                if not chunk:
                    poller.unregister(fd)
                    open_pipes.discard(fd)
                    continue
                buf = bufs[fd]
                room = cap - len(buf)
                if len(chunk) > room:
                    truncated = True
                    chunk = chunk[: max(room, 0)]
                buf += chunk
    duration = (exited_at or time.monotonic()) - t0
    for fd in (out_r, err_r, pidfd) + ((in_w,) if in_w >= 0 else ()):
        os.close(fd)
    if rundir.fresh() != run_dir:  # wipes now if the run left anything; keeps the host clean
        raise RuntimeError("run directory moved")
    note = ""
    if timed_out:
        note = f"TimeoutError: execution exceeded the wall-clock limit of {timeout_s:g} s"
        code = -signal.SIGKILL
    elif os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        code = -sig
        cpu_used = rusage.ru_utime + rusage.ru_stime if rusage is not None else 0.0
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_used >= lim["cpu_time_s"]):
            note = f"CPUTimeError: CPU time limit of {lim['cpu_time_s']} s exceeded"
        else:
            note = f"Killed by signal {signal.Signals(sig).name}"
    else:
        code = os.waitstatus_to_exitcode(status)
    header = {
        "exit_code": code,
        "timed_out": timed_out,
        "truncated": truncated,
        "duration_s": duration,
        "note": note,
        "stdout_len": len(bufs[out_r]),
        "stderr_len": len(bufs[err_r]),
    }
    return header, bytes(bufs[out_r]), bytes(bufs[err_r])


def _sysv_ipc_in_use() -> bool:
    """Whether any SysV shared memory / message queue / semaphore exists in our IPC namespace.

    They outlive the processes that created them, so they could carry state from one run to the
    next; the host then replaces this worker (and its IPC namespace) before the next run.
    """
    for kind in ("shm", "msg", "sem"):
        try:
            with open(f"/proc/sysvipc/{kind}", "rb") as f:
                if len(f.read().splitlines()) > 1:  # the first line is a header
                    return True
        except OSError:
            continue
    return False


def _warm_up() -> None:
    """Exercise the child's code paths once in the zygote, then freeze the GC.

    A forked child inherits warmed caches (the parser's first ``compile`` costs ~5 ms, codec
    lookups ~1 ms) and, with ``gc.freeze()``, does not dirty copy-on-write pages by scanning the
    zygote's objects: together they cut the per-run latency by several milliseconds.
    """
    import gc
    import io
    import traceback
    import types  # noqa: F401  (used by every child)

    with open(os.devnull, "w", encoding="utf-8") as null:
        wrapper = io.TextIOWrapper(io.FileIO(null.fileno(), "w", closefd=False), encoding="utf-8",
                                   errors="backslashreplace")
        code = compile("x = [i * 2 for i in range(3)]\nprint(x, file=out)\n", "<warm-up>", "exec")
        exec(code, {"out": wrapper})
        wrapper.flush()
        try:
            exec(compile("1 / 0", "<warm-up>", "exec"), {})
        except ZeroDivisionError as exc:
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=wrapper)
        wrapper.flush()
    gc.collect()
    gc.freeze()


# --------------------------------------------------------------------------- main loop
def main() -> int:
    cfg = json.loads(sys.argv[1])
    ctl_in = os.dup(0)
    ctl_out = os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    # sys.path is extended once here, before forking, so children inherit it.
    for path in reversed(cfg.get("python_paths") or ()):
        sys.path.insert(0, path)
    for name in cfg.get("preload") or ():
        __import__(name)
    # Modules every child needs, imported here once (cheaper, and readable before uid drop).
    import atexit, io, linecache, resource, shutil, traceback  # noqa: E401,F401

    if cfg.get("path_fds"):
        import ctypes  # noqa: F401
    _warm_up()
    _send(ctl_out, {"ready": True, "pid": os.getpid()})
    rundir = _RunDir(cfg)
    while True:
        raw = _read_exact(ctl_in, _HDR.size)
        if raw is None:
            return 0
        (n,) = _HDR.unpack(raw)
        if n > _MAX_REQUEST:
            return 2
        body = _read_exact(ctl_in, n)
        if body is None:
            return 0
        try:
            header, out, err = _handle(json.loads(body), cfg, rundir)
            if cfg.get("own_pid_namespace") and _sysv_ipc_in_use():
                header["recycle"] = True  # a run left SysV IPC objects: start a fresh namespace
        except Exception as exc:  # a bug or resource exhaustion here must not kill the zygote
            note = f"SandboxError: {type(exc).__name__}: {exc}"
            header, out, err = {"exit_code": -1, "timed_out": False, "truncated": False,
                                "duration_s": 0.0, "note": note, "stdout_len": 0,
                                "stderr_len": 0}, b"", b""
        _send(ctl_out, header, out, err)
        if header.get("recycle"):
            return 0


if __name__ == "__main__":
    sys.exit(main())
