"""Score modes on the reward server (parsed / mean / expected), their reporting (never a silent
fallback), and the client's retries: item failures re-requested, a restarting server waited for."""

from __future__ import annotations

import threading
import time

import pytest
from fastapi.testclient import TestClient

torch = pytest.importorskip("torch")

from test_backends_hf import build_tiny_model  # noqa: E402

from judgerl.backends import SamplingParams, ScriptedBackend  # noqa: E402
from judgerl.backends.hf import HFBackend  # noqa: E402
from judgerl.judge import Judge, JudgeInput  # noqa: E402
from judgerl.protocols import get_protocol  # noqa: E402
from judgerl.serve.app import ServeConfig, create_app  # noqa: E402
from judgerl.serve.client import JudgeClient, JudgeClientError, remote_reward  # noqa: E402
from judgerl.types import Completion  # noqa: E402

PROTO = get_protocol("pos", min_score=0, max_score=9)


def script(messages, params):
    text = messages[-1]["content"]
    if "garbage" in text:
        return "<think>?</think> no score"
    return f"<think>ok</think>\n<score>{len(text) % 10}</score>"


@pytest.fixture(scope="module")
def hf_scripted(tmp_path_factory):
    """An hf backend (the tiny model's logits) whose judgments are scripted."""
    backend = HFBackend(str(build_tiny_model(tmp_path_factory.mktemp("tiny"))))

    def generate(prompts, params, *, seeds=None, on_result=None):
        out = [Completion(script(p, params), 1, 1) for p in prompts]
        if on_result is not None:
            for i, c in enumerate(out):
                on_result(i, c)
        return out

    backend.generate = generate
    return backend


def test_expected_score_endpoint_equals_judge_expected_scores(hf_scripted):
    judge = Judge(PROTO, hf_scripted, SamplingParams(max_new_tokens=8))
    app = create_app(judge, config=ServeConfig(score_mode="expected"))
    with TestClient(app) as c:
        r = c.post("/v1/score", json={"items": [{"prompt": "Say hi", "response": "hello"},
                                                 {"prompt": "Say hi", "response": "garbage"}]}).json()
        rw = c.post("/v1/rewards", json={"items": [{"prompt": "Say hi", "response": "hello"}]}).json()
        parsed = c.post("/v1/score", json={"prompt": "Say hi", "response": "hello", "score_mode": "parsed"}).json()
    [agg] = judge.judge([JudgeInput("Say hi", ("hello",))])
    [es] = judge.expected_scores(list(agg.samples))
    ok, bad = r["results"]
    assert ok["score_mode"] == "expected" and ok["score"] == pytest.approx(es.value)
    assert ok["parsed_score"] == agg.decision.scores[0] and ok["expected_mass"] == pytest.approx(es.mass)
    assert ok["normalized"] == pytest.approx(es.value / 9) and "score_mode_note" not in ok
    assert not bad["valid"] and bad["invalid_reason"] == "missing_final_answer" and bad["score"] is None
    assert rw["score_mode"] == "expected" and rw["scores"][0] == pytest.approx(es.value)
    assert rw["rewards"][0] == pytest.approx(es.value / 9) and rw["reasons"] == [None]
    assert parsed["score_mode"] == "parsed" and parsed["score"] == agg.decision.scores[0]


def test_backend_without_logprobs_says_which_mode_it_used():
    judge = Judge(PROTO, ScriptedBackend(script), SamplingParams(max_new_tokens=8))
    with pytest.raises(ValueError, match="cannot give token probabilities"):
        create_app(judge, config=ServeConfig(score_mode="expected"))
    with TestClient(create_app(judge)) as c:
        one = c.post("/v1/score", json={"prompt": "p", "response": "r", "score_mode": "expected"}).json()
        rw = c.post("/v1/rewards", json={"items": [{"prompt": "p", "response": "r"}], "score_mode": "expected"}).json()
        default = c.post("/v1/rewards", json={"items": [{"prompt": "p", "response": "r"}]}).json()
        bad = c.post("/v1/score", json={"prompt": "p", "response": "r", "score_mode": "median"})
        health = c.get("/health").json()
    for body in (one, rw):
        assert body["score_mode"] == "parsed" and body["score_mode_requested"] == "expected"
        assert "cannot give token probabilities" in body["score_mode_note"]
    assert default["score_mode"] == "parsed" and "score_mode_note" not in default
    assert bad.status_code == 422 and "score_mode" in bad.json()["error"]
    assert health["requests"]["score_mode_fallback"] == 2


def test_mean_mode_and_pairwise_servers():
    judge = Judge(PROTO, ScriptedBackend(lambda m, p: f"<score>{3 if p.seed % 2 else 6}</score>"),
                  SamplingParams(max_new_tokens=8, temperature=0.7))
    with TestClient(create_app(judge, config=ServeConfig(samples=4))) as c:
        mean = c.post("/v1/score", json={"prompt": "p", "response": "r"}).json()
        parsed = c.post("/v1/score", json={"prompt": "p", "response": "r", "score_mode": "parsed"}).json()
    assert mean["score_mode"] == "mean" and 3 <= mean["score"] <= 6 and len(mean["raw"]) == 4
    assert parsed["score_mode"] == "parsed" and parsed["score"] in (3, 6) and isinstance(parsed["raw"], str)
    pav = Judge(get_protocol("pav"), ScriptedBackend(["<verdict>A</verdict>"], cycle=True))
    with pytest.raises(ValueError, match="pointwise"):
        create_app(pav, config=ServeConfig(score_mode="parsed"))
    with TestClient(create_app(pav)) as c:
        r = c.post("/v1/rewards", json={"items": [{"prompt": "p", "response": "r", "reference": "x"}],
                                        "score_mode": "expected"})
        ok = c.post("/v1/rewards", json={"items": [{"prompt": "p", "response": "r", "reference": "x"}]}).json()
    assert r.status_code == 400 and "pointwise" in r.json()["error"]
    assert ok["rewards"] == [1.0] and "score_mode" not in ok


@pytest.mark.server
def test_client_re_requests_items_the_server_failed_to_judge():
    from judgerl.serve.server_thread import ServerThread

    calls = {"n": 0}

    class Flaky(ScriptedBackend):
        def generate(self, prompts, params, **kw):
            calls["n"] += 1
            if calls["n"] == 1:
                raise RuntimeError("GPU fell over")
            return super().generate(prompts, params, **kw)

    judge = Judge(PROTO, Flaky(script), SamplingParams(max_new_tokens=8))
    with ServerThread(create_app(judge, config=ServeConfig(max_wait_ms=1))) as server:
        reward = remote_reward(server.url, retry_failed=2)
        out = reward(["hello", "garbage"], prompts=["p", "p"])
        assert reward.last.reasons == [None, "missing_final_answer"] and calls["n"] >= 2
        assert reward.last.valid == [True, False] and out[1] == 0.0
        client = JudgeClient(server.url)
        calls["n"] = 0
        with pytest.raises(JudgeClientError, match="could not be judged after 0 retries"):
            client.rewards(["p"], ["hello"], retry_failed=0)


@pytest.mark.server
def test_client_waits_for_a_restarting_server_and_gives_up_after_its_budget():
    from judgerl.serve.server_thread import ServerThread, free_port

    judge = Judge(PROTO, ScriptedBackend(script), SamplingParams(max_new_tokens=8))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    holder = {}

    def start_later():
        time.sleep(1.0)
        holder["s"] = ServerThread(create_app(judge), port=port).start()

    t = threading.Thread(target=start_later)
    t.start()
    try:
        client = JudgeClient(url, max_retries=0, max_retry_s=20, backoff_base_s=0.05, max_backoff_s=0.3)
        out = client.rewards(["p"], ["hello"])
        assert out["valid"] == [True]
    finally:
        t.join()
        holder["s"].stop()
    t0 = time.monotonic()
    with pytest.raises(JudgeClientError, match="attempts"):
        JudgeClient(url, max_retries=0, max_retry_s=0.5, backoff_base_s=0.05).rewards(["p"], ["hello"])
    assert time.monotonic() - t0 < 5
