"""Math answer equivalence with math-verify, under a wall-clock timeout that is safe from threads.

math-verify's own timeout uses ``signal.alarm`` and therefore only works in the main thread (it
raises in worker threads; DESIGN.md also bans SIGALRM timeouts in threads). judgerl runs
math-verify in separate worker *processes* instead: inside a worker the check runs in that
process's main thread, where math-verify's signal timeout is valid, and the calling thread waits on
a pipe with its own deadline. A worker that misses the deadline (e.g. stuck in sympy) is killed and
replaced, so one pathological answer never blocks the caller or leaks CPU.

The final answer of a solution is found first (:func:`extract_final_answer`: ``\\boxed{…}``,
GSM8K's ``#### N`` and ``A: N``, "the answer is N"), then the two answers are compared with
``math_verify.verify(parse(gold), parse(pred))``.
"""

from __future__ import annotations

import json
import logging
import math
import queue
import re
import select
import subprocess
import sys
import threading
import weakref
from typing import Iterable

logger = logging.getLogger(__name__)

#: Extra seconds granted to a fresh worker's first answer (spawning + importing math-verify/sympy).
_STARTUP_S = 60.0

_BOXED = re.compile(r"\\boxed\s*\{")
_HASHES = re.compile(r"^\s*####\s*(.+?)\s*$", re.MULTILINE)
_A_LINE = re.compile(r"^\s*A:\s*(.+?)\s*$", re.MULTILINE)
_ANSWER_IS = re.compile(r"(?:final answer|the answer)\s*(?:is|:)\s*\$?\s*([^\n]+?)\s*(?:\.\s*)?$", re.I | re.M)


def _last_boxed(text: str) -> str | None:
    """The last ``\\boxed{…}`` of ``text`` with balanced braces, as written, or None."""
    matches = list(_BOXED.finditer(text))
    for m in reversed(matches):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth == 0:
            return text[m.start() : i]
    return None


def extract_final_answer(text: str) -> str | None:
    """The final answer written in a solution, or None when it states none.

    Looks, in order, for the last ``\\boxed{…}``, the last GSM8K ``#### N`` line, the last GSM8K
    model-solution ``A: N`` line, and the last "the answer is N" / "final answer: N". Nothing is
    guessed from bare numbers: a solution that never states its answer has none.
    """
    boxed = _last_boxed(text)
    if boxed is not None:
        return boxed
    for pattern in (_HASHES, _A_LINE, _ANSWER_IS):
        found = pattern.findall(text)
        if found and found[-1].strip():
            return found[-1].strip()
    return None


# ---------------------------------------------------------------------------------------------
# worker processes: `python -m judgerl.verify._mathworker` speaking JSON lines over pipes.
# A plain subprocess (not multiprocessing) never re-imports the caller's __main__ module.


class _Worker:
    def __init__(self, inner_timeout: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "judgerl.verify._mathworker", str(inner_timeout)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self.warm = False  # True once it answered: the first answer also waits for its imports

    def ask(self, gold: str, pred: str, timeout_s: float) -> dict:
        """Send one request and wait at most ``timeout_s`` for the reply line.

        Raises:
            TimeoutError: no reply in time. EOFError: the worker died.
        """
        stdin, stdout = self.proc.stdin, self.proc.stdout  # both PIPE, never None
        stdin.write(json.dumps({"gold": gold, "pred": pred}) + "\n")  # type: ignore[union-attr]
        stdin.flush()  # type: ignore[union-attr]
        ready, _, _ = select.select([stdout], [], [], timeout_s)
        if not ready:
            raise TimeoutError(f"no answer within {timeout_s:.1f} s")
        line = stdout.readline()  # type: ignore[union-attr]
        if not line:
            raise EOFError("math-verify worker exited")
        self.warm = True
        return json.loads(line)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=5)

    def stop(self) -> None:
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]
            self.proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()


class MathVerifier:
    """Thread-safe math answer equivalence with a hard wall-clock timeout per check.

    Args:
        timeout_s: Seconds one check may take (parse both answers + verify); past it the worker
            is killed and the check returns None. The first check also waits for a worker to start
            (importing math-verify, ~1 s), which is not counted.
        max_workers: Worker processes (checks run in parallel up to this many calling threads).

    Use as a context manager or call :meth:`close`; idle workers are also stopped when the verifier
    is garbage-collected or the interpreter exits, and a worker exits by itself when its stdin
    closes (its parent died).
    """

    def __init__(self, timeout_s: float = 5.0, max_workers: int = 1) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        self.timeout_s = float(timeout_s)
        self.max_workers = max_workers
        self._inner_timeout = max(1, math.ceil(timeout_s))
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._n_started = 0
        self._lock = threading.Lock()
        self._closed = False
        self.n_timeouts = 0
        self.n_errors = 0
        # Stops idle workers when the verifier is closed, garbage-collected or at interpreter exit.
        self._finalizer = weakref.finalize(self, _stop_idle, self._idle)

    def __enter__(self) -> "MathVerifier":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _acquire(self) -> _Worker:
        with self._lock:
            if self._closed:
                raise RuntimeError("MathVerifier is closed")
            if self._idle.empty() and self._n_started < self.max_workers:
                worker = _Worker(self._inner_timeout)  # OSError propagates: cannot start Python
                self._n_started += 1
                return worker
        return self._idle.get()

    def equivalent(self, gold: str, pred: str) -> bool | None:
        """Whether answer ``pred`` equals answer ``gold`` (math-verify semantics).

        Args:
            gold: The reference answer (e.g. ``"18"``, ``"\\\\boxed{\\\\frac12}"``).
            pred: The answer to check.

        Returns:
            True / False; None when undecided: the gold answer does not parse, the check timed
            out, or math-verify raised (counted in ``n_timeouts`` / ``n_errors``).

        Raises:
            RuntimeError: the verifier was closed.
        """
        worker = self._acquire()
        try:
            reply = worker.ask(gold, pred, self.timeout_s + (0.0 if worker.warm else _STARTUP_S))
        except (TimeoutError, EOFError, OSError, ValueError) as e:
            worker.kill()
            with self._lock:
                self._n_started -= 1
                self.n_timeouts += 1
            logger.warning("math-verify check timed out or its worker died (%s): gold=%r pred=%r",
                           type(e).__name__, gold[:80], pred[:80])
            return None
        if self._closed:
            worker.stop()
        else:
            self._idle.put(worker)
        if "error" in reply:
            with self._lock:
                self.n_errors += 1
            logger.warning("math-verify raised %s for gold=%r pred=%r", reply["error"], gold[:80], pred[:80])
            return None
        return reply["ok"]

    def equivalent_many(self, pairs: Iterable[tuple[str, str]]) -> list[bool | None]:
        """:meth:`equivalent` for each (gold, pred), using up to ``max_workers`` workers at once."""
        items = list(pairs)
        if self.max_workers == 1 or len(items) < 2:
            return [self.equivalent(g, p) for g, p in items]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
            return list(pool.map(lambda gp: self.equivalent(*gp), items))

    def close(self) -> None:
        """Stop all workers (one busy in another thread stops when its check returns). Idempotent."""
        with self._lock:
            self._closed = True
        self._finalizer()


def _stop_idle(idle: "queue.Queue[_Worker]") -> None:
    while True:
        try:
            idle.get_nowait().stop()
        except queue.Empty:
            return


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


def strip_calculator_annotations(text: str) -> str:
    """Remove GSM8K calculator annotations ``<<48/2=24>>`` from a solution."""
    return re.sub(r"<<[^<>]*>>", "", text)


__all__ = [
    "MathVerifier",
    "answers_match",
    "default_verifier",
    "extract_final_answer",
    "strip_calculator_annotations",
]
