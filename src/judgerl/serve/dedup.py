"""Answer each request once: retries that carry the same request id never judge the same items twice.

A client (``JudgeClient``, an RL framework's reward call) sends an ``X-Request-ID`` and reuses it
when it retries after a read timeout. The key of a request is (endpoint, id, SHA-256 of the body),
so an id reused with another body -- another client, or a framework that numbers its calls per
worker -- is a different request, never the first body's answer.

* a retry while the first attempt runs awaits the same answer;
* a retry after it finished gets the stored answer (kept ``ttl_s`` seconds, at most ``max_entries``
  answers and about ``max_bytes`` bytes of them, oldest evicted first);
* if the first attempt is dropped because its client went away (HTTP 499) while a retry waits, the
  retry runs the work itself instead of inheriting the 499.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import Counter, OrderedDict
from typing import Any, Awaitable, Callable

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
        self._bytes = 0

    async def once(self, key: str | None, compute: Callable[[], Awaitable[Any]]) -> Any:
        """``await compute()`` once per ``key`` (None: always run)."""
        if key is None:
            return await compute()
        self._expire()
        if key in self._done:
            self.counts["dedup_hits"] += 1
            return self._done[key][2]
        fut = self._inflight.get(key)
        if fut is not None:
            self.counts["dedup_hits"] += 1
            try:
                return await asyncio.shield(fut)
            except Exception as e:
                if not self.is_gone(e) or key in self._inflight:
                    raise
                self.counts["dedup_reruns"] += 1  # the first client left: this retry does the work
                return await self.once(key, compute)
        fut = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        try:
            result = await compute()
        except BaseException as e:
            self._inflight.pop(key, None)
            fut.set_exception(e)
            fut.exception()  # retrieved: no "never retrieved" warning when nobody else waits
            raise
        self._inflight.pop(key, None)
        fut.set_result(result)
        self._store(key, result)
        return result

    def _store(self, key: str, result: Any) -> None:
        size = len(json.dumps(result, default=str))
        self._done[key] = (time.monotonic(), size, result)
        self._bytes += size
        while self._done and (len(self._done) > self.max_entries or self._bytes > self.max_bytes):
            _, (_, old, _) = self._done.popitem(last=False)
            self._bytes -= old

    def _expire(self) -> None:
        now = time.monotonic()
        while self._done and now - next(iter(self._done.values()))[0] > self.ttl_s:
            _, (_, old, _) = self._done.popitem(last=False)
            self._bytes -= old
