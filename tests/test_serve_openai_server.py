"""The openai backend against a REAL local OpenAI-compatible server (``transformers serve`` on the
embedded SmolLM2-135M, CPU, loopback), compared with the hf backend on the same greedy prompts;
and the reward server on the embedded model. Slow: run with ``pytest --runslow``."""

from __future__ import annotations

import json

import pytest

from support.judging import ev
from judgerl.backends import SamplingParams
from judgerl.backends.hf import HFBackend
from judgerl.backends.openai import OpenAIBackend, OpenAIBackendError
from support.local_openai import TransformersServe

pytestmark = [pytest.mark.slow, pytest.mark.server]


@pytest.fixture(scope="module")
def local_server(embedded_model_dir):
    with TransformersServe(embedded_model_dir, startup_timeout_s=240) as server:
        yield server


@pytest.fixture(scope="module")
def hf_unbatched(embedded_model_dir):
    # batch_size=1: no padding, the same computation the server does for one request.
    return HFBackend(str(embedded_model_dir), batch_size=1)


def user(text):
    return [{"role": "user", "content": text}]


def test_greedy_chat_matches_hf_and_records_usage(local_server, hf_unbatched):
    prompts = [user("Name a colour."), user("What is 2 + 3? Answer briefly.")]
    params = SamplingParams(max_new_tokens=12)
    backend = OpenAIBackend(local_server.model, base_url=local_server.base_url, max_concurrency=2, timeout_s=600)
    remote = backend.generate(prompts, params)
    local = hf_unbatched.generate(prompts, params)
    assert [c.text for c in remote] == [c.text for c in local]
    assert [c.prompt_tokens for c in remote] == [c.prompt_tokens for c in local]
    assert all(c.completion_tokens > 0 for c in remote)
    assert backend.usage.requests == 2 and backend.usage.failures == 0
    assert backend.usage.prompt_tokens == sum(c.prompt_tokens for c in local)


def test_prefill_via_completions_matches_hf(local_server, hf_unbatched, embedded_model_dir):
    prompt = [{"role": "user", "content": "Is 7 prime?"}, {"role": "assistant", "content": "<think>Seven"}]
    params = SamplingParams(max_new_tokens=10)
    backend = OpenAIBackend(
        local_server.model,
        base_url=local_server.base_url,
        prefill="completions",
        tokenizer=str(embedded_model_dir),
        timeout_s=600,
    )
    assert backend.generate([prompt], params)[0].text == hf_unbatched.generate([prompt], params)[0].text


def test_vllm_prefill_extension_is_refused_clearly(local_server):
    prompt = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "partial"}]
    backend = OpenAIBackend(local_server.model, base_url=local_server.base_url, max_retries=3)
    with pytest.raises(OpenAIBackendError, match="HTTP 422") as info:
        backend.generate([prompt], SamplingParams(max_new_tokens=4))
    assert info.value.attempts == 1  # a 4xx is not retried


def test_eval_through_openai_backend_gives_hf_decisions(local_server, hf_unbatched, shared_data, tmp_path):
    from judgerl.data import load_pairs
    from judgerl.eval import run_eval
    from judgerl.protocols import get_protocol

    # One pair in both orders, short outputs: CPU generation on long judge prompts is slow.
    # bench/bench_serve.py consistency runs the same comparison on more pairs.
    pairs = load_pairs(shared_data / "llmbar" / "natural.json", limit=1).pairs
    protocol = get_protocol("pav")
    params = SamplingParams(max_new_tokens=16)
    backend = OpenAIBackend(local_server.model, base_url=local_server.base_url, max_concurrency=2, timeout_s=600)
    for name, b in (("openai", backend), ("hf", hf_unbatched)):
        ev(b, protocol, pairs, tmp_path / name, params=params, progress=False, write_report=False)

    def records(name):
        lines = (tmp_path / name / "judgments.jsonl").read_text().splitlines()
        return {(r["pair_id"], r["order"]): r for r in map(json.loads, lines)}

    remote, local = records("openai"), records("hf")
    assert remote.keys() == local.keys() and len(remote) == 2
    for key in remote:
        assert remote[key]["raw_output"] == local[key]["raw_output"], key
        assert remote[key]["decision"] == local[key]["decision"], key


def test_reward_server_on_embedded_model(embedded_model_dir, hf_unbatched):
    from judgerl.serve.app import create_app
    from judgerl.serve.client import JudgeClient
    from judgerl.serve.server_thread import ServerThread

    app = create_app(hf_unbatched, "pos", params=SamplingParams(max_new_tokens=12))
    with ServerThread(app) as server, JudgeClient(server.url) as client:
        out = client.rewards(["What is 2 + 2?", "Name a fruit."], ["4", "An apple."])
        assert len(out["rewards"]) == 2 and all(0.0 <= r <= 1.0 for r in out["rewards"])
        assert out["n_invalid"] == out["valid"].count(False)
        results = client.score([{"prompt": "Say hi.", "response": "Hi!"}])
        assert isinstance(results[0]["raw"], str) and results[0]["raw"]
        assert client.health()["batching"]["prompts"] == 3
