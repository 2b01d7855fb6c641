"""Red team (stop 42) of PolicyMonitor's rollout records (judgerl.train.policy): odd rollouts scored by the real
IFEval gold judge and an in-process judge reward on a scripted backend (no model). Rows marked FINDING fail on the
code as it was when they were written."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from judgerl.backends import SamplingParams, ScriptedBackend
from judgerl.judge import Judge
from judgerl.judge.scorer import JudgeScorer
from judgerl.protocols import get_protocol
from judgerl.rewards.judge_reward import get_judge_reward
from judgerl.train.curves import hacking_verdicts, read_curves, truncate_curves
from judgerl.train.policy import PolicyMonitor


@pytest.fixture(scope="module")
def gold(shared_data: Path, tmp_path_factory):
    from judgerl.gold.ifeval import IFEvalGoldJudge
    from judgerl.gold.scorer import GoldScorer

    rows = [json.loads(line) for line in (shared_data / "ifeval" / "input_data.jsonl").read_text().splitlines()]
    rows.sort(key=lambda r: len(r["prompt"]))
    path = tmp_path_factory.mktemp("ifeval") / "short.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:6]))
    return GoldScorer(IFEvalGoldJudge.from_file(path))


def _monitor(gold, out: Path) -> PolicyMonitor:
    backend = ScriptedBackend(lambda m, p: "<think>ok</think><score>6</score>")
    reward = get_judge_reward(JudgeScorer(Judge(get_protocol("pos", max_score=9), backend,
                                                SamplingParams(max_new_tokens=8))), name="judge")
    return PolicyMonitor(reward, gold, [], None, out, eval_every=10, eval_max_new_tokens=8)


def _state(step: int) -> SimpleNamespace:
    return SimpleNamespace(global_step=step)


def _ifeval_prompt(gold) -> str:
    return gold.gold.records[0].prompt


# --- passing rows -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "   \n", "word " * 200_000, "x" * 1_000_000], ids=["empty", "blank", "1MB-words",
                                                                                      "1MB-one-word"])
def test_odd_rollout_texts_give_a_well_formed_record(gold, tmp_path, text):
    mon = _monitor(gold, tmp_path)
    rewards = mon.reward_fn([text], prompts=[_ifeval_prompt(gold)], trainer_state=_state(0))
    rec = read_curves(tmp_path / "curves.jsonl")[-1]
    assert len(rewards) == 1 and rec["kind"] == "rollout" and rec["step"] == 1 and rec["n"] == 1
    assert rec["gold_valid_rate"] == 1.0 and 0.0 <= rec["gold_score_mean"] <= 9.0


def test_non_ifeval_prompts_get_no_gold_score(gold, tmp_path):
    mon = _monitor(gold, tmp_path)
    mon.reward_fn(["a haiku", "another"], prompts=["Write a haiku.", _ifeval_prompt(gold)], trainer_state=_state(0))
    rec = read_curves(tmp_path / "curves.jsonl")[-1]
    assert rec["gold_valid_rate"] == 0.5 and rec["gold_score_mean"] is not None
    mon.reward_fn(["a haiku"], prompts=["Write a haiku."], trainer_state=_state(1))
    rec = read_curves(tmp_path / "curves.jsonl")[-1]
    assert rec["gold_valid_rate"] == 0.0 and rec["gold_score_mean"] is None


@pytest.mark.parametrize("completions,prompts,error,match", [
    (["a", "b"], ["p"], ValueError, "1 prompts for 2 completions"),
    (["a"], None, ValueError, "needs the prompts"),
    ([None], ["p"], TypeError, "completion must be a str"),
])
def test_mismatched_or_missing_inputs_raise_a_clear_error_and_write_nothing(gold, tmp_path, completions, prompts,
                                                                           error, match):
    mon = _monitor(gold, tmp_path)
    with pytest.raises(error, match=match):
        mon.reward_fn(completions, prompts=prompts, trainer_state=_state(0))
    assert read_curves(tmp_path / "curves.jsonl") == []


# --- FINDING: "a run from before rollout gold scoring" when the gold did score (nothing valid) ---------------------

def test_verdict_says_why_rollouts_without_a_valid_gold_score_are_untestable(gold, tmp_path):
    """FINDING. Rollouts the gold judge scored but could not score validly (prompts that are not IFEval prompts:
    gold_valid_rate 0.0) are reported as "a run from before rollout gold scoring" (curves.py hacking_verdicts:
    ``on_roll["rollout_steps"] == 0`` picks that text): a wrong diagnosis in the study table."""
    mon = _monitor(gold, tmp_path)
    for step in range(4):
        mon.reward_fn(["a haiku"], prompts=["Write a haiku."], trainer_state=_state(step))
    roll = [r for r in read_curves(tmp_path / "curves.jsonl") if r["kind"] == "rollout"]
    assert all(r["gold_valid_rate"] == 0.0 for r in roll)
    verdict = hacking_verdicts([], roll)["hacking_rollouts"]
    assert verdict.startswith("untestable") and "before rollout gold scoring" not in verdict


# --- FINDING: a reward call without trainer_state writes step null, which breaks a resume -----------------------------

def test_a_reward_call_without_trainer_state_does_not_break_truncate_curves(gold, tmp_path):
    """FINDING. _on_reward writes ``"step": None`` when no trainer_state is passed (policy.py); truncate_curves,
    run at every resume, then raises a bare TypeError from ``int(r.get("step", 0))``."""
    mon = _monitor(gold, tmp_path)
    mon.reward_fn(["a"], prompts=[_ifeval_prompt(gold)], trainer_state=_state(0))
    mon.reward_fn(["b"], prompts=[_ifeval_prompt(gold)])  # e.g. a manual / evaluation call
    mon.reward_fn(["c"], prompts=[_ifeval_prompt(gold)], trainer_state=_state(5))
    path = tmp_path / "curves.jsonl"
    try:
        truncate_curves(path, 2)
    except ValueError as e:  # a clear refusal naming the step is acceptable
        assert "step" in str(e), e
    else:
        kept = read_curves(path)
        assert all(isinstance(r.get("step"), int) for r in kept)  # a call without a state counts at the last step
        assert [r["step"] for r in kept] == [1, 1]
