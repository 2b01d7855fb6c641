"""A pool of warm worker processes with FIFO handoff, shared by the sandbox and the math verifier.

Both ``judgerl.tools.sandbox`` (one zygote per slot) and ``judgerl.verify.math`` (one math-verify
process per slot) keep a few long-lived worker processes and hand them to calling threads, one
call at a time, each call under a wall-clock deadline. This module holds what they share:

* :class:`WorkerPool` -- start-on-demand up to ``size`` workers; callers that find none free wait
  in a **FIFO queue** and a released worker goes straight to the longest-waiting caller (no
  barging: a thread that just released a worker cannot grab it back ahead of the queue); a worker
  that missed its deadline is :meth:`~WorkerPool.discard`\\ ed (killed) and its slot handed to the
  first waiter, who starts a replacement, so a killed worker never strands a waiting caller;
  :meth:`~WorkerPool.close` fails waiting and later callers with :class:`PoolClosedError`.
* :func:`read_exact` / :func:`wait_readable` -- reads from a pipe with a monotonic deadline.
* :func:`kill_process` / :func:`stop_process` -- bounded cleanup of a worker process.

The pool knows nothing about the workers except that ``start()`` makes one (it may block, e.g. to
wait for the worker's "ready") and ``kill(worker)`` ends one; deadlines are enforced by the caller
around its own I/O with :func:`read_exact`.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

__all__ = [
    "PoolClosedError",
    "WorkerPool",
    "kill_process",
    "read_exact",
    "stop_process",
    "wait_readable",
]

W = TypeVar("W")

#: Seconds a killed worker process gets to be reaped before we stop waiting for it.
REAP_TIMEOUT_S = 5.0


class PoolClosedError(RuntimeError):
    """The pool was closed (before or while the caller waited for a worker)."""


class _Waiter:
    __slots__ = ("event", "worker", "may_start", "closed")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.worker: object | None = None  # a worker handed over by release()
        self.may_start = False  # a free slot handed over by discard(): start a worker yourself
        self.closed = False


class WorkerPool(Generic[W]):
    """Up to ``size`` warm workers, handed to callers in FIFO order. Thread-safe.

    Args:
        start: Creates and starts one worker (blocking until it is usable); exceptions propagate
            to the caller of :meth:`acquire` and free the slot again.
        kill: Ends a worker for good (must be bounded in time and must not raise).
        size: Maximum number of live workers (>= 1).

    Raises:
        ValueError: ``size`` < 1.
    """

    def __init__(self, start: Callable[[], W], kill: Callable[[W], None], size: int) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"pool size must be an integer >= 1, got {size!r}")
        self._start = start
        self._kill = kill
        self.size = size
        self._lock = threading.Lock()
        self._idle: list[W] = []  # LIFO: the most recently used worker is the warmest
        self._waiters: deque[_Waiter] = deque()
        self._live: list[W] = []  # started and not discarded (idle or leased)
        self._n_slots = 0  # live workers + workers being started
        self._closed = False

    # ----------------------------------------------------------------------------- leasing
    def acquire(self) -> W:
        """A worker for the calling thread; waits (FIFO) while all ``size`` are busy.

        Raises:
            PoolClosedError: the pool is or gets closed.
            Exception: whatever ``start`` raised when a new worker had to be started.
        """
        with self._lock:
            if self._closed:
                raise PoolClosedError("the worker pool is closed")
            if self._idle:
                return self._idle.pop()
            if self._n_slots < self.size:
                self._n_slots += 1
                must_start = True
            else:
                waiter = _Waiter()
                self._waiters.append(waiter)
                must_start = False
        if must_start:
            return self._start_in_slot()
        waiter.event.wait()
        if waiter.closed:
            raise PoolClosedError("the worker pool was closed while waiting for a worker")
        if waiter.worker is not None:
            return waiter.worker  # type: ignore[return-value]
        return self._start_in_slot()  # waiter.may_start: a discarded worker's slot is ours

    def _start_in_slot(self) -> W:
        """Start a worker in a slot already counted in ``_n_slots``."""
        try:
            worker = self._start()
        except BaseException:
            with self._lock:
                self._n_slots -= 1
                self._pass_free_slot()
            raise
        with self._lock:
            if not self._closed:
                self._live.append(worker)
                return worker
            self._n_slots -= 1
        self._kill(worker)
        raise PoolClosedError("the worker pool was closed while a worker was starting")

    def release(self, worker: W) -> None:
        """Give a healthy worker back: to the first waiting caller, else to the idle list."""
        with self._lock:
            if not self._closed:
                if self._waiters:
                    waiter = self._waiters.popleft()
                    waiter.worker = worker
                    waiter.event.set()
                else:
                    self._idle.append(worker)
                return
            self._forget(worker)
        self._kill(worker)  # closed meanwhile

    def discard(self, worker: W) -> None:
        """Kill a worker (it missed its deadline, died, or is in an unknown state) and free its
        slot; the first waiting caller then starts a replacement. Never raises."""
        with self._lock:
            self._forget(worker)
        try:
            self._kill(worker)
        finally:
            with self._lock:
                self._pass_free_slot()

    @contextmanager
    def lease(self) -> Iterator[W]:
        """``with pool.lease() as w:`` -- released on normal exit, discarded on any exception."""
        worker = self.acquire()
        try:
            yield worker
        except BaseException:
            self.discard(worker)
            raise
        self.release(worker)

    def _forget(self, worker: W) -> None:
        """Drop a worker from the books (lock held)."""
        if any(w is worker for w in self._live):
            self._live = [w for w in self._live if w is not worker]
            self._n_slots -= 1
        self._idle = [w for w in self._idle if w is not worker]

    def _pass_free_slot(self) -> None:
        """Hand a free slot to the first waiter, who starts a worker itself (lock held)."""
        if self._waiters and not self._closed and self._n_slots < self.size:
            self._n_slots += 1
            waiter = self._waiters.popleft()
            waiter.may_start = True
            waiter.event.set()

    # ----------------------------------------------------------------------------- state
    @property
    def workers(self) -> list[W]:
        """The live workers (idle or leased), a snapshot."""
        with self._lock:
            return list(self._live)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def close(self, *, kill_busy: bool = True) -> None:
        """Close the pool: waiting and later callers get :class:`PoolClosedError`; idle workers
        are killed now, leased ones now (``kill_busy=True``, their calls fail) or when they are
        released. Idempotent."""
        with self._lock:
            self._closed = True
            waiters, self._waiters = list(self._waiters), deque()
            victims = list(self._live) if kill_busy else list(self._idle)
            for w in victims:
                self._forget(w)
        for waiter in waiters:
            waiter.closed = True
            waiter.event.set()
        for w in victims:
            self._kill(w)


# --------------------------------------------------------------------------------- pipe I/O
def wait_readable(fd: int, deadline: float) -> bool:
    """Wait until ``fd`` is readable (or at EOF/error) before the monotonic ``deadline``.

    Returns:
        True when readable, False when the deadline passed first.
    """
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            if poller.poll(left * 1000):
                return True
        except InterruptedError:  # pragma: no cover - PEP 475 retries poll itself
            continue


def read_exact(fd: int, n: int, deadline: float) -> bytes | None:
    """Read exactly ``n`` bytes from a blocking pipe before the monotonic ``deadline`` (seconds).

    Returns:
        The bytes, or None at EOF (the writer died).

    Raises:
        TimeoutError: the deadline passed first.
    """
    buf = bytearray()
    while len(buf) < n:
        if not wait_readable(fd, deadline):
            raise TimeoutError(f"no data within the deadline ({len(buf)} of {n} bytes read)")
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


# --------------------------------------------------------------------------------- processes
def kill_process(proc: subprocess.Popen, *, group: bool = False) -> None:
    """SIGKILL a worker process (its whole process group with ``group=True``) and reap it,
    waiting at most ``REAP_TIMEOUT_S`` seconds; closes its pipes. Never raises."""
    if proc.poll() is None:
        try:
            if group:
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
        except OSError:
            pass
        try:
            proc.wait(timeout=REAP_TIMEOUT_S)
        except subprocess.TimeoutExpired:  # pragma: no cover - an unkillable (D-state) process
            pass
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass


def stop_process(proc: subprocess.Popen, timeout_s: float = 2.0) -> None:
    """Ask a worker to exit by closing its stdin, wait ``timeout_s`` seconds, then kill it.
    Never raises."""
    try:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=timeout_s)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        pass
    kill_process(proc)
