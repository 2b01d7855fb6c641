"""What the sandbox needs from this machine: the interpreter's paths, bubblewrap's command line
and the probe that says whether ``kind="bwrap"`` works here."""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path

from judgerl.tools._sandbox_base import SandboxUnavailableError
from judgerl.tools._sandbox_seccomp import SeccompUnavailableError, run_filter_bpf

logger = logging.getLogger("judgerl.tools.sandbox")


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


def _bwrap_args(tmp_bytes: int, ro_paths: Sequence[str], root: bool,
                files: Sequence[tuple[int, str]] = ()) -> list[str]:
    """The bubblewrap command prefix for one worker (see ``docs/sandbox.md`` for the policy).

    ``files``: (fd, path in the sandbox) pairs copied read-only into the sandbox's root (the
    zygote's code): bwrap reads and closes the fds, and no host path appears in the sandbox.
    """
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailableError("bubblewrap (bwrap) is not installed; apt-get install bubblewrap")
    args = [
        bwrap,
        "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
        # The zygote itself is pid 1 (undumpable; the kernel drops signals to a namespace's init
        # from inside it). bubblewrap's own init would run with the run's uid as a non-root host,
        # dumpable and without the seccomp filter: a run could write code into it through
        # /proc/1/mem and escape the filter and the run's end (pid 1 is never killed).
        "--as-pid-1",
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
    made_dirs: set[str] = {"/usr", "/run"}
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
    for fd, dest in files:
        for parent in reversed(Path(dest).parents[:-1]):
            if str(parent) not in made_dirs:
                args += ["--perms", "0755", "--dir", str(parent)]
                made_dirs.add(str(parent))
        args += ["--perms", "0444", "--file", str(fd), dest]
    args += [
        "--proc", "/proc",
        "--dev", "/dev",
        # Nothing outside /tmp is writable, even for a run sharing bwrap's uid (non-root mode):
        # the root tmpfs (/run, mount points) and /dev (incl. /dev/shm) become read-only.
        "--remount-ro", "/dev",
        "--remount-ro", "/",
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


def bwrap_available() -> bool:
    """Whether ``kind="bwrap"`` works here: bubblewrap runs our sandbox and libseccomp builds the
    run filter (probed once, ~50 ms; the reason for a "no" is in ``bwrap_unavailable_reason``).

    Returns:
        True when bubblewrap sandboxes with seccomp-filtered runs can be made here.
    """
    return bwrap_unavailable_reason() is None


@functools.lru_cache(maxsize=1)
def bwrap_unavailable_reason() -> str | None:
    """Why ``kind="bwrap"`` cannot be used here (one short phrase), or None when it can."""
    try:
        run_filter_bpf()
    except SeccompUnavailableError as e:
        return f"seccomp: {e}"
    try:
        args = _bwrap_args(16 * 1024 * 1024, _interpreter_paths(), _is_root())
    except SandboxUnavailableError as e:
        return str(e)
    try:
        proc = subprocess.run(
            args + [_python_executable(), "-I", "-S", "-c", "pass"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            timeout=30, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bubblewrap probe failed: {e}"
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip().splitlines()
        return "bubblewrap cannot create its namespaces here: " + (detail[-1] if detail else
                                                                    f"exit status {proc.returncode}")
    return None
