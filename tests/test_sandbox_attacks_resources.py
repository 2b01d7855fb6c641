"""Attack suite, part 2 (resources, fds and state): hostile code must be contained by both sandbox kinds.

Part 1 (filesystem, secrets, network, processes) is ``tests/test_sandbox_attacks.py``; the setup both share is
``tests/support/sandbox_attacks.py``.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from judgerl.tools import ExecResult, Sandbox, get_sandbox

from tests.support.sandbox_attacks import SECRET, _marker, host_ok, host_state, kind, run, sb  # noqa: F401


# --------------------------------------------------------------------------- resources
def test_memory_bomb(sb: Sandbox, host_ok) -> None:
    r = run(sb, """
        chunks = []
        while True:
            chunks.append(bytearray(16 * 1024 * 1024))
    """)
    assert not r.ok and "MemoryError" in r.stderr, r


def test_single_huge_allocation(sb: Sandbox, host_ok) -> None:
    r = run(sb, "x = bytearray(8 * 1024 ** 3)")
    assert "MemoryError" in r.stderr and r.exit_code == 1


def test_infinite_loop_times_out(sb: Sandbox, host_ok) -> None:
    t0 = time.monotonic()
    r = run(sb, "while True:\n    pass", timeout_s=0.5)
    assert r.timed_out and not r.ok and r.exit_code == -signal.SIGKILL
    assert 0.4 < r.duration_s < 2.0 and time.monotonic() - t0 < 4.0
    assert "wall-clock" in r.stderr.splitlines()[-1]


def test_sleep_ignoring_signals_times_out(sb: Sandbox, host_ok) -> None:
    r = run(sb, """
        import signal, time
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM):
            signal.signal(s, signal.SIG_IGN)
        time.sleep(100)
    """, timeout_s=0.5)
    assert r.timed_out


def test_cpu_limit(host_state, kind: str) -> None:
    with get_sandbox(kind, pool_size=1, timeout_s=20, cpu_time_s=1) as one:
        r = one.run("while True:\n    pass")
        assert not r.timed_out and not r.ok
        assert r.exit_code in (-signal.SIGXCPU, -signal.SIGKILL)
        assert "CPU time limit" in r.stderr
        assert r.duration_s < 10
        assert one.run("print(1)").ok


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_huge_output_is_truncated(sb: Sandbox, host_ok, stream: str) -> None:
    r = run(sb, f"""
        import sys
        for _ in range(2000):
            sys.{stream}.write("x" * 10000 + "\\n")
        print("DONE", file=sys.stdout)
    """)
    assert r.truncated
    assert len(r.stdout.encode()) <= 4096 and len(r.stderr.encode()) <= 4096 + 200
    assert r.exit_code == 0


def test_endless_output_times_out_with_bounded_memory(sb: Sandbox, host_ok) -> None:
    r = run(sb, "while True:\n    print('y' * 65536)", timeout_s=1.0)
    assert r.timed_out and r.truncated and len(r.stdout) <= 4096


def test_recursion_bomb(sb: Sandbox, host_ok) -> None:
    r = run(sb, "def f():\n    return f()\nf()")
    assert r.exit_code == 1 and "RecursionError" in r.stderr


def test_c_stack_overflow_is_contained(sb: Sandbox, host_ok) -> None:
    r = run(sb, """
        import sys
        sys.setrecursionlimit(10 ** 7)
        def f(n):
            return f(n + 1) + 1
        f(0)
    """, timeout_s=1.0)
    assert not r.ok  # RecursionError, MemoryError or SIGSEGV: the run dies, the host does not


def test_many_open_files(sb: Sandbox, host_ok) -> None:
    r = run(sb, """
        fs = []
        try:
            for i in range(10000):
                fs.append(open(f"f{i}", "w"))
        except OSError as e:
            print("stopped at", len(fs), e.errno)
    """)
    assert "stopped at" in r.stdout and int(r.stdout.split()[2]) < 64, r


# --------------------------------------------------------------------------- fds and state
def test_host_fds_not_inherited(sb: Sandbox, host_ok, host_state) -> None:
    r = run(sb, """
        import os, stat
        for fd in range(3, 1024):
            try:
                st = os.fstat(fd)
            except OSError:
                continue
            kind = "dir" if stat.S_ISDIR(st.st_mode) else "other"
            data = b""
            if kind != "dir":
                try:
                    os.lseek(fd, 0, 0)
                    data = os.read(fd, 200)
                except OSError:
                    pass
            print(fd, kind, data)
    """)
    assert SECRET not in r.stdout
    for line in r.stdout.splitlines():
        assert line.split()[1] == "dir", f"unexpected open fd in the sandbox: {line}"


def test_files_do_not_leak_between_runs(sb: Sandbox, host_ok) -> None:
    first = run(sb, """
        import os
        open("leak.txt", "w").write("from run 1")
        print(os.path.abspath("leak.txt"))
    """)
    leaked = first.stdout.strip()
    for _ in range(3):
        r = run(sb, f"""
            import os
            print(sorted(os.listdir(".")), os.path.exists({leaked!r}))
        """)
        assert r.stdout == "[] False\n", r


def test_concurrent_runs_cannot_see_each_other(sb: Sandbox, host_ok) -> None:
    results: dict[str, ExecResult] = {}

    def writer() -> None:
        results["w"] = run(sb, """
            import os, time
            open("mine.txt", "w").write("private")
            print(os.path.abspath("mine.txt"), flush=True)
            time.sleep(0.6)
        """)

    t = threading.Thread(target=writer)
    t.start()
    time.sleep(0.25)
    r = run(sb, """
        import glob, os
        print([p for p in glob.glob("/tmp/**/mine.txt", recursive=True)])
        print([p for p in glob.glob("/dev/shm/**/mine.txt", recursive=True)])
    """)
    t.join()
    assert "mine.txt" not in r.stdout, r
    path = results["w"].stdout.strip()
    r2 = run(sb, f"print(open({path!r}).read())")
    assert "private" not in r2.stdout


def test_module_state_does_not_leak_between_runs(sb: Sandbox, host_ok) -> None:
    run(sb, "import os, sys; os.environ['LEAK'] = '1'; sys.modules['json'] = None; sys.path.insert(0, '/x')")
    for _ in range(3):
        r = run(sb, "import os, sys, json; print(os.environ.get('LEAK'), '/x' in sys.path)")
        assert r.stdout == "None False\n", r


@pytest.mark.parametrize(
    ("code", "status", "stderr_part"),
    [
        ("import sys; sys.exit(0)", 0, ""),
        ("import sys; sys.exit(7)", 7, ""),
        ("import sys; sys.exit('fatal message')", 1, "fatal message"),
        ("raise SystemExit(None)", 0, ""),
        ("import os; os._exit(5)", 5, ""),
        ("import sys; sys.exit(256 + 3)", 3, ""),
        ("raise KeyboardInterrupt", 1, "KeyboardInterrupt"),
    ],
)
def test_exit_codes(sb: Sandbox, host_ok, code: str, status: int, stderr_part: str) -> None:
    r = sb.run(code)
    assert r.exit_code == status and not r.timed_out, r
    assert stderr_part in r.stderr


def test_self_kill_and_worker_corruption(sb: Sandbox, host_ok) -> None:
    r = run(sb, """
        import os, signal, sys
        sys.stdout.write("partial")
        sys.stdout.flush()
        os.close(1)
        os.close(2)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    assert r.stdout == "partial" and not r.ok
    assert r.exit_code == (-signal.SIGKILL if sb.kind == "bwrap" else 1)  # fallback: kill blocked


def test_sysv_shared_memory_does_not_leak_between_runs(sb: Sandbox, host_ok) -> None:
    key = 0x4A55 + os.getpid() % 1000
    plant = run(sb, f"""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        shmid = libc.shmget({key}, 4096, 0o1666)
        print("created", shmid)
    """)
    for _ in range(sb.pool_size + 1):
        r = run(sb, f"""
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            print("found", libc.shmget({key}, 0, 0))
        """)
        assert "found -1" in r.stdout or not r.ok, (plant, r)


def test_posix_shared_memory_stays_inside(sb: Sandbox, host_ok) -> None:
    name = _marker()
    r = run(sb, f"""
        from multiprocessing import shared_memory
        shm = shared_memory.SharedMemory(create=True, size=1 << 20, name={name!r})
        shm.buf[:5] = b"pwned"
        print("CREATED")
    """)
    assert not Path("/dev/shm", name).exists()
    assert "CREATED" not in r.stdout, r
