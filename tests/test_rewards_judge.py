"""The in-process judge reward (rewards/judge_reward.py): its guards read the prompt, as the audit and the server do."""

from __future__ import annotations

import pytest

from judgerl.backends import SamplingParams, ScriptedBackend
from judgerl.judge import Judge
from judgerl.protocols import get_protocol
from judgerl.rewards.judge_reward import get_judge_reward
from judgerl.judge.scorer import JudgeScorer

ASKS_COLON = "Which punctuation introduces a list? Reply with only the colon."
ASKS_WORD = "Say the word 'Solution' and nothing else."


def _reward(calls: list[str]):
    def judge_fn(messages, params):
        calls.append(messages[-1]["content"])
        return "<score>8</score>"

    proto = get_protocol("pos", min_score=0, max_score=10)
    return get_judge_reward(JudgeScorer(Judge(proto, ScriptedBackend(judge_fn), SamplingParams(max_new_tokens=8))))


@pytest.mark.parametrize("prompt, response", [
    (ASKS_COLON, ":"),
    (ASKS_WORD, "Solution"),
    ([{"role": "user", "content": ASKS_COLON}], ":"),  # a conversational TRL prompt
])
def test_a_prompt_that_asks_for_the_key_gets_it_judged_and_another_prompt_gets_it_guarded(prompt, response):
    """Issue 22 leftover: the prompt-based exemptions ("reply with only the colon", a quoted key) applied in
    the audit only; the reward guarded the asked-for answer as a master key."""
    calls: list[str] = []
    reward = _reward(calls)
    other = [{"role": "user", "content": "What is 2+2?"}] if isinstance(prompt, list) else "What is 2+2?"
    out = reward([response, response], prompts=[prompt, other])
    assert out == [0.8, 0.0] and reward.last.valid == [True, False]
    assert reward.last.reasons == [None, "guard:master_key"]
    asked = prompt if isinstance(prompt, str) else prompt[0]["content"]
    assert len(calls) == 1 and asked in calls[0]  # only the asked-for answer reached the judge
    assert reward.score_texts(["What is 2+2?"], [response]).reasons == ["guard:master_key"]
