"""Answer each request once: retries that carry the same request id never judge the same items twice.

A client (``JudgeClient``, an RL framework's reward call) sends an ``X-Request-ID`` and reuses it
when it retries after a read timeout. The key of a request is (endpoint, id, SHA-256 of the body),
so an id reused with another body -- another client, or a framework that numbers its calls per
worker -- is a different request, never the first body's answer.

* a retry while the first attempt runs awaits the same answer;
* a retry after it finished gets the stored answer (kept ``ttl_s`` seconds, at most ``max_entries``
  answers and about ``max_bytes`` bytes of them, oldest evicted first);
* while any client of a request is still connected (the first attempt's or a retry's), its queued
  items stay queued: an attempt's work is dropped only when *every* client waiting for it has gone;
* the items an attempt finished survive its clients' disconnect: a later retry with the same key
  judges only the items still missing (:class:`Attempt`; kept ``ttl_s`` seconds, ``max_entries``
  requests), so slow requests retried by impatient clients always make progress;
* if the first attempt is dropped because its client went away (HTTP 499) while a retry waits, the
  retry runs the work itself instead of inheriting the 499.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Sequence

#: Async check whether a client has gone (True = disconnected).
Gone = Callable[[], Awaitable[bool]]

#: Longest accepted X-Request-ID, in characters (longer: HTTP 400).
MAX_ID_CHARS = 256


def request_key(endpoint: str, request_id: str | None, body: bytes) -> str | None:
    """The dedup key of a request, or None without an id.

    Raises:
        ValueError: the id is longer than :data:`MAX_ID_CHARS` characters.
    """
    if not request_id:
        return None
    if len(request_id) > MAX_ID_CHARS:
        raise ValueError(f"X-Request-ID has {len(request_id)} characters; the limit is {MAX_ID_CHARS}")
    return f"{endpoint}\x00{request_id}\x00{hashlib.sha256(body).hexdigest()}"


def content_key(*parts: Any) -> str:
    """SHA-256 of ``parts`` as canonical JSON: names one work item by its content (e.g. a generation's
    messages, seed and responses), so an attempt's finished items can be found by a retry."""
    blob = json.dumps(list(parts), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class Attempt:
    """The shared state of every attempt at one keyed request.

    Attributes:
        waiters: Disconnect checks of the clients waiting for the request now (the first attempt's
            and its retries'); the work is dropped only when all of them report gone.
        finished: Results of finished work items by a content key (see
            :meth:`RequestDedup.run_items`); they outlive a dropped attempt.
        touched: ``time.monotonic()`` of the last use (for expiry).
    """

    waiters: list[Gone] = field(default_factory=list)
    finished: dict[str, Any] = field(default_factory=dict)
    touched: float = field(default_factory=time.monotonic)

    async def all_gone(self) -> bool:
        """True when every waiting client has disconnected (a broken check counts as connected);
        False while there is no registered waiter."""
        if not self.waiters:
            return False
        for check in list(self.waiters):
            try:
                if not await check():
                    return False
            except Exception:
                return False
        return True


#: The :class:`Attempt` of the keyed request being computed in this task (None outside one).
CURRENT_ATTEMPT: contextvars.ContextVar[Attempt | None] = contextvars.ContextVar("judgerl_attempt", default=None)


class RequestDedup:
    """The in-flight and finished answers of keyed requests (see the module docstring).

    Args:
        ttl_s: Seconds a finished answer is kept.
        max_entries: Most finished answers kept.
        max_bytes: Approximate budget of the kept answers (their JSON size), in bytes.
        counts: Counter that receives ``dedup_hits`` and ``dedup_reruns``.
        is_gone: ``f(exception) -> bool``: the first attempt failed because its client left.
    """

    def __init__(self, ttl_s: float, max_entries: int, max_bytes: int, counts: Counter[str],
                 is_gone: Callable[[BaseException], bool]) -> None:
        self.ttl_s, self.max_entries, self.max_bytes = ttl_s, max_entries, max_bytes
        self.counts = counts
        self.is_gone = is_gone
        self._inflight: dict[str, asyncio.Future] = {}
        self._done: OrderedDict[str, tuple[float, int, Any]] = OrderedDict()
        self._attempts: OrderedDict[str, Attempt] = OrderedDict()
        self._bytes = 0

    async def once(self, key: str | None, compute: Callable[[], Awaitable[Any]], gone: Gone | None = None) -> Any:
        """``await compute()`` once per ``key`` (None: always run).

        Args:
            key: The request key (:func:`request_key`), or None.
            compute: The work; while it runs, :data:`CURRENT_ATTEMPT` holds the key's :class:`Attempt`
                (its finished items and the waiting clients' disconnect checks).
            gone: This caller's disconnect check, registered as a waiter for the time it waits.
        """
        if key is None:
            return await compute()
        self._expire()
        if key in self._done:
            self.counts["dedup_hits"] += 1
            return self._done[key][2]
        attempt = self._attempts.pop(key, None) or Attempt()
        attempt.touched = time.monotonic()
        self._attempts[key] = attempt
        while len(self._attempts) > self.max_entries:
            self._attempts.popitem(last=False)
        if gone is not None:
            attempt.waiters.append(gone)
        try:
            return await self._once(key, compute, attempt)
        finally:
            if gone is not None and gone in attempt.waiters:
                attempt.waiters.remove(gone)

    async def _once(self, key: str, compute: Callable[[], Awaitable[Any]], attempt: Attempt) -> Any:
        fut = self._inflight.get(key)
        if fut is not None:
            self.counts["dedup_hits"] += 1
            try:
                return await asyncio.shield(fut)
            except Exception as e:
                if not self.is_gone(e) or key in self._inflight:
                    raise
                self.counts["dedup_reruns"] += 1  # the first client left: this retry does the work
                if key in self._done:
                    return self._done[key][2]
                return await self._once(key, compute, attempt)
        fut = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        token = CURRENT_ATTEMPT.set(attempt)
        try:
            result = await compute()
        except BaseException as e:
            self._inflight.pop(key, None)
            attempt.touched = time.monotonic()  # finished items stay for a retry
            fut.set_exception(e)
            fut.exception()  # retrieved: no "never retrieved" warning when nobody else waits
            raise
        finally:
            CURRENT_ATTEMPT.reset(token)
        self._inflight.pop(key, None)
        self._attempts.pop(key, None)
        fut.set_result(result)
        self._store(key, result)
        return result

    async def run_items(self, items: Sequence[Any], key_of: Callable[[Any], str],
                        run: Callable[[list[Any], Gone | None], Awaitable[Sequence[Any]]], gone: Gone | None,
                        keep: Callable[[Any], bool]) -> list[Any]:
        """``run(items, gone)`` -- one result per item -- reusing the current attempt's finished items.

        Inside a keyed request (:data:`CURRENT_ATTEMPT` set by :meth:`once`): items an earlier attempt
        finished (by ``key_of(item)``) are not run again (counted as ``judgments_reused``), results for which
        ``keep(result)`` holds are kept for a later retry even when the client leaves, and ``gone`` becomes
        "every client waiting for this request has gone". Outside one: ``run(items, gone)``.
        """
        attempt = CURRENT_ATTEMPT.get()
        if attempt is None:
            return list(await run(list(items), gone))
        keys = [key_of(x) for x in items]
        out = [attempt.finished.get(k) for k in keys]
        todo = [i for i, r in enumerate(out) if r is None]
        self.counts["judgments_reused"] += len(items) - len(todo)
        if attempt.waiters:
            gone = attempt.all_gone
        if todo:
            for i, r in zip(todo, await run([items[i] for i in todo], gone)):
                out[i] = r
                if keep(r):
                    attempt.finished[keys[i]] = r
        return out

    def _store(self, key: str, result: Any) -> None:
        size = len(json.dumps(result, default=str))
        self._done[key] = (time.monotonic(), size, result)
        self._bytes += size
        while self._done and (len(self._done) > self.max_entries or self._bytes > self.max_bytes):
            _, (_, old, _) = self._done.popitem(last=False)
            self._bytes -= old

    def _expire(self) -> None:
        now = time.monotonic()
        for k in [k for k, a in self._attempts.items() if k not in self._inflight and now - a.touched > self.ttl_s]:
            del self._attempts[k]
        while self._done and now - next(iter(self._done.values()))[0] > self.ttl_s:
            _, (_, old, _) = self._done.popitem(last=False)
            self._bytes -= old
