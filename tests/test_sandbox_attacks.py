"""Attack suite: hostile code must be contained by both sandbox kinds (bwrap and fallback).

Every test runs hostile code, checks that the attack failed and left no trace on the host, and the
``host_ok`` fixture then checks the host is unharmed (sentinel file intact, a canary process alive)
and that a trivial next execution still works.
"""

from __future__ import annotations

import os
import socket
import textwrap
import time
from pathlib import Path

import pytest

from judgerl.tools import Sandbox, get_sandbox

from tests.support.sandbox_attacks import REPO, SECRET, LIMITS, _marker, host_ok, host_state, kind, run, sb  # noqa: F401


# --------------------------------------------------------------------------- filesystem writes
@pytest.mark.parametrize(
    "target",
    [
        pytest.param(lambda: REPO / _marker(), id="repo"),
        pytest.param(lambda: Path("/tmp") / _marker(), id="host-tmp"),
        pytest.param(lambda: Path.home() / _marker(), id="home"),
        pytest.param(lambda: Path("/work") / _marker(), id="work"),
    ],
)
def test_write_outside_private_dir(sb: Sandbox, host_ok, target) -> None:
    path = target()
    r = run(sb, f"""
        with open({str(path)!r}, "w") as f:
            f.write("pwned")
        print("WROTE")
    """)
    assert not r.ok and "WROTE" not in r.stdout
    assert not path.exists()


def test_write_into_sentinel_and_delete_it(sb: Sandbox, host_ok, host_state) -> None:
    sentinel = str(host_state["sentinel"])
    r = run(sb, f"""
        import os
        try:
            open({sentinel!r}, "w").write("pwned")
        except OSError as e:
            print("write failed", type(e).__name__)
        try:
            os.remove({sentinel!r})
        except OSError as e:
            print("remove failed", type(e).__name__)
    """)
    assert r.stdout.count("failed") == 2, r


def test_huge_file_write_hits_file_size_limit(sb: Sandbox, host_ok) -> None:
    r = run(sb, """
        with open("big.bin", "wb") as f:
            f.write(b"x" * (9 * 1024 * 1024))
        print("WROTE")
    """)
    assert not r.ok and "WROTE" not in r.stdout
    assert "File too large" in r.stderr or "No space left" in r.stderr, r.stderr


def test_disk_fill_is_bounded_and_wiped(sb: Sandbox, host_ok, kind: str) -> None:
    r = run(sb, """
        n = 0
        try:
            for i in range(6):
                with open(f"f{i}.bin", "wb") as f:
                    f.write(b"x" * (7 * 1024 * 1024))
                n += 1
        except OSError as e:
            print("stopped", e.errno)
        print("files", n)
    """)
    if kind == "bwrap":  # 32 MiB tmpfs: the 5th 7 MiB file cannot fit
        assert "stopped" in r.stdout and "files 6" not in r.stdout, r
    nxt = run(sb, "import os; print(sorted(os.listdir('.')))")
    assert nxt.stdout == "[]\n", nxt


def test_symlink_and_hardlink_escapes(sb: Sandbox, host_ok, host_state) -> None:
    marker = _marker()
    sentinel_dir = str(host_state["base"])
    r = run(sb, f"""
        import os
        links = {{"etc": "/etc", "root": "/root", "repo": {str(REPO)!r}, "host": {sentinel_dir!r},
                 "passwd": "/etc/passwd", "secret": {str(host_state["secret_file"])!r}}}
        for name, target in links.items():
            try:
                os.symlink(target, name)
            except OSError as e:
                print("symlink failed", name, type(e).__name__)
        for path in ("passwd", "secret", "etc/shadow", "root/.bashrc"):
            try:
                print("READ", path, open(path).read()[:50])
            except OSError as e:
                print("read failed", path, type(e).__name__)
        for path in ("repo/{marker}", "host/{marker}", "etc/{marker}", "host/sentinel.txt"):
            try:
                open(path, "w").write("pwned")
                print("WROTE", path)
            except OSError as e:
                print("write failed", path, type(e).__name__)
        try:
            print("listing", os.listdir("root"))
        except OSError as e:
            print("list failed", type(e).__name__)
        for target in ("/etc/passwd", {str(host_state["secret_file"])!r}):
            try:
                os.link(target, "hard")
                print("HARDLINK", open("hard").read()[:50])
            except OSError as e:
                print("hardlink failed", type(e).__name__)
    """)
    assert "READ" not in r.stdout and "WROTE" not in r.stdout and "HARDLINK" not in r.stdout, r
    assert SECRET not in r.stdout + r.stderr
    assert not (REPO / marker).exists() and not (host_state["base"] / marker).exists()


# --------------------------------------------------------------------------- reading secrets
@pytest.mark.parametrize(
    "path",
    ["/etc/shadow", "/etc/passwd", "/root/.bashrc", str(REPO / "pyproject.toml"),
     "/proc/1/environ"],
    ids=["shadow", "passwd", "root-home", "repo", "proc1-environ"],
)
def test_read_host_files(sb: Sandbox, host_ok, path: str) -> None:
    r = run(sb, f"print(open({path!r}, 'rb').read()[:200])")
    assert not r.ok and r.stdout == "", r


def test_read_secret_file_by_absolute_path(sb: Sandbox, host_ok, host_state) -> None:
    r = run(sb, f"print(open({str(host_state['secret_file'])!r}).read())")
    assert SECRET not in r.stdout + r.stderr and not r.ok


def test_list_root_and_home_dirs(sb: Sandbox, host_ok) -> None:
    host_root = set(os.listdir("/root"))
    r = run(sb, """
        import os
        for d in ("/root", "/home", "/work"):
            try:
                print(d, sorted(os.listdir(d)))
            except OSError as e:
                print(d, "denied", type(e).__name__)
    """)
    shown = {name for name in host_root if f"'{name}'" in r.stdout}
    assert shown <= {".pyenv"}, f"host /root entries visible: {shown}"  # bwrap: only the python mount point
    assert "'main'" not in r.stdout and "'shared'" not in r.stdout


def test_host_environment_not_visible(sb: Sandbox, host_ok) -> None:
    r = run(sb, """
        import os
        print(dict(os.environ))
        for p in ("/proc/self/environ", "/proc/1/environ", "/proc/2/environ"):
            try:
                print(open(p, "rb").read())
            except OSError as e:
                print(p, type(e).__name__)
    """)
    assert SECRET not in r.stdout + r.stderr
    assert "JUDGERL_TEST_SECRET" not in r.stdout


def test_proc_of_host_processes(sb: Sandbox, host_ok, host_state) -> None:
    pids = [os.getpid(), os.getppid(), host_state["canary"].pid]
    r = run(sb, f"""
        import os
        for pid in {pids!r}:
            for what in ("environ", "cmdline", "status", "maps"):
                try:
                    print(pid, what, open(f"/proc/{{pid}}/{{what}}", "rb").read()[:2000])
                except OSError as e:
                    print(pid, what, type(e).__name__)
            try:
                print(pid, "fds", os.listdir(f"/proc/{{pid}}/fd"))
            except OSError as e:
                print(pid, "fds", type(e).__name__)
    """)
    out = r.stdout + r.stderr
    assert SECRET not in out
    assert "pytest" not in out and "time.sleep(600)" not in out, out[:2000]


def test_proc_root_escape(sb: Sandbox, host_ok) -> None:
    r = run(sb, """
        import os
        for p in ("/proc/1/root/etc/shadow", "/proc/1/root/root/.bashrc", "/proc/1/cwd",
                  "/proc/self/root/etc/passwd"):
            try:
                print(p, open(p, "rb").read()[:100])
            except OSError as e:
                print(p, type(e).__name__)
    """)
    assert "root:" not in r.stdout and "b'" not in r.stdout, r


# --------------------------------------------------------------------------- network
def test_tcp_connect_to_host_listener(sb: Sandbox, host_ok) -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.3)
    port = server.getsockname()[1]
    try:
        r = run(sb, f"""
            import socket
            s = socket.create_connection(("127.0.0.1", {port}), timeout=1)
            s.sendall(b"exfiltrated")
            print("CONNECTED")
        """)
        assert "CONNECTED" not in r.stdout and not r.ok, r
        with pytest.raises(socket.timeout):
            conn, _ = server.accept()
            conn.close()
    finally:
        server.close()


def test_udp_and_dns(sb: Sandbox, host_ok) -> None:
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(0.3)
    port = udp.getsockname()[1]
    try:
        r = run(sb, f"""
            import socket
            for host in ("pypi.org", "localhost"):
                try:
                    print("resolved", host, socket.getaddrinfo(host, 443)[:1])
                except Exception as e:
                    print("dns failed", type(e).__name__)
            try:
                u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                u.sendto(b"exfiltrated", ("127.0.0.1", {port}))
                print("SENT")
            except Exception as e:
                print("udp failed", type(e).__name__)
        """)
        assert "resolved pypi.org" not in r.stdout
        with pytest.raises(socket.timeout):
            udp.recvfrom(100)
    finally:
        udp.close()


# --------------------------------------------------------------------------- processes
def test_fork_bomb(sb: Sandbox, host_ok) -> None:
    r = run(sb, """
        import os
        while True:
            os.fork()
    """, timeout_s=5)
    assert not r.ok
    assert r.duration_s < 5.5


def test_subprocess_and_os_system(sb: Sandbox, host_ok) -> None:
    marker = Path("/tmp") / _marker()
    r = run(sb, f"""
        import os, subprocess
        try:
            print("rc", subprocess.run(["/bin/sh", "-c", "echo pwned > {marker}"]).returncode)
        except Exception as e:
            print("subprocess failed", type(e).__name__)
        try:
            print("system", os.system("touch {marker}"))
        except Exception as e:
            print("system failed", type(e).__name__)
    """)
    assert not marker.exists()
    assert "rc 0" not in r.stdout and "system 0" not in r.stdout, r


def test_kill_parent(sb: Sandbox, host_ok) -> None:
    r = run(sb, """
        import os, signal
        for target in (os.getppid(), 1):
            try:
                os.kill(target, signal.SIGKILL)
                print("killed", target)
            except Exception as e:
                print("kill failed", type(e).__name__)
    """)
    assert "killed" not in r.stdout, r


def test_kill_every_pid(sb: Sandbox, host_ok) -> None:
    r = run(sb, """
        import os, signal
        n = 0
        for pid in range(1, 70000):
            if pid == os.getpid():
                continue
            try:
                os.kill(pid, signal.SIGKILL)
                n += 1
            except Exception:
                pass
        try:
            os.kill(-1, signal.SIGKILL)
        except Exception:
            pass
        print("signalled", n)
    """, timeout_s=10)
    assert r.stdout.startswith("signalled 0") or r.stdout == "", r


def test_detached_daemon_does_not_survive_the_run(host_state, kind: str) -> None:
    with get_sandbox(kind, pool_size=1, **LIMITS) as one:
        r = one.run(textwrap.dedent("""
            import os, time
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    for i in range(200):
                        with open(f"daemon{i}.txt", "w") as f:
                            f.write("alive")
                        time.sleep(0.01)
                os._exit(0)
            print("parent done")
        """))
        time.sleep(0.3)
        r2 = one.run("import os; print(sorted(os.listdir('.')))")
        assert r2.stdout == "[]\n", (r, r2)


def test_thread_bomb(sb: Sandbox, host_ok) -> None:
    r = run(sb, """
        import threading, time
        n = 0
        try:
            while True:
                threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
                n += 1
        except Exception as e:
            print("stopped after", n, type(e).__name__)
    """)
    assert "stopped after" in r.stdout and r.ok, r
    assert int(r.stdout.split()[2]) < 64


def test_setuid_back_to_root(sb: Sandbox, host_ok) -> None:
    r = run(sb, """
        import os
        try:
            os.setuid(0)
            print("ROOT", os.getuid())
        except Exception as e:
            print("setuid failed", type(e).__name__)
    """)
    assert "ROOT" not in r.stdout


def test_ctypes_syscalls(sb: Sandbox, host_ok) -> None:
    r = run(sb, """
        import os
        try:
            import ctypes
            libc = ctypes.CDLL(None)
            print("kill", libc.kill(os.getppid(), 9))
            print("setuid", libc.setuid(0))
        except Exception as e:
            print("ctypes failed", type(e).__name__)
    """)
    assert "kill 0" not in r.stdout and "setuid 0" not in r.stdout, r
