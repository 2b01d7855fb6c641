"""Per-run isolation (issue 9 section 2): state that outlives a run, whole-run budgets, the zygote's
control channel, bounded cleanup, fair handoff and the seccomp hardening, in both sandbox kinds.

Each attack asserts the outcome its kind guarantees (docs/sandbox.md): bwrap contains it; the
fallback contains what its seccomp filter, uid and guard cover and is refused by ``kind="auto"``
without an explicit opt-in for the bypasses it does not (test_sandbox_fallback_bypasses.py).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from judgerl.tools import Sandbox, bwrap_available, get_sandbox
from tests.support.sandbox_attacks import kind  # noqa: F401 (the sandbox kind fixture, shared)

REPO = Path(__file__).resolve().parents[1]
LIMITS = dict(timeout_s=5.0, memory_bytes=256 * 2**20, max_processes=16)

# Raw syscalls through ctypes; prints "<name> <return value> <errno>". Inside the fallback,
# ctypes is refused by the audit guard first (the line then never appears).
SYSCALL = textwrap.dedent("""
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    def sc(name, nr, *args):
        ctypes.set_errno(0)
        rc = libc.syscall(nr, *args)
        if rc == 0 and name.startswith("clone"):
            os._exit(0)  # a child the filter failed to stop: leave at once
        print(name, rc, ctypes.get_errno(), flush=True)
""")
EPERM, ENOSYS = errno.EPERM, errno.ENOSYS


@pytest.fixture(scope="module")
def one(kind: str) -> Sandbox:
    """A single-worker sandbox: every run lands in the same worker (worst case for leaks)."""
    with get_sandbox(kind, pool_size=1, **LIMITS) as sandbox:
        yield sandbox


def run(sb: Sandbox, code: str, **kw):
    if code.startswith(SYSCALL):
        return sb.run(SYSCALL + textwrap.dedent(code[len(SYSCALL):]), **kw)
    return sb.run(textwrap.dedent(code), **kw)


def _lines(stdout: str) -> dict[str, tuple[int, int]]:
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = (int(parts[1]), int(parts[2]))
    return out


# --------------------------------------------------------------------------- state between runs
def test_posix_message_queue_does_not_reach_later_runs(one: Sandbox, kind: str) -> None:
    plant = run(one, SYSCALL + """
        O_CREAT, O_RDWR = 0o100, 0o2
        fd = libc.mq_open(b"/judgerl_q", O_CREAT | O_RDWR, 0o666, None)
        print("mq_open", fd, ctypes.get_errno())
        if fd >= 0:
            libc.mq_send(fd, b"secret-from-run-1", 17, 0)
    """)
    got = _lines(plant.stdout)
    if kind == "bwrap":
        assert got["mq_open"] == (-1, EPERM), plant  # seccomp: no message queues at all
    else:
        assert "mq_open" not in got and "PermissionError" in plant.stderr, plant  # ctypes refused
    for _ in range(3):
        r = run(one, SYSCALL + """
            buf = ctypes.create_string_buffer(8192)
            fd = libc.mq_open(b"/judgerl_q", 0o2)
            print("reopen", fd, ctypes.get_errno())
            if fd >= 0:
                print("READ", libc.mq_receive(fd, buf, 8192, None), buf.value)
        """)
        assert "READ" not in r.stdout and "secret" not in r.stdout, r


def test_keyring_key_survives_neither_runs_nor_close(kind: str) -> None:
    add = SYSCALL + """
        KEY_SPEC_USER_KEYRING = -4
        sc("add_key", 248, b"user", b"judgerl-key", b"secret", 6, KEY_SPEC_USER_KEYRING)
        sc("keyctl", 250, 0, -4, 0)  # KEYCTL_GET_KEYRING_ID of the user keyring
        sc("request_key", 249, b"user", b"judgerl-key", None, 0)
    """
    with get_sandbox(kind, pool_size=1, **LIMITS) as sb:
        r = run(sb, add)
    got = _lines(r.stdout)
    if kind == "bwrap":
        assert got == {"add_key": (-1, EPERM), "keyctl": (-1, EPERM), "request_key": (-1, EPERM)}, r
    else:
        assert got == {} and "PermissionError" in r.stderr, r
    with get_sandbox(kind, pool_size=1, **LIMITS) as sb:  # a new sandbox, uids reused or not
        r2 = run(sb, add)
        assert "request_key -1" in r2.stdout or "PermissionError" in r2.stderr, r2


def test_tmp_outside_the_run_dir_and_dev_shm_are_read_only(one: Sandbox, kind: str) -> None:
    r = run(one, """
        import os
        for path in ("/tmp/planted", "/dev/shm/planted", "/run/planted", "/planted", "/dev/planted"):
            try:
                open(path, "w").write("x")
                print("WROTE", path)
            except OSError:
                pass
    """)
    assert "WROTE" not in r.stdout, r
    for name in ("planted",):
        assert not Path("/dev/shm", name).exists() and not Path("/tmp", name).exists()


# --------------------------------------------------------------------------- whole-run budget
def test_memory_budget_is_per_run_or_stated(kind: str) -> None:
    # 4 children x 150 MiB (pages touched) against a 256 MiB limit.
    code = """
        import os
        pids = []
        for i in range(4):
            pid = os.fork()
            if pid == 0:
                try:
                    block = bytearray(150 * 2**20)
                    for j in range(0, len(block), 4096):
                        block[j] = 1
                    os._exit(0)
                except MemoryError:
                    os._exit(3)
            pids.append(pid)
        codes = [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids]
        print("children", codes)
    """
    with get_sandbox(kind, pool_size=1, **LIMITS) as sb:
        r = run(sb, code, timeout_s=20)
        assert r.budget == sb.budget
    if kind == "fallback":
        assert "PermissionError" in r.stderr  # fork is refused by the fallback's guard
    elif r.budget.startswith("cgroup"):  # a writable cgroup: the run as a whole cannot pass 256 MiB
        assert "children [0, 0, 0, 0]" not in r.stdout, r
        assert "memory budget" in r.stderr or "-9" in r.stdout, r
    else:  # no writable cgroup here: the documented bound is RLIMIT_AS x RLIMIT_NPROC
        assert r.budget == "rlimit"
        assert r.memory_cap_bytes == LIMITS["memory_bytes"] * LIMITS["max_processes"]
        assert "children [0, 0, 0, 0]" in r.stdout, r  # each child is within its own limit


def test_process_budget(one: Sandbox) -> None:
    r = run(one, """
        import os, time
        n = 0
        try:
            while True:
                if os.fork() == 0:
                    time.sleep(5)
                    os._exit(0)
                n += 1
        except OSError as e:
            print("stopped at", n, e.errno)
    """, timeout_s=10)
    if one.kind == "bwrap":
        assert "stopped at" in r.stdout and int(r.stdout.split()[2]) < LIMITS["max_processes"], r
    else:
        assert r.stdout.startswith("stopped at 0 "), r  # fork is refused by the fallback's guard
    assert one.run("print('ok')").stdout == "ok\n"


# --------------------------------------------------------------------------- the zygote
def _zygote_pids(sb: Sandbox) -> list[int]:
    """Host pids of the zygote processes (the python process under bwrap, or the fallback's)."""
    pids = []
    for worker in sb._pool.workers:
        todo = [worker.proc.pid]
        while todo:
            pid = todo.pop()
            try:
                exe = os.readlink(f"/proc/{pid}/exe")
            except OSError:
                continue
            if "python" in os.path.basename(exe):
                pids.append(pid)
                continue
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
    return pids


def test_no_inherited_fd_reaches_the_zygote(kind: str, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s3cret")
    fd = os.open(secret, os.O_RDONLY)
    os.set_inheritable(fd, True)
    try:
        with get_sandbox(kind, pool_size=1, **LIMITS) as sb:
            assert sb.run("print(1)").ok
            (pid,) = _zygote_pids(sb)
            fds = sorted(int(n) for n in os.listdir(f"/proc/{pid}/fd"))
            targets = [os.readlink(f"/proc/{pid}/fd/{n}") for n in fds]
    finally:
        os.close(fd)
    assert fds == [0, 1, 2, 3, 4], targets  # /dev/null x3, the two control pipes
    assert not any(str(tmp_path) in t for t in targets)


def test_zygote_is_not_reachable_from_the_run(one: Sandbox) -> None:
    r = run(one, """
        import os
        for what in ("fd/3", "fd/4", "mem", "environ"):
            try:
                f = os.open(f"/proc/{os.getppid()}/{what}", os.O_RDONLY)
                print("OPENED", what)
            except OSError:
                pass
    """)
    assert "OPENED" not in r.stdout, r


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not Path("/usr/bin/python3").exists(),
                    reason="needs root (to drop to an unprivileged uid with setpriv) and /usr/bin/python3")
def test_non_root_forged_reply_and_writes_outside_the_run_dir() -> None:
    if not bwrap_available():
        pytest.skip("bubblewrap is not usable here")
    import pyseccomp

    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{REPO / 'src'}:{Path(pyseccomp.__file__).parent}"}
    proc = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3",
         str(REPO / "tests" / "fixtures" / "sandbox_nonroot.py"), "bwrap"],
        capture_output=True, text=True, timeout=120, env=env, cwd="/",
    )
    if proc.returncode != 0 and "No module named" in proc.stderr:
        pytest.skip(f"/usr/bin/python3 cannot import judgerl here: {proc.stderr.strip()[-200:]}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["uid"] == "65534"
    assert out["forge"].endswith("hits []"), out  # no fd, mem or environ of the zygote opened
    assert out["after_forge"] == ["0\n", "1\n", "2\n"]  # every later result is its own
    assert out["look"] == ["[]", "[]"], out  # /tmp writes were discarded with the worker


# --------------------------------------------------------------------------- cleanup and handoff
def test_file_creation_until_timeout_keeps_stdout_and_bounded_cleanup(kind: str) -> None:
    with get_sandbox(kind, pool_size=1, timeout_s=2.0) as sb:
        t0 = time.monotonic()
        r = sb.run("import os\nprint('started', flush=True)\ni = 0\nwhile True:\n"
                   "    open(f'f{i}', 'w').close()\n    i += 1")
        waited = time.monotonic() - t0
        assert r.timed_out and r.stdout == "started\n", r
        assert waited < 2.0 + 2.5, waited  # kill + bounded cleanup, far below timeout + grace
        nxt = sb.run("import os; print(os.listdir('.'))")
        assert nxt.stdout == "[]\n", nxt
        tmp_root = sb._tmp_root
    if tmp_root is not None:
        assert not os.path.exists(tmp_root)  # close() removed the host leftovers


def test_handoff_is_fair_8_callers_2_workers(kind: str) -> None:
    with get_sandbox(kind, pool_size=2) as sb:
        for _ in range(4):
            sb.run("pass")
        latencies: list[float] = []
        lock = threading.Lock()

        def caller() -> None:
            for _ in range(8):
                t0 = time.monotonic()
                r = sb.run("import time; time.sleep(0.011)")
                assert r.ok, r
                with lock:
                    latencies.append(time.monotonic() - t0)

        threads = [threading.Thread(target=caller) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    latencies.sort()
    p50 = latencies[len(latencies) // 2]
    # FIFO: a call waits for at most the 3 callers queued ahead of it on each worker (~4 calls).
    assert latencies[-1] < max(1.0, 8 * p50), (p50, latencies[-5:])


# --------------------------------------------------------------------------- seccomp hardening
def test_io_uring_namespaces_ptrace_are_refused(one: Sandbox, kind: str) -> None:
    r = run(one, SYSCALL + """
        params = ctypes.create_string_buffer(120)
        sc("io_uring_setup", 425, 8, params)
        sc("unshare_user", 272, 0x10000000)
        sc("unshare_ipc", 272, 0x08000000)
        sc("clone_user", 56, 0x10000000 | 17, 0, 0, 0, 0)
        sc("clone3", 435, 0, 0)
        sc("ptrace", 101, 16, os.getppid(), 0, 0)  # PTRACE_ATTACH
        sc("setns", 308, 0, 0)
        sc("bpf", 321, 0, 0, 0)
    """)
    got = _lines(r.stdout)
    if kind == "bwrap":
        expected = {"io_uring_setup": (-1, EPERM), "unshare_user": (-1, EPERM),
                    "unshare_ipc": (-1, EPERM), "clone_user": (-1, EPERM), "clone3": (-1, ENOSYS),
                    "ptrace": (-1, EPERM), "setns": (-1, EPERM), "bpf": (-1, EPERM)}
        assert {k: got[k] for k in expected} == expected, r
    else:
        assert not got and "PermissionError" in r.stderr, r


def test_threads_and_subprocess_still_work(kind: str) -> None:
    with get_sandbox(kind, pool_size=1, **LIMITS) as sb:
        r = sb.run("import threading\nt = threading.Thread(target=print, args=('thread',))\n"
                   "t.start(); t.join()")
        assert r.stdout == "thread\n", r  # pthread_create: clone3 -> ENOSYS -> clone
        if kind == "bwrap":
            r = sb.run("import subprocess, sys\nprint(subprocess.run([sys.executable, '-c', "
                       "'print(5)'], capture_output=True, text=True).stdout, end='')")
            assert r.stdout == "5\n", r


def test_mountinfo_shows_no_repository_path(one: Sandbox, kind: str) -> None:
    r = run(one, "print(open('/proc/self/mountinfo').read())")
    if kind == "bwrap":
        assert r.ok and " / " in r.stdout
        assert str(REPO) not in r.stdout and "/work" not in r.stdout, r.stdout
    else:
        assert not r.ok and "PermissionError" in r.stderr  # the guard refuses it (bypassable)


# --------------------------------------------------------------------------- red-team findings
X86_64 = os.uname().machine == "x86_64"


@pytest.mark.skipif(not X86_64, reason="i386/x32 system call entry points exist on x86_64 only")
@pytest.mark.parametrize("entry", ["int80", "x32"])
def test_foreign_syscall_abis_are_killed(one: Sandbox, kind: str, entry: str) -> None:
    # keyctl through the i386 entry (int 0x80, nr 288) and the x32 ABI (nr | 0x40000000): the
    # filter's architecture check must not be sidestepped.
    r = one.run(textwrap.dedent("""
        import ctypes, mmap, sys
        if sys.stdin.read() == "int80":
            code = bytes([0xb8]) + (288).to_bytes(4, "little") + bytes([0xcd, 0x80, 0xc3])
            buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
            buf.write(code)
            fn = ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))
            print("RETURNED", fn(), flush=True)
        else:
            libc = ctypes.CDLL(None, use_errno=True)
            print("RETURNED", libc.syscall(0x40000000 | 250, 0, -4, 0), flush=True)
    """), stdin=entry)
    assert "RETURNED" not in r.stdout and not r.ok, r
    if kind == "bwrap":
        assert r.exit_code == -31 and "forbids" in r.stderr, r  # SIGSYS
    else:
        assert "PermissionError" in r.stderr, r  # ctypes refused by the guard


def test_unwritable_deep_tree_and_symlinks_are_cleaned(one: Sandbox, kind: str) -> None:
    target = "/usr/lib" if kind == "bwrap" else "d"  # the fallback's guard refuses links outside
    r = run(one, """
        import os
        p = "."
        for _ in range(200):
            p = os.path.join(p, "d")
            os.mkdir(p)
        for _ in range(200):
            os.symlink(TARGET, os.path.join(p, "lib"))
            os.chmod(p, 0)
            p = os.path.dirname(p)
        os.chmod(".", 0o500)
        print("planted")
    """.replace("TARGET", repr(target)))
    assert r.stdout == "planted\n", r
    nxt = one.run("import os; print(os.listdir('.'), oct(os.stat('.').st_mode & 0o777))")
    assert nxt.stdout == "[] 0o700\n", nxt
    assert Path("/usr/lib").is_dir() and any(Path("/usr/lib").iterdir())
