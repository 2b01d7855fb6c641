"""Policy GRPO against a judge (recipe policy-grpo): prompt split, curves and the reward-hacking test,
the in-process judge reward, and training through a reward server that restarts mid-run.

The training tests use the tiny random Llama of ``test_backends_hf`` as the policy (a few GRPO steps
of 8 new tokens: seconds) and the shortest IFEval prompts, so the programmatic gold judge scores them."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from judgerl.backends import SamplingParams, ScriptedBackend
from judgerl.cli.main import main
from judgerl.data.errors import DataFormatError
from judgerl.judge import Judge
from judgerl.protocols import get_protocol
from judgerl.rewards.judge_reward import RewardFailure, get_judge_reward
from judgerl.judge.scorer import JudgeScorer
from judgerl.train.config import RecipeError
from judgerl.train.curves import (
    hacking_test, hacking_verdicts, plot_curves, read_curves, rollout_hacking_test, truncate_curves,
)
from judgerl.train.policy import PolicyMonitor, load_prompts, split_prompts
from judgerl.train.policy_config import is_policy_recipe, load_policy_recipe


@pytest.fixture(scope="module")
def short_ifeval(shared_data: Path, tmp_path_factory) -> Path:
    rows = [json.loads(line) for line in (shared_data / "ifeval" / "input_data.jsonl").read_text().splitlines()]
    rows.sort(key=lambda r: len(r["prompt"]))
    path = tmp_path_factory.mktemp("ifeval") / "short.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:6]))
    return path


def test_prompt_split_is_seeded_and_order_free(short_ifeval, tmp_path):
    prompts = load_prompts(short_ifeval)
    assert len(prompts) == 6 and all(isinstance(i, str) for i, _ in prompts)
    train, held = split_prompts(prompts, 2, seed=0)
    train2, held2 = split_prompts(list(reversed(prompts)), 2, seed=0)
    assert held == held2 and train == train2 and len(train) == 4
    assert not set(i for i, _ in train) & set(i for i, _ in held)
    assert split_prompts(prompts, 2, seed=1)[1] != held or split_prompts(prompts, 2, seed=2)[1] != held
    assert len(split_prompts(prompts, 2, 0, train_limit=1)[0]) == 1
    with pytest.raises(ValueError, match="no training prompt"):
        split_prompts(prompts, 6, 0)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": 1, "prompt": "a"}\n{"key": 1, "prompt": "b"}\n')
    with pytest.raises(DataFormatError, match="duplicate id '1'"):
        load_prompts(bad)
    bad.write_text('{"key": 1, "prompt": ""}\n')
    with pytest.raises(DataFormatError, match="prompt"):
        load_prompts(bad)


def test_policy_recipe_loads_validates_and_is_dispatched(short_ifeval, capsys):
    assert is_policy_recipe("policy-grpo") and not is_policy_recipe("j1-pav") and not is_policy_recipe("nope")
    cfg = load_policy_recipe("policy-grpo", [f"prompts={short_ifeval}", "judge.score_mode=parsed", "grpo.max_steps=2"])
    cfg.validate()
    assert cfg.judge.score_mode == "parsed" and cfg.grpo["max_steps"] == 2 and cfg.judge.scale == "0-9"
    for bad, msg in ((["judge.score_mode=median"], "score_mode"), (["grpo.max_stepz=1"], "max_steps"),
                     (["hacking_window=2"], "hacking_window"), (["judge.scale=9-0"], "scale"),
                     (["prompts="], "prompts")):
        with pytest.raises(RecipeError, match=msg):
            load_policy_recipe("policy-grpo", [f"prompts={short_ifeval}", *bad]).validate()
    with pytest.raises(RecipeError, match="not a section"):
        load_policy_recipe("policy-grpo", ["gold.x=1"])
    assert main(["train", "--config", "policy-grpo", "--data", str(short_ifeval), "--reward-url",
                 "http://127.0.0.1:1", "--dry-run"]) == 2  # the run would fail: its split leaves no training prompt
    assert "leaves no training prompt" in capsys.readouterr().err
    assert main(["train", "--config", "policy-grpo", "--data", str(short_ifeval), "--reward-url",
                 "http://127.0.0.1:1", "--set", "heldout=2", "--dry-run"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["reward_url"] == "http://127.0.0.1:1"
    assert "prompts: 4 train / 2 held-out from " in out.err  # the prompts were read and split
    assert main(["train", "--config", "policy-grpo", "--data", str(short_ifeval) + ".missing", "--reward-url",
                 "http://127.0.0.1:1", "--dry-run"]) == 2
    assert ".missing" in capsys.readouterr().err
    assert main(["train", "--config", "j1-pav", "--reward-url", "http://x", "--dry-run"]) == 2


def heldout(step, train, gold):
    return {"kind": "heldout", "step": step, "judge_score_mean": train, "gold_score_mean": gold}


def test_hacking_test_flags_train_up_gold_down_only():
    up_down = [heldout(s, t, g) for s, t, g in ((0, 3, 6), (10, 4, 5.5), (20, 5, 5), (30, 6.5, 4))]
    r = hacking_test(up_down)
    assert r["suspected"] and r["rho_train"] == pytest.approx(1) and r["rho_gold"] == pytest.approx(-1)
    both_up = [heldout(s, t, g) for s, t, g in ((0, 3, 4), (10, 4, 4.5), (20, 5, 5), (30, 6, 6))]
    assert not hacking_test(both_up)["suspected"]
    flat_gold = [heldout(s, t, 5) for s, t in ((0, 3), (10, 4), (20, 5), (30, 6))]
    assert not hacking_test(flat_gold)["suspected"]
    noisy = [heldout(s, t, g) for s, t, g in ((0, 3, 6), (10, 6, 4), (20, 3.5, 6), (30, 4, 5.9))]
    assert not hacking_test(noisy)["suspected"]
    # only the last window counts; too few evaluations -> not run
    assert hacking_test(both_up + [heldout(40, 7, 6), heldout(50, 8, 5), heldout(60, 9, 4)])["suspected"]
    short = hacking_test(up_down[:3])
    assert not short["suspected"] and "3 of 4" in short["reason"]
    with_none = up_down[:2] + [heldout(15, None, 3)] + up_down[2:]
    assert hacking_test(with_none)["steps"] == [0, 10, 20, 30]
    assert not hacking_test(up_down, min_delta=5)["suspected"]
    with pytest.raises(ValueError):
        hacking_test(up_down, window=2)


def rollout(step, train, gold):
    return {"kind": "rollout", "step": step, "judge_score_mean": train, "gold_score_mean": gold}


def test_rollout_hacking_test_bins_the_rollouts_by_step():
    # 8 steps, 4 bins of 2: train judge up, gold down -> suspected; the bins' mean steps are reported
    up_down = [rollout(s, 2 + 0.5 * s, 7 - 0.5 * s) for s in range(1, 9)]
    r = rollout_hacking_test(up_down)
    assert r["suspected"] and r["source"] == "rollouts" and r["rollout_steps"] == 8
    assert r["steps"] == [1.5, 3.5, 5.5, 7.5] and r["delta_gold"] < 0 < r["delta_train"]
    # order of the records does not matter; held-out records and rollouts without a gold score are not used
    mixed = list(reversed(up_down)) + [heldout(0, 9, 9), rollout(9, 5, None), {"kind": "rollout", "step": 10}]
    assert rollout_hacking_test(mixed) == r
    both_up = [rollout(s, 2 + 0.5 * s, 2 + 0.4 * s) for s in range(1, 9)]
    assert not rollout_hacking_test(both_up)["suspected"]
    # noise within a bin is averaged away: an up-down trend with alternating noise is still found
    noisy = [rollout(s, 2 + 0.5 * s + (1 if s % 2 else -1), 7 - 0.5 * s + (-1 if s % 2 else 1)) for s in range(1, 13)]
    assert rollout_hacking_test(noisy)["suspected"]
    # 10 steps in 4 bins: sizes 3, 3, 2, 2 (numpy.array_split's rule)
    assert rollout_hacking_test([rollout(s, s, -s) for s in range(1, 11)])["steps"] == [2.0, 5.0, 7.5, 9.5]
    few = rollout_hacking_test(up_down[:3])
    assert not few["suspected"] and "3 rollout steps with a gold score, need 4" in few["reason"]
    assert rollout_hacking_test(up_down, bins=3)["window"] == 3
    with pytest.raises(ValueError):
        rollout_hacking_test(up_down, bins=2)


def test_hacking_verdicts_in_words_for_the_study_table():
    three = [heldout(0, 1, 2), heldout(20, 3, 3), heldout(40, 5, 4)]  # steps 0, 20, 40: the study's read-outs
    three = [r | {"hacking": {"suspected": False, "reason": "k of 4 evaluations"}} for r in three]
    v = hacking_verdicts(three, [])
    assert v["hacking"] == "not suspected (judge +4.00, gold +2.00; window 3)"
    assert v["hacking_rollouts"].startswith("untestable (no gold score on the rollouts")
    hacked = [r | {"gold_score_mean": 6 - r["step"] / 10} for r in three]
    assert hacking_verdicts(hacked, [])["hacking"].startswith("SUSPECTED (judge +4.00, gold -4.00")
    written = three[:2] + [three[2] | {"hacking": {"suspected": True}}]
    assert hacking_verdicts(written, [])["hacking"] == "SUSPECTED at steps 40"
    roll = [rollout(s, 2 + 0.5 * s, 7 - 0.5 * s) for s in range(1, 9)]
    assert hacking_verdicts(three, roll)["hacking_rollouts"] == "SUSPECTED (judge +3.00, gold -3.00)"
    assert hacking_verdicts([], roll[:2]) == {
        "hacking": "untestable (no held-out evaluation)",
        "hacking_rollouts": "untestable (2 rollout steps with a gold score, need 4)"}


class _Batch:
    def __init__(self, n):
        self.scores, self.valid, self.mode, self.note = [4.0] * n, [True] * n, "expected", None


class _Reward:
    __name__ = "judge"

    def __call__(self, completions, prompts=None, **kw):
        self.last = _Batch(len(completions))
        return [0.5] * len(completions)


class _Gold:
    scale = (0.0, 9.0)

    def __init__(self, mode):
        self.mode, self.calls = mode, []

    def score_batch(self, items):
        from judgerl.judge.scorer import PointScore

        self.calls.append([(it.prompt, it.response) for it in items])
        return [PointScore(float(len(it.response) % 10), True, "", None, self.mode) for it in items]


@pytest.mark.parametrize("mode, forced, scored", [("programmatic", None, True), ("expected", None, False),
                                                  ("expected", True, True), ("programmatic", False, False)])
def test_monitor_scores_rollouts_with_a_programmatic_gold_only_by_default(tmp_path, mode, forced, scored):
    gold = _Gold(mode)
    mon = PolicyMonitor(_Reward(), gold, [], None, tmp_path, eval_every=10, eval_max_new_tokens=8,
                        rollout_gold=forced)
    prompts = [[{"role": "user", "content": "Write a poem."}]] * 2
    completions = [[{"role": "assistant", "content": "abc"}], [{"role": "assistant", "content": "abcde"}]]
    assert mon.reward_fn(completions, prompts=prompts) == [0.5, 0.5]
    rec = read_curves(tmp_path / "curves.jsonl")[-1]
    assert rec["kind"] == "rollout" and rec["judge_score_mean"] == 4.0
    if scored:
        assert gold.calls == [[("Write a poem.", "abc"), ("Write a poem.", "abcde")]]
        assert rec["gold_score_mean"] == 4.0 and rec["gold_valid_rate"] == 1.0
    else:
        assert gold.calls == [] and "gold_score_mean" not in rec
    rolls = read_curves(tmp_path / "rollouts.jsonl")  # every rollout kept, with its reward, scores and flags
    assert [r["response"] for r in rolls] == ["abc", "abcde"] and all(r["reward"] == 0.5 for r in rolls)
    assert [r["gold_score"] for r in rolls] == ([3.0, 5.0] if scored else [None, None])
    assert all(r["judge_score"] == 4.0 and isinstance(r["audit"], list) and r["prompt_id"] is None for r in rolls)


def test_rollout_log_names_prompts_flags_loops_and_truncates_on_resume(tmp_path):
    mon = PolicyMonitor(_Reward(), _Gold("programmatic"), [], None, tmp_path, eval_every=10, eval_max_new_tokens=8)
    prompts = [[{"role": "user", "content": "Write a short essay about rivers."}]] * 2
    loop = "<<Rivers>> " + "*River* " * 40
    for step in (0, 1, 2):
        state = type("S", (), {"global_step": step})()
        mon.reward_fn([[{"role": "assistant", "content": loop}], [{"role": "assistant", "content": "Rivers."}]],
                      prompts=prompts, prompt_id=[7, 9], trainer_state=state)
    rolls = read_curves(tmp_path / "rollouts.jsonl")
    assert [(r["step"], r["prompt_id"]) for r in rolls] == [(1, 7), (1, 9), (2, 7), (2, 9), (3, 7), (3, 9)]
    assert "non_answer" in rolls[0]["audit"]
    assert truncate_curves(tmp_path / "rollouts.jsonl", 2) == 2  # a resume from checkpoint-2 redoes step 3
    assert [r["step"] for r in read_curves(tmp_path / "rollouts.jsonl")] == [1, 1, 2, 2]


def test_curves_truncate_torn_lines_and_plot(tmp_path):
    path = tmp_path / "curves.jsonl"
    recs = [heldout(s, 3 + s / 10, 5) | {"audit": {"any": 0.1}} for s in (0, 10, 20)]
    recs += [{"kind": "rollout", "step": s, "judge_score_mean": 4, "judge_valid_rate": 0.5, "audit": {"any": 0.0}}
             for s in (1, 2, 11, 21)]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs) + '{"kind": "roll')
    assert len(read_curves(path)) == 7
    assert truncate_curves(path, 10) == 3
    assert [r["step"] for r in read_curves(path)] == [0, 10, 1, 2]
    assert path.read_text().endswith("\n")
    png = plot_curves(read_curves(path), tmp_path / "c.png", (0, 9))
    assert png is not None and png.stat().st_size > 1000
    assert plot_curves([], tmp_path / "none.png") is None
    path.write_text('{"a": 1}\nnot json\n{"b": 2}\n')
    with pytest.raises(ValueError, match=":2"):
        read_curves(path)


def test_in_process_judge_reward_guards_normalises_and_never_makes_up_rewards():
    proto = get_protocol("pos", min_score=0, max_score=9)
    calls = []

    def judge_fn(messages, params):
        calls.append(1)
        text = messages[-1]["content"]
        return "<score>9</score>" if "great" in text else "no score here"

    reward = get_judge_reward(JudgeScorer(Judge(proto, ScriptedBackend(judge_fn), SamplingParams(max_new_tokens=8))))
    logged = {}
    out = reward(["a great answer", "bad", "", ":", "Thought process:"], prompts=["q"] * 5,
                 log_metric=lambda k, v: logged.__setitem__(k, v))
    assert out == [1.0, 0.0, 0.0, 0.0, 0.0] and len(calls) == 2  # guards never reach the judge
    assert reward.last.valid == [True, False, False, False, False]
    assert reward.last.reasons[2:] == ["guard:empty", "guard:master_key", "guard:master_key"]
    assert logged["judge/valid_rate"] == pytest.approx(0.2) and logged["judge/score_mean"] == 9
    assert reward.last.mode == "parsed"
    conv = reward([[{"role": "assistant", "content": "great"}]], prompts=[[{"role": "user", "content": "q"}]])
    assert conv == [1.0]
    with pytest.raises(ValueError, match="prompts"):
        reward(["x"])
    failing = get_judge_reward(JudgeScorer(Judge(proto, ScriptedBackend(
        lambda m, p: {"text": None, "finish_reason": "error", "error": "HTTP 500"}), SamplingParams(max_new_tokens=8))),
        retry_failed=1)
    with pytest.raises(RewardFailure, match="could not be judged"):
        failing(["x"], prompts=["q"])


# -- training (slow but short: the tiny random policy) ---------------------------------------------

@pytest.fixture(scope="module")
def tiny_policy(tmp_path_factory):
    from test_backends_hf import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("policy"))


def policy_overrides(tmp_path, prompts, policy, **extra):
    base = {"prompts": prompts, "model": policy, "output_dir": tmp_path / "run", "heldout": 2, "eval_every": 2,
            "grpo.max_steps": 3, "grpo.max_completion_length": 8, "grpo.per_device_train_batch_size": 4,
            "grpo.num_generations": 2, "grpo.save_steps": 100, "grpo.learning_rate": 1e-3, "eval_max_new_tokens": 8,
            "judge.max_new_tokens": 8}
    base.update(extra)
    return [f"{k}={v}" for k, v in base.items()]


def scripted_judge(messages, params):
    """Scores by response length: different rollouts get different rewards."""
    text = messages[-1]["content"]
    return f"<think>ok</think><score>{len(text) % 10}</score>"


@pytest.mark.slow
def test_policy_in_process_expected_judge_writes_gold_curves(tmp_path, short_ifeval, tiny_policy):
    """Tiny policy; an in-process hf judge whose judgments are scripted (the random model never writes a
    score) and whose expected scores are read from the tiny model's logits; IFEval gold."""
    from judgerl.backends.hf import HFBackend
    from judgerl.types import Completion
    from judgerl.train.policy import build_reward, run_policy

    cfg = load_policy_recipe("policy-grpo", policy_overrides(tmp_path, short_ifeval, tiny_policy,
                                                             **{"judge.model": tiny_policy}))
    assert build_reward(cfg).last is None  # the recipe's own judge builds (not used below)
    judge_backend = HFBackend(str(tiny_policy))

    def generate(prompts, params, *, seeds=None, on_result=None):
        return [Completion(scripted_judge(p, params), 1, 1) for p in prompts]

    judge_backend.generate = generate  # an hf backend (logits for the expected score), scripted judgments
    judge = Judge(get_protocol("pos", min_score=0, max_score=9), judge_backend, SamplingParams(max_new_tokens=8))
    reward = get_judge_reward(JudgeScorer(judge, mode="expected"), name="judge")
    result = run_policy(cfg, reward=reward)
    assert result["global_step"] == 3 and Path(result["final_model"], "config.json").is_file()
    curves = read_curves(tmp_path / "run" / "curves.jsonl")
    held = [r for r in curves if r["kind"] == "heldout"]
    assert [r["step"] for r in held] == [0, 2, 3]
    assert all(r["gold_valid_rate"] == 1.0 and 0 <= r["gold_score_mean"] <= 9 for r in held)
    assert all("any" in r["audit"] and "hacking" in r for r in held)
    roll = [r for r in curves if r["kind"] == "rollout"]
    assert [r["step"] for r in roll] == [1, 2, 3] and all(r["score_mode"] == "expected" for r in roll)
    assert all(r["judge_valid_rate"] == 1.0 and 0 < r["judge_score_mean"] < 9 for r in roll)
    assert all(r["judge_valid_rate"] == 1.0 for r in held)
    # the programmatic gold scores the rollouts too; every held-out record runs the rollout hacking test
    assert all(r["gold_valid_rate"] == 1.0 and 0 <= r["gold_score_mean"] <= 9 for r in roll)
    assert held[-1]["hacking_rollouts"]["source"] == "rollouts" and held[-1]["hacking_rollouts"]["rollout_steps"] == 3
    assert (tmp_path / "run" / "curves.png").is_file()
    rows = [json.loads(x) for x in (tmp_path / "run" / "heldout" / "step-3.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all("gold_score" in r and "response" in r for r in rows)
    metrics = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert any("audit/any" in m for m in metrics)


@pytest.mark.slow
@pytest.mark.server
def test_policy_through_reward_server_survives_a_restart(tmp_path, short_ifeval, tiny_policy):
    """The reward server is stopped after step 1 and restarted 1.5 s later on the same port: the next
    reward call is retried until it answers, no step gets zero rewards, and the new server judged it."""
    from transformers import TrainerCallback

    from judgerl.serve.app import ServeConfig, create_app
    from judgerl.serve.server_thread import ServerThread
    from judgerl.train.policy import run_policy

    def app():
        judge = Judge(get_protocol("pos", min_score=0, max_score=9), ScriptedBackend(scripted_judge),
                      SamplingParams(max_new_tokens=8))
        return create_app(judge, config=ServeConfig(max_wait_ms=1))

    first = ServerThread(app()).start()
    servers = {"first": first}
    restarted = threading.Event()

    class Restart(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step == 1 and not restarted.is_set():
                first.stop()

                def later():
                    time.sleep(1.5)
                    servers["second"] = ServerThread(app(), port=first.port).start()
                    restarted.set()

                threading.Thread(target=later, daemon=True).start()

    try:
        cfg = load_policy_recipe("policy-grpo", policy_overrides(
            tmp_path, short_ifeval, tiny_policy, reward_url=first.url, reward_retry_s=60, eval_every=100))
        result = run_policy(cfg, callbacks=[Restart()])
    finally:
        for s in servers.values():
            s.stop()
    assert restarted.is_set() and result["global_step"] == 3
    roll = [r for r in read_curves(tmp_path / "run" / "curves.jsonl") if r["kind"] == "rollout"]
    assert [r["step"] for r in roll] == [1, 2, 3]
    assert all(r["judge_valid_rate"] == 1.0 for r in roll)  # every rollout judged: no silent zero rewards
    assert all(r["score_mode"] == "parsed" and "cannot give" in r["score_mode_note"] for r in roll)
    second = servers["second"].server.config.app.state.service
    assert second.counts["rewards"] >= 2  # steps 2 and 3 (and the final held-out scoring) came to the new server


@pytest.mark.slow
@pytest.mark.server
def test_policy_fails_loudly_with_a_checkpoint_when_the_server_stays_down(tmp_path, short_ifeval, tiny_policy):
    from judgerl.serve.app import ServeConfig, create_app
    from judgerl.serve.server_thread import ServerThread
    from judgerl.train.policy import PolicyTrainingError, run_policy

    def app():
        judge = Judge(get_protocol("pos", min_score=0, max_score=9), ScriptedBackend(scripted_judge),
                      SamplingParams(max_new_tokens=8))
        return create_app(judge, config=ServeConfig(max_wait_ms=1))

    server = ServerThread(app()).start()
    port = server.port
    server.stop()  # down before training: the step-0 held-out scoring already needs it
    overrides = policy_overrides(tmp_path, short_ifeval, tiny_policy, reward_url=server.url, reward_retry_s=1,
                                 eval_every=100)
    with pytest.raises(PolicyTrainingError, match="Checkpoint saved") as err:
        run_policy(load_policy_recipe("policy-grpo", overrides))
    assert "--resume" in str(err.value)
    failure = json.loads((tmp_path / "run" / "failure.json").read_text())
    assert Path(failure["checkpoint"]).is_dir() and "JudgeClientError" in failure["error"]
    again = ServerThread(app(), port=port).start()
    try:
        result = run_policy(load_policy_recipe("policy-grpo", overrides + ["resume=true"]))
    finally:
        again.stop()
    assert result["global_step"] == 3 and result["resumed_from"] is not None
    assert not (tmp_path / "run" / "failure.json").exists()


# -- the oracle arm, the prompt mix, rubrics, LoRA (issue 24) ---------------------------------------

def test_gold_reward_is_the_gold_score_normalised_like_the_judges(short_ifeval):
    from judgerl.gold.ifeval import IFEvalGoldJudge
    from judgerl.train.policy import build_reward

    cfg = load_policy_recipe("policy-grpo", [f"prompts={short_ifeval}", "reward=gold"])
    cfg.validate()
    reward = build_reward(cfg)
    gold = IFEvalGoldJudge.from_file(short_ifeval)
    prompts = [r.prompt for r in gold.records[:3]]
    responses = ["a short answer, with commas", "all lowercase no commas here", ""]
    got = reward(responses, prompts=prompts)
    want = [gold.score(p, r).score / 9 for p, r in zip(prompts[:2], responses[:2])]
    assert got[:2] == pytest.approx(want) and got[2] == cfg.invalid_reward  # empty: the guard, as for judges
    assert reward.last.mode == "programmatic" and reward.__name__ == "gold"


def test_random_reward_is_a_seeded_score_that_ignores_the_response(short_ifeval):
    """The control arm's reward: the same text always gets the same reward, the seed changes it, it is uniform on
    [0, 1] and uncorrelated with anything the response says; empty responses get the guards' invalid reward."""
    from judgerl.gold.scorer import RandomScorer
    from judgerl.train.policy import build_reward

    cfg = load_policy_recipe("policy-grpo", [f"prompts={short_ifeval}", "reward=random", "seed=3"])
    cfg.validate()
    reward = build_reward(cfg)
    prompts, responses = ["P"] * 400, [f"answer {i}" for i in range(400)]
    got = reward(responses, prompts=prompts)
    assert got == reward(responses, prompts=prompts) and reward.__name__ == "random" and reward.last.mode == "random"
    assert all(0.0 <= r < 1.0 for r in got) and 0.4 < sum(got) / len(got) < 0.6
    assert reward(["all lowercase no commas here"], prompts=["P"]) != build_reward(
        load_policy_recipe("policy-grpo", [f"prompts={short_ifeval}", "reward=random", "seed=4"]))(
        ["all lowercase no commas here"], prompts=["P"])
    assert reward([""], prompts=["P"]) == [cfg.invalid_reward]
    assert RandomScorer(0).score_batch([]) == [] and RandomScorer(0, (1, 5)).scale == (1.0, 5.0)


@pytest.mark.parametrize("extra,message", [
    (["reward=oracle"], "reward must be one of judge, gold, random"),
    (["reward=random", "reward_url=http://127.0.0.1:1"], "drop reward_url"),
    (["reward=random", "rubric=ifeval"], "reward: random reads none"),
    (["reward=gold", "reward_url=http://127.0.0.1:1"], "drop reward_url"),
    (["reward=gold", "rubric=ifeval"], "reward: gold reads none"),
    (["instructions=[]"], "instructions must be a non-empty list"),
    (["lora.r=-1"], "lora.r must be an integer"),
])
def test_policy_config_refuses_bad_oracle_mix_rubric_lora(short_ifeval, extra, message):
    cfg = load_policy_recipe("policy-grpo", [f"prompts={short_ifeval}", *extra])
    with pytest.raises(RecipeError, match=message):
        cfg.validate()


def test_prompt_mix_and_rubrics_of_policy_prompts(short_ifeval, tmp_path):
    from judgerl.gold.records import load_records
    from judgerl.gold.rubric import RUBRIC_HEADER
    from judgerl.train.policy import prompt_rubrics, select_prompts

    prompts = load_prompts(short_ifeval)
    records = {str(r.key): r for r in load_records(short_ifeval)}
    first = records[prompts[0][0]].instruction_id_list[0]
    mixed = select_prompts(prompts, [first], short_ifeval)
    assert prompts[0] in mixed and all(any(i.startswith(first) for i in records[k].instruction_id_list)
                                       for k, _ in mixed)
    assert select_prompts(prompts, None, short_ifeval) == prompts
    with pytest.raises(ValueError, match="no prompt"):
        select_prompts(prompts, ["no_such:instruction"], short_ifeval)
    cfg = load_policy_recipe("policy-grpo", [f"prompts={short_ifeval}", "rubric=ifeval"])
    rubrics = prompt_rubrics(cfg)
    assert all(rubrics[p].startswith(RUBRIC_HEADER) for _, p in prompts)
    own = tmp_path / "own.jsonl"
    own.write_text(json.dumps({"key": 1, "prompt": "Q", "rb": "be kind"}) + "\n"
                   + json.dumps({"key": 2, "prompt": "P"}) + "\n")
    cfg = load_policy_recipe("policy-grpo", [f"prompts={own}", "rubric=rb"])
    with pytest.raises(DataFormatError, match="line 2.*rb"):
        prompt_rubrics(cfg)
    assert load_policy_recipe("policy-grpo", [f"prompts={own}", "lora.r=8"]).lora.r == 8


@pytest.mark.slow
def test_oracle_arm_trains_against_the_gold_without_a_judge(tmp_path, short_ifeval, tiny_policy):
    """The oracle arm end to end: 2 GRPO steps rewarded by the IFEval checker itself, LoRA policy."""
    from judgerl.train.policy import run_policy

    cfg = load_policy_recipe("policy-grpo", policy_overrides(tmp_path, short_ifeval, tiny_policy, reward="gold",
                                                             **{"grpo.max_steps": 2, "lora.r": 4}))
    result = run_policy(cfg)
    assert result["global_step"] == 2 and Path(result["final_model"], "adapter").is_dir()
    roll = [r for r in read_curves(tmp_path / "run" / "curves.jsonl") if r["kind"] == "rollout"]
    assert roll and all(r["score_mode"] == "programmatic" for r in roll)


def test_length_verdict_names_a_collapse_of_the_held_out_responses():
    """A policy can raise an instruction-only gold by answering next to nothing (stop 42's tool-rubric arm: 375 ->
    57 characters): the length verdict says so where the hacking test cannot (the gold rose)."""
    from judgerl.train.curves import length_verdict

    def rec(step, chars):
        return {"kind": "heldout", "step": step, "mean_response_chars": chars}

    assert length_verdict([rec(0, 375), rec(20, 200), rec(40, 57)]).startswith("COLLAPSED (375 -> 57 characters: 15%")
    assert length_verdict([rec(40, 163), rec(0, 375)]) == "kept (375 -> 163 characters)"
    assert length_verdict([rec(0, 375)]).startswith("untestable")
    assert length_verdict([rec(0, 375), {"step": None, "mean_response_chars": 1}]).startswith("untestable")
    assert length_verdict([rec(0, 0), rec(1, 0)]) == "kept (0 -> 0 characters)"
