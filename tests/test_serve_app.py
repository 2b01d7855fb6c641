"""The reward server app with a scripted judge: endpoints, rewards, validation, limits, errors."""

from __future__ import annotations

import json
import threading
import time

import pytest
from fastapi.testclient import TestClient

from judgerl.backends import SamplingParams, ScriptedBackend
from judgerl.protocols import get_protocol
from judgerl.judge.aggregate import aggregate_decisions
from judgerl.serve.app import ServeConfig, create_app
from judgerl.types import Decision


def content(messages) -> str:
    return "\n".join(m["content"] for m in messages)


def pairwise_judge(messages, params) -> str:
    """Prefers the response containing GOOD; says nothing parseable for 'garbage' prompts."""
    text = content(messages)
    if "garbage" in text:
        return "I cannot decide."
    a_part = text.split("[The Start of Assistant A's Answer]")[1].split("[The End of Assistant A's Answer]")[0]
    return f"<think>compare</think><verdict>{'A' if 'GOOD' in a_part else 'B'}</verdict>"


def pointwise_judge(messages, params) -> str:
    """Score = the number after 'score=' in the response; invalid for 'garbage'."""
    text = content(messages)
    if "garbage" in text:
        return "<think>hmm</think> no score"
    value = text.split("score=")[1].split()[0] if "score=" in text else "5"
    return f"<think>ok</think><score>{value}</score>"


@pytest.fixture
def pairwise_client():
    app = create_app(ScriptedBackend(pairwise_judge), "pav", params=SamplingParams(max_new_tokens=64))
    with TestClient(app) as c:
        yield c


@pytest.fixture
def pointwise_client():
    app = create_app(ScriptedBackend(pointwise_judge), "pos", params=SamplingParams(max_new_tokens=64))
    with TestClient(app) as c:
        yield c


def test_health(pairwise_client):
    h = pairwise_client.get("/health").json()
    assert h["status"] == "ok" and h["protocol"] == "pav" and h["kind"] == "pairwise"
    assert h["params"]["max_new_tokens"] == 64 and "batching" in h


def test_judge_pairwise_single_and_batch(pairwise_client):
    r = pairwise_client.post("/v1/judge/pairwise", json={"prompt": "q", "response_a": "bad", "response_b": "GOOD"})
    assert r.status_code == 200
    body = r.json()
    assert body["verdict"] == "B" and body["valid"] is True and "<verdict>B</verdict>" in body["raw"]
    r = pairwise_client.post(
        "/v1/judge/pairwise",
        json={"items": [
            {"prompt": "q", "response_a": "GOOD", "response_b": "x"},
            {"prompt": "garbage", "response_a": "a", "response_b": "b"},
        ]},
    )
    results = r.json()["results"]
    assert results[0]["verdict"] == "A" and results[0]["valid"]
    assert results[1]["valid"] is False and results[1]["verdict"] is None and results[1]["invalid_reason"]


def test_pairwise_rewards_against_reference(pairwise_client):
    r = pairwise_client.post(
        "/v1/rewards",
        json={"items": [
            {"prompt": "q", "response": "GOOD answer", "reference": "ref"},
            {"prompt": "q", "response": "weak", "reference": "GOOD ref"},
            {"prompt": "garbage", "response": "x", "reference": "y"},
        ]},
    )
    body = r.json()
    assert body["rewards"] == [1.0, 0.0, 0.0]
    assert body["valid"] == [True, True, False] and body["n_invalid"] == 1


def test_pairwise_rewards_both_orders_cancel_position_bias():
    always_a = ScriptedBackend(lambda m, p: "<think>x</think><verdict>A</verdict>")
    app = create_app(always_a, "pav", config=ServeConfig(pairwise_both_orders=True))
    with TestClient(app) as c:
        body = c.post("/v1/rewards", json={"items": [{"prompt": "q", "response": "r", "reference": "ref"}]}).json()
    # A position-biased judge wins once and loses once: reward 0.5, not 1.0.
    assert body["rewards"] == [0.5] and always_a.calls and sum(len(b) for b in always_a.calls) == 2


def test_pairwise_server_requires_reference(pairwise_client):
    r = pairwise_client.post("/v1/rewards", json={"items": [{"prompt": "q", "response": "a"}]})
    assert r.status_code == 422 and "reference is required" in r.json()["error"]


def test_score_needs_pointwise_protocol(pairwise_client):
    r = pairwise_client.post("/v1/score", json={"prompt": "q", "response": "a"})
    assert r.status_code == 400 and "pointwise" in r.json()["error"]


def test_pointwise_score_and_normalised_rewards(pointwise_client):
    r = pointwise_client.post("/v1/score", json={"prompt": "q", "response": "score=7"})
    body = r.json()
    assert body["score"] == 7.0 and body["normalized"] == pytest.approx(0.7) and body["valid"]
    r = pointwise_client.post(
        "/v1/rewards",
        json={"items": [
            {"prompt": "q", "response": "score=10"},
            {"prompt": "q", "response": "score=0"},
            {"prompt": "garbage", "response": "x"},
        ]},
    )
    body = r.json()
    assert body["rewards"] == [1.0, 0.0, 0.0] and body["scores"] == [10.0, 0.0, None]
    assert body["valid"] == [True, True, False] and body["n_invalid"] == 1


def test_pointwise_protocol_judges_pairs_by_scores(pointwise_client):
    r = pointwise_client.post(
        "/v1/judge/pairwise", json={"items": [
            {"prompt": "q", "response_a": "score=3", "response_b": "score=8"},
            {"prompt": "q", "response_a": "score=4", "response_b": "score=4"},
        ]},
    )
    a, b = r.json()["results"]
    assert a["verdict"] == "B" and a["scores"] == [3.0, 8.0]
    assert b["verdict"] == "tie"


def test_invalid_reward_is_configurable():
    app = create_app(ScriptedBackend(pointwise_judge), "pos", config=ServeConfig(invalid_reward=-1.0))
    with TestClient(app) as c:
        body = c.post("/v1/rewards", json={"items": [{"prompt": "garbage", "response": "x"}]}).json()
    assert body["rewards"] == [-1.0] and body["invalid_reward"] == -1.0


def test_custom_score_range_from_protocol_kwargs():
    app = create_app(ScriptedBackend(pointwise_judge), "pos", protocol_kwargs={"min_score": 0, "max_score": 9})
    with TestClient(app) as c:
        body = c.post("/v1/rewards", json={"items": [{"prompt": "q", "response": "score=9"}]}).json()
    assert body["rewards"] == [1.0]


def test_samples_mean_score_and_majority_vote():
    outs = iter(["<score>2</score>", "<score>4</score>", "<score>9</score>"])
    app = create_app(
        ScriptedBackend(lambda m, p: next(outs)),
        "pos",
        params=SamplingParams(temperature=0.7, seed=0),
        config=ServeConfig(samples=3),
    )
    with TestClient(app) as c:
        body = c.post("/v1/score", json={"prompt": "q", "response": "r"}).json()
    assert body["score"] == pytest.approx(5.0) and len(body["raw"]) == 3

    votes = [Decision(True, verdict="A"), Decision(True, verdict="B"), Decision(True, verdict="A"), Decision.invalid("x")]
    assert aggregate_decisions(votes, "pairwise").verdict == "A"
    assert aggregate_decisions(votes[:2], "pairwise").verdict == "tie"
    assert not aggregate_decisions([Decision.invalid("missing_final_answer")], "pairwise").valid
    scored = [Decision(True, scores=(2.0,)), Decision.invalid("x"), Decision(True, scores=(4.0,))]
    assert aggregate_decisions(scored, "pointwise").scores == (3.0,)


def test_openrlhf_get_reward_splits_templated_queries(pointwise_client):
    prompt = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nRate me<|im_end|>\n<|im_start|>assistant\n"
    r = pointwise_client.post(
        "/get_reward",
        json={"query": [prompt + "score=8<|im_end|>", prompt + "score=2"], "prompts": [prompt, prompt], "labels": ["", ""]},
    )
    body = r.json()
    assert body["rewards"] == [pytest.approx(0.8), pytest.approx(0.2)] and body["scores"] == body["rewards"]
    assert body["extra_logs"]["judge_valid"] == [1.0, 1.0]


def test_openrlhf_get_reward_errors(pointwise_client):
    # A query that does not start with its prompt fails only itself (issue 26): invalid reward + reason.
    r = pointwise_client.post("/get_reward", json={"query": ["abc"], "prompts": ["xyz"]})
    assert r.status_code == 200 and r.json()["reasons"] == ["bad_query"] and "query[0]" in r.json()["errors"][0]
    r = pointwise_client.post("/get_reward", json={"query": ["abc"]})
    assert r.status_code == 422 and "prompts" in r.json()["error"]
    r = pointwise_client.post("/get_reward", json={"query": ["a", "b"], "prompts": ["a"]})
    assert r.status_code == 422 and "'prompts' has 1 entries" in r.json()["error"]


@pytest.mark.parametrize(
    "path, body, status, fragment",
    [
        ("/v1/judge/pairwise", b'{"prompt": "q", "response_a": ', 400, "malformed JSON"),
        ("/v1/judge/pairwise", b"not json at all", 400, "malformed JSON"),
        ("/v1/judge/pairwise", {"prompt": "q", "response_a": "a"}, 422, "response_b"),
        ("/v1/judge/pairwise", {}, 422, "missing fields"),
        ("/v1/judge/pairwise", {"prompt": "q", "response_a": "a", "response_b": "b", "respons_c": 1}, 422, "respons_c"),
        ("/v1/judge/pairwise", {"prompt": 3, "response_a": "a", "response_b": "b"}, 422, "prompt"),
        ("/v1/judge/pairwise", {"items": []}, 422, "items"),
        ("/v1/judge/pairwise", {"items": [{"prompt": "q"}], "prompt": "q"}, 422, "not both"),
        ("/v1/rewards", {"items": [{"prompt": "q"}]}, 422, "items.0.response"),
        ("/v1/rewards", [1, 2], 422, "invalid request"),
    ],
)
def test_bad_requests_get_clear_4xx(pairwise_client, path, body, status, fragment):
    if isinstance(body, bytes):
        r = pairwise_client.post(path, content=body, headers={"content-type": "application/json"})
    else:
        r = pairwise_client.post(path, json=body)
    assert r.status_code == status, r.text
    assert fragment in r.json()["error"]
    # the server keeps serving
    assert pairwise_client.post("/v1/judge/pairwise", json={"prompt": "q", "response_a": "GOOD", "response_b": "b"}).status_code == 200


def test_size_limits():
    cfg = ServeConfig(max_body_bytes=10_000, max_items=3, max_text_chars=100)
    app = create_app(ScriptedBackend(pairwise_judge), "pav", config=cfg)
    with TestClient(app) as c:
        r = c.post("/v1/judge/pairwise", content=b"x" * 20_000, headers={"content-type": "application/json"})
        assert r.status_code == 413 and "limit is 10000 bytes" in r.json()["error"]

        def chunks():  # no Content-Length: checked while streaming
            for _ in range(20):
                yield b" " * 1000

        r = c.post("/v1/judge/pairwise", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413
        item = {"prompt": "q", "response_a": "a", "response_b": "b"}
        r = c.post("/v1/judge/pairwise", json={"items": [item] * 4})
        assert r.status_code == 413 and "limit is 3" in r.json()["error"]
        r = c.post("/v1/judge/pairwise", json={"prompt": "q", "response_a": "a" * 101, "response_b": "b"})
        assert r.status_code == 413 and "items[0].response_a has 101 characters" in r.json()["error"]
        assert c.get("/health").json()["requests"]["http_413"] == 4


def test_backend_failure_is_500_and_server_recovers():
    state = {"fail": True}

    def flaky(messages, params):
        if state["fail"]:
            raise RuntimeError("CUDA out of memory")
        return "<verdict>A</verdict>"

    app = create_app(ScriptedBackend(flaky), "pav")
    with TestClient(app) as c:
        r = c.post("/v1/judge/pairwise", json={"prompt": "q", "response_a": "a", "response_b": "b"})
        # a failure of the item is reported on the item, never as a 500
        assert r.status_code == 200
        body = r.json()
        assert body["valid"] is False and body["invalid_reason"] == "generation_failed"
        assert "CUDA out of memory" in body["error"]
        state["fail"] = False
        r = c.post("/v1/judge/pairwise", json={"prompt": "q", "response_a": "a", "response_b": "b"})
        assert r.status_code == 200 and r.json()["verdict"] == "A"
        health = c.get("/health").json()
        assert health["batching"]["failed_items"] == 1 and health["requests"]["item_errors"] == 1


def test_queue_full_gives_503_with_retry_after():
    gate = threading.Event()

    def slow(messages, params):
        gate.wait(5)
        return "<verdict>A</verdict>"

    app = create_app(ScriptedBackend(slow), "pav", config=ServeConfig(max_pending=2, max_batch_size=1, max_wait_ms=0))
    item = {"prompt": "q", "response_a": "a", "response_b": "b"}
    with TestClient(app) as c:
        results = {}

        def first():
            results["first"] = c.post("/v1/judge/pairwise", json=item).status_code

        t = threading.Thread(target=first)
        t.start()
        time.sleep(0.3)  # the first prompt is generating (blocked on the gate)
        r = c.post("/v1/judge/pairwise", json={"items": [item] * 3})
        assert r.status_code == 503 and r.headers["retry-after"] == "1" and "busy" in r.json()["error"]
        gate.set()
        t.join(5)
        assert results["first"] == 200


def test_listwise_protocol_is_served():
    def best_good(messages, params):
        text = content(messages)
        blocks = text.split("[The Start of Response ")[1:]
        best = next(b.split("]")[0] for b in blocks if "GOOD" in b.split("[The End")[0])
        return f"<think>x</think><best>{best}</best>"

    app = create_app(ScriptedBackend(best_good), "listwise")
    with TestClient(app) as c:
        body = c.post("/v1/judge/listwise", json={"prompt": "q", "responses": ["a", "b", "GOOD c"]}).json()
        assert body["valid"] and body["best"] == 2 and body["ranking"] == [2]
        r = c.post("/v1/judge/listwise", json={"prompt": "q", "responses": ["only one"]})
        assert r.status_code == 422
        assert c.post("/v1/judge/pairwise", json={"prompt": "q", "response_a": "a", "response_b": "b"}).status_code == 400
        assert c.post("/v1/rewards", json={"items": [{"prompt": "q", "response": "a"}]}).status_code == 400


def test_unknown_protocol_name():
    with pytest.raises(ValueError, match="unknown judge protocol"):
        create_app(ScriptedBackend(["x"]), "nope")


@pytest.mark.parametrize("kwargs", [{"max_items": 0}, {"max_wait_ms": -1}, {"samples": 0}, {"score_range": (5, 1)}])
def test_bad_config(kwargs):
    with pytest.raises(ValueError):
        ServeConfig(**kwargs)


def test_protocol_object_accepted_and_json_is_plain():
    app = create_app(ScriptedBackend(pairwise_judge), get_protocol("PaS"))
    with TestClient(app) as c:
        r = c.post("/v1/judge/pairwise", json={"prompt": "q", "response_a": "a", "response_b": "b"})
    # PaS wants scores; the scripted verdict-only output is reported invalid, not turned into a tie.
    body = json.loads(r.text)
    assert r.status_code == 200 and body["valid"] is False and body["verdict"] is None
