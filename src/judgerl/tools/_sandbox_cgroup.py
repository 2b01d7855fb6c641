"""Per-run memory and process budget through cgroup v2, where this process may create cgroups.

Each sandbox worker (bubblewrap + zygote, or the fallback zygote) is started inside its own leaf
cgroup ``<parent>/judgerl-<pid>-<n>``. A worker serves one run at a time and the zygote itself
never grows, so the leaf's limits are the run's: ``memory.max`` = the zygote's own usage when it
became ready + ``memory_bytes`` (+ ``disk_bytes`` in bwrap mode, whose private tmpfs pages are
charged to the same cgroup), ``memory.swap.max`` = 0, ``pids.max`` = ``max_processes`` + the
sandbox's own processes (bwrap's two and the zygote). ``memory.events``' ``oom_kill`` counter tells
the host that a run was killed for exceeding its budget; ``cgroup.kill`` ends every process of a
discarded worker at once.

The parent is ``$JUDGERL_SANDBOX_CGROUP`` (a delegated cgroup v2 directory) or this process's own
cgroup v2. It is usable when its ``cgroup.controllers`` has ``memory`` and ``pids`` and they are
(or can be) enabled in its ``cgroup.subtree_control`` and a child can be created and written; the
kernel refuses to enable controllers below a cgroup that itself holds processes (other than the
root), and cgroup v1 hosts have no v2 memory controller at all. Anywhere else the sandbox runs in
``"rlimit"`` budget mode (RLIMIT_AS per process x RLIMIT_NPROC) and says so in every result.
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import threading
import time

__all__ = ["CgroupSlot", "cgroup_parent", "shell_prefix"]

logger = logging.getLogger(__name__)
_ENV = "JUDGERL_SANDBOX_CGROUP"
_counter = itertools.count()
_lock = threading.Lock()
_parent_cache: dict[str, str | None] = {}


def _v2_mount() -> str | None:
    """Where the cgroup v2 hierarchy is mounted (``/sys/fs/cgroup`` or ``.../unified``)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                if right.split(" ", 1)[0] == "cgroup2":
                    return left.split()[4]
    except OSError:
        return None
    return None


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _write(path: str, value: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(value)


def cgroup_parent() -> str | None:
    """The cgroup v2 directory under which per-worker cgroups can be made, or None (probed once).

    Returns:
        An absolute directory path, or None when cgroup v2 with writable ``memory`` and ``pids``
        controllers is not available to this process (the reason is logged at INFO).
    """
    key = os.environ.get(_ENV, "")
    with _lock:
        if key not in _parent_cache:
            _parent_cache[key] = _probe_parent(key)
        return _parent_cache[key]


def _probe_parent(explicit: str) -> str | None:
    if explicit:
        parent = explicit
    else:
        mount = _v2_mount()
        if mount is None:
            logger.info("sandbox budget: no cgroup v2 mount; using rlimits")
            return None
        try:
            rel = next(line[3:].strip() for line in _read("/proc/self/cgroup").splitlines()
                       if line.startswith("0::"))
        except (OSError, StopIteration):
            logger.info("sandbox budget: this process is in no cgroup v2; using rlimits")
            return None
        parent = os.path.join(mount, rel.lstrip("/"))
    try:
        available = _read(os.path.join(parent, "cgroup.controllers")).split()
        if not {"memory", "pids"} <= set(available):
            logger.info("sandbox budget: cgroup v2 at %s has no memory/pids controller (%s); "
                        "using rlimits", parent, " ".join(available) or "none")
            return None
        enabled = _read(os.path.join(parent, "cgroup.subtree_control")).split()
        if not {"memory", "pids"} <= set(enabled):
            _write(os.path.join(parent, "cgroup.subtree_control"), "+memory +pids")
        probe = os.path.join(parent, f"judgerl-probe-{os.getpid()}")
        os.mkdir(probe)
        try:
            _write(os.path.join(probe, "pids.max"), "1")
            _write(os.path.join(probe, "memory.max"), str(64 * 1024 * 1024))
        finally:
            os.rmdir(probe)
    except OSError as e:
        logger.info("sandbox budget: cgroup v2 at %s is not writable here (%s); using rlimits",
                    parent, e)
        return None
    return parent


class CgroupSlot:
    """The leaf cgroup of one sandbox worker (created by the constructor).

    Args:
        parent: from :func:`cgroup_parent`.
        max_processes: the run's process/thread budget; ``extra_pids`` are added for the
            sandbox's own processes.

    Raises:
        OSError: the cgroup could not be created or configured.
    """

    def __init__(self, parent: str, max_processes: int, extra_pids: int) -> None:
        with _lock:
            n = next(_counter)
        self.path = os.path.join(parent, f"judgerl-{os.getpid()}-{n}")
        os.mkdir(self.path)
        try:
            _write(os.path.join(self.path, "pids.max"), str(int(max_processes) + extra_pids))
            self._try_write("memory.swap.max", "0")
            self._try_write("memory.oom.group", "0")
        except OSError:
            self.remove()
            raise
        self._oom_kills = 0

    @property
    def procs_file(self) -> str:
        """The ``cgroup.procs`` file a starting worker writes ``0`` into to enter the cgroup."""
        return os.path.join(self.path, "cgroup.procs")

    def _try_write(self, name: str, value: str) -> None:
        try:
            _write(os.path.join(self.path, name), value)
        except FileNotFoundError:  # no swap accounting in this kernel: nothing to limit
            pass

    def set_run_budget(self, memory_bytes: int) -> None:
        """Set ``memory.max`` to the zygote's current usage + ``memory_bytes`` (bytes)."""
        current = int(_read(os.path.join(self.path, "memory.current")))
        _write(os.path.join(self.path, "memory.max"), str(current + int(memory_bytes)))
        self._oom_kills = self.oom_kills()

    def oom_kills(self) -> int:
        """How many processes the kernel killed in this cgroup for exceeding ``memory.max``."""
        try:
            for line in _read(os.path.join(self.path, "memory.events")).splitlines():
                name, _, value = line.partition(" ")
                if name == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def new_oom_kills(self) -> int:
        """OOM kills since the previous call (or since :meth:`set_run_budget`)."""
        now = self.oom_kills()
        new, self._oom_kills = now - self._oom_kills, now
        return new

    def kill_all(self) -> None:
        """SIGKILL every process in the cgroup (``cgroup.kill``, Linux 5.14+). Never raises."""
        try:
            _write(os.path.join(self.path, "cgroup.kill"), "1")
        except OSError:
            pass

    def remove(self, wait_s: float = 5.0) -> None:
        """Remove the cgroup once its processes are gone (waits at most ``wait_s`` seconds).
        Never raises; a cgroup still busy after that is left for the kernel to report."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() >= deadline:
                    logger.warning("sandbox cgroup %s still busy; left in place", self.path)
                    return
                time.sleep(0.02)


def shell_prefix(procs_file: str) -> list[str]:
    """argv prefix that moves the starting process into a cgroup, then execs the rest."""
    sh = shutil.which("sh") or "/bin/sh"
    return [sh, "-c", 'echo 0 > "$0" && exec "$@"', procs_file]
