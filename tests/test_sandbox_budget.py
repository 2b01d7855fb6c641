"""Whole-run memory and process budgets (issue 22): a run with ``memory_bytes=256 MiB`` holds at
most ~256 MiB at once however it spreads its memory (forked children, memfds, files on the private
tmpfs), the kernel's OOM kills are reported in the result with the mechanism that enforced the
cap, and where no cgroup is writable the documented rlimit fallback is what the result says.
Also: every live worker has a uid of its own, however many workers were replaced before.
"""

from __future__ import annotations

import os
import textwrap

import pytest

from judgerl.tools import SandboxError, bwrap_available, get_sandbox
from judgerl.tools import sandbox as sandbox_mod
from judgerl.tools._sandbox_cgroup import cgroup_parent, shell_prefix
from judgerl.tools.sandbox import UidPool

MiB = 2**20
LIMITS = dict(timeout_s=30.0, memory_bytes=256 * MiB, max_processes=16)
HELD_AT_ONCE = 300 * MiB  # the target for memory_bytes = 256 MiB

CHILDREN = """
    import os, time
    pids = []
    for i in range(8):
        pid = os.fork()
        if pid == 0:
            try:
                block = bytearray(200 * 2**20)
                for j in range(0, len(block), 4096):
                    block[j] = 1
                time.sleep(0.5)
                os._exit(0)
            except MemoryError:
                os._exit(3)
        pids.append(pid)
    print("children", [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids])
"""
ONE_MEMFD = """
    import os
    fd = os.memfd_create("big")
    chunk = b"x" * 2**20
    for i in range(928):
        os.write(fd, chunk)
    print("memfd held 928 MiB")
"""
MANY_MEMFDS = """
    import os
    fds = []
    for i in range(58):  # 58 x 16 MiB = 928 MiB, each file within file_bytes
        fd = os.memfd_create("m")
        os.write(fd, b"y" * (16 * 2**20))
        fds.append(fd)
    print("memfds held", len(fds))
"""
TMPFS_THEN_HEAP = """
    with open("f.bin", "wb") as f:
        for i in range(60):
            f.write(b"x" * 2**20)
    block = bytearray(220 * 2**20)
    for j in range(0, len(block), 4096):
        block[j] = 1
    print("held file + heap")
"""


def _cgroup_or_skip() -> None:
    if not bwrap_available():
        pytest.skip("bubblewrap is not usable here")
    if cgroup_parent() is None:
        pytest.skip("no writable cgroup (v2 or v1 memory+pids) here: see test_no_cgroup_*")


@pytest.fixture(scope="module")
def capped():
    _cgroup_or_skip()
    with get_sandbox("bwrap", pool_size=1, file_bytes=2**30, **LIMITS) as sb:
        assert sb.run("pass").ok  # start the worker
        yield sb


@pytest.mark.parametrize("name,code", [("8 children x 200 MiB", CHILDREN),
                                       ("one 928 MiB memfd", ONE_MEMFD),
                                       ("58 memfds x 16 MiB", MANY_MEMFDS),
                                       ("60 MiB tmpfs file + 220 MiB heap", TMPFS_THEN_HEAP)])
def test_run_holds_at_most_its_budget_at_once(capped, name: str, code: str) -> None:
    (worker,) = capped._pool.workers
    r = capped.run(textwrap.dedent(code))
    assert r.budget == capped.budget in ("cgroup-v1", "cgroup-v2"), r
    assert r.memory_cap_bytes == LIMITS["memory_bytes"]
    assert r.oom_kills >= 1, r
    assert "MemoryError: the run exceeded its memory budget of 256 MiB" in r.stderr, r
    assert r.budget in r.stderr  # the message names the mechanism
    assert "held" not in r.stdout and "children [0, 0, 0, 0, 0, 0, 0, 0]" not in r.stdout, r
    if r.memory_peak_bytes is not None:  # cgroup v1, or v2 on Linux 6.12+
        assert r.memory_peak_bytes <= HELD_AT_ONCE, (name, r.memory_peak_bytes / MiB)
    # The zygote survived the OOM killer (the run is its first choice) and the next run is clean.
    after = capped.run("import os; print(sorted(os.listdir('.')))")
    assert after.stdout == "[]\n" and after.oom_kills == 0, after
    assert capped._pool.workers == [worker] and worker.alive()


def test_cgroup_limits_are_written_per_worker(capped) -> None:
    (worker,) = capped._pool.workers
    cg = worker.cgroup
    with open(os.path.join(cg.pids_path, "pids.max")) as f:
        assert int(f.read()) == LIMITS["max_processes"] + 4  # + bwrap's two, the zygote, a helper
    if cg.version == 1:
        with open(os.path.join(cg.path, "memory.limit_in_bytes")) as f:
            limit = int(f.read())
        memsw = os.path.join(cg.path, "memory.memsw.limit_in_bytes")
        if os.path.exists(memsw):
            with open(memsw) as f:
                assert int(f.read()) == limit  # swap cannot stretch the budget
        assert LIMITS["memory_bytes"] <= limit <= LIMITS["memory_bytes"] + 64 * MiB  # + idle worker


def test_process_budget_counts_threads_and_children(capped) -> None:
    r = capped.run(textwrap.dedent("""
        import threading, time
        n = 0
        try:
            while True:
                threading.Thread(target=time.sleep, args=(3,), daemon=True).start()
                n += 1
        except RuntimeError as e:
            print("stopped at", n)
    """), timeout_s=10)
    assert "stopped at" in r.stdout and int(r.stdout.split()[2]) < LIMITS["max_processes"], r


# --------------------------------------------------------------------------- no writable cgroup
@pytest.mark.parametrize("kind", ["bwrap", "fallback"])
def test_no_cgroup_falls_back_to_rlimits_and_says_so(kind: str, monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path) -> None:
    """An unusable cgroup parent (here: an explicit one that does not exist) means rlimit mode:
    RLIMIT_AS per process x RLIMIT_NPROC, stated in every result; memfds are not bounded there."""
    if kind == "bwrap" and not bwrap_available():
        pytest.skip("bubblewrap is not usable here")
    monkeypatch.setenv("JUDGERL_SANDBOX_CGROUP", str(tmp_path / "no-such-cgroup"))
    assert cgroup_parent() is None
    with get_sandbox(kind, pool_size=1, timeout_s=20, memory_bytes=128 * MiB, max_processes=8) as sb:
        assert sb.budget == "rlimit"
        r = sb.run(textwrap.dedent("""
            import os
            try:
                bytearray(200 * 2**20)
                print("over RLIMIT_AS")
            except MemoryError:
                print("MemoryError per process")
            fd = os.memfd_create("m")
            os.write(fd, b"z" * (8 * 2**20))
            print("memfd ok")
        """))
        assert (r.budget, r.memory_cap_bytes, r.memory_peak_bytes, r.oom_kills) == \
            ("rlimit", 128 * MiB * 8, None, 0), r
        assert "MemoryError per process" in r.stdout, r
        if kind == "bwrap":
            assert "memfd ok" in r.stdout, r  # the documented gap: no cgroup, no memfd budget


def test_shell_prefix_moves_into_every_cgroup(tmp_path) -> None:
    import subprocess

    files = [tmp_path / "a", tmp_path / "b"]
    out = subprocess.run(shell_prefix([str(f) for f in files]) + ["echo", "ran", "x"],
                         capture_output=True, text=True, check=True).stdout
    assert out == "ran x\n" and all(f.read_text() == "0\n" for f in files)
    with pytest.raises(ValueError):
        shell_prefix([])


# --------------------------------------------------------------------------- uids
def test_uid_pool_never_hands_out_a_held_uid_over_1000_replacements() -> None:
    pool = UidPool(base=5_000_000, size=256)
    keep = {pool.acquire(), pool.acquire()}  # two long-lived workers
    live = set(keep)
    for i in range(1000):  # > 256 replacements of a third and fourth slot
        uid = pool.acquire()
        assert uid not in live, (i, uid)
        live.add(uid)
        if len(live) > 4:
            old = sorted(live - keep)[0]
            pool.release(old)
            live.discard(old)
    assert keep <= pool.held() and pool.held() == live
    first = 5_000_000 + os.getpid() * 256
    assert all(first <= u < first + 256 for u in live)


def test_uid_pool_exhaustion_is_a_clear_error_and_release_is_idempotent() -> None:
    pool = UidPool(base=5_000_000, size=2)
    a, b = pool.acquire(), pool.acquire()
    with pytest.raises(SandboxError, match="all 2 sandbox uids"):
        pool.acquire()
    pool.release(a)
    pool.release(a)  # twice: no duplicate in the free list
    assert pool.acquire() == a
    with pytest.raises(SandboxError):
        pool.acquire()
    assert pool.held() == {a, b}


@pytest.mark.skipif(os.geteuid() != 0, reason="per-worker uids exist only when the host is root")
@pytest.mark.parametrize("replacements", [12, pytest.param(300, marks=pytest.mark.slow)])
def test_replaced_workers_never_get_a_live_workers_uid(replacements: int,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    kind = "bwrap" if bwrap_available() else "fallback"
    # A range of 4 uids: the old counter (mod the range) would hand the long-lived worker's uid to
    # the 4th replacement; the pool must never do so, and runs must see their worker's uid.
    monkeypatch.setattr(sandbox_mod, "_uids", UidPool(base=1_500_000_000, size=4))
    with get_sandbox(kind, pool_size=1, timeout_s=10) as sb:
        keeper = sb._start_worker()
        try:
            keeper_uid = keeper.cfg["uid"]
            for i in range(replacements):
                worker = sb._start_worker()
                assert worker.cfg["uid"] != keeper_uid, i
                result, _ = worker.execute("import os; print(os.getuid())", None, 5.0, sb.limits)
                assert result.stdout == f"{worker.cfg['uid']}\n", result
                worker.kill(wait=True)  # reaped: its uid is free again
            assert sandbox_mod._uids.held() == {keeper_uid}
            result, _ = keeper.execute("import os; print(os.getuid())", None, 5.0, sb.limits)
            assert result.stdout == f"{keeper_uid}\n"
        finally:
            keeper.kill(wait=True)
    assert sandbox_mod._uids.held() == set()


@pytest.mark.parametrize("how", ["exec fails", "never ready"])
def test_a_worker_that_fails_to_start_gives_back_its_uid_and_cgroup(
        how: str, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    pool = UidPool(base=1_600_000_000, size=4)
    monkeypatch.setattr(sandbox_mod, "_uids", pool)
    if how == "exec fails":
        monkeypatch.setattr(sandbox_mod, "_python_executable", lambda: str(tmp_path / "no-python"))
    else:  # the interpreter starts, prints to stderr and exits before "ready"
        monkeypatch.setattr(sandbox_mod.host, "bootstrap_argv",
                            lambda exe, root: ["/bin/sh", "-c", "echo boom >&2; exit 3"])
    def leaves() -> set[str]:
        parent = cgroup_parent()
        if parent is None:
            return set()
        mine = f"judgerl-{os.getpid()}-"
        return {os.path.join(base, d) for base in {parent.memory_dir, parent.pids_dir}
                for d in os.listdir(base) if d.startswith(mine)}

    before = leaves()  # other sandboxes of this test process (module fixtures) keep theirs
    with get_sandbox("fallback", pool_size=1) as sb:
        for _ in range(6):  # more attempts than the 4 uids: each one was given back
            with pytest.raises(SandboxError, match="cannot start|failed to start") as info:
                sb.run("print(1)")
            if how == "never ready":
                assert "boom" in str(info.value)  # the worker's stderr, read until it was ready
        assert pool.held() == set()
    assert leaves() <= before
