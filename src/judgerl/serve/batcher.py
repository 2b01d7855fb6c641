"""Micro-batching: gather work items from concurrent requests into one blocking ``process`` call.

A single worker task takes the first waiting item, then keeps collecting for at most
``max_wait_ms`` milliseconds or until ``max_batch_size`` items are gathered, drops the items whose
every client has disconnected, and runs the batch in a worker thread (generation blocks). While a
batch runs, new items queue up and form the next batch, so under load batches fill without
waiting. Each item has its own future; a request awaits only its own items.

Failures stay with the item that caused them: when ``process`` raises for a batch of several
items, each item is run again on its own, so one bad item fails only itself (its future gets the
exception) and every other item of the batch still gets its result.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Generic, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: Async check whether the client(s) waiting for an item have all gone (True = drop the item).
GoneCheck = Callable[[], Awaitable[bool]]


class ServerBusy(RuntimeError):
    """The queue is full (more than ``max_pending`` items waiting); the client should retry later."""


class ClientGone(RuntimeError):
    """The item was dropped before generation because its client disconnected."""


@dataclass
class BatchStats:
    """Counters for ``/health``: batches run, items processed, the largest batch, batches that
    failed as a whole (then retried item by item), items that failed alone, items dropped because
    their client disconnected, and the seconds spent inside ``process``."""

    batches: int = 0
    prompts: int = 0
    max_batch: int = 0
    failed_batches: int = 0
    failed_items: int = 0
    dropped_disconnected: int = 0
    generate_s: float = 0.0

    def to_dict(self) -> dict[str, float]:
        mean = self.prompts / self.batches if self.batches else 0.0
        return {
            "batches": self.batches,
            "prompts": self.prompts,
            "max_batch": self.max_batch,
            "mean_batch": round(mean, 3),
            "failed_batches": self.failed_batches,
            "failed_items": self.failed_items,
            "dropped_disconnected": self.dropped_disconnected,
            "generate_s": round(self.generate_s, 3),
        }


@dataclass
class _Entry(Generic[T]):
    item: T
    future: asyncio.Future
    gone: GoneCheck | None


class MicroBatcher(Generic[T, R]):
    """Collect items for up to ``max_wait_ms`` ms or ``max_batch_size`` items, then process once.

    Args:
        process: Blocking function ``items -> results`` (same length, same order), e.g.
            ``judge.run``; called in a worker thread, one batch at a time.
        max_batch_size: Most items per ``process`` call (>= 1).
        max_wait_ms: Longest time in milliseconds the first item of a batch waits for company (>= 0).
        max_pending: Most items queued at once; :meth:`submit` raises :class:`ServerBusy` beyond it.

    Raises:
        ValueError: a bad size or time argument.

    Use :meth:`start` / :meth:`stop` from the event loop that calls :meth:`submit`; :meth:`submit`
    starts the worker itself when needed (e.g. in a mounted sub-app, whose lifespan never runs).
    """

    def __init__(
        self,
        process: Callable[[list[T]], Sequence[R]],
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
        self._process = process
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_ms / 1000.0
        self.max_pending = max_pending
        self.stats = BatchStats()
        # Re-created by start(): a queue belongs to the event loop that first uses it.
        self._queue: asyncio.Queue[_Entry[T]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    @property
    def pending(self) -> int:
        """Items waiting for a batch (not counting the ones being processed now)."""
        return self._queue.qsize()

    async def start(self) -> None:
        """Start the worker task on the running loop (idempotent)."""
        if self._task is None:
            self._queue = asyncio.Queue()
            self._task = asyncio.create_task(self._worker(), name="judgerl-microbatcher")

    async def stop(self) -> None:
        """Stop the worker; items still queued fail with ``RuntimeError``."""
        if self._task is None:
            return
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        self._task = None
        while not self._queue.empty():
            e = self._queue.get_nowait()
            if not e.future.done():
                e.future.set_exception(RuntimeError("server shutting down"))

    async def submit(self, items: Sequence[T], gone: GoneCheck | None = None) -> list[R | BaseException]:
        """Queue ``items`` and wait for their results (in order).

        Args:
            items: Work items.
            gone: Optional async check; items are dropped before processing when it returns True.

        Returns:
            Per item: its result, or the exception that item failed with alone
            (:class:`ClientGone` when it was dropped).

        Raises:
            ServerBusy: more than ``max_pending`` items would be waiting.
        """
        if self._task is None:
            await self.start()
        if self._queue.qsize() + len(items) > self.max_pending:
            raise ServerBusy(f"{self._queue.qsize()} prompts already queued; limit is {self.max_pending}")
        loop = asyncio.get_running_loop()
        entries = [_Entry(item, loop.create_future(), gone) for item in items]
        for e in entries:
            self._queue.put_nowait(e)
        return list(await asyncio.gather(*(e.future for e in entries), return_exceptions=True))

    async def _collect(self) -> list[_Entry[T]]:
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
        kept = []
        checked: dict[int, bool] = {}
        for e in batch:
            if e.future.done():  # cancelled while queued
                continue
            if e.gone is not None:
                key = id(e.gone)
                if key not in checked:
                    try:
                        checked[key] = bool(await e.gone())
                    except Exception:  # a broken check never drops work
                        checked[key] = False
                if checked[key]:
                    self.stats.dropped_disconnected += 1
                    e.future.set_exception(ClientGone("client disconnected before generation"))
                    continue
            kept.append(e)
        return kept

    async def _run(self, batch: list[_Entry[T]]) -> None:
        items = [e.item for e in batch]
        t0 = time.perf_counter()
        try:
            results = await asyncio.to_thread(self._process, items)
            if len(results) != len(items):
                raise RuntimeError(f"process returned {len(results)} results for {len(items)} items")
        except Exception as exc:
            if len(batch) == 1:
                self.stats.failed_items += 1
                if not batch[0].future.done():
                    batch[0].future.set_exception(exc)
                return
            self.stats.failed_batches += 1
            for e in batch:  # isolate the failing item(s): every other item still gets its result
                await self._run([e])
            return
        finally:
            self.stats.generate_s += time.perf_counter() - t0
        self.stats.batches += 1
        self.stats.prompts += len(items)
        self.stats.max_batch = max(self.stats.max_batch, len(items))
        for e, r in zip(batch, results):
            if not e.future.done():
                e.future.set_result(r)

    async def _worker(self) -> None:
        while True:
            batch = await self._collect()
            if batch:
                await self._run(batch)
