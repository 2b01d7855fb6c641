"""OpenAIBackend against fake HTTP transports (no network): request mapping, prefill modes,
bounded concurrency, openai-python's retries, per-prompt failures, usage accounting. The
real-server test lives in tests/test_serve_openai_server.py."""

from __future__ import annotations

import asyncio
import importlib
import json
import random

import openai
import pytest

from judgerl.backends import SamplingParams, load_backend
from judgerl.backends.openai import OpenAIBackend, OpenAIBackendError, is_context_error

# The httpx flavour the installed openai client is built on (httpx or httpx2).
httpx = importlib.import_module(openai.DefaultAsyncHttpxClient.__mro__[1].__module__.split(".")[0])

BASE = "http://fake.local/v1"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for var in ("JUDGERL_OPENAI_PREFILL", "JUDGERL_OPENAI_TOKENIZER", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    # openai-python's own backoff (0.5 s doubling) made fast for the tests
    monkeypatch.setattr("openai._base_client.INITIAL_RETRY_DELAY", 0.001)
    monkeypatch.setattr("openai._base_client.MAX_RETRY_DELAY", 0.002)


def chat_response(text: str, finish: str = "stop", prompt_tokens: int = 7, completion_tokens: int = 3) -> dict:
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def make_backend(handler, **kw) -> OpenAIBackend:
    return OpenAIBackend("m", base_url=BASE, transport=httpx.MockTransport(handler), **kw)


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def test_maps_sampling_params_and_returns_in_order():
    bodies = []

    def handler(request):
        body = json.loads(request.content)
        bodies.append(body)
        return httpx.Response(200, json=chat_response("echo:" + body["messages"][-1]["content"]))

    backend = make_backend(handler)
    params = SamplingParams(max_new_tokens=5, temperature=0.7, top_p=0.9, seed=11, stop=("</s>",))
    out = backend.generate([user("a"), user("b"), user("c")], params)
    assert [c.text for c in out] == ["echo:a", "echo:b", "echo:c"]
    by_prompt = {b["messages"][-1]["content"]: b for b in bodies}
    assert by_prompt["a"]["max_tokens"] == 5 and by_prompt["a"]["temperature"] == 0.7
    assert by_prompt["a"]["top_p"] == 0.9 and by_prompt["a"]["stop"] == ["</s>"]
    # one derived seed per prompt (distinct streams), the same on every call
    assert len({b["seed"] for b in bodies}) == 3
    again = []
    make_backend(lambda r: (again.append(json.loads(r.content)), httpx.Response(200, json=chat_response("x")))[1]
                 ).generate([user("a"), user("b"), user("c")], params)
    assert {b["messages"][-1]["content"]: b["seed"] for b in again} == {k: v["seed"] for k, v in by_prompt.items()}
    # explicit per-prompt seeds are sent as they are (mod 2**31)
    seeded = []
    make_backend(lambda r: (seeded.append(json.loads(r.content)["seed"]), httpx.Response(200, json=chat_response("x")))[1]
                 ).generate([user("a")], params, seeds=[2**31 + 5])
    assert seeded == [5]
    assert all("continue_final_message" not in b for b in bodies)


def test_greedy_omits_top_p_and_seed():
    seen = []

    def handler(request):
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=chat_response("x"))

    make_backend(handler).generate([user("q")], SamplingParams(max_new_tokens=4))
    assert seen[0]["temperature"] == 0.0 and "top_p" not in seen[0] and "seed" not in seen[0]


def test_usage_recorded_per_completion_and_totals():
    def handler(request):
        return httpx.Response(200, json=chat_response("hello", finish="length", prompt_tokens=10, completion_tokens=4))

    backend = make_backend(handler)
    out = backend.generate([user("a"), user("b")], SamplingParams(max_new_tokens=4))
    assert out[0].prompt_tokens == 10 and out[0].completion_tokens == 4 and out[0].finish_reason == "length"
    assert backend.usage.to_dict() == {
        "prompt_tokens": 20,
        "completion_tokens": 8,
        "requests": 2,
        "retries": 0,
        "failures": 0,
    }


def test_stop_string_cut_client_side():
    def handler(request):  # a server that echoes the stop string back
        return httpx.Response(200, json=chat_response("answer STOP trailing", finish="length"))

    out = make_backend(handler).generate([user("q")], SamplingParams(max_new_tokens=8, stop=("STOP",)))
    assert out[0].text == "answer " and out[0].finish_reason == "stop"


def test_prefill_continue_sends_vllm_extension():
    seen = []

    def handler(request):
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=chat_response(" continued"))

    prompt = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "<think>"}]
    out = make_backend(handler).generate([prompt], SamplingParams(max_new_tokens=4))
    assert out[0].text == " continued"
    assert seen[0]["continue_final_message"] is True and seen[0]["add_generation_prompt"] is False
    assert seen[0]["messages"][-1] == {"role": "assistant", "content": "<think>"}


def test_prefill_error_mode_rejects_prefill_prompts():
    backend = make_backend(lambda r: httpx.Response(200, json=chat_response("x")), prefill="error")
    with pytest.raises(ValueError, match="assistant message"):
        backend.generate([[{"role": "user", "content": "q"}, {"role": "assistant", "content": "x"}]], SamplingParams())


class PlainTokenizer:
    """No chat template: render_chat falls back to plain role-prefixed concatenation."""

    chat_template = None


def test_prefill_completions_mode_renders_locally():
    seen = []

    def handler(request):
        seen.append((request.url.path, json.loads(request.content)))
        if request.url.path.endswith("/chat/completions"):
            return httpx.Response(200, json=chat_response("chat"))
        return httpx.Response(
            200,
            json={
                "id": "x",
                "object": "text_completion",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "text": " more", "finish_reason": "stop", "logprobs": None}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
            },
        )

    backend = make_backend(handler, prefill="completions", tokenizer=PlainTokenizer())
    prompt = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "partial"}]
    out = backend.generate([prompt, user("plain")], SamplingParams(max_new_tokens=4))
    assert out[0].text == " more"
    paths = sorted(p for p, _ in seen)
    assert paths == ["/v1/chat/completions", "/v1/completions"]
    completion_body = next(b for p, b in seen if p == "/v1/completions")
    assert completion_body["prompt"] == "user: q\n\nassistant: partial"


def test_prefill_mode_and_tokenizer_from_environment(monkeypatch):
    monkeypatch.setenv("JUDGERL_OPENAI_PREFILL", "completions")
    monkeypatch.setenv("JUDGERL_OPENAI_TOKENIZER", "/models/judge")
    backend = OpenAIBackend("m", base_url=BASE)
    assert backend.prefill == "completions" and backend._tokenizer == "/models/judge"


def test_completions_mode_needs_tokenizer():
    with pytest.raises(ValueError, match="tokenizer"):
        OpenAIBackend("m", base_url=BASE, prefill="completions")


def test_concurrency_is_bounded():
    state = {"now": 0, "peak": 0}

    async def handler(request):
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await asyncio.sleep(0.02)
        state["now"] -= 1
        return httpx.Response(200, json=chat_response("x"))

    backend = make_backend(handler, max_concurrency=3)
    out = backend.generate([user(str(i)) for i in range(12)], SamplingParams(max_new_tokens=2))
    assert len(out) == 12
    assert state["peak"] == 3


@pytest.mark.parametrize("status", [429, 500, 502, 503])
def test_openai_client_retries_transient_status_then_succeeds(status):
    calls = []

    def handler(request):
        calls.append(1)
        if len(calls) <= 2:
            return httpx.Response(status, json={"error": {"message": "busy"}}, headers={"retry-after-ms": "1"})
        return httpx.Response(200, json=chat_response("ok"))

    backend = make_backend(handler, max_retries=5)
    assert backend.generate([user("q")], SamplingParams())[0].text == "ok"
    assert len(calls) == 3 and backend.usage.retries == 2 and backend.usage.failures == 0


def test_retries_timeouts():
    calls = []

    def handler(request):
        calls.append(1)
        if len(calls) == 1:
            raise httpx.ReadTimeout("slow", request=request)
        return httpx.Response(200, json=chat_response("ok"))

    backend = make_backend(handler, max_retries=2)
    assert backend.generate([user("q")], SamplingParams())[0].text == "ok"
    assert backend.usage.retries == 1


def test_a_prompt_that_outlives_its_retries_fails_alone_and_is_marked_retryable():
    def handler(request):
        if json.loads(request.content)["messages"][-1]["content"] == "doomed":
            return httpx.Response(503, json={"error": {"message": "overloaded"}}, headers={"retry-after-ms": "1"})
        return httpx.Response(200, json=chat_response("fine"))

    backend = make_backend(handler, max_retries=2)
    ok, bad = backend.generate([user("fine"), user("doomed")], SamplingParams())
    assert ok.text == "fine" and ok.error is None
    assert bad.text == "" and bad.finish_reason == "error" and bad.retryable
    assert "HTTP 503" in bad.error and "overloaded" in bad.error
    assert backend.usage.failures == 1 and backend.usage.retries == 2


def test_null_content_and_content_filter_are_recorded_with_their_real_finish_reason():
    def handler(request):
        text = json.loads(request.content)["messages"][-1]["content"]
        if text == "null":
            return httpx.Response(200, json=chat_response(None))
        if text == "filtered":
            return httpx.Response(200, json=chat_response("", finish="content_filter"))
        return httpx.Response(200, json=chat_response("ok"))

    null, filtered, ok = make_backend(handler).generate([user("null"), user("filtered"), user("ok")], SamplingParams())
    assert (null.finish_reason, null.text, null.retryable) == ("error", "", True) and "null content" in null.error
    assert (filtered.finish_reason, filtered.retryable) == ("content_filter", True)
    assert ok.finish_reason == "stop" and not ok.retryable


def test_context_length_refusal_is_prompt_too_long_for_that_prompt_only():
    def handler(request):
        if json.loads(request.content)["messages"][-1]["content"] == "huge":
            return httpx.Response(400, json={"error": {"message": "This model's maximum context length is 8192 "
                                                                  "tokens. However, you requested 12900 tokens."}})
        return httpx.Response(200, json=chat_response("ok"))

    huge, ok = make_backend(handler).generate([user("huge"), user("ok")], SamplingParams())
    assert huge.finish_reason == "prompt_too_long" and "8192" in huge.error and not huge.retryable
    assert ok.text == "ok"


def test_client_errors_fail_the_call_and_are_not_retried():
    calls = []

    def handler(request):
        calls.append(1)
        return httpx.Response(400, json={"error": {"message": "bad max_tokens"}})

    with pytest.raises(OpenAIBackendError, match="HTTP 400.*bad max_tokens"):
        make_backend(handler, max_retries=5).generate([user("q")], SamplingParams())
    assert len(calls) == 1


def test_retry_after_header_is_honoured_by_the_client():
    import time as _time

    stamps = []

    def handler(request):
        stamps.append(_time.monotonic())
        if len(stamps) == 1:
            return httpx.Response(429, headers={"retry-after": "0.3"}, json={"error": {"message": "slow down"}})
        return httpx.Response(200, json=chat_response("ok"))

    assert make_backend(handler).generate([user("q")], SamplingParams())[0].text == "ok"
    assert stamps[1] - stamps[0] >= 0.25


def test_x_should_retry_false_is_obeyed():
    calls = []

    def handler(request):
        calls.append(1)
        return httpx.Response(503, headers={"x-should-retry": "false"}, json={"error": {"message": "no"}})

    (out,) = make_backend(handler, max_retries=4).generate([user("q")], SamplingParams())
    assert len(calls) == 1 and out.finish_reason == "error"


def test_one_client_is_reused_across_calls():
    backend = make_backend(lambda r: httpx.Response(200, json=chat_response("ok")))
    backend.generate([user("a")], SamplingParams())
    client = backend._client
    backend.generate([user("b")], SamplingParams())
    assert backend._client is client and client is not None
    backend.close()


def test_is_context_error_classification():
    req = httpx.Request("POST", BASE)
    ctx = openai.BadRequestError("maximum context length exceeded", response=httpx.Response(400, request=req), body=None)
    assert is_context_error(ctx)
    # llama-server's two refusals (tools/server/server-context.cpp)
    for msg in ("request (9000 tokens) exceeds the available context size (4096 tokens), try increasing it",
                "input (9000 tokens) is larger than the max context size (4096 tokens). skipping"):
        assert is_context_error(openai.BadRequestError(msg, response=httpx.Response(400, request=req), body=None))
    assert not is_context_error(openai.BadRequestError("bad", response=httpx.Response(400, request=req), body=None))
    assert not is_context_error(ValueError("maximum context length"))


def test_load_backend_routes_openai_and_reads_env(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    backend = load_backend("openai/some-model", max_concurrency=2)
    assert isinstance(backend, OpenAIBackend)
    assert backend.model == "some-model" and backend.base_url == "http://127.0.0.1:9/v1"
    assert backend.name == "openai/some-model"


@pytest.mark.parametrize(
    "kwargs", [{"max_concurrency": 0}, {"max_retries": -1}, {"timeout_s": 0}, {"prefill": "bogus"}]
)
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        OpenAIBackend("m", base_url=BASE, **kwargs)


def test_generate_works_inside_a_running_event_loop():
    backend = make_backend(lambda r: httpx.Response(200, json=chat_response("ok")))

    async def caller():
        return backend.generate([user("q")], SamplingParams())

    assert asyncio.run(caller())[0].text == "ok"
