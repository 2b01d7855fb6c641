"""The shared warm-worker pool (judgerl.tools.workers) and the math verifier built on it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from judgerl.verify import math as math_mod
from judgerl.verify.math import MathVerifier, answers_match
from judgerl.tools.workers import PoolClosedError, WorkerPool, kill_process, read_exact

FAKE = Path(__file__).parent / "fixtures" / "fake_mathworker.py"


class _Fake:
    def __init__(self, n: int) -> None:
        self.n = n
        self.killed = False


def _pool(size: int, started: list | None = None, fail: list | None = None) -> WorkerPool[_Fake]:
    counter = iter(range(1000))

    def start() -> _Fake:
        if fail:
            raise fail.pop()
        w = _Fake(next(counter))
        if started is not None:
            started.append(w)
        return w

    return WorkerPool(start, lambda w: setattr(w, "killed", True), size)


# --------------------------------------------------------------------------- the pool
def test_pool_starts_on_demand_up_to_size_and_reuses() -> None:
    started: list[_Fake] = []
    pool = _pool(2, started)
    a = pool.acquire()
    b = pool.acquire()
    assert len(started) == 2 and a is not b
    pool.release(a)
    assert pool.acquire() is a and len(started) == 2


def test_pool_handoff_is_fifo() -> None:
    pool = _pool(1)
    held = pool.acquire()
    order: list[int] = []
    threads = []
    for i in range(6):
        def wait(i: int = i) -> None:
            w = pool.acquire()
            order.append(i)
            time.sleep(0.005)
            pool.release(w)
        t = threading.Thread(target=wait)
        t.start()
        threads.append(t)
        time.sleep(0.05)  # queue them in a known order
    pool.release(held)
    for t in threads:
        t.join(5)
    assert order == list(range(6))


def test_releasing_thread_cannot_barge_ahead_of_waiters() -> None:
    pool = _pool(1)
    held = pool.acquire()
    got: list[str] = []
    waiter = threading.Thread(target=lambda: got.append("waiter") or pool.release(pool.acquire()))
    waiter.start()
    time.sleep(0.05)
    pool.release(held)  # handed to the waiter directly ...
    mine = pool.acquire()  # ... so this blocks until the waiter released it
    got.append("releaser")
    pool.release(mine)
    waiter.join(5)
    assert got == ["waiter", "releaser"]


def test_discard_hands_the_slot_to_a_waiter() -> None:
    started: list[_Fake] = []
    pool = _pool(1, started)
    first = pool.acquire()
    box: list[_Fake] = []
    t = threading.Thread(target=lambda: box.append(pool.acquire()))
    t.start()
    time.sleep(0.05)
    pool.discard(first)  # the waiter must not be stranded
    t.join(5)
    assert box and box[0] is started[1] and first.killed
    assert pool.workers == [started[1]]


def test_failed_start_frees_the_slot_and_raises() -> None:
    pool = _pool(1, fail=[OSError("no python")])
    with pytest.raises(OSError, match="no python"):
        pool.acquire()
    assert pool.acquire().n == 0  # the slot is usable again


def test_lease_discards_on_exception() -> None:
    pool = _pool(1)
    with pytest.raises(KeyError):
        with pool.lease() as w:
            raise KeyError("boom")
    assert w.killed and pool.workers == []


def test_close_wakes_waiters_and_rejects_callers() -> None:
    pool = _pool(1)
    held = pool.acquire()
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            pool.acquire()
        except PoolClosedError as e:
            errors.append(e)

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.05)
    pool.close(kill_busy=False)
    t.join(5)
    assert len(errors) == 1 and not held.killed
    pool.release(held)  # released after close: killed
    assert held.killed
    with pytest.raises(PoolClosedError):
        pool.acquire()
    with pytest.raises(ValueError, match="size"):
        WorkerPool(lambda: None, lambda w: None, 0)


def test_read_exact_deadline_and_eof() -> None:
    r, w = os.pipe()
    try:
        os.write(w, b"abc")
        assert read_exact(r, 3, time.monotonic() + 1) == b"abc"
        t0 = time.monotonic()
        with pytest.raises(TimeoutError):
            read_exact(r, 1, time.monotonic() + 0.1)
        assert time.monotonic() - t0 < 1
        os.close(w)
        w = -1
        assert read_exact(r, 1, time.monotonic() + 1) is None
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)


def test_kill_process_is_bounded() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    t0 = time.monotonic()
    kill_process(proc)
    assert proc.returncode is not None and time.monotonic() - t0 < 5


# --------------------------------------------------------------------------- MathVerifier
@pytest.fixture()
def fake_worker(monkeypatch: pytest.MonkeyPatch):
    """Make MathVerifier start the fake worker; ``set_delay(s)`` slows its start."""
    delay = {"s": 0.0}
    monkeypatch.setattr(math_mod, "_worker_argv",
                        lambda inner: [sys.executable, str(FAKE), str(inner), str(delay["s"])])
    return lambda s: delay.__setitem__("s", s)


def test_no_deadlock_8_threads_1_worker_hung_checks(fake_worker) -> None:
    pairs = [("HANG" if i % 3 == 0 else str(i), str(i)) for i in range(16)]
    with MathVerifier(timeout_s=0.3, max_workers=1) as v:
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=8) as pool:
            futures = [pool.submit(v.equivalent, g, p) for g, p in pairs]
            results = [f.result(timeout=60) for f in futures]
        elapsed = time.monotonic() - t0
    assert results == [None if g == "HANG" else True for g, _ in pairs]
    assert v.n_timeouts == 6
    assert elapsed < 30, elapsed


def test_answers_match_from_threads_does_not_hang(fake_worker) -> None:
    with MathVerifier(timeout_s=0.3, max_workers=1) as v:
        with ThreadPoolExecutor(max_workers=4) as pool:
            futures = [pool.submit(answers_match, f"#### {g}", "#### 7", v)
                       for g in ("HANG", "7", "HANG", "8")]
            assert [f.result(timeout=30) for f in futures] == [None, True, None, False]


def test_hung_check_same_verdict_cold_and_warm(fake_worker) -> None:
    fake_worker(1.0)  # the worker takes 1 s to start: longer than the check's 0.3 s timeout
    with MathVerifier(timeout_s=0.3, max_workers=1) as v:
        assert v.equivalent("HANG", "1") is None  # cold: a fresh worker
        assert v.equivalent("2", "2") is True  # a slow start is not counted against a check
        assert v.equivalent("HANG", "1") is None  # warm
        assert v.n_timeouts == 2


@pytest.mark.slow
def test_real_worker_hung_check_is_none_cold_and_warm() -> None:
    # A sympy simplification that takes ~6 s, longer than the 1 s budget (the answer guards refuse
    # power towers such as 9^(9^(9^9)) at once, so they no longer hang a worker).
    hung = "(\\sin^2 x+\\cos^2 x)^{100}+(\\sin^2 y+\\cos^2 y)^{100}-1"
    with MathVerifier(timeout_s=1, max_workers=1) as v:
        assert v.equivalent("1", hung) is None  # cold
        assert v.equivalent("2", "2") is True
        assert v.equivalent("1", hung) is None  # warm
    assert v._inner_timeout > v.timeout_s  # math-verify's own alarm never fires first


def test_closed_verifier_fails_waiting_callers(fake_worker) -> None:
    v = MathVerifier(timeout_s=2, max_workers=1)
    assert v.equivalent("1", "1") is True
    errors: list[BaseException] = []
    lock = threading.Lock()

    def hang() -> None:
        v.equivalent("HANG", "1")

    def wait() -> None:
        try:
            v.equivalent("1", "1")
        except RuntimeError as e:
            with lock:
                errors.append(e)

    busy = threading.Thread(target=hang)
    busy.start()
    time.sleep(0.2)
    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.1)
    v.close()
    waiter.join(5)
    busy.join(5)
    assert len(errors) == 1 and "closed" in str(errors[0])
