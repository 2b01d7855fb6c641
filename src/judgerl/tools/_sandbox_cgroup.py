"""Per-run memory and process budget through cgroups (v2, or v1 where v2 has no controllers).

Each sandbox worker (bubblewrap + zygote, or the fallback zygote) is started inside its own leaf
cgroup ``judgerl-<pid>-<n>`` (v2: one directory; v1: one in the ``memory`` hierarchy and one in
the ``pids`` hierarchy). A worker serves one run at a time and the zygote itself never grows, so
the leaf's limits are the run's:

* memory: the worker's own usage when it became ready + ``memory_bytes``. Everything the run holds
  in RAM is charged there: its processes' pages (any number of children), memfd and POSIX shared
  memory pages, and the files it writes on bubblewrap's private tmpfs (shmem pages are charged to
  the cgroup that faults them in). v2: ``memory.max`` with ``memory.swap.max`` = 0; v1:
  ``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes`` (memory + swap) at the same
  value, so swapping does not stretch the budget. Past it the kernel's OOM killer kills a process
  of the cgroup; ``memory.events`` (v2) or ``memory.oom_control`` (v1) counts those kills, which
  the host reports in the result.
* processes: ``pids.max`` = ``max_processes`` + the sandbox's own processes (bwrap's monitor,
  the zygote and its kill helper, one spare); threads count too.

Ending a discarded worker: ``cgroup.kill`` (v2) or SIGKILL to every pid in ``cgroup.procs`` (v1,
repeated until empty; bubblewrap's pid namespace also dies with its init).

Where the leaves are made (probed once): ``$JUDGERL_SANDBOX_CGROUP`` (a delegated cgroup v2
directory: only that one is tried), else this process's own cgroup v2 when its
``cgroup.controllers`` has ``memory`` and ``pids`` (and they are or can be enabled in its
``cgroup.subtree_control``; the kernel refuses below a cgroup that itself holds processes), else
this process's own cgroups in the v1 ``memory`` and ``pids`` hierarchies when both are mounted
and writable (typically only as root). Nested below the caller's own cgroups, so the caller's
limits still apply. Anywhere else the sandbox runs in ``"rlimit"`` budget mode (RLIMIT_AS per
process x RLIMIT_NPROC) and says so in every result.
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import signal
import threading
import time
from dataclasses import dataclass

__all__ = ["CgroupParent", "CgroupSlot", "cgroup_parent", "shell_prefix"]

logger = logging.getLogger(__name__)
_ENV = "JUDGERL_SANDBOX_CGROUP"
_counter = itertools.count()
_lock = threading.Lock()
_parent_cache: dict[str, CgroupParent | None] = {}
_PROBE_BYTES = 64 * 1024 * 1024
_V1_KILL_S = 1.0  # seconds kill_all keeps sweeping a v1 cgroup's pids


@dataclass(frozen=True)
class CgroupParent:
    """Where per-worker cgroups are created.

    Attributes:
        version: 2 (unified hierarchy) or 1 (separate ``memory`` and ``pids`` hierarchies).
        memory_dir: directory under which the memory leaves are made (v2: the only directory).
        pids_dir: directory under which the pids leaves are made (equal to ``memory_dir`` on v2).
    """

    version: int
    memory_dir: str
    pids_dir: str

    @property
    def mechanism(self) -> str:
        """``"cgroup-v2"`` or ``"cgroup-v1"``: the value of ``ExecResult.budget``."""
        return f"cgroup-v{self.version}"


def _mountinfo() -> list[tuple[str, str, str, set[str]]]:
    """(fstype, root, mount point, super options) of every mount of this process."""
    out = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fields, rfields = left.split(), right.split()
                if len(fields) >= 5 and len(rfields) >= 3:
                    out.append((rfields[0], fields[3], fields[4], set(rfields[2].split(","))))
    except OSError:
        pass
    return out


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _write(path: str, value: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(value)


def cgroup_parent() -> CgroupParent | None:
    """Where per-worker cgroups can be made (probed once per ``$JUDGERL_SANDBOX_CGROUP`` value).

    Returns:
        A :class:`CgroupParent`, or None when neither cgroup v2 nor v1 with writable ``memory``
        and ``pids`` controllers is available to this process (the reasons are logged at INFO).
    """
    key = os.environ.get(_ENV, "")
    with _lock:
        if key not in _parent_cache:
            _parent_cache[key] = _probe_parent(key)
        return _parent_cache[key]


def _probe_parent(explicit: str) -> CgroupParent | None:
    if explicit:
        return _probe_v2(explicit)
    v2 = _own_v2_dir()
    found = _probe_v2(v2) if v2 is not None else None
    return found if found is not None else _probe_v1()


def _own_v2_dir() -> str | None:
    mount = next((point for fstype, _, point, _ in _mountinfo() if fstype == "cgroup2"), None)
    if mount is None:
        logger.info("sandbox budget: no cgroup v2 mount")
        return None
    try:
        rel = next(line[3:].strip() for line in _read("/proc/self/cgroup").splitlines()
                   if line.startswith("0::"))
    except (OSError, StopIteration):
        logger.info("sandbox budget: this process is in no cgroup v2")
        return None
    return os.path.join(mount, rel.lstrip("/"))


def _probe_v2(parent: str) -> CgroupParent | None:
    try:
        available = _read(os.path.join(parent, "cgroup.controllers")).split()
        if not {"memory", "pids"} <= set(available):
            logger.info("sandbox budget: cgroup v2 at %s has no memory/pids controller (%s)",
                        parent, " ".join(available) or "none")
            return None
        enabled = _read(os.path.join(parent, "cgroup.subtree_control")).split()
        if not {"memory", "pids"} <= set(enabled):
            _write(os.path.join(parent, "cgroup.subtree_control"), "+memory +pids")
        _probe_leaf(parent, {"pids.max": "1", "memory.max": str(_PROBE_BYTES)})
    except OSError as e:
        logger.info("sandbox budget: cgroup v2 at %s is not writable here (%s)", parent, e)
        return None
    return CgroupParent(2, parent, parent)


def _own_v1_dirs() -> dict[str, str]:
    """controller -> this process's cgroup directory in that v1 hierarchy (memory, pids)."""
    mounts = {}
    for fstype, root, point, opts in _mountinfo():
        if fstype == "cgroup":
            for ctrl in opts & {"memory", "pids"}:
                mounts.setdefault(ctrl, (root, point))
    dirs = {}
    try:
        lines = _read("/proc/self/cgroup").splitlines()
    except OSError:
        return {}
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for ctrl in parts[1].split(","):
            if ctrl in mounts:
                root, point = mounts[ctrl]
                path = parts[2]
                if root != "/" and not (path == root or path.startswith(root + "/")):
                    continue  # our cgroup is outside what this mount shows
                rel = path[len(root):] if root != "/" else path
                dirs[ctrl] = os.path.join(point, rel.lstrip("/"))
    return dirs


def _probe_v1() -> CgroupParent | None:
    dirs = _own_v1_dirs()
    if not {"memory", "pids"} <= set(dirs):
        logger.info("sandbox budget: no cgroup v1 memory and pids hierarchies (%s); using rlimits",
                    ", ".join(sorted(dirs)) or "none")
        return None
    try:
        mem = {"memory.limit_in_bytes": str(_PROBE_BYTES)}
        if os.path.exists(os.path.join(dirs["memory"], "memory.memsw.limit_in_bytes")):
            mem["memory.memsw.limit_in_bytes"] = str(_PROBE_BYTES)
        _probe_leaf(dirs["memory"], mem)
        _probe_leaf(dirs["pids"], {"pids.max": "1"})
    except OSError as e:
        logger.info("sandbox budget: cgroup v1 at %s / %s is not writable here (%s); using rlimits",
                    dirs["memory"], dirs["pids"], e)
        return None
    return CgroupParent(1, dirs["memory"], dirs["pids"])


def _probe_leaf(parent: str, values: dict[str, str]) -> None:
    probe = os.path.join(parent, f"judgerl-probe-{os.getpid()}")
    os.mkdir(probe)
    try:
        for name, value in values.items():
            _write(os.path.join(probe, name), value)
    finally:
        os.rmdir(probe)


class CgroupSlot:
    """The leaf cgroup(s) of one sandbox worker (created by the constructor).

    Args:
        parent: from :func:`cgroup_parent`.
        max_processes: the run's process/thread budget; ``extra_pids`` are added for the
            sandbox's own processes.

    Raises:
        OSError: a cgroup could not be created or configured (nothing is left behind).
    """

    def __init__(self, parent: CgroupParent, max_processes: int, extra_pids: int) -> None:
        with _lock:
            n = next(_counter)
        name = f"judgerl-{os.getpid()}-{n}"
        self.version = parent.version
        self.mechanism = parent.mechanism
        self.path = os.path.join(parent.memory_dir, name)
        self.pids_path = os.path.join(parent.pids_dir, name)
        self._dirs = [self.path] if self.version == 2 else [self.path, self.pids_path]
        self._baseline = 0
        self._oom_kills = 0
        self._peak_fd = -1  # v2: memory.peak, reset per run through this fd (Linux 6.12+)
        made = []
        try:
            for d in self._dirs:
                os.mkdir(d)
                made.append(d)
            _write(os.path.join(self.pids_path, "pids.max"), str(int(max_processes) + extra_pids))
            if self.version == 2:
                self._try_write("memory.swap.max", "0")
                self._try_write("memory.oom.group", "0")
        except OSError:
            for d in reversed(made):
                try:
                    os.rmdir(d)
                except OSError:
                    pass
            raise

    @property
    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a starting worker writes ``0`` into to enter its cgroups."""
        return [os.path.join(d, "cgroup.procs") for d in self._dirs]

    def _try_write(self, name: str, value: str) -> bool:
        try:
            _write(os.path.join(self.path, name), value)
            return True
        except FileNotFoundError:  # e.g. no swap accounting in this kernel: nothing to limit
            return False

    def _usage(self) -> int:
        name = "memory.current" if self.version == 2 else "memory.usage_in_bytes"
        return int(_read(os.path.join(self.path, name)))

    def set_run_budget(self, memory_bytes: int) -> None:
        """Cap the cgroup at its current usage (the idle worker) + ``memory_bytes`` (bytes).

        Raises:
            OSError: the limit could not be written.
        """
        self._baseline = self._usage()
        limit = str(self._baseline + int(memory_bytes))
        if self.version == 2:
            _write(os.path.join(self.path, "memory.max"), limit)
        else:
            # memsw (memory + swap) must stay >= the memory limit: lower the memory limit first.
            _write(os.path.join(self.path, "memory.limit_in_bytes"), limit)
            self._try_write("memory.memsw.limit_in_bytes", limit)
            self._try_write("memory.swappiness", "0")
        self._oom_kills = self.oom_kills()

    def begin_run(self) -> None:
        """Start measuring the next run's peak (resets the peak counters). Never raises."""
        try:
            if self.version == 1:
                for name in ("memory.max_usage_in_bytes", "memory.memsw.max_usage_in_bytes"):
                    self._try_write(name, "0")
            else:
                if self._peak_fd < 0:
                    self._peak_fd = os.open(os.path.join(self.path, "memory.peak"), os.O_RDWR)
                os.write(self._peak_fd, b"reset\n")
        except OSError:
            if self._peak_fd >= 0:
                os.close(self._peak_fd)
            self._peak_fd = -2  # no per-run peak here (v2 before Linux 6.12); don't retry

    def run_peak_bytes(self) -> int | None:
        """Peak memory of the worker during the run, above its idle usage, in bytes; None when
        this kernel cannot tell (cgroup v2 before 6.12). Never raises."""
        try:
            if self.version == 1:
                name = "memory.memsw.max_usage_in_bytes"
                if not os.path.exists(os.path.join(self.path, name)):
                    name = "memory.max_usage_in_bytes"
                peak = int(_read(os.path.join(self.path, name)))
            elif self._peak_fd >= 0:
                peak = int(os.pread(self._peak_fd, 64, 0))
            else:
                return None
        except (OSError, ValueError):
            return None
        return max(0, peak - self._baseline)

    def oom_kills(self) -> int:
        """How many processes the kernel killed in this cgroup for exceeding its memory limit."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            for line in _read(os.path.join(self.path, name)).splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def new_oom_kills(self) -> int:
        """OOM kills since the previous call (or since :meth:`set_run_budget`)."""
        now = self.oom_kills()
        new, self._oom_kills = now - self._oom_kills, now
        return new

    def kill_all(self, wait_s: float = _V1_KILL_S) -> None:
        """SIGKILL every process in the cgroup. Never raises.

        v2: ``cgroup.kill`` (Linux 5.14+, atomic). v1: each pid listed in ``cgroup.procs``, swept
        until the list is empty or ``wait_s`` seconds passed (``pids.max`` bounds what a run can
        fork meanwhile; ``wait_s=0``: one sweep)."""
        if self.version == 2:
            try:
                _write(os.path.join(self.path, "cgroup.kill"), "1")
            except OSError:
                pass
            return
        deadline = time.monotonic() + wait_s
        while True:
            pids = set()
            for procs in self.procs_files:
                try:
                    pids.update(int(p) for p in _read(procs).split())
                except (OSError, ValueError):
                    pass
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            if time.monotonic() >= deadline:
                return
            time.sleep(0.002)

    def remove(self, wait_s: float = 5.0) -> None:
        """Remove the cgroup(s) once their processes are gone (waits at most ``wait_s`` seconds).
        Never raises; a cgroup still busy after that is left in place (logged)."""
        if self._peak_fd >= 0:
            os.close(self._peak_fd)
            self._peak_fd = -2
        deadline = time.monotonic() + wait_s
        for path in self._dirs:
            while True:
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() >= deadline:
                        logger.warning("sandbox cgroup %s still busy; left in place", path)
                        break
                    time.sleep(0.02)


def shell_prefix(procs_files: list[str]) -> list[str]:
    """argv prefix that moves the starting process into the given cgroups (``cgroup.procs``
    paths, at least one), then execs the rest of the command line."""
    if not procs_files:
        raise ValueError("shell_prefix needs at least one cgroup.procs file")
    sh = shutil.which("sh") or "/bin/sh"
    n = len(procs_files)
    moves = " && ".join(f'echo 0 > "${i}"' for i in range(n))  # $0 is the first file
    return [sh, "-c", f'{moves} && shift {n - 1} && exec "$@"', *procs_files]
