"""An assistant prefill is part of the judge's turn: the parser and answer forcing read it.

Found by the TIR-Judge-Zero proof run: its round-0 prefill opens ``<think>`` and a python fence;
forcing computed on the completion alone wrote ``\\n\\n<verdict>`` (no ``</think>``), the selected
SFT examples never closed the thinking, and the Zero judge was 0% valid.
"""

from __future__ import annotations

from judgerl.backends import SamplingParams, ScriptedBackend
from judgerl.judge import Judge, JudgeRequest
from judgerl.protocols import get_protocol
from judgerl.tools.sandbox import ExecResult
from judgerl.tools.tir import build_trajectory
from judgerl.train.sft import example_from_judgment
from judgerl.types import Trajectory

PARAMS = SamplingParams(max_new_tokens=64)
ZERO_PREFILL = "<think>Let me check with Python.\n```python\n"


class EchoSandbox:
    def run(self, code: str) -> ExecResult:
        return ExecResult("True\n", "", 0, False, False, 0.0)

    def close(self) -> None:
        pass


def with_prefill(judge: Judge, prefill: str) -> list[dict[str, str]]:
    return [*judge.build("What is 2 + 2?", ["4", "5"]), {"role": "assistant", "content": prefill}]


def whole_turn(j) -> str:
    pieces = example_from_judgment(j.messages, j).pieces
    return "".join(t for _, t in pieces)


def test_forcing_after_a_tool_prefill_closes_the_thinking() -> None:
    def script(messages, params):
        content = messages[-1]["content"]
        if content.endswith("<verdict>"):
            return "A"
        if "```output" in content:
            return "So A is right."
        return "print(2 + 2 == 4)\n```\n"

    judge = Judge(get_protocol("pav"), ScriptedBackend(script), PARAMS, sandbox=EchoSandbox(),
                  max_tool_rounds=1, force_answer=True)
    [j] = judge.run([JudgeRequest(with_prefill(judge, ZERO_PREFILL), 2)])
    assert j.forced and j.decision.valid and j.decision.verdict == "A"
    forced = [s.text for s in j.trajectory.segments if s.kind == "forced"]
    assert forced == ["\n</think>\n<verdict>"]
    # the SFT example (prefill as its first piece) is a valid judgment on its own
    assert get_protocol("pav").parse(whole_turn(j)).valid


def test_forcing_closes_a_fence_the_prefill_opened_and_the_model_never_closed() -> None:
    def script(messages, params):
        return "A" if messages[-1]["content"].endswith("<verdict>") else "x = 2 + 2"

    judge = Judge(get_protocol("pav"), ScriptedBackend(script), PARAMS, sandbox=EchoSandbox(),
                  max_tool_rounds=1, force_answer=True)
    [j] = judge.run([JudgeRequest(with_prefill(judge, ZERO_PREFILL), 2)])
    assert [s.text for s in j.trajectory.segments if s.kind == "forced"] == ["\n```\n</think>\n<verdict>"]
    assert j.decision.valid and get_protocol("pav").parse(whole_turn(j)).valid


def test_a_verdict_inside_the_prefilled_thinking_is_not_final() -> None:
    # the completion alone ("... <verdict>A</verdict>") would parse; the turn never closes <think>
    judge = Judge(get_protocol("pav"), ScriptedBackend(lambda m, p: "A looks right. <verdict>A</verdict>"), PARAMS)
    [j] = judge.run([JudgeRequest(with_prefill(judge, "<think>"), 2)])
    assert not j.decision.valid and j.decision.invalid_reason == "unterminated_thinking"
    [ok] = Judge(get_protocol("pav"), ScriptedBackend(lambda m, p: "fine</think><verdict>B</verdict>"), PARAMS) \
        .run([JudgeRequest(with_prefill(judge, "<think>"), 2)])
    assert ok.decision.valid and ok.decision.verdict == "B" and ok.text == "fine</think><verdict>B</verdict>"


def test_a_model_answer_without_closing_the_prefilled_thinking_is_invalid_in_the_tool_loop() -> None:
    def script(messages, params):
        if "```output" in messages[-1]["content"]:
            return "\n<verdict>A</verdict>"
        return "print(1)\n```\n"

    judge = Judge(get_protocol("pav"), ScriptedBackend(script), PARAMS, sandbox=EchoSandbox(), max_tool_rounds=1)
    [j] = judge.run([JudgeRequest(with_prefill(judge, ZERO_PREFILL), 2)])
    assert j.trajectory.prefill == ZERO_PREFILL and j.trajectory.tool_calls == 1
    assert not j.decision.valid and j.decision.invalid_reason == "unterminated_thinking"


def test_trajectory_prefill_round_trips_and_blanks_its_executed_fence() -> None:
    t = build_trajectory([("code", "print(1)\n```\n"), ("tool", "```output\n1\n```\n"), ("model", "</think><verdict>A</verdict>")],
                         prefill=ZERO_PREFILL)
    assert Trajectory.from_dict(t.to_dict()) == t
    text = t.parse_text()
    assert text.startswith("<think>Let me check with Python.\n") and "```" not in text
    assert get_protocol("pav").parse(text).verdict == "A"
    # no prefill: the dict has no key (records written before stay byte-identical)
    assert "prefill" not in build_trajectory([("model", "x")]).to_dict()
    # an unexecuted block opened by the prefill stays a code span: a tag inside it is not read
    open_code = build_trajectory([("model", "<verdict>B</verdict>")], prefill=ZERO_PREFILL)
    assert not get_protocol("pav").parse(open_code.parse_text()).valid


def test_tir_reward_reads_the_prefill_from_the_rollout_record() -> None:
    from judgerl.rewards.tir import score_tir

    unclosed = build_trajectory([("code", "print(1)\n```\n"), ("tool", "```output\n1\n```\n"), ("model", "\n<verdict>A</verdict>")],
                                prefill=ZERO_PREFILL)
    closed = build_trajectory([("code", "print(1)\n```\n"), ("tool", "```output\n1\n```\n"), ("model", "</think>\n<verdict>A</verdict>")],
                              prefill=ZERO_PREFILL)
    proto = get_protocol("pav")
    assert score_tir(unclosed.text, "A", proto, trajectory=unclosed.to_dict()).rf == 0.0
    assert score_tir(closed.text, "A", proto, trajectory=closed.to_dict()).rc == 1.0
