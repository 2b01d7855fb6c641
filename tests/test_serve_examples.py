"""The RL-framework examples (verl, OpenRLHF, TRL) and the client, against a real uvicorn server
on a loopback port with a scripted judge."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import httpx
import pytest

from judgerl.backends import ScriptedBackend
from judgerl.serve.app import create_app
from judgerl.rewards._columns import completion_text, prompt_text
from judgerl.serve.client import JudgeClient, JudgeClientError, remote_reward
from judgerl.serve.server_thread import ServerThread

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def length_judge(messages, params) -> str:
    """Pointwise: score = number of words in the judged response, capped at 10."""
    text = messages[-1]["content"]
    answer = text.split("[The Start of Assistant's Answer]")[1].split("[The End of Assistant's Answer]")[0]
    return f"<think>count</think><score>{min(10, len(answer.split()))}</score>"


def pairwise_judge(messages, params) -> str:
    text = messages[-1]["content"]
    a = text.split("[The Start of Assistant A's Answer]")[1].split("[The End of Assistant A's Answer]")[0]
    return f"<think>x</think><verdict>{'A' if 'GOOD' in a else 'B'}</verdict>"


@pytest.fixture(scope="module")
def pointwise_server():
    with ServerThread(create_app(ScriptedBackend(length_judge), "pos")) as server:
        yield server


@pytest.fixture(scope="module")
def pairwise_server():
    with ServerThread(create_app(ScriptedBackend(pairwise_judge), "pav")) as server:
        yield server


@pytest.mark.server
def test_verl_compute_score(pointwise_server, monkeypatch):
    monkeypatch.setenv("JUDGERL_REWARD_URL", pointwise_server.url)
    verl = load_example("verl_reward")
    score = verl.compute_score(data_source="gsm8k", solution_str="one two three four five", ground_truth="5",
                               extra_info={"question": "Count to five."}, reward_router_address=None)
    assert score == {"score": pytest.approx(0.5), "judge_valid": 1.0, "judge_reason": ""}
    batch = verl.compute_score_batch(
        ["a", "a"], ["one", "one two three"], [None, None], [{"prompt": "p"}, {"question": "q"}]
    )
    assert [b["score"] for b in batch] == [pytest.approx(0.1), pytest.approx(0.3)]
    # No question in extra_info: that item is invalid with its reason, never a KeyError (issue 26).
    assert verl.compute_score("a", "x", None, extra_info={"index": 3}) == {
        "score": 0.0, "judge_valid": 0.0, "judge_reason": "no_prompt"}


@pytest.mark.server
def test_verl_with_pairwise_server_uses_ground_truth_as_reference(pairwise_server, monkeypatch):
    monkeypatch.setenv("JUDGERL_REWARD_URL", pairwise_server.url)
    verl = load_example("verl_reward")
    assert verl.compute_score("s", "GOOD answer", "reference", {"question": "q"})["score"] == 1.0
    assert verl.compute_score("s", "meh", "GOOD reference", {"question": "q"})["score"] == 0.0
    assert verl.compute_score("s", "GOOD", "", {"question": "q"})["judge_reason"] == "no_reference"


@pytest.mark.server
def test_openrlhf_url_and_reward_func(pointwise_server, monkeypatch):
    rm = load_example("openrlhf_remote_rm")
    prompt = "<|im_start|>user\nSay something.<|im_end|>\n<|im_start|>assistant\n"
    queries = [prompt + "a b c<|im_end|>", prompt + "a b c d e f g<|im_end|>"]
    out = rm.request_rewards(f"{pointwise_server.url}/get_reward", queries, [prompt, prompt], ["", ""])
    assert out["rewards"] == [pytest.approx(0.3), pytest.approx(0.7)]
    monkeypatch.setenv("JUDGERL_REWARD_URL", pointwise_server.url)
    tensors = rm.reward_func(queries, [prompt, prompt], None)
    assert tensors["rewards"].tolist() == pytest.approx([0.3, 0.7])
    assert tensors["extra_logs"]["judge_valid"].tolist() == [1.0, 1.0]


@pytest.mark.server
def test_trl_remote_reward_standard_and_conversational(pointwise_server):
    reward = remote_reward(pointwise_server.url)
    assert reward.__name__ == "judge_reward"
    assert reward(["one two", "one"], prompts=["p", "p"]) == [pytest.approx(0.2), pytest.approx(0.1)]
    conv_prompts = [[{"role": "system", "content": "s"}, {"role": "user", "content": "Hi"}]] * 2
    conv_completions = [[{"role": "assistant", "content": "w1 w2 w3"}], [{"role": "assistant", "content": "w"}]]
    out = reward(conv_completions, prompts=conv_prompts, completion_ids=[[1], [2]], trainer_state=None)
    assert out == [pytest.approx(0.3), pytest.approx(0.1)]


@pytest.mark.server
def test_trl_remote_reward_with_reference_column_and_invalid_none(pairwise_server):
    reward = remote_reward(pairwise_server.url, reference_column="reference")
    assert reward(["GOOD", "bad"], prompts=["q", "q"], reference=["r", "GOOD r"]) == [1.0, 0.0]
    with pytest.raises(KeyError, match="reference"):
        reward(["x"], prompts=["q"])
    with pytest.raises(ValueError, match="prompts"):
        reward(["x"])


@pytest.mark.server
def test_trl_reward_invalid_as_none():
    judge = ScriptedBackend(lambda m, p: "no score here")
    with ServerThread(create_app(judge, "pos")) as server:
        assert remote_reward(server.url, invalid_as_none=True)(["x"], prompts=["q"]) == [None]
        assert remote_reward(server.url)(["x"], prompts=["q"]) == [0.0]


@pytest.mark.server
def test_client_methods_and_4xx(pairwise_server):
    with JudgeClient(pairwise_server.url) as c:
        assert c.health()["protocol"] == "pav"
        res = c.judge_pairs([{"prompt": "q", "response_a": "GOOD", "response_b": "b"}])
        assert res[0]["verdict"] == "A"
        with pytest.raises(JudgeClientError, match="HTTP 400.*pointwise") as info:
            c.score([{"prompt": "q", "response": "r"}])
        assert info.value.status == 400
        with pytest.raises(ValueError, match="same length"):
            c.rewards(["q"], ["a", "b"])


def test_client_retries_503_then_succeeds():
    calls = []

    def handler(request):
        calls.append(1)
        if len(calls) < 3:
            return httpx.Response(503, headers={"retry-after": "0"}, json={"error": "server busy"})
        return httpx.Response(200, json={"rewards": [1.0], "valid": [True]})

    c = JudgeClient("http://judge.test", transport=httpx.MockTransport(handler), backoff_base_s=0)
    assert c.rewards(["q"], ["r"])["rewards"] == [1.0] and len(calls) == 3


def test_client_gives_up_on_connection_errors():
    def handler(request):
        raise httpx.ConnectError("refused", request=request)

    c = JudgeClient("http://judge.test", transport=httpx.MockTransport(handler), max_retries=1, backoff_base_s=0)
    with pytest.raises(JudgeClientError, match="ConnectError") as info:
        c.health()
    assert info.value.status is None


def test_prompt_and_completion_text_shapes():
    assert prompt_text("plain") == "plain"
    multi = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]
    assert prompt_text(multi) == "user: a\n\nassistant: b\n\nuser: c"
    assert completion_text([{"role": "assistant", "content": "x"}, {"role": "assistant", "content": "y"}]) == "xy"
    with pytest.raises(TypeError):
        prompt_text(3)
    with pytest.raises(TypeError):
        completion_text([{"no": "content"}])


def test_server_thread_reports_port_in_use():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        server = ServerThread(create_app(ScriptedBackend(["x"]), "pav"), port=port, startup_timeout_s=5)
        with pytest.raises(RuntimeError, match="did not start"):
            server.start()


@pytest.mark.slow
@pytest.mark.server
def test_trl_grpo_example_trains_against_the_server(pointwise_server, embedded_model_dir, tmp_path):
    """One GRPO step of the embedded model as policy, rewarded by the (scripted) judge server."""
    trl_example = load_example("trl_remote_reward")
    before = pointwise_server.server.config.app  # the app object; its service counts requests
    log = trl_example.main(["--url", pointwise_server.url, "--policy", str(embedded_model_dir),
                            "--out", str(tmp_path / "grpo"), "--steps", "1", "--max-completion-length", "8"])
    assert "train_loss" in log or "loss" in log
    assert before.state.service.counts["rewards"] >= 1
