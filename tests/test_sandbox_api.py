"""The sandbox API: limits validation, results, stdin/output handling, concurrency, recovery."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from judgerl.tools import (
    ExecResult,
    Sandbox,
    SandboxClosedError,
    SandboxLimits,
    SandboxUnavailableError,
    bwrap_available,
    get_sandbox,
)
from judgerl.tools import _sandbox_host as host_mod
from judgerl.tools import sandbox as sandbox_mod

KINDS = ["bwrap", "fallback"]


@pytest.fixture(scope="module", params=KINDS)
def sb(request: pytest.FixtureRequest) -> Sandbox:
    if request.param == "bwrap" and not bwrap_available():
        pytest.skip("bubblewrap is not usable here (apt-get install bubblewrap)")
    with get_sandbox(request.param, pool_size=2, timeout_s=5.0) as sandbox:
        yield sandbox


# --------------------------------------------------------------------------- construction
@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"timeout_s": 0}, "timeout_s"),
        ({"timeout_s": -1.5}, "timeout_s"),
        ({"cpu_time_s": 1.5}, "cpu_time_s"),
        ({"memory_bytes": 1024}, "memory_bytes"),
        ({"output_bytes": True}, "output_bytes"),
        ({"max_processes": "8"}, "max_processes"),
        ({"max_open_files": 3}, "max_open_files"),
        ({"file_bytes": 0}, "file_bytes"),
    ],
)
def test_limits_validation_names_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        SandboxLimits(**kwargs)


def test_get_sandbox_rejects_bad_arguments(tmp_path) -> None:
    with pytest.raises(ValueError, match="unknown sandbox limit"):
        get_sandbox("fallback", timeout=3)
    with pytest.raises(ValueError, match="kind"):
        get_sandbox("docker")
    with pytest.raises(ValueError, match="python_paths"):
        get_sandbox("fallback", python_paths=[str(tmp_path / "missing")])


def test_bwrap_unavailable_raises_and_auto_refuses_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_mod, "bwrap_available", lambda: False)
    monkeypatch.delenv("JUDGERL_UNSAFE_SANDBOX", raising=False)
    with pytest.raises(SandboxUnavailableError, match="bubblewrap"):
        get_sandbox("bwrap")
    with pytest.raises(SandboxUnavailableError) as info:
        get_sandbox("auto", pool_size=1)
    message = str(info.value)
    assert "\n" not in message and "not a security boundary" in message
    assert "--unsafe-sandbox" in message and "JUDGERL_UNSAFE_SANDBOX=1" in message
    monkeypatch.setenv("JUDGERL_UNSAFE_SANDBOX", "0")  # anything but 1/true/yes is no opt-in
    with pytest.raises(SandboxUnavailableError):
        get_sandbox("auto", pool_size=1)


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_auto_uses_the_fallback_only_when_opted_in(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    monkeypatch.setattr(sandbox_mod, "bwrap_available", lambda: False)
    monkeypatch.delenv("JUDGERL_UNSAFE_SANDBOX", raising=False)
    if how == "environment":
        monkeypatch.setenv("JUDGERL_UNSAFE_SANDBOX", "1")
    with get_sandbox("auto", pool_size=1, allow_unsafe=how == "argument") as sb:
        assert sb.kind == "fallback"
        assert sb.run("print(3)").stdout == "3\n"
    with pytest.raises(TypeError, match="allow_unsafe"):
        get_sandbox("auto", allow_unsafe="yes")  # type: ignore[arg-type]


def test_auto_prefers_bwrap() -> None:
    if not bwrap_available():
        pytest.skip("bubblewrap is not usable here")
    with get_sandbox() as sb:
        assert sb.kind == "bwrap"


def test_fallback_warns_once(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(sandbox_mod, "_fallback_warned", False)
    with caplog.at_level(logging.WARNING, logger="judgerl.tools.sandbox"):
        get_sandbox("fallback", pool_size=1).close()
        get_sandbox("fallback", pool_size=1).close()
    warnings = [r for r in caplog.records if "NOT a security boundary" in r.getMessage()]
    assert len(warnings) == 1
    assert "bypassable" in warnings[0].getMessage()


def test_exec_result_ok() -> None:
    assert ExecResult("", "", 0, False, False, 0.1).ok
    assert not ExecResult("", "", 1, False, False, 0.1).ok
    assert not ExecResult("", "", 0, True, False, 0.1).ok
    with pytest.raises(AttributeError):
        ExecResult("", "", 0, False, False, 0.1).stdout = "x"  # type: ignore[misc]


# --------------------------------------------------------------------------- running code
def test_run_basic(sb: Sandbox) -> None:
    r = sb.run("print(1 + 1)")
    assert r == ExecResult("2\n", "", 0, False, False, r.duration_s)
    assert r.ok and 0 < r.duration_s < 5


def test_run_argument_errors(sb: Sandbox) -> None:
    with pytest.raises(TypeError, match="code"):
        sb.run(b"print(1)")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="stdin"):
        sb.run("print(1)", stdin=b"x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout_s"):
        sb.run("print(1)", timeout_s=0)


def test_traceback_points_at_user_code(sb: Sandbox) -> None:
    r = sb.run("x = 1\ny = x / 0\n")
    assert r.exit_code == 1
    assert 'File "<sandbox>", line 2' in r.stderr and "y = x / 0" in r.stderr
    assert r.stderr.rstrip().splitlines()[-1] == "ZeroDivisionError: division by zero"
    assert "_sandbox_worker" not in r.stderr


def test_syntax_error(sb: Sandbox) -> None:
    r = sb.run("def f(:\n  pass")
    assert r.exit_code == 1 and "SyntaxError" in r.stderr


def test_stdin_small_and_large(sb: Sandbox) -> None:
    assert sb.run("print(input()[::-1])", stdin="abc\n").stdout == "cba\n"
    big = "x" * 3_000_000
    r = sb.run("import sys; data = sys.stdin.read(); print(len(data))", stdin=big)
    assert r.stdout == f"{len(big)}\n", r
    assert sb.run("import sys; print(repr(sys.stdin.read()))").stdout == "''\n"


def test_unicode_and_invalid_bytes(sb: Sandbox) -> None:
    r = sb.run("import sys; print('héllo ✓'); sys.stdout.flush(); sys.stdout.buffer.write(b'\\xff\\n')")
    assert r.stdout.startswith("héllo ✓\n") and "\ufffd" in r.stdout


def test_limits_are_applied_inside(sb: Sandbox) -> None:
    r = sb.run(
        "import json, os, resource as R\n"
        "hard = [R.getrlimit(x)[1] for x in (R.RLIMIT_AS, R.RLIMIT_CPU, R.RLIMIT_FSIZE,\n"
        "        R.RLIMIT_NOFILE, R.RLIMIT_NPROC)]\n"
        "print(json.dumps({'hard': hard, 'uid': os.getuid(), 'mode': os.stat('.').st_mode & 0o777}))"
    )
    got = json.loads(r.stdout)
    lim = sb.limits
    assert got["hard"][:4] == [lim.memory_bytes, lim.cpu_time_s + 1, lim.file_bytes, lim.max_open_files]
    if os.geteuid() == 0:
        assert got["uid"] != 0 and got["hard"][4] == lim.max_processes
    assert got["mode"] == 0o700


def test_working_dir_is_private_and_writable(sb: Sandbox) -> None:
    r = sb.run(
        "import os, tempfile\n"
        "open('a.txt', 'w').write('x')\n"
        "with tempfile.NamedTemporaryFile(dir=None) as f: pass\n"
        "print(os.listdir('.'), os.environ['HOME'] == os.getcwd())"
    )
    assert r.stdout == "['a.txt'] True\n", r


def test_per_run_timeout_overrides_default(sb: Sandbox) -> None:
    r = sb.run("import time; time.sleep(3)", timeout_s=0.3)
    assert r.timed_out and r.duration_s < 2


def test_concurrent_callers_get_their_own_results(sb: Sandbox) -> None:
    def job(i: int) -> tuple[int, ExecResult]:
        return i, sb.run(f"import sys; print({i} * 2); print('e{i}', file=sys.stderr)")

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(job, range(24)))
    for i, r in results:
        assert r.stdout == f"{i * 2}\n" and r.stderr == f"e{i}\n", (i, r)


def test_timeouts_from_worker_threads(sb: Sandbox) -> None:
    assert threading.current_thread() is threading.main_thread()
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda _: sb.run("while True: pass", timeout_s=0.4), range(2)))
    assert all(r.timed_out for r in results)
    assert time.monotonic() - t0 < 3.0


def test_worker_killed_from_outside_is_restarted(sb: Sandbox) -> None:
    assert sb.run("print('warm')").ok
    for worker in sb._pool.workers:  # simulate a crashed zygote
        if worker.proc is not None:
            os.killpg(worker.proc.pid, signal.SIGKILL)
            worker.proc.wait()
    for _ in range(sb.pool_size + 1):
        assert sb.run("print('recovered')").stdout == "recovered\n"


def test_wedged_worker_hits_host_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host_mod, "GRACE_S", 0.5)
    with get_sandbox("fallback", pool_size=1) as sb:
        assert sb.run("print(1)").ok
        proc = sb._pool.workers[0].proc
        os.kill(proc.pid, signal.SIGSTOP)  # the zygote stops answering
        t0 = time.monotonic()
        r = sb.run("print(2)", timeout_s=0.3)
        assert r.timed_out and time.monotonic() - t0 < 3
        assert sb.run("print(3)").stdout == "3\n"


def test_close_kills_workers_and_rejects_runs() -> None:
    sb = get_sandbox("fallback", pool_size=2)
    sb.run("print(1)")
    procs = [w.proc for w in sb._pool.workers if w.proc is not None]
    sb.close()
    sb.close()  # idempotent
    assert procs and all(p.poll() is not None for p in procs)
    with pytest.raises(SandboxClosedError):
        sb.run("print(1)")


def test_site_packages_and_preload() -> None:
    pytest.importorskip("numpy")
    with get_sandbox("auto", pool_size=1, site_packages=True, preload=("numpy",)) as sb:
        r = sb.run("import numpy as np; print(int(np.arange(5).sum()))")
        assert r.stdout == "10\n", r
        draws = {sb.run("import numpy, random; print(numpy.random.rand(), random.random())").stdout
                 for _ in range(3)}
        assert len(draws) == 3, "forked runs must not share random-number-generator state"
    with get_sandbox("auto", pool_size=1) as sb:
        assert "ModuleNotFoundError" in sb.run("import numpy").stderr


def test_worker_started_in_a_short_lived_thread_survives(sb: Sandbox) -> None:
    # bwrap's --die-with-parent is tied to the spawning *thread*; workers are spawned from a
    # long-lived thread, so a worker (re)started inside a finished pool thread keeps running.
    for worker in sb._pool.workers:
        worker.kill(wait=True)
    with ThreadPoolExecutor(max_workers=sb.pool_size) as pool:
        list(pool.map(lambda _: sb.run("print(0)"), range(sb.pool_size)))
    time.sleep(0.1)
    for _ in range(2 * sb.pool_size):
        r = sb.run("print('alive')")
        assert r.stdout == "alive\n", r


def test_missing_libseccomp_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    from judgerl.tools import _sandbox_seccomp as sc_mod

    bpf = sc_mod.run_filter_bpf()  # the real filter: whole 8-byte BPF instructions
    assert len(bpf) % 8 == 0 and len(bpf) // 8 > 50
    monkeypatch.setitem(sys.modules, "pyseccomp", None)  # import fails like a missing binding
    with pytest.raises(SandboxUnavailableError, match="libseccomp"):
        sc_mod.run_filter_bpf.__wrapped__()


def test_results_state_the_budget_in_force(sb: Sandbox) -> None:
    r = sb.run("print(1)")
    assert r.budget == sb.budget in ("cgroup-v2", "cgroup-v1", "rlimit")
    per_run = sb.limits.memory_bytes * (1 if r.budget.startswith("cgroup") else sb.limits.max_processes)
    assert r.memory_cap_bytes == per_run
