"""The five known bypasses of the fallback's audit-hook guard (issue 9 section 2).

Under ``kind="bwrap"`` each must be contained (the outcome is asserted on the host). The fallback
is not a boundary: for it the right outcome is that ``kind="auto"`` refuses to use it unless the
caller opts in explicitly, and that docs/sandbox.md lists the bypass as not guaranteed.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from judgerl.tools import SandboxUnavailableError, bwrap_available, get_sandbox
from judgerl.tools import sandbox as sandbox_mod

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "sandbox.md"
KINDS = ["bwrap", "fallback"]

# name -> the words docs/sandbox.md uses for it in the fallback's "not guaranteed" list
BYPASSES = {
    "closure-cells": "closure cells",
    "fork-exec": "_posixsubprocess.fork_exec",
    "dirfd": "dir_fd",
    "dev-shm": "/dev/shm",
    "pidfd-signal": "pidfd_send_signal",
}


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("bypass")
    secret = base / "secret.txt"
    secret.write_text("judgerl-secret-" + uuid.uuid4().hex)
    secret.chmod(0o644)  # world-readable: only isolation keeps it from the run
    base.chmod(0o755)
    canary = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.3)
    yield {"secret": secret, "canary": canary, "listener": listener, "base": base}
    canary.kill()
    canary.wait()
    listener.close()


def _attack(name: str, host: dict, marker: Path) -> str:
    port = host["listener"].getsockname()[1]
    if name == "closure-cells":  # disarm the guard's closure variables, then do what it blocks
        return f"""
            import gc, socket
            for hook in [o for o in gc.get_objects() if getattr(o, "__name__", "") == "hook"]:
                for cell in hook.__closure__ or ():
                    v = cell.cell_contents
                    if isinstance(v, (frozenset, dict)):
                        cell.cell_contents = type(v)()
                    elif isinstance(v, tuple):
                        cell.cell_contents = ("",)
                    elif isinstance(v, str) and v.startswith("/"):
                        cell.cell_contents = ""
            for act in (lambda: print("READ", open({str(host['secret'])!r}).read()),
                        lambda: socket.create_connection(("127.0.0.1", {port}), timeout=1)
                                      .sendall(b"pwned"),
                        lambda: open({str(marker)!r}, "w").write("pwned")):
                try:
                    act()
                except Exception as e:
                    print("failed", type(e).__name__)
        """
    if name == "fork-exec":  # the audit event is raised by subprocess.Popen, not by fork_exec
        return f"""
            import _posixsubprocess, os, sys
            r, w = os.pipe()
            args = [b"/bin/sh", b"-c", b"echo pwned > {marker}"]
            try:
                pid = _posixsubprocess.fork_exec(args, [args[0]], True, (w,), None, None, -1, -1,
                                                 -1, -1, -1, -1, r, w, True, False, -1, None,
                                                 None, None, -1, None, False)
                os.close(w)
                err = b""  # the child writes "OSError:", the errno and the message in
                while chunk := os.read(r, 100):  # separate writes: read to EOF
                    err += chunk
                print("forked", pid, err, os.waitpid(pid, 0))
            except Exception as e:
                print("failed", type(e).__name__, e)
        """
    if name == "dirfd":  # relative to a deep cwd the path stays inside the run directory
        return f"""
            import os
            d = os.open(".", os.O_RDONLY)  # the run directory
            depth = len(os.path.realpath(".").strip("/").split("/"))
            deep = "/".join("d" * (depth + 2))
            os.makedirs(deep)
            os.chdir(deep)
            for target in ({str(host['secret'])!r}, "/etc/passwd"):
                try:
                    fd = os.open("../" * depth + target.lstrip("/"), os.O_RDONLY, dir_fd=d)
                    print("READ", os.read(fd, 200))
                except OSError as e:
                    print("failed", type(e).__name__)
        """
    if name == "dev-shm":  # fill the host's memory through /dev/shm (or the run's own tmpfs)
        return f"""
            import os
            written = 0
            for where in ("/dev/shm", "."):
                try:
                    d = os.open(where, os.O_RDONLY)
                    for i in range(80):
                        fd = os.open(f"{marker.name}-{{i}}", os.O_CREAT | os.O_WRONLY, dir_fd=d)
                        os.write(fd, b"x" * 2**20)
                        os.close(fd)
                        written += 1
                except OSError as e:
                    print("stopped", where, type(e).__name__)
            print("MiB", written)
        """
    assert name == "pidfd-signal"
    return f"""
        import os, signal
        try:
            signal.pidfd_send_signal(os.pidfd_open({host['canary'].pid}), signal.SIGKILL)
            print("SENT")
        except OSError as e:
            print("failed", type(e).__name__)
    """


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(BYPASSES))
def test_fallback_bypass(name: str, kind: str, host: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    if kind == "fallback":
        monkeypatch.setattr(sandbox_mod, "bwrap_available", lambda: False)
        monkeypatch.delenv("JUDGERL_UNSAFE_SANDBOX", raising=False)
        with pytest.raises(SandboxUnavailableError, match="not a security boundary"):
            get_sandbox("auto", pool_size=1)
        section = DOC.read_text().split("Not guaranteed by `kind=\"fallback\"`", 1)[1]
        assert BYPASSES[name] in section.split("\n## ", 1)[0]
        return
    if not bwrap_available():
        pytest.skip("bubblewrap is not usable here")
    marker = Path("/tmp") / f"judgerl_pwned_{uuid.uuid4().hex}"
    with get_sandbox("bwrap", pool_size=1, disk_bytes=32 * 2**20, timeout_s=10) as sb:
        r = sb.run(textwrap.dedent(_attack(name, host, marker)))
        after = sb.run("import os; print(os.listdir('.'))")
    out = r.stdout + r.stderr
    assert not marker.exists() and not list(Path("/dev/shm").glob(marker.name + "*")), r
    assert host["secret"].read_text() not in out and "root:" not in out, r
    assert "READ" not in out and "SENT" not in out and "spawned" not in out, r
    assert host["canary"].poll() is None
    with pytest.raises(socket.timeout):
        host["listener"].accept()[0].close()
    if name == "dev-shm":  # /dev/shm is read-only; the run's tmpfs stops at disk_bytes
        assert "stopped /dev/shm" in r.stdout and "stopped ." in r.stdout, r
        assert int(r.stdout.split("MiB")[1]) <= 32, r
    if name == "fork-exec":  # fork works, but there is no shell to exec in the sandbox
        assert "b'OSError:2:'" in r.stdout, r
    assert after.stdout == "[]\n", after


def test_docs_list_what_each_mode_guarantees() -> None:
    text = DOC.read_text()
    for heading in ("Guaranteed by `kind=\"bwrap\"`", "Not guaranteed by `kind=\"bwrap\"`",
                    "Guaranteed by `kind=\"fallback\"`", "Not guaranteed by `kind=\"fallback\"`"):
        assert heading in text, heading
    assert "JUDGERL_UNSAFE_SANDBOX=1" in text and "--unsafe-sandbox" in text
