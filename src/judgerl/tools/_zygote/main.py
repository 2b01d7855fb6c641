"""The warm sandbox worker ("zygote"): runs untrusted Python in fresh forked children.

Started by the host as ``python -I -S -B -c <bootstrap> CONFIG_JSON``, inside bubblewrap for
``kind="bwrap"`` or directly on the host for ``kind="fallback"``. Imports only the standard
library, never judgerl, so it runs with nothing but the Python install bound into the sandbox.

The zygote itself never executes user code. For each request it:

1. hands out an empty private run directory (owned by the slot's unprivileged uid, mode 0700);
2. forks a child (:mod:`_zygote.child`) that starts a new session, applies rlimits, points fds
   0/1/2 at pipes, closes every other fd, drops to the unprivileged uid (when the zygote runs as
   root), loads the seccomp filter, clears the environment, installs the audit-hook guard
   (fallback only) and ``exec``\ s the code;
3. collects stdout/stderr up to the output cap (bytes, per stream; the rest is read and
   discarded) and enforces the wall-clock deadline with ``time.monotonic`` + ``poll`` + SIGKILL;
4. kills every process the run left behind and cleans its directory, both within a time budget
   (:mod:`_zygote.cleanup`), then replies; a reply may ask the host to replace this worker.

No run's data ever enters the zygote's heap: every run is a fork of the zygote, so bytes left in
its freed memory would be readable by the next run (``/proc/self/mem``). The request's code and
stdin are read into a private anonymous mapping, the run's stdout/stderr are read into two more,
the reply is written from them, and all three are unmapped (the kernel frees the pages) before
the next request; the zygote only parses the small JSON headers.

Wire protocol (both directions): 4-byte big-endian length, then a JSON header. The request header
carries ``seq``, ``timeout_s``, ``limits``, ``code_len``/``stdin_len`` and is followed by those raw
UTF-8 bytes; the reply header carries the request's ``seq``, ``stdout_len``/``stderr_len`` and is
followed by those raw bytes.
"""

from __future__ import annotations

import base64
import fcntl
import json
import mmap
import os
import select
import signal
import struct
import sys
import time

from _zygote.child import PR_SET_DUMPABLE, prctl, prepare_seccomp, run_child
from _zygote.cleanup import RunDir, kill_leftovers, sysv_ipc_in_use

_HDR = struct.Struct(">I")
_MAX_REQUEST = 64 * 1024 * 1024  # bytes; a larger request means a corrupt stream
_DRAIN_AFTER_EXIT_S = 0.5  # seconds to keep draining pipes after the child exited


def read_exact(fd: int, n: int) -> bytes | None:
    """Read exactly ``n`` bytes (blocking); None at EOF."""
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def write_all(fd: int, data: bytes | memoryview) -> None:
    """Write all of ``data`` (blocking), without copying it."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def send(fd: int, header: dict, *payloads: bytes | memoryview) -> None:
    """Write one framed message: length, JSON header, raw payloads (written from their buffers)."""
    raw = json.dumps(header).encode()
    write_all(fd, _HDR.pack(len(raw)) + raw)
    for payload in payloads:
        write_all(fd, payload)


def private_buffer(n: int) -> mmap.mmap:
    """A private anonymous mapping of ``n`` bytes (at least 1): run data lives here, never in the heap;
    ``close()`` unmaps it. Private: a forked run gets a copy-on-write view, never the zygote's pages."""
    return mmap.mmap(-1, max(1, n), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)


def release(*bufs: mmap.mmap) -> None:
    """Unmap ``bufs`` (views of them still referenced by a traceback are collected first)."""
    for buf in bufs:
        try:
            buf.close()
        except BufferError:
            import gc

            gc.collect()
            buf.close()


def read_into(fd: int, view: memoryview) -> bool:
    """Fill ``view`` from ``fd`` (blocking) without a bytes copy; False at EOF first."""
    while view:
        n = os.readv(fd, [view])
        if not n:
            return False
        view = view[n:]
    return True


def handle(req: dict, cfg: dict, rundir: RunDir, payload: memoryview,
           out_buf: memoryview, err_buf: memoryview) -> tuple[dict, int, int]:
    """Run one request in a forked child. ``payload`` holds the request's code then stdin bytes; the
    captured stdout/stderr go into ``out_buf`` / ``err_buf`` (each the output cap long). Returns the
    reply header and the two captured lengths."""
    lim = req["limits"]
    cap = int(lim["output_bytes"])
    timeout_s = float(req["timeout_s"])
    code_len = int(req["code_len"])
    run_dir = rundir.fresh()
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    pid = os.fork()
    if pid == 0:  # the run's own copy of its request, in its own heap
        run_child(dict(req, code=bytes(payload[:code_len]).decode("utf-8", "surrogatepass")), cfg, run_dir,
                  (in_r, out_w, err_w))
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    bufs = {out_r: out_buf, err_r: err_buf}
    used = {out_r: 0, err_r: 0}
    scratch = private_buffer(65536)
    target: memoryview | None = None
    truncated = False
    stdin_view = payload[code_len:]
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
    all_gone = True
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
            all_gone = kill_leftovers(cfg, pid)
            exited_at = time.monotonic()
            continue
        if status is not None and exited_at is not None and now - exited_at > _DRAIN_AFTER_EXIT_S:
            break
        wait_s = (deadline - now) if status is None else _DRAIN_AFTER_EXIT_S
        for fd, ev in poller.poll(max(0.0, wait_s) * 1000):
            if fd == pidfd:
                poller.unregister(pidfd)
                _, status, rusage = os.wait4(pid, 0)
                all_gone = kill_leftovers(cfg, pid)
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
                room = cap - used[fd]
                target = bufs[fd][used[fd]:used[fd] + min(room, 65536)] if room > 0 else memoryview(scratch)
                try:
                    n = os.readv(fd, [target])
                except (BlockingIOError, InterruptedError):
                    continue
                if not n:
                    poller.unregister(fd)
                    open_pipes.discard(fd)
                    continue
                if room > 0:
                    used[fd] += n
                else:
                    truncated = True  # past the cap: read and discarded
    duration = (exited_at or time.monotonic()) - t0
    target = None  # the last view of a buffer: released before its mapping goes
    release(scratch)
    for fd in (out_r, err_r, pidfd) + ((in_w,) if in_w >= 0 else ()):
        os.close(fd)
    # Bounded: wiped, moved aside (fallback) or recycle (bwrap). Never while any of the run's
    # processes may still be alive: they could swap directories for symlinks under the wipe.
    after = rundir.reset() if all_gone else {"recycle": True}
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
            if sig == signal.SIGSYS:
                note += " (a system call the sandbox forbids)"
    else:
        code = os.waitstatus_to_exitcode(status)
    header = {
        "exit_code": code,
        "timed_out": timed_out,
        "truncated": truncated,
        "duration_s": duration,
        "note": note,
        "stdout_len": used[out_r],
        "stderr_len": used[err_r],
        **after,
    }
    return header, used[out_r], used[err_r]


def warm_up() -> None:
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
    """Serve requests from the control pipe until it closes; returns the process exit status."""
    cfg = json.loads(sys.argv[1])
    # The host passes the control pipes as the fds named in the config (never as stdin/stdout:
    # bubblewrap's init keeps fds 0-2 for the sandbox's lifetime and runs with the run's uid when
    # the host is not root, so /proc/1/fd/0 and /1 must not be the channel). They move to fds 3/4;
    # every other inherited fd (there should be none) is closed, and 0/1 point at /dev/null.
    # Children close everything above 2 before the user's code starts.
    ctl_in, ctl_out = 3, 4
    tmp_in, tmp_out = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, ctl_out + 1) for fd in cfg["ctl_fds"])
    os.dup2(tmp_in, ctl_in, inheritable=False)
    os.dup2(tmp_out, ctl_out, inheritable=False)
    os.closerange(ctl_out + 1, 1 << 16)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    # Undumpable: a run sharing our uid (non-root bwrap) can neither open /proc/<zygote>/fd/*
    # (to forge replies on the control pipe) nor read our memory; ptrace is also filtered.
    prctl(PR_SET_DUMPABLE, 0)
    prepare_seccomp(base64.b64decode(cfg["seccomp_bpf"]))
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    # sys.path is extended once here, before forking, so children inherit it.
    for path in reversed(cfg.get("python_paths") or ()):
        sys.path.insert(0, path)
    for name in cfg.get("preload") or ():
        __import__(name)
    # Modules every child needs, imported here once (cheaper, and readable before uid drop).
    import atexit, io, linecache, resource, traceback, types  # noqa: E401,F401

    warm_up()
    # The host stops reading our stderr once we are ready (a run could otherwise fill it through
    # bubblewrap's init): from here on nothing is written there.
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    os.close(null)
    send(ctl_out, {"ready": True, "pid": os.getpid()})
    rundir = RunDir(cfg)
    rundir.fresh()
    while True:
        raw = read_exact(ctl_in, _HDR.size)
        if raw is None:
            return 0
        (n,) = _HDR.unpack(raw)
        if n > _MAX_REQUEST:
            return 2
        body = read_exact(ctl_in, n)
        if body is None:
            return 0
        try:  # the header only (no run data): the code and stdin follow as raw bytes
            req = json.loads(body)
            sizes = (int(req["code_len"]), int(req["stdin_len"]), int(req["limits"]["output_bytes"]))
        except (ValueError, KeyError, TypeError):
            return 2  # a corrupt stream: the host replaces this worker
        if min(sizes) < 0 or sizes[0] + sizes[1] > _MAX_REQUEST or sizes[2] > _MAX_REQUEST:
            return 2
        payload = private_buffer(sizes[0] + sizes[1])
        out_buf, err_buf = private_buffer(sizes[2]), private_buffer(sizes[2])
        try:
            if not read_into(ctl_in, memoryview(payload)[:sizes[0] + sizes[1]]):
                return 0
            seq = req.get("seq")
            try:
                header, n_out, n_err = handle(req, cfg, rundir, memoryview(payload)[:sizes[0] + sizes[1]],
                                              memoryview(out_buf), memoryview(err_buf))
                if cfg.get("own_pid_namespace") and sysv_ipc_in_use():
                    header["recycle"] = True  # SysV IPC objects appeared: start a fresh namespace
            except Exception as exc:  # a bug or resource exhaustion here must not kill the zygote
                note = f"SandboxError: {type(exc).__name__}: {exc}"
                header, n_out, n_err = {"exit_code": -1, "timed_out": False, "truncated": False,
                                        "duration_s": 0.0, "note": note, "stdout_len": 0,
                                        "stderr_len": 0}, 0, 0
            header["seq"] = seq  # the host checks it: a reply can never be taken for another run's
            send(ctl_out, header, memoryview(out_buf)[:n_out], memoryview(err_buf)[:n_err])
        finally:  # unmapped: the next run (a fork of this process) finds none of these bytes
            release(payload, out_buf, err_buf)
        if header.get("recycle"):
            return 0
