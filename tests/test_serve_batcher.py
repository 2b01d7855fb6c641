"""MicroBatcher: gathering, limits, errors; compat helpers for templated OpenRLHF queries."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from judgerl.serve.batcher import ClientGone, MicroBatcher, ServerBusy
from judgerl.serve.compat import clean_response, split_query, untemplate_prompt
from judgerl.types import Completion


def echo_generate(calls):
    def gen(prompts):
        calls.append(len(prompts))
        return [Completion(p[0]["content"].upper(), 1, 1) for p in prompts]

    return gen


def msg(text):
    return [{"role": "user", "content": text}]


def test_concurrent_submits_are_gathered_into_one_batch():
    calls = []

    async def main():
        b = MicroBatcher(echo_generate(calls), max_batch_size=64, max_wait_ms=50)
        await b.start()
        try:
            outs = await asyncio.gather(*(b.submit([msg(f"r{i}a"), msg(f"r{i}b")]) for i in range(10)))
        finally:
            await b.stop()
        return outs, b.stats

    outs, stats = asyncio.run(main())
    assert [[c.text for c in o] for o in outs] == [[f"R{i}A", f"R{i}B"] for i in range(10)]
    assert calls == [20] and stats.batches == 1 and stats.max_batch == 20


def test_batches_are_capped_at_max_batch_size():
    calls = []

    async def main():
        b = MicroBatcher(echo_generate(calls), max_batch_size=4, max_wait_ms=20)
        await b.start()
        try:
            return await b.submit([msg(str(i)) for i in range(10)])
        finally:
            await b.stop()

    out = asyncio.run(main())
    assert [c.text for c in out] == [str(i) for i in range(10)]
    assert calls == [4, 4, 2]


def test_requests_arriving_while_generating_form_the_next_batch():
    calls = []
    started = threading.Event()

    def slow(prompts):
        calls.append(len(prompts))
        started.set()
        time.sleep(0.2)
        return [Completion("x", 1, 1) for _ in prompts]

    async def main():
        b = MicroBatcher(slow, max_batch_size=32, max_wait_ms=0)
        await b.start()
        try:
            first = asyncio.create_task(b.submit([msg("first")]))
            while not started.is_set():
                await asyncio.sleep(0.005)
            rest = [asyncio.create_task(b.submit([msg(str(i))])) for i in range(5)]
            await asyncio.gather(first, *rest)
        finally:
            await b.stop()

    asyncio.run(main())
    assert calls == [1, 5]


def test_a_failing_batch_is_retried_item_by_item_so_only_the_bad_item_fails():
    def gen(prompts):
        if any(p[-1]["content"] == "bad" for p in prompts):
            raise RuntimeError("boom on bad")
        return [Completion("ok " + p[-1]["content"], 1, 1) for p in prompts]

    async def main():
        b = MicroBatcher(gen, max_batch_size=8, max_wait_ms=30)
        await b.start()
        try:
            res = await asyncio.gather(b.submit([msg("a")]), b.submit([msg("bad"), msg("b")]))
            after = await b.submit([msg("c")])
        finally:
            await b.stop()
        return res, after, b.stats

    (first, second), after, stats = asyncio.run(main())
    assert first[0].text == "ok a" and second[1].text == "ok b"
    assert isinstance(second[0], RuntimeError) and "boom on bad" in str(second[0])
    assert after[0].text == "ok c"
    assert stats.failed_batches == 1 and stats.failed_items == 1


def test_wrong_number_of_results_fails_the_item():
    async def main():
        b = MicroBatcher(lambda ps: [], max_wait_ms=0)
        await b.start()
        try:
            return await b.submit([msg("a")])
        finally:
            await b.stop()

    (res,) = asyncio.run(main())
    assert isinstance(res, RuntimeError) and "0 results for 1 items" in str(res)


def test_items_of_a_disconnected_client_are_not_generated():
    seen = []

    def gen(prompts):
        seen.extend(p[-1]["content"] for p in prompts)
        return [Completion("ok", 1, 1) for _ in prompts]

    async def gone():
        return True

    async def alive():
        return False

    async def main():
        b = MicroBatcher(gen, max_batch_size=8, max_wait_ms=30)
        await b.start()
        try:
            return await asyncio.gather(b.submit([msg("dropped")], gone), b.submit([msg("kept")], alive))
        finally:
            await b.stop()

    dropped, kept = asyncio.run(main())
    assert isinstance(dropped[0], ClientGone) and kept[0].text == "ok"
    assert seen == ["kept"]


def test_pending_limit_and_lazy_start():
    async def main():
        b = MicroBatcher(echo_generate([]), max_pending=3)
        try:
            assert (await b.submit([msg("a")]))[0].text == "A"  # starts the worker itself
            with pytest.raises(ServerBusy):
                await b.submit([msg("a")] * 4)
        finally:
            await b.stop()

    asyncio.run(main())


@pytest.mark.parametrize("kwargs", [{"max_batch_size": 0}, {"max_wait_ms": -1}, {"max_pending": 0}])
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        MicroBatcher(echo_generate([]), **kwargs)


# -- compat (OpenRLHF queries) -------------------------------------------------------------------

CHATML = "<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
LLAMA3 = (
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n"
)


@pytest.mark.parametrize(
    "templated, plain",
    # the system prompt is kept: it is part of the instruction the policy followed
    [(CHATML, "System: sys\n\nUser: What is 2+2?"), (LLAMA3, "Hi there"), ("  plain prompt ", "plain prompt")],
)
def test_untemplate_prompt(templated, plain):
    assert untemplate_prompt(templated) == plain


def test_split_query_and_clean_response():
    assert split_query(CHATML + "4<|im_end|>", CHATML) == ("System: sys\n\nUser: What is 2+2?", "4")
    assert split_query(LLAMA3 + "Hello!<|eot_id|><|end_of_text|>", LLAMA3) == ("Hi there", "Hello!")
    assert clean_response("  text </s></s> ") == "text"
    with pytest.raises(ValueError, match="does not start with its prompt"):
        split_query("other text", CHATML)
