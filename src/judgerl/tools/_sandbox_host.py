"""The host's side of one warm sandbox worker: start it, send a run, read the reply, end it."""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from judgerl.tools._sandbox_base import ExecResult, SandboxError, SandboxLimits
from judgerl.tools._sandbox_cgroup import CgroupSlot, shell_prefix
from judgerl.workers import kill_process, read_exact

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

    Raises:
        SandboxError: the worker could not be started or did not report ready.
    """

    def __init__(self, argv: Callable[[list[int]], list[str]], cfg: dict, files: list[tuple[str, bytes]],
                 cgroup: CgroupSlot | None, run_memory_bytes: int,
                 reapers: list[threading.Thread]) -> None:
        self.cfg = cfg
        self.cgroup = cgroup
        self._reapers = reapers
        self._seq = 0
        self.proc: subprocess.Popen | None = None
        self._log = tempfile.TemporaryFile(prefix="judgerl-sandbox-worker-")
        fds = []
        try:
            for _, content in files:
                fd = os.memfd_create("judgerl-zygote", os.MFD_CLOEXEC)
                os.write(fd, content)
                os.lseek(fd, 0, os.SEEK_SET)
                fds.append(fd)
            full = argv(fds) + [json.dumps(cfg)]
            if cgroup is not None:
                full = shell_prefix(cgroup.procs_file) + full
            try:
                self.proc = _spawner().submit(
                    subprocess.Popen, full, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=self._log, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
                    cwd=cfg["tmp_root"] if cfg["guard"] else "/", start_new_session=True,
                    close_fds=True, pass_fds=tuple(fds),
                ).result()
            except OSError as exc:
                raise SandboxError(f"cannot start sandbox worker {full[0]!r}: {exc}") from exc
        finally:
            for fd in fds:
                os.close(fd)
        try:
            raw = read_exact(self.proc.stdout.fileno(), _HDR.size, time.monotonic() + _START_TIMEOUT_S)
            body = raw and read_exact(self.proc.stdout.fileno(), _HDR.unpack(raw)[0],
                                      time.monotonic() + _START_TIMEOUT_S)
            ready = bool(body) and json.loads(body).get("ready")
            if ready and cgroup is not None:
                cgroup.set_run_budget(run_memory_bytes)
        except (TimeoutError, OSError, ValueError):
            ready = False
        if not ready:
            detail = self._stderr_tail()
            self.kill(wait=True)
            raise SandboxError(f"sandbox worker failed to start: {detail or 'no output'}")

    def alive(self) -> bool:
        """Whether the zygote process is still running."""
        return self.proc is not None and self.proc.poll() is None

    def _stderr_tail(self) -> str:
        self._log.seek(0)
        return self._log.read()[-2000:].decode(errors="replace").strip()

    def kill(self, wait: bool = False) -> None:
        """SIGKILL the worker's processes now; reap them and release its uid, cgroup and files in
        a background thread (``wait=True``: before returning, at most ``_REAP_S`` s). Never raises."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if self.cgroup is not None:
            self.cgroup.kill_all()
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
        if cfg.get("uid") is not None and not cfg["own_pid_namespace"]:
            kill_uid(cfg["uid"], cfg["gid"])  # fallback as root: the slot uid's leftovers
        if cfg["guard"]:  # fallback: the dead zygote's run directory on the host
            shutil.rmtree(os.path.join(cfg["tmp_root"], f"run-{proc.pid}"), ignore_errors=True)
        if self.cgroup is not None:
            self.cgroup.remove(_REAP_S)
        self._log.close()

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
        raw = json.dumps({"seq": seq, "code": code, "stdin": stdin, "timeout_s": timeout_s,
                          "limits": limits.to_wire()}).encode()
        try:
            self._write_all(_HDR.pack(len(raw)) + raw)
        except OSError as e:  # BrokenPipeError: it died between runs
            raise StaleWorker from e
        deadline = time.monotonic() + timeout_s + GRACE_S
        try:
            fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
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
        if self.cgroup is not None and self.cgroup.new_oom_kills():
            note = (f"MemoryError: the run exceeded its memory budget of "
                    f"{limits.memory_bytes / 2**20:g} MiB (all its processes together); "
                    f"the kernel killed a process")
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
            budget="cgroup" if self.cgroup is not None else "rlimit",
            memory_cap_bytes=int(cap),
        )
        return result, not header.get("recycle")

    def _write_all(self, data: bytes) -> None:
        if self.proc is None or self.proc.stdin is None:
            raise BrokenPipeError("sandbox worker is not running")
        fd = self.proc.stdin.fileno()
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
