"""Math answer equivalence with math-verify, under a wall-clock timeout that is safe from threads.

math-verify's own timeout uses ``signal.alarm`` and therefore only works in the main thread (it
raises in worker threads, and a SIGALRM timeout inside worker threads is unsafe anyway). judgerl runs
math-verify in separate worker *processes* instead: inside a worker the check runs in that
process's main thread, where math-verify's signal timeout is valid, and the calling thread waits on
a pipe with its own deadline. A worker that misses the deadline (e.g. stuck in sympy) is killed and
replaced, so one pathological answer never blocks the caller or leaks CPU.

The final answer of a solution is found first (:func:`extract_final_answer`: ``\\boxed{…}``,
GSM8K's ``#### N`` and ``A: N``, "the answer is N"), then the two answers are compared by
:func:`judgerl.verify.answers.equivalent` in the worker: math-verify's LaTeX parser, exact sympy
comparison, None when unsure (extraction and equivalence live in :mod:`judgerl.verify.answers`;
this module re-exports :func:`extract_final_answer` and :func:`strip_calculator_annotations`).
"""

from __future__ import annotations

import json
import logging
import math
import os
import subprocess
import sys
import threading
import time
import weakref
from typing import Iterable

from judgerl.verify.answers import extract_final_answer, strip_calculator_annotations  # re-exported
from judgerl.tools.workers import PoolClosedError, WorkerPool, kill_process, wait_readable

logger = logging.getLogger(__name__)

#: Seconds a fresh worker may take to start and answer its warm-up request (importing math-verify
#: and sympy); never counted against a check's ``timeout_s``.
_STARTUP_S = 60.0

# ---------------------------------------------------------------------------------------------
# worker processes: `python -m judgerl.verify._mathworker` speaking JSON lines over pipes.
# A plain subprocess (not multiprocessing) never re-imports the caller's __main__ module. The pool
# (FIFO handoff, start on demand, kill-and-replace on a missed deadline) is judgerl.tools.workers'.

#: A request a fresh worker must answer before it counts as ready (its imports are done then).
_WARM_UP = {"gold": "1", "pred": "1"}


def _worker_argv(inner_timeout: int) -> list[str]:
    """The command of one worker process; ``inner_timeout`` is math-verify's own limit (s)."""
    return [sys.executable, "-m", "judgerl.verify._mathworker", str(inner_timeout)]


class _Worker:
    """One math-verify worker process, started and warmed up (ready) by the constructor.

    Raises:
        OSError: the interpreter could not be started.
        RuntimeError: the worker did not answer its warm-up request within ``_STARTUP_S``.
    """

    def __init__(self, inner_timeout: int) -> None:
        self.proc = subprocess.Popen(
            _worker_argv(inner_timeout),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
        self._buf = b""
        try:
            self.ask(_WARM_UP["gold"], _WARM_UP["pred"], time.monotonic() + _STARTUP_S)
        except (TimeoutError, EOFError, OSError, ValueError) as e:
            self.kill()
            raise RuntimeError(f"the math-verify worker did not start: {type(e).__name__}: {e}") from e

    def ask(self, gold: str, pred: str, deadline: float) -> dict:
        """Send one request and read its reply line before the monotonic ``deadline``.

        Raises:
            TimeoutError: no reply in time. EOFError: the worker died. ValueError: a bad reply.
        """
        stdin, stdout = self.proc.stdin, self.proc.stdout  # both PIPE, never None
        stdin.write((json.dumps({"gold": gold, "pred": pred}) + "\n").encode())  # type: ignore[union-attr]
        stdin.flush()  # type: ignore[union-attr]
        fd = stdout.fileno()  # type: ignore[union-attr]
        while b"\n" not in self._buf:
            if not wait_readable(fd, deadline):
                raise TimeoutError("no answer within the deadline")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise EOFError("math-verify worker exited")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        reply = json.loads(line)
        if not isinstance(reply, dict):
            raise ValueError(f"bad reply from the math-verify worker: {line[:200]!r}")
        return reply

    def kill(self) -> None:
        """SIGKILL and reap the process (bounded). Never raises."""
        kill_process(self.proc)


class MathVerifier:
    """Thread-safe math answer equivalence with a hard wall-clock timeout per check.

    Args:
        timeout_s: Seconds one check may take (parse both answers + verify), counted from the
            moment a ready worker received it; past it the worker is killed and replaced and the
            check returns None. Starting a worker (importing math-verify, ~1 s) is never counted,
            so a check gets the same verdict from a freshly started worker as from a warm one.
            math-verify's own internal timeout is set above ``timeout_s`` so that a slow check is
            always None (undecided), never a False produced by an interrupted parse.
        max_workers: Worker processes (checks run in parallel up to this many calling threads;
            further callers wait their turn in FIFO order).

    Raises:
        ValueError: ``timeout_s`` <= 0 or ``max_workers`` < 1.

    Use as a context manager or call :meth:`close`; workers are also stopped when the verifier is
    garbage-collected or the interpreter exits, and a worker exits by itself when its stdin closes
    (its parent died).
    """

    def __init__(self, timeout_s: float = 5.0, max_workers: int = 1) -> None:
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        self.timeout_s = float(timeout_s)
        self.max_workers = max_workers
        # Strictly above timeout_s: our deadline always fires first (None), never math-verify's.
        self._inner_timeout = math.floor(timeout_s) + 1
        self._pool: WorkerPool[_Worker] = WorkerPool(
            lambda: _Worker(self._inner_timeout), _Worker.kill, max_workers)
        self._lock = threading.Lock()
        self.n_timeouts = 0
        self.n_errors = 0
        # Stops the workers when the verifier is closed, garbage-collected or at interpreter exit.
        self._finalizer = weakref.finalize(self, _stop_idle, self._pool)

    @property
    def _closed(self) -> bool:
        return self._pool.closed

    def __enter__(self) -> "MathVerifier":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def equivalent(self, gold: str, pred: str) -> bool | None:
        """Whether answer ``pred`` equals answer ``gold`` (math-verify semantics).

        Args:
            gold: The reference answer (e.g. ``"18"``, ``"\\\\boxed{\\\\frac12}"``).
            pred: The answer to check.

        Returns:
            True / False; None when undecided: the gold answer does not parse, the check took
            longer than ``timeout_s`` seconds, or math-verify raised (counted in ``n_timeouts`` /
            ``n_errors``).

        Raises:
            RuntimeError: the verifier was closed, or a worker could not be started.
            OSError: the Python interpreter for a worker could not be run.
        """
        try:
            worker = self._pool.acquire()
        except PoolClosedError as e:
            raise RuntimeError("MathVerifier is closed") from e
        try:
            reply = worker.ask(gold, pred, time.monotonic() + self.timeout_s)
        except (TimeoutError, EOFError, OSError, ValueError) as e:
            self._pool.discard(worker)  # killed; a waiting caller starts a fresh one
            with self._lock:
                self.n_timeouts += 1
            logger.warning("math-verify check timed out or its worker died (%s): gold=%r pred=%r",
                           type(e).__name__, gold[:80], pred[:80])
            return None
        except BaseException:
            self._pool.discard(worker)
            raise
        self._pool.release(worker)
        if "error" in reply:
            with self._lock:
                self.n_errors += 1
            logger.warning("math-verify raised %s for gold=%r pred=%r", reply["error"], gold[:80], pred[:80])
            return None
        return reply.get("ok")

    def equivalent_many(self, pairs: Iterable[tuple[str, str]]) -> list[bool | None]:
        """:meth:`equivalent` for each (gold, pred), using up to ``max_workers`` workers at once."""
        items = list(pairs)
        if self.max_workers == 1 or len(items) < 2:
            return [self.equivalent(g, p) for g, p in items]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
            return list(pool.map(lambda gp: self.equivalent(*gp), items))

    def close(self) -> None:
        """Stop all workers (one busy in another thread stops when its check returns); callers
        waiting for a worker get RuntimeError. Idempotent."""
        self._finalizer()


def _stop_idle(pool: "WorkerPool[_Worker]") -> None:
    pool.close(kill_busy=False)


_default: MathVerifier | None = None
_default_lock = threading.Lock()


def default_verifier() -> MathVerifier:
    """A process-wide :class:`MathVerifier` (5 s timeout, one worker), created on first use."""
    global _default
    with _default_lock:
        if _default is None or _default._closed:
            _default = MathVerifier()
        return _default


def answers_match(gold: str, pred: str, verifier: MathVerifier | None = None) -> bool | None:
    """Whether the final answers of two solution texts are equivalent.

    Both texts go through :func:`extract_final_answer` first; a ``pred`` stating no answer is
    False, a ``gold`` stating none is None (undecided), as is a timed-out check.
    """
    gold_ans = extract_final_answer(gold)
    if gold_ans is None:
        return None
    pred_ans = extract_final_answer(pred)
    if pred_ans is None:
        return False
    return (verifier or default_verifier()).equivalent(gold_ans, pred_ans)


__all__ = [
    "MathVerifier",
    "answers_match",
    "default_verifier",
    "extract_final_answer",
    "strip_calculator_annotations",
]
