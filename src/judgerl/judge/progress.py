"""Progress of a judging run that moves while it generates: tokens, judgments, running accuracy.

With continuous batching every row of a call finishes near the end, so a bar that counts finished
judgments sits at 0 % and then jumps, and its time-left estimate (judgments per second so far) is
meaningless for most of the run. :class:`GenerationProgress` counts what a backend reports while it
generates (:class:`judgerl.backends.base.ProgressListener`: prompts started and prefilled, tokens
per decode step) and the judgments as they finish (completion tokens, correct / wrong / invalid),
and estimates the time left from the token rate:

    remaining tokens = unfinished judgments x expected tokens each - tokens already generated for them
    ETA = remaining tokens / (tokens generated / seconds since the first prompt started)

where "expected tokens each" is ``max_new_tokens`` until the first judgment finishes, then the mean
completion tokens of the finished ones. A backend that reports no tokens (a remote API) falls back
to judgments: ETA = unfinished judgments / judgments per second.

Renderers: :class:`ProgressBar` (a tqdm bar on stderr: tokens generated of the expected total, with
judgments and running accuracy as its postfix; ``judgerl eval``) and :class:`ThroughputLog` (one log
line every ``interval_s`` seconds with tokens/s and the queue; ``judgerl serve``).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, TextIO


@dataclass(frozen=True)
class ProgressState:
    """A snapshot of :class:`GenerationProgress`.

    Attributes:
        total: Judgments this run makes.
        started: Prompts that started generating (tool rounds and forced answers count again).
        finished: Judgments finished.
        prefill_tokens: Prompt tokens prefilled (prefix-cache hits not counted).
        tokens: Tokens generated (all rows, all rounds).
        expected_tokens: Estimated tokens of the whole run (``tokens`` + remaining), or None when
            the backend reports no tokens.
        elapsed_s: Seconds since the first prompt started (or the first judgment finished).
        tokens_per_s: ``tokens / elapsed_s`` (None before any token).
        eta_s: Estimated seconds left (None while unknown).
        correct: Finished judgments that picked the gold answer.
        graded: Finished judgments with a gold answer to compare to (no gold tie, valid or not).
        invalid: Finished judgments whose output could not be parsed.
    """

    total: int
    started: int
    finished: int
    prefill_tokens: int
    tokens: int
    expected_tokens: int | None
    elapsed_s: float
    tokens_per_s: float | None
    eta_s: float | None
    correct: int
    graded: int
    invalid: int

    @property
    def accuracy(self) -> float | None:
        """Running accuracy over the graded judgments (invalid ones count as wrong), or None."""
        return self.correct / self.graded if self.graded else None


class GenerationProgress:
    """Thread-safe progress counters of one run; a :class:`~judgerl.backends.base.ProgressListener`.

    Args:
        total: Judgments the run will make (>= 0).
        max_new_tokens: Token budget of one judgment (the expected length until one finishes).
        on_change: Called with no argument after every event (renderers); must be cheap.
        clock: Seconds, monotonic (tests pass a fake clock).

    Raises:
        ValueError: ``total`` < 0 or ``max_new_tokens`` < 1.
    """

    def __init__(self, total: int, max_new_tokens: int, on_change: Callable[[], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if total < 0:
            raise ValueError(f"total must be >= 0, got {total}")
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        self.total = total
        self.max_new_tokens = max_new_tokens
        self.on_change = on_change
        self._clock = clock
        self._lock = threading.Lock()
        self._t0: float | None = None
        self.started = self.finished = self.prefill_tokens = self.tokens = 0
        self.finished_tokens = self.correct = self.graded = self.invalid = 0

    def _begin(self) -> None:
        if self._t0 is None:
            self._t0 = self._clock()

    def on_started(self, n_prompts: int, prompt_tokens: int) -> None:
        """``n_prompts`` prompts started; ``prompt_tokens`` tokens prefilled (listener API)."""
        with self._lock:
            self._begin()
            self.started += n_prompts
            self.prefill_tokens += prompt_tokens
        self._changed()

    def on_tokens(self, n_new: int) -> None:
        """``n_new`` tokens generated in one decode step (listener API)."""
        with self._lock:
            self._begin()
            self.tokens += n_new
        self._changed()

    def on_finished(self, completion_tokens: int, correct: bool | None, valid: bool) -> None:
        """One judgment finished: its generated tokens, whether it picked the gold answer (an
        invalid output is False; None: no gold answer, e.g. a gold tie or a pointwise score),
        whether its output parsed."""
        with self._lock:
            self._begin()
            self.finished += 1
            self.finished_tokens += max(0, completion_tokens)
            self.invalid += not valid
            if correct is not None:
                self.graded += 1
                self.correct += correct
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def state(self) -> ProgressState:
        """A consistent snapshot with the token budget and the ETA (formulas in the module docstring)."""
        with self._lock:
            elapsed = 0.0 if self._t0 is None else max(0.0, self._clock() - self._t0)
            unfinished = max(0, self.total - self.finished)
            expected = tps = eta = None
            if self.tokens:
                per = self.finished_tokens / self.finished if self.finished else self.max_new_tokens
                in_flight = max(0, self.tokens - self.finished_tokens)
                remaining = max(round(unfinished * per) - in_flight, unfinished)
                expected = self.tokens + remaining
                tps = self.tokens / elapsed if elapsed > 0 else None
                eta = remaining / tps if tps else None
            elif self.finished and elapsed > 0:
                eta = unfinished / (self.finished / elapsed)
            return ProgressState(self.total, self.started, self.finished, self.prefill_tokens, self.tokens, expected,
                                 elapsed, tps, eta, self.correct, self.graded, self.invalid)


def describe(s: ProgressState) -> str:
    """The judgments part of a progress line, e.g. ``"judged 3/32 (16 started) acc 66.7% invalid 1"``."""
    parts = [f"judged {s.finished}/{s.total}"]
    if s.started > s.finished:
        parts[0] += f" ({s.started} started)"
    if s.accuracy is not None:
        parts.append(f"acc {100 * s.accuracy:.1f}%")
    parts.append(f"invalid {s.invalid}")
    return " ".join(parts)


class ProgressBar:
    """A tqdm bar on ``file`` for :class:`GenerationProgress`: tokens generated of the expected
    total (rate in tokens/s, ETA from it) with the judgments as its postfix; judgments when the
    backend reports no tokens.

    Args:
        progress: The counters; :meth:`update` is their ``on_change``.
        desc: The bar's label.
        file: Where to draw (stderr).
        resumed: Judgments already made by an earlier run (shown in the postfix).
        mininterval: Seconds between redraws.
    """

    def __init__(self, progress: GenerationProgress, desc: str, file: TextIO, resumed: int = 0,
                 mininterval: float = 0.1) -> None:
        from tqdm.auto import tqdm

        self.progress = progress
        self.resumed = resumed
        self.mode = "tok"
        self.bar: Any = tqdm(total=progress.max_new_tokens * progress.total, unit="tok", desc=desc, file=file,
                             dynamic_ncols=True, smoothing=0, mininterval=mininterval, unit_scale=True)
        self._lock = threading.Lock()
        progress.on_change = self.update

    def update(self) -> None:
        """Redraw from the counters (tqdm throttles to ``mininterval``)."""
        s = self.progress.state()
        with self._lock:
            if self.mode == "tok" and not s.tokens and s.finished:
                self.mode = "judgment"  # the backend reports no tokens: count judgments
                self.bar.unit, self.bar.unit_scale = "judgment", False
                self.bar.reset(total=s.total)
            done = s.tokens if self.mode == "tok" else s.finished
            if self.mode == "tok" and s.expected_tokens is not None:
                self.bar.total = s.expected_tokens
            post = describe(s) + (f" resumed {self.resumed}" if self.resumed else "")
            self.bar.set_postfix_str(post, refresh=False)
            self.bar.update(done - self.bar.n)

    def close(self) -> None:
        """Draw the final state and close the bar."""
        self.update()
        with self._lock:
            self.bar.close()


class ThroughputLog:
    """A :class:`~judgerl.backends.base.ProgressListener` that logs one line every ``interval_s``
    seconds while tokens flow: tokens/s since the previous line, judgments finished, the queue.

    Args:
        logger: Where to log (INFO).
        interval_s: Seconds between lines (> 0).
        queue: Returns the number of items waiting (e.g. the micro-batcher's ``pending``).
        clock: Monotonic seconds (tests pass a fake clock).

    Raises:
        ValueError: ``interval_s`` <= 0.
    """

    def __init__(self, logger: logging.Logger, interval_s: float = 30.0, queue: Callable[[], int] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.logger = logger
        self.interval_s = interval_s
        self.queue = queue
        self._clock = clock
        self._lock = threading.Lock()
        self._last = clock()
        self.tokens = self.prompts = self.prefill_tokens = 0
        self._tokens_at_last = 0

    def on_started(self, n_prompts: int, prompt_tokens: int) -> None:
        """Count started prompts and prefilled tokens (listener API)."""
        with self._lock:
            self.prompts += n_prompts
            self.prefill_tokens += prompt_tokens
        self._maybe_log()

    def on_tokens(self, n_new: int) -> None:
        """Count generated tokens; log when ``interval_s`` has passed (listener API)."""
        with self._lock:
            self.tokens += n_new
        self._maybe_log()

    def _maybe_log(self) -> None:
        now = self._clock()
        with self._lock:
            dt = now - self._last
            if dt < self.interval_s:
                return
            rate = (self.tokens - self._tokens_at_last) / dt
            self._last, self._tokens_at_last = now, self.tokens
            prompts, prefill, tokens = self.prompts, self.prefill_tokens, self.tokens
        queue = f", queue {self.queue()}" if self.queue is not None else ""
        self.logger.info("generating: %.1f tokens/s over %.0f s; %d prompts started, %d tokens prefilled, "
                         "%d generated in total%s", rate, dt, prompts, prefill, tokens, queue)
