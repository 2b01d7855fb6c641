"""The fallback's ``sys.addaudithook`` guard. NOT a security boundary (see docs/sandbox.md)."""

from __future__ import annotations

import os
import sys


def install_guard(run_dir: str, read_roots: list[str]) -> None:
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
