"""Retries of slow requests (issue 22): finished items survive a client's disconnect, a retry with the
same X-Request-ID judges only the missing ones, and clients refuse answers with the wrong count."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter

import httpx
import pytest

from judgerl.backends import SamplingParams, ScriptedBackend
from judgerl.judge import Judge
from judgerl.protocols import get_protocol
from judgerl.serve.app import ServeConfig, create_app
from judgerl.serve.client import JudgeClient, JudgeClientError
from judgerl.serve.server_thread import ServerThread
from judgerl.serve.schemas import RewardItem
from judgerl.serve.service import JudgeService

GREEDY = SamplingParams(max_new_tokens=64)


def _response(messages) -> str:
    text = messages[-1]["content"]
    return text.split("[The Start of Assistant's Answer]")[1].split("[The End of Assistant's Answer]")[0].strip()


@pytest.mark.server
def test_slow_request_retried_by_an_impatient_client_judges_each_item_once():
    """Issue 22 row: one item per generation batch, 0.35 s per item, a 0.5 s client timeout. Before: item 1
    was generated 2-4 times, items 2-3 never, and the client gave up."""
    generated: Counter[str] = Counter()
    lock = threading.Lock()

    def slow(messages, params):
        time.sleep(0.35)
        with lock:
            generated[_response(messages)] += 1
        return "<score>7</score>"

    judge = Judge(get_protocol("pos"), ScriptedBackend(slow), GREEDY)
    app = create_app(judge, config=ServeConfig(max_batch_size=1, max_wait_ms=0))
    with ServerThread(app) as server:
        client = JudgeClient(server.url, timeout_s=0.5, max_retries=20, backoff_base_s=0.05, max_backoff_s=0.1)
        with client:
            out = client.rewards(["q"] * 3, ["item 1", "item 2", "item 3"])
    assert out["rewards"] == [pytest.approx(0.7)] * 3 and out["valid"] == [True] * 3
    assert dict(generated) == {"item 1": 1, "item 2": 1, "item 3": 1}
    counts = app.state.service.counts
    assert counts["dedup_hits"] + counts["judgments_reused"] >= 1  # the answer came through a retry


def test_a_retry_after_the_drop_reuses_the_finished_items():
    """The first attempt's client leaves after item 1 finished: items 2-3 are dropped (499), item 1 is kept;
    the retry (same key) generates only items 2 and 3."""
    calls: list[str] = []
    started = threading.Event()
    release = threading.Event()

    def fn(messages, params):
        r = _response(messages)
        calls.append(r)
        if r == "a":
            started.set()
            release.wait(5)
        return "<score>5</score>"

    service = JudgeService(Judge(get_protocol("pos"), ScriptedBackend(fn), GREEDY),
                           ServeConfig(max_batch_size=1, max_wait_ms=0))
    first_gone = {"v": False}

    async def gone_first() -> bool:
        return first_gone["v"]

    async def connected() -> bool:
        return False

    items = [RewardItem(prompt="q", response=r) for r in ("a", "b", "c")]

    async def main():
        await service.batcher.start()
        try:
            first = asyncio.create_task(service.once("rid", lambda: service.rewards(items, gone_first), gone_first))
            while not started.is_set():
                await asyncio.sleep(0.01)
            first_gone["v"] = True  # the client timed out while item "a" was generating
            release.set()
            with pytest.raises(Exception, match="disconnected"):
                await first
            return await service.once("rid", lambda: service.rewards(items, connected), connected)
        finally:
            release.set()
            await service.batcher.stop()

    out = asyncio.run(main())
    assert out["rewards"] == [0.5, 0.5, 0.5]
    assert calls == ["a", "b", "c"]  # "a" once: the retry reused it
    assert service.counts["judgments_reused"] == 1


def test_a_waiting_retry_keeps_the_first_attempts_items_queued():
    """While a retry waits on the same key, the first attempt's queued items are not dropped although
    the first client has gone: the work is generated once and both get the answer."""
    calls: list[str] = []
    gate = threading.Event()

    def fn(messages, params):
        calls.append(_response(messages))
        gate.wait(5)
        return "<score>3</score>"

    service = JudgeService(Judge(get_protocol("pos"), ScriptedBackend(fn), GREEDY),
                           ServeConfig(max_batch_size=1, max_wait_ms=0))
    first_gone = {"v": False}

    async def gone_first() -> bool:
        return first_gone["v"]

    async def connected() -> bool:
        return False

    items = [RewardItem(prompt="q", response=r) for r in ("a", "b")]

    async def main():
        await service.batcher.start()
        try:
            first = asyncio.create_task(service.once("rid", lambda: service.rewards(items, gone_first), gone_first))
            await asyncio.sleep(0.05)
            first_gone["v"] = True
            retry = asyncio.create_task(service.once("rid", lambda: service.rewards(items, connected), connected))
            await asyncio.sleep(0.05)
            gate.set()
            return await first, await retry
        finally:
            gate.set()
            await service.batcher.stop()

    a, b = asyncio.run(main())
    assert a == b and a["rewards"] == [0.3, 0.3]
    assert calls == ["a", "b"]


# -- count mismatches: every client refuses an answer that does not have one reward per item ----------------


def _short_server(n: int = 1):
    """A mock reward server answering ``n`` rewards whatever it is asked."""

    def handler(request):
        rewards = [0.9] * n
        return httpx.Response(200, json={"rewards": rewards, "scores": rewards, "valid": [True] * n,
                                         "reasons": [None] * n, "extra_logs": {"judge_valid": [1.0] * n}})

    return httpx.MockTransport(handler)


def test_client_rewards_refuses_a_short_answer():
    c = JudgeClient("http://judge.test", transport=_short_server(1))
    with pytest.raises(JudgeClientError, match="1 rewards for 3 items"):
        c.rewards(["q"] * 3, ["a", "b", "c"])


def test_client_judge_and_score_refuse_a_short_answer():
    def handler(request):
        return httpx.Response(200, json={"results": [{"verdict": "A", "valid": True}]})

    c = JudgeClient("http://judge.test", transport=httpx.MockTransport(handler))
    with pytest.raises(JudgeClientError, match="1 results for 2 items"):
        c.judge_pairs([{"prompt": "q", "response_a": "a", "response_b": "b"}] * 2)
    with pytest.raises(JudgeClientError, match="1 results for 2 items"):
        c.score([{"prompt": "q", "response": "a"}] * 2)
