"""After a run: kill what it left behind and clean its directory, both within a time budget."""

from __future__ import annotations

import os
import signal
import stat
import time

#: Seconds the zygote spends killing a run's leftover processes before giving up (and recycling).
LEFTOVER_KILL_S = 1.5
#: Seconds the zygote spends wiping a run's files before handing the rest off / recycling.
WIPE_BUDGET_S = 0.5
#: bwrap: a run that left more inodes than this on the private tmpfs is not wiped file by file;
#: the worker is replaced instead (the kernel frees the whole tmpfs at once).
MAX_WIPE_INODES = 2000


def kill_leftovers(cfg: dict, child_pid: int) -> bool:
    """SIGKILL every process the run left behind (children, daemons, setsid escapes) and wait
    until they are gone, so they neither touch the next run nor count against its limits.

    bwrap: the private pid namespace holds only this zygote (its pid 1, so orphans of the run
    become its children and are reaped here) and the run's processes, so a /proc listing is exact
    and cheap. Fallback as root: every process of the
    slot's uid is killed by a helper that becomes that uid and calls kill(-1) (atomic with respect
    to fork). Fallback as non-root: only the run's process group (documented weakness).

    Returns:
        True when everything is gone; False when processes survived ``LEFTOVER_KILL_S`` seconds
        (the worker must then be replaced).
    """
    try:
        os.killpg(child_pid, signal.SIGKILL)
    except OSError:
        pass
    if cfg.get("own_pid_namespace"):
        me = os.getpid()
        deadline = time.monotonic() + LEFTOVER_KILL_S
        swept = False
        while time.monotonic() < deadline:
            reap_children()
            others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)]
            if not others:
                return True
            if cfg.get("uid") is not None and not swept:
                kill_as_uid(cfg)
                swept = True
            else:
                for p in others:
                    try:
                        os.kill(p, signal.SIGKILL)
                    except OSError:
                        pass
            time.sleep(0.0005)
        return False
    if cfg.get("uid") is not None:
        kill_as_uid(cfg)
    reap_children()
    return True


def reap_children() -> None:
    """Reap every exited child of the zygote without blocking: the run's orphans (the zygote is
    its pid namespace's init) and children a run made the zygote's own (``clone(CLONE_PARENT)``),
    which would otherwise stay as zombies in /proc and hold pids of the run's budget."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_as_uid(cfg: dict) -> None:
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


def count_uid_processes(uid: int) -> int:
    """Processes on this machine whose real uid is ``uid`` (from /proc)."""
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


def sysv_ipc_in_use() -> bool:
    """Whether any SysV shared memory / message queue / semaphore exists in our IPC namespace.

    Runs cannot create any (seccomp), but if one ever appears it could carry state from one run
    to the next: the host then replaces this worker (and its IPC namespace) before the next run.
    """
    for kind in ("shm", "msg", "sem"):
        try:
            with open(f"/proc/sysvipc/{kind}", "rb") as f:
                if len(f.read().splitlines()) > 1:  # the first line is a header
                    return True
        except OSError:
            continue
    return False


def wipe_tree(path: str, deadline: float) -> bool:
    """Delete ``path`` (a file, link or directory tree) unless the monotonic ``deadline`` passes.

    Returns:
        True when ``path`` is gone, False when time ran out first (part of it may remain).
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return True
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(path)
        return True
    stack = [path]
    while stack:
        top = stack[-1]
        try:
            os.chmod(top, 0o700)  # a run may have made its own directories unwritable
        except OSError:
            pass
        pushed = False
        with os.scandir(top) as it:
            for entry in it:
                if time.monotonic() >= deadline:
                    return False
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                    pushed = True
                    break
                try:
                    os.unlink(entry.path)
                except FileNotFoundError:
                    pass
        if not pushed:
            os.rmdir(top)
            stack.pop()
    return True


class RunDir:
    """The zygote's private run directory, reused while it is provably untouched.

    ``fresh()`` returns an empty directory owned by the slot uid with mode 0700, recreating it
    when the previous run left anything in it or touched its inode metadata (mode, owner, ctime,
    mtime); the common untouched case costs one ``lstat`` and one ``listdir``.
    """

    def __init__(self, cfg: dict) -> None:
        self.root = cfg["tmp_root"]
        self.path = os.path.join(self.root, f"run-{os.getpid()}")
        self._cfg = cfg
        self._sig: tuple | None = None
        self._trash = 0

    def _signature(self) -> tuple | None:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mode, st.st_uid, st.st_gid, st.st_ctime_ns, st.st_mtime_ns,
                st.st_nlink)

    def clean(self) -> bool:
        """Whether the directory is exactly as ``fresh()`` left it."""
        return self._sig is not None and self._signature() == self._sig and not os.listdir(self.path)

    def fresh(self) -> str:
        """An empty run directory (wiping an old one without a time limit)."""
        if not self.clean():
            wipe_tree(self.path, float("inf"))
            self._make()
        return self.path

    def _make(self) -> None:
        os.mkdir(self.path, 0o700)
        if self._cfg.get("uid") is not None:
            os.chown(self.path, self._cfg["uid"], self._cfg["gid"])
        self._sig = self._signature()

    def reset(self) -> dict:
        """Make the directory fresh for the next run within ``WIPE_BUDGET_S`` seconds.

        Returns:
            ``{}`` when done; ``{"recycle": True}`` when the worker must be replaced (bwrap: the
            tmpfs holds too much, or something outside the run directory); ``{"trash": path}``
            when (fallback) the leftovers were moved aside for the host to delete.
        """
        if self.clean():
            if self._cfg.get("own_pid_namespace") and os.listdir(self.root) != [os.path.basename(self.path)]:
                return {"recycle": True}  # a non-root run wrote next to its directory
            return {}
        if self._cfg.get("own_pid_namespace"):
            vfs = os.statvfs(self.root)
            if vfs.f_files - vfs.f_ffree > MAX_WIPE_INODES:
                return {"recycle": True}
            if os.listdir(self.root) != [os.path.basename(self.path)]:
                return {"recycle": True}
        self._sig = None
        if wipe_tree(self.path, time.monotonic() + WIPE_BUDGET_S):
            self._make()
            return {}
        if self._cfg.get("own_pid_namespace"):
            return {"recycle": True}
        self._trash += 1
        trash = os.path.join(self.root, f"trash-{os.getpid()}-{self._trash}")
        os.rename(self.path, trash)
        self._make()
        return {"trash": trash}
