"""Micro-batching: gather prompts from concurrent requests into one ``backend.generate`` call.

A single worker task takes the first waiting prompt, then keeps collecting for at most
``max_wait_ms`` milliseconds or until ``max_batch_size`` prompts are gathered, and runs the batch
in a worker thread (generation blocks). While a batch generates, new prompts queue up and form the
next batch, so under load batches fill without waiting. Each prompt has its own future; a request
awaits only its own prompts, and results are matched to prompts by position.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from judgerl.types import Completion, Messages

GenerateFn = Callable[[list[Messages]], list[Completion]]


class ServerBusy(RuntimeError):
    """The queue is full (more than ``max_pending`` prompts waiting); the client should retry later."""


@dataclass
class BatchStats:
    """Counters for ``/health``: batches run, prompts generated, the largest batch, failed batches
    and the total seconds spent inside ``generate``."""

    batches: int = 0
    prompts: int = 0
    max_batch: int = 0
    failed_batches: int = 0
    generate_s: float = 0.0

    def to_dict(self) -> dict[str, float]:
        mean = self.prompts / self.batches if self.batches else 0.0
        return {
            "batches": self.batches,
            "prompts": self.prompts,
            "max_batch": self.max_batch,
            "mean_batch": round(mean, 3),
            "failed_batches": self.failed_batches,
            "generate_s": round(self.generate_s, 3),
        }


class MicroBatcher:
    """Collect prompts for up to ``max_wait_ms`` ms or ``max_batch_size`` prompts, then generate once.

    Args:
        generate: Blocking function ``prompts -> completions`` (same length, same order), e.g.
            ``lambda ps: backend.generate(ps, params)``; called in a worker thread, one batch at
            a time.
        max_batch_size: Most prompts per ``generate`` call (>= 1).
        max_wait_ms: Longest time in milliseconds the first prompt of a batch waits for company (>= 0).
        max_pending: Most prompts queued at once; :meth:`submit` raises :class:`ServerBusy` beyond it.

    Raises:
        ValueError: a bad size or time argument.

    Use :meth:`start` / :meth:`stop` from the event loop that calls :meth:`submit`; :meth:`submit`
    starts the worker itself when needed (e.g. in a mounted sub-app, whose lifespan never runs).
    """

    def __init__(
        self,
        generate: GenerateFn,
        max_batch_size: int = 32,
        max_wait_ms: float = 10.0,
        max_pending: int = 4096,
    ) -> None:
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        if max_wait_ms < 0:
            raise ValueError(f"max_wait_ms must be >= 0, got {max_wait_ms}")
        if max_pending < 1:
            raise ValueError(f"max_pending must be >= 1, got {max_pending}")
        self._generate = generate
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_ms / 1000.0
        self.max_pending = max_pending
        self.stats = BatchStats()
        # Re-created by start(): a queue belongs to the event loop that first uses it.
        self._queue: asyncio.Queue[tuple[Messages, asyncio.Future[Completion]]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    @property
    def pending(self) -> int:
        """Prompts waiting for a batch (not counting the one generating now)."""
        return self._queue.qsize()

    async def start(self) -> None:
        """Start the worker task on the running loop (idempotent)."""
        if self._task is None:
            self._queue = asyncio.Queue()
            self._task = asyncio.create_task(self._worker(), name="judgerl-microbatcher")

    async def stop(self) -> None:
        """Stop the worker; prompts still queued fail with ``RuntimeError``."""
        if self._task is None:
            return
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        self._task = None
        while not self._queue.empty():
            _, fut = self._queue.get_nowait()
            if not fut.done():
                fut.set_exception(RuntimeError("server shutting down"))

    async def submit(self, prompts: Sequence[Messages]) -> list[Completion]:
        """Queue ``prompts`` and wait for their completions (in order).

        Raises:
            ServerBusy: more than ``max_pending`` prompts would be waiting.
            Exception: whatever ``generate`` raised for the batch these prompts were in.
        """
        if self._task is None:
            await self.start()
        if self._queue.qsize() + len(prompts) > self.max_pending:
            raise ServerBusy(
                f"{self._queue.qsize()} prompts already queued; limit is {self.max_pending}"
            )
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in prompts]
        for p, f in zip(prompts, futures):
            self._queue.put_nowait((p, f))
        return list(await asyncio.gather(*futures))

    async def _collect(self) -> list[tuple[Messages, asyncio.Future[Completion]]]:
        batch = [await self._queue.get()]
        deadline = time.monotonic() + self.max_wait_s
        while len(batch) < self.max_batch_size:
            try:
                batch.append(self._queue.get_nowait())
                continue
            except asyncio.QueueEmpty:
                pass
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                batch.append(await asyncio.wait_for(self._queue.get(), timeout=left))
            except asyncio.TimeoutError:
                break
        # Requests cancelled while queued (client went away) are dropped before generating.
        return [(p, f) for p, f in batch if not f.done()]

    async def _worker(self) -> None:
        while True:
            batch = await self._collect()
            if not batch:
                continue
            prompts = [p for p, _ in batch]
            t0 = time.perf_counter()
            try:
                completions = await asyncio.to_thread(self._generate, prompts)
                if len(completions) != len(prompts):
                    raise RuntimeError(
                        f"backend returned {len(completions)} completions for {len(prompts)} prompts"
                    )
            except Exception as exc:  # delivered to every waiting request of this batch
                self.stats.failed_batches += 1
                for _, f in batch:
                    if not f.done():
                        f.set_exception(exc)
                continue
            finally:
                self.stats.generate_s += time.perf_counter() - t0
            self.stats.batches += 1
            self.stats.prompts += len(prompts)
            self.stats.max_batch = max(self.stats.max_batch, len(prompts))
            for (_, f), c in zip(batch, completions):
                if not f.done():
                    f.set_result(c)
