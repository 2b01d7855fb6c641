"""The seccomp filter every sandboxed run gets, compiled once with libseccomp (``pyseccomp``).

Why a library: libseccomp (the C library behind bubblewrap's and most container runtimes'
filters) resolves syscall numbers per architecture, adds the architecture check, and rejects
foreign ABIs (i386 ``int 0x80`` and x32 calls on x86_64), which a hand-written BPF program would
have to get right itself. ``pyseccomp`` is a small ctypes binding to the system's
``libseccomp.so.2`` with the API of libseccomp's own Python bindings (which are not on PyPI); it
installs from PyPI anywhere and needs the Debian package ``libseccomp2`` (present on Debian/Ubuntu
by default; ``scripts/setup.sh`` installs it with bubblewrap).

The filter is compiled here, on the host, into raw BPF bytes (``seccomp_export_bpf``); the zygote
installs them in each forked run with ``prctl(PR_SET_NO_NEW_PRIVS)`` +
``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)`` just before the user code starts, so the filter
binds the run and everything it starts, and can never be removed by it. The zygote itself stays
unfiltered (it never runs user code). Default action: allow; blocked calls fail with ``EPERM``
(``clone3`` with ``ENOSYS``, so that glibc falls back to ``clone``, whose flags *can* be checked;
sockets of any family but AF_UNIX with ``EAFNOSUPPORT``).
"""

from __future__ import annotations

import errno
import functools
import logging
import socket
import tempfile

from judgerl.tools._sandbox_base import SandboxUnavailableError

__all__ = ["ALLOWED_SOCKET_FAMILY", "BLOCKED_SYSCALLS", "NAMESPACE_FLAGS", "SELF_ONLY_SYSCALLS",
           "SeccompUnavailableError", "run_filter_bpf"]

logger = logging.getLogger(__name__)

#: Syscalls a sandboxed run may not make at all (each fails with EPERM), by purpose.
BLOCKED_SYSCALLS: dict[str, tuple[str, ...]] = {
    # io_uring: a second syscall interface that seccomp cannot see into
    "io_uring": ("io_uring_setup", "io_uring_enter", "io_uring_register"),
    # new namespaces (user namespaces in particular) and joining others
    "namespaces": ("unshare", "setns"),
    # reading or writing other processes (the zygote, other runs)
    "ptrace": ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd"),
    # kernel keyrings: per-uid state that would outlive the run
    "keyrings": ("keyctl", "add_key", "request_key"),
    # IPC objects that outlive their processes (SysV and POSIX message queues)
    "ipc": ("shmget", "shmat", "shmctl", "shmdt", "msgget", "msgsnd", "msgrcv", "msgctl", "semget",
            "semop", "semtimedop", "semctl", "mq_open", "mq_unlink", "mq_timedsend",
            "mq_timedreceive", "mq_notify", "mq_getsetattr"),
    # mounts (need privileges the run does not have anyway: defence in depth)
    "mounts": ("mount", "umount2", "pivot_root", "fsopen", "fsmount", "fsconfig", "move_mount",
               "open_tree", "fspick", "mount_setattr"),
    # kernel attack surface no judged program needs
    "kernel": ("bpf", "perf_event_open", "userfaultfd", "kexec_load", "kexec_file_load",
               "init_module", "finit_module", "delete_module", "open_by_handle_at",
               "name_to_handle_at", "acct", "swapon", "swapoff", "reboot", "syslog", "quotactl",
               "lookup_dcookie", "personality",
               # x86 segment descriptors (old exploit primitive); a no-op name on aarch64
               "modify_ldt",
               # memory hidden from the kernel's own direct map: nothing a judged program needs
               "memfd_secret"),
    # seccomp(2) itself: SECCOMP_FILTER_FLAG_NEW_LISTENER would hand the run a user-notification
    # listener (a supervisor for its own children's syscalls). prctl(PR_SET_SECCOMP) stays usable
    # for a program that wants to restrict itself further (stacked filters only ever narrow).
    "seccomp": ("seccomp",),
}

#: The one address family a run may create sockets of (``socket``/``socketpair`` with any other
#: domain fail with EAFNOSUPPORT): AF_UNIX, which is what the standard library uses locally
#: (``socket.socketpair``, asyncio's self-pipe, multiprocessing). AF_INET/AF_INET6 (the network,
#: also on the fallback, which has no network namespace), AF_NETLINK, AF_PACKET, AF_VSOCK (the
#: host's vsock port space), AF_ALG, AF_BLUETOOTH, ... are all refused.
ALLOWED_SOCKET_FAMILY = socket.AF_UNIX

#: Syscalls that act on another process by pid: each fails with EPERM unless every argument named
#: here is 0 (= the calling process/thread itself; ``setpriority``/``ioprio_set`` also need the
#: per-process ``which``). As a non-root host the run shares its zygote's uid, so without this it
#: could lower the zygote's rlimits (``prlimit``: every later run on that worker then fails its
#: setup), or renice it, pin it to one CPU or make it SCHED_IDLE (inherited by every later run).
SELF_ONLY_SYSCALLS: dict[str, dict[int, int]] = {
    "prlimit64": {0: 0},
    "setpriority": {0: 0, 1: 0},  # which == PRIO_PROCESS, who == 0 (PRIO_USER 0: all our uid)
    "sched_setaffinity": {0: 0},
    "sched_setscheduler": {0: 0},
    "sched_setparam": {0: 0},
    "sched_setattr": {0: 0},
    "ioprio_set": {0: 1, 1: 0},  # which == IOPRIO_WHO_PROCESS, who == 0
}

#: ``clone`` flags that create namespaces; ``clone`` with any of them fails with EPERM.
NAMESPACE_FLAGS: dict[str, int] = {
    "CLONE_NEWTIME": 0x00000080,
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}


class SeccompUnavailableError(SandboxUnavailableError):
    """libseccomp (or its ``pyseccomp`` binding) is missing or cannot build the filter here."""


@functools.lru_cache(maxsize=1)
def run_filter_bpf() -> bytes:
    """The compiled filter for sandboxed runs: raw ``struct sock_filter`` array (8 bytes each).

    Returns:
        BPF bytes for ``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ...)`` on this machine's
        native architecture.

    Raises:
        SeccompUnavailableError: ``pyseccomp``/``libseccomp`` is missing, too old to know one of
            the syscalls, or the architecture is not x86_64/aarch64 (where ``clone``'s flags are
            its first argument).
    """
    try:
        import pyseccomp as sc
    except (ImportError, RuntimeError, OSError) as e:  # RuntimeError: libseccomp.so not found
        raise SeccompUnavailableError(
            f"libseccomp is not usable ({e}); pip install pyseccomp and apt-get install libseccomp2"
        ) from e
    try:
        arch = sc.system_arch()
        if arch not in (sc.Arch.X86_64, sc.Arch.AARCH64):
            raise SeccompUnavailableError(f"unsupported architecture for the run filter: {arch:#x}")
        filt = sc.SyscallFilter(sc.ALLOW)
        eperm = sc.ERRNO(errno.EPERM)
        for names in BLOCKED_SYSCALLS.values():
            for name in names:
                filt.add_rule(eperm, name)
        filt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
        for name in ("socket", "socketpair"):
            # NE compares all 64 bits: a domain with junk in its upper half is refused as well.
            filt.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), name, sc.Arg(0, sc.NE, int(ALLOWED_SOCKET_FAMILY)))
        for name, required in SELF_ONLY_SYSCALLS.items():
            for arg, value in required.items():  # one rule per argument: refused if any differs
                filt.add_rule(eperm, name, sc.Arg(arg, sc.NE, value))
        for flag in NAMESPACE_FLAGS.values():
            filt.add_rule(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
        with tempfile.TemporaryFile() as f:
            filt.export_bpf(f)
            f.seek(0)
            bpf = f.read()
    except SeccompUnavailableError:
        raise
    except Exception as e:  # noqa: BLE001 - an unknown syscall name (old libseccomp), ...
        raise SeccompUnavailableError(f"cannot build the seccomp filter: {type(e).__name__}: {e}") from e
    if not bpf or len(bpf) % 8:
        raise SeccompUnavailableError(f"libseccomp exported a malformed filter ({len(bpf)} bytes)")
    return bpf
