"""The host's side of one warm sandbox worker: start it, send a run, read the reply, end it."""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from judgerl.tools._sandbox_base import ExecResult, SandboxError, SandboxLimits
from judgerl.tools._sandbox_cgroup import CgroupSlot, shell_prefix
from judgerl.tools.workers import kill_process, read_exact

ZYGOTE_DIR = Path(__file__).with_name("_zygote")
ZYGOTE_IN_SANDBOX = "/run/judgerl"  # the package is copied to /run/judgerl/_zygote/
_HDR = struct.Struct(">I")
_START_TIMEOUT_S = 30.0  # seconds to wait for a fresh worker's "ready" (the CPU may be busy)
#: Seconds past the run's own timeout before the host kills a silent worker: covers the zygote's
#: bounded cleanup (1.5 s killing leftovers + 0.5 s wiping files) with room to spare.
GRACE_S = 3.0
_REAP_S = 5.0  # seconds a background reaper waits for a killed worker's processes


class StaleWorker(Exception):
    """The request never reached a working zygote (it died between runs); retry on a fresh one."""


def bootstrap_argv(python: str, root: str) -> list[str]:
    """``python -I -S -B -c <bootstrap>``: import ``_zygote.main`` from ``root``, then forget
    ``root`` so that runs cannot import anything else from there."""
    code = (f"import sys; sys.path.insert(0, {root!r}); import _zygote.main as m; "
            f"sys.path.remove({root!r}); sys.exit(m.main())")
    return [python, "-I", "-S", "-B", "-c", code]


def zygote_files() -> list[tuple[str, bytes]]:
    """(file name, content) of the zygote package, copied into bwrap sandboxes."""
    return [(p.name, p.read_bytes()) for p in sorted(ZYGOTE_DIR.glob("*.py"))]


@functools.lru_cache(maxsize=1)
def _spawner() -> ThreadPoolExecutor:
    """The process-lifetime thread that starts every worker: bwrap's ``--die-with-parent``
    (PR_SET_PDEATHSIG) fires when the *thread* that spawned it exits, and callers often run in
    short-lived pool threads."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="judgerl-sandbox-spawner")


def kill_uid(uid: int, gid: int) -> None:
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


def _drain(fd: int) -> str:
    """The last 2,000 characters a dead worker wrote to its stderr pipe (what is buffered)."""
    os.set_blocking(fd, False)
    data = b""
    try:
        while chunk := os.read(fd, 65536):
            data = (data + chunk)[-8192:]
    except OSError:
        pass
    return data[-2000:].decode(errors="replace").strip()


class HostWorker:
    """One warm zygote process, started (and ready) when constructed.

    Args:
        argv: builds the command from the fds of ``files`` (bwrap prefix + bootstrap, or the
            bootstrap alone for the fallback); the config JSON is appended.
        cfg: the zygote's config (uid, tmp_root, seccomp program, ...).
        files: zygote sources to hand to bwrap as fds: (path in the sandbox, content).
        cgroup: the worker's cgroup (cgroup budget mode), or None (rlimit mode).
        run_memory_bytes: the per-run memory budget set in the cgroup once the zygote is ready.
        reapers: a list shared with the sandbox, to which background reaper threads are added.
        on_reaped: called once, after the worker's processes are gone (or it never started),
            e.g. to free its uid.

    Raises:
        SandboxError: the worker could not be started or did not report ready.
    """

    def __init__(self, argv: Callable[[list[int]], list[str]], cfg: dict, files: list[tuple[str, bytes]],
                 cgroup: CgroupSlot | None, run_memory_bytes: int,
                 reapers: list[threading.Thread], on_reaped: Callable[[], None] | None = None) -> None:
        self.cfg = cfg
        self._on_reaped = on_reaped
        self.cgroup = cgroup
        self._reapers = reapers
        self._seq = 0
        self.proc: subprocess.Popen | None = None
        self._tx = self._rx = -1  # the host's ends of the control pipes
        # The control channel is a pair of pipes on fds that only the zygote keeps: bwrap's stdin
        # and stdout are /dev/null and its stderr a pipe the host stops reading once the worker is
        # ready. The zygote is pid 1 of the sandbox (bwrap --as-pid-1) and undumpable, so no
        # /proc/*/fd entry a run can open names the channel.
        req_r, self._tx = os.pipe2(os.O_CLOEXEC)
        self._rx, rep_w = os.pipe2(os.O_CLOEXEC)
        log_r, log_w = os.pipe2(os.O_CLOEXEC)
        fds = []
        try:
            for _, content in files:
                fd = os.memfd_create("judgerl-zygote", os.MFD_CLOEXEC)
                os.write(fd, content)
                os.lseek(fd, 0, os.SEEK_SET)
                fds.append(fd)
            cfg = dict(cfg, ctl_fds=[req_r, rep_w])
            full = argv(fds) + [json.dumps(cfg)]
            if cgroup is not None:
                full = shell_prefix(cgroup.procs_files) + full
            self.proc = _spawner().submit(
                subprocess.Popen, full, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=log_w, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
                cwd=cfg["tmp_root"] if cfg["guard"] else "/", start_new_session=True,
                close_fds=True, pass_fds=(*fds, req_r, rep_w),
            ).result()
        except BaseException as exc:  # nothing was started: give back what the worker held
            for fd in (self._tx, self._rx, log_r):
                os.close(fd)
            if cgroup is not None:
                cgroup.remove()
            if on_reaped is not None:
                on_reaped()
            if isinstance(exc, OSError):
                raise SandboxError(f"cannot start sandbox worker: {exc}") from exc
            raise
        finally:
            for fd in (*fds, req_r, rep_w, log_w):
                os.close(fd)
        try:
            try:
                deadline = time.monotonic() + _START_TIMEOUT_S
                raw = read_exact(self._rx, _HDR.size, deadline)
                body = raw and read_exact(self._rx, _HDR.unpack(raw)[0], deadline)
                ready = bool(body) and json.loads(body).get("ready")
                if ready and cgroup is not None:
                    cgroup.set_run_budget(run_memory_bytes)
            except (TimeoutError, OSError, ValueError):
                ready = False
            if not ready:
                self.kill(wait=True)
                raise SandboxError(f"sandbox worker failed to start: {_drain(log_r) or 'no output'}")
        finally:
            os.close(log_r)

    def alive(self) -> bool:
        """Whether the zygote process is still running."""
        return self.proc is not None and self.proc.poll() is None

    def kill(self, wait: bool = False) -> None:
        """SIGKILL the worker's processes now; reap them and release its uid, cgroup and files in
        a background thread (``wait=True``: before returning, at most ``_REAP_S`` s). Never raises."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if self.cgroup is not None:
            self.cgroup.kill_all(wait_s=0.0)  # one sweep now; the reaper sweeps until empty
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        thread = threading.Thread(target=self._reap, args=(proc,), daemon=True,
                                  name="judgerl-sandbox-reaper")
        thread.start()
        if wait:
            thread.join(_REAP_S + 1.0)
        else:
            self._reapers[:] = [t for t in self._reapers if t.is_alive()] + [thread]

    def _reap(self, proc: subprocess.Popen) -> None:
        kill_process(proc, group=True)
        cfg = self.cfg
        if cfg.get("uid") is not None:
            # Every process that ran as the worker's uid, wherever it is (fallback: on the host;
            # bwrap: a straggler of the dying pid namespace), before the uid is handed out again.
            kill_uid(cfg["uid"], cfg["gid"])
        if cfg["guard"]:  # fallback: the dead zygote's run directory on the host
            shutil.rmtree(os.path.join(cfg["tmp_root"], f"run-{proc.pid}"), ignore_errors=True)
        if self.cgroup is not None:
            self.cgroup.kill_all()
            self.cgroup.remove(_REAP_S)
        if self._on_reaped is not None:
            self._on_reaped()
        for fd in (self._tx, self._rx):
            try:
                os.close(fd)
            except OSError:
                pass

    # ------------------------------------------------------------------------------ one run
    def execute(self, code: str, stdin: str | None, timeout_s: float,
                limits: SandboxLimits) -> tuple[ExecResult, bool]:
        """Run one request.

        Returns:
            (result, healthy): ``healthy`` False means the worker must be discarded (it died,
            missed the host deadline, asked to be replaced, or answered out of sequence).

        Raises:
            StaleWorker: the request could not be delivered (the worker died between runs).
        """
        if not self.alive():
            raise StaleWorker
        self._seq += 1
        seq = self._seq
        # The code and stdin travel as raw bytes after the header: the worker reads them into a
        # private mapping it unmaps after the run, never into its heap (which later runs inherit).
        code_b = code.encode("utf-8", "surrogatepass")
        stdin_b = (stdin or "").encode("utf-8", "surrogatepass")
        raw = json.dumps({"seq": seq, "code_len": len(code_b), "stdin_len": len(stdin_b), "timeout_s": timeout_s,
                          "limits": limits.to_wire()}).encode()
        if self.cgroup is not None:
            self.cgroup.begin_run()
        try:
            self._write_all(_HDR.pack(len(raw)) + raw + code_b + stdin_b)
        except OSError as e:  # BrokenPipeError: it died between runs
            raise StaleWorker from e
        deadline = time.monotonic() + timeout_s + GRACE_S
        try:
            fd = self._rx
            head = read_exact(fd, _HDR.size, deadline)
            body = head and read_exact(fd, _HDR.unpack(head)[0], deadline)
            header = json.loads(body) if body else None
            out = header and read_exact(fd, int(header["stdout_len"]), deadline)
            err = header and read_exact(fd, int(header["stderr_len"]), deadline)
        except TimeoutError:
            return ExecResult("", f"TimeoutError: execution exceeded the wall-clock limit of "
                              f"{timeout_s:g} s (worker unresponsive, restarted)", -signal.SIGKILL,
                              True, False, timeout_s + GRACE_S), False
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            header = None  # the pipe was closed under us (close()) or a corrupt stream
        if header is None or out is None or err is None:
            return ExecResult("", "SandboxError: the sandbox worker died during the run "
                              "(restarted)", -signal.SIGKILL, False, False, 0.0), False
        if header.get("seq") != seq:
            # Not this request's reply (a forged or stale frame on the control pipe): the stream
            # cannot be trusted any more. The caller retries on a fresh worker.
            raise StaleWorker(f"reply out of sequence (expected {seq}, got {header.get('seq')!r})")
        trash = header.get("trash")
        if isinstance(trash, str) and os.path.dirname(trash) == self.cfg["tmp_root"] \
                and os.path.basename(trash).startswith("trash-"):
            threading.Thread(target=shutil.rmtree, args=(trash, True), daemon=True).start()
        stderr = err.decode("utf-8", errors="replace")
        note = str(header.get("note") or "")
        peak = None
        oom_kills = 0
        if self.cgroup is not None:
            peak = self.cgroup.run_peak_bytes()
            oom_kills = self.cgroup.new_oom_kills()
        if oom_kills:
            note = (f"MemoryError: the run exceeded its memory budget of "
                    f"{limits.memory_bytes / 2**20:g} MiB (all its processes, memfds and files "
                    f"together; {self.cgroup.mechanism}); the kernel killed "
                    f"{oom_kills} process{'es' if oom_kills > 1 else ''}")
        if note:
            stderr += ("" if not stderr or stderr.endswith("\n") else "\n") + note + "\n"
        cap = limits.memory_bytes * (1 if self.cgroup is not None else limits.max_processes)
        result = ExecResult(
            stdout=out.decode("utf-8", errors="replace"),
            stderr=stderr,
            exit_code=int(header["exit_code"]),
            timed_out=bool(header["timed_out"]),
            truncated=bool(header["truncated"]),
            duration_s=float(header["duration_s"]),
            budget=self.cgroup.mechanism if self.cgroup is not None else "rlimit",
            memory_cap_bytes=int(cap),
            memory_peak_bytes=peak,
            oom_kills=oom_kills,
        )
        return result, not header.get("recycle")

    def _write_all(self, data: bytes) -> None:
        if self.proc is None:
            raise BrokenPipeError("sandbox worker is not running")
        fd = self._tx
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
