"""The RL frameworks' own request shapes (issue 26) against a real server: OpenRLHF v0.8 (batched) and
v0.11 (one query per request, no X-Request-ID), verl's reward loop, TRL's GRPOTrainer reward call. In each,
a batch with one bad item gets valid rewards for the others. The shapes are fixture copies
(tests/fixtures/peers/*.json name the peer code they were taken from)."""

from __future__ import annotations

import importlib
import importlib.util
import json
from pathlib import Path

import httpx
import pytest

from judgerl.backends import ScriptedBackend
from judgerl.serve.app import create_app
from judgerl.serve.server_thread import ServerThread

PEERS = Path(__file__).parent / "fixtures" / "peers"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def peer(name: str) -> dict:
    return json.loads((PEERS / name).read_text("utf-8"))


def example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def words_judge(messages, params) -> str:
    """Pointwise: score = words in the judged response (capped at 10); the instruction must be plain."""
    text = messages[-1]["content"]
    assert "<|im_start|>" not in text and "<|im_end|>" not in text
    answer = text.split("[The Start of Assistant's Answer]")[1].split("[The End of Assistant's Answer]")[0]
    return f"<think>counted the words</think><score>{min(10, len(answer.split()))}</score>"


def reference_judge(messages, params) -> str:
    text = messages[-1]["content"]
    assert "[The Start of Assistant B's Answer]\n\n[The End" not in text  # never an empty reference
    return "<think>A is fine</think><verdict>A</verdict>"


@pytest.fixture(scope="module")
def pointwise():
    with ServerThread(create_app(ScriptedBackend(words_judge), "pos")) as server:
        yield server


@pytest.fixture(scope="module")
def pairwise():
    with ServerThread(create_app(ScriptedBackend(reference_judge), "pav")) as server:
        yield server


def openrlhf_post(url: str, body: dict) -> dict:
    """OpenRLHF's request: plain JSON POST, 180 s timeout, no X-Request-ID."""
    r = httpx.post(url, json={k: v for k, v in body.items() if not k.startswith("_")}, timeout=180)
    r.raise_for_status()
    return r.json()


@pytest.mark.server
def test_openrlhf_v08_batch_with_a_left_truncated_query(pointwise):
    out = openrlhf_post(f"{pointwise.url}/get_reward", peer("openrlhf_v0.8_request.json"))
    assert out["rewards"][0] == pytest.approx(0.3) and out["rewards"][2] == pytest.approx(0.6)
    assert out["rewards"][1] == 0.0 and out["reasons"] == [None, "bad_query", None]
    assert out["extra_logs"]["judge_valid"] == [1.0, 0.0, 1.0]
    assert out["extra_logs"]["judge_bad_query"] == [0.0, 1.0, 0.0]
    assert all(len(v) == 3 and all(isinstance(x, float) for x in v) for v in out["extra_logs"].values())


@pytest.mark.server
def test_openrlhf_v011_one_query_per_request_and_the_file_entry_point(pointwise, monkeypatch):
    body = peer("openrlhf_v0.11_request.json")
    out = openrlhf_post(f"{pointwise.url}/get_reward", body)
    assert out["rewards"] == [pytest.approx(0.3)] and out["scores"] == out["rewards"]
    monkeypatch.setenv("JUDGERL_REWARD_URL", pointwise.url)
    tensors = example("openrlhf_remote_rm").reward_func(body["query"], body["prompts"], body["labels"])
    assert tensors["rewards"].tolist() == pytest.approx([0.3])


@pytest.mark.server
def test_openrlhf_v011_a_bad_query_alone_is_answered_not_refused(pointwise):
    """v0.11 sends each query of a batch in its own request and leaves None when one fails after 5 tries:
    the left-truncated query must get the invalid reward with HTTP 200, the others their rewards."""
    batch = peer("openrlhf_v0.8_request.json")
    outs = [openrlhf_post(f"{pointwise.url}/get_reward", {"query": [q], "prompts": [p], "labels": [label]})
            for q, p, label in zip(batch["query"], batch["prompts"], batch["labels"])]
    assert [o["rewards"] for o in outs] == [[pytest.approx(0.3)], [0.0], [pytest.approx(0.6)]]
    assert [o["reasons"] for o in outs] == [[None], ["bad_query"], [None]]


@pytest.mark.server
def test_openrlhf_empty_labels_are_no_reference_on_a_pairwise_server(pairwise):
    body = peer("openrlhf_v0.8_request.json")
    body["labels"] = ["13", "", "Paris"]
    out = openrlhf_post(f"{pairwise.url}/get_reward", body)
    # item 0 judged against "13"; item 1 is truncated; item 2 judged; no "" reference ever reaches the judge
    assert out["rewards"] == [1.0, 0.0, 1.0] and out["reasons"] == [None, "bad_query", None]
    body["labels"] = ["", "", ""]
    out = openrlhf_post(f"{pairwise.url}/get_reward", body)
    assert out["reasons"] == ["no_reference", "bad_query", "no_reference"]
    assert out["extra_logs"]["judge_no_reference"] == [1.0, 0.0, 1.0]


@pytest.mark.server
def test_verl_reward_loop_calls(pointwise, monkeypatch):
    monkeypatch.setenv("JUDGERL_REWARD_URL", pointwise.url)
    verl = example("verl_reward")
    results = [verl.compute_score(**call) for call in peer("verl_reward_loop_calls.json")["calls"]]
    assert [r["score"] for r in results] == [pytest.approx(0.3), 0.0, pytest.approx(0.6)]
    assert [r["judge_valid"] for r in results] == [1.0, 0.0, 1.0]
    assert [r["judge_reason"] for r in results] == ["", "no_prompt", ""]
    assert all(set(r) == {"score", "judge_valid", "judge_reason"} for r in results)  # verl stacks them by key
    # the legacy BatchRewardManager's one call for the whole batch: the item without a question is the bad one
    calls = peer("verl_reward_loop_calls.json")["calls"]
    batch = verl.compute_score_batch([c["data_source"] for c in calls], [c["solution_str"] for c in calls],
                                     [c["ground_truth"] for c in calls], [c["extra_info"] for c in calls])
    assert batch == results


@pytest.mark.server
def test_trl_grpo_reward_call_logs_verdicts_and_keeps_the_system_prompt(pointwise, monkeypatch):
    call = peer("trl_grpo_reward_call.json")
    extra: dict[str, list] = {}
    metrics: dict[str, float] = {}
    monkeypatch.setenv("JUDGERL_REWARD_URL", pointwise.url)
    from judgerl.serve.trl_reward import judge_reward

    rewards = judge_reward(call["completions"], prompts=call["prompts"], completion_ids=call["completion_ids"],
                           reference=call["reference"], trainer_state=None,
                           log_extra=lambda col, vals: extra.setdefault(col, []).extend(vals),
                           log_metric=lambda name, v: metrics.__setitem__(name, v))
    assert rewards == [pytest.approx(0.3), 0.0, pytest.approx(0.6)]
    assert extra["judge_verdict"] == ["score 3", "invalid: guard:empty", "score 6"]
    assert extra["judge_reasoning"][0].startswith("<think>counted the words</think>")
    assert extra["judge_reasoning"][1] is None
    assert metrics["judge/valid_rate"] == pytest.approx(2 / 3)


def test_trl_resolves_the_reward_function_by_its_dotted_path():
    """``trl grpo --reward_funcs judgerl.serve.trl_reward.judge_reward``: TRL splits on the last dot and
    getattr's the function (trl/scripts/grpo.py)."""
    module_path, name = "judgerl.serve.trl_reward.judge_reward".rsplit(".", 1)
    fn = getattr(importlib.import_module(module_path), name)
    assert callable(fn) and fn.__name__ == "judge_reward"


@pytest.mark.server
def test_system_prompts_reach_the_judge(monkeypatch):
    seen: list[str] = []

    def judge(messages, params):
        seen.append(messages[-1]["content"])
        return "<score>5</score>"

    with ServerThread(create_app(ScriptedBackend(judge), "pos")) as server:
        from judgerl.serve.client import remote_reward

        prompt = [{"role": "system", "content": "Reply only in French."}, {"role": "user", "content": "Hello?"}]
        remote_reward(server.url)(["Bonjour !"], prompts=[prompt])
    assert "Reply only in French." in seen[0] and "Hello?" in seen[0]
