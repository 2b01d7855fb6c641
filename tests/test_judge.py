"""The Judge: one path for eval, serve and training; honest failures; forcing; aggregation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgerl.backends import SamplingParams, ScriptedBackend
from judgerl.eval import run_eval
from judgerl.judge import Judge, JudgeInput, JudgeRequest
from judgerl.protocols import get_protocol
from judgerl.types import PreferencePair

GREEDY = SamplingParams(max_new_tokens=64)


def pairs(n: int) -> list[PreferencePair]:
    return [PreferencePair(id=f"p{i}", prompt=f"Q{i}", chosen=f"good {i}", rejected=f"bad {i}") for i in range(n)]


def good_first(messages, params) -> str:
    text = messages[-1]["content"]
    return "<think>x</think><verdict>" + ("A" if text.index("good") < text.index("bad") else "B") + "</verdict>"


def test_judge_aggregates_samples_with_the_eval_voting_rules() -> None:
    outs = iter(["<verdict>A</verdict>", "<verdict>B</verdict>", "<verdict>A</verdict>"])
    judge = Judge(get_protocol("pav"), ScriptedBackend(lambda m, p: next(outs)), SamplingParams(temperature=0.7))
    [r] = judge.judge([JudgeInput("q", ("a", "b"), "k")], samples=3)
    assert r.decision.verdict == "A" and len(r.samples) == 3 and r.n_invalid == 0
    assert len({s.seed for s in r.samples}) == 3


def test_sample_seeds_come_from_the_item_not_the_batch() -> None:
    judge = Judge(get_protocol("pav"), ScriptedBackend(["<verdict>A</verdict>"], cycle=True),
                  SamplingParams(temperature=0.7), seed=5)
    assert judge.sample_seed("pair-1\x00AB", 2) == judge.sample_seed("pair-1\x00AB", 2)
    assert judge.sample_seed("pair-1\x00AB", 2) != judge.sample_seed("pair-1\x00BA", 2)
    greedy = Judge(get_protocol("pav"), ScriptedBackend(["x"]), GREEDY)
    assert greedy.sample_seed("k", 0) is None


def test_on_done_sees_every_judgment_once() -> None:
    judge = Judge(get_protocol("pav"), ScriptedBackend(good_first), GREEDY)
    seen = []
    inputs = [JudgeInput("q", ("good", "bad")), JudgeInput("q", ("bad", "good"))]
    judge.judge(inputs, samples=2, on_done=lambda i, j: seen.append((i, j.decision.verdict)))
    assert sorted(seen) == [(0, "A"), (1, "A"), (2, "B"), (3, "B")]


def test_null_answers_are_counted_then_made_again_by_the_next_run(tmp_path: Path) -> None:
    """First run: the API answers null for 2 judgments (counted as empty_output, final: false).
    Second run of the same command: exactly those 2 are generated again and counted as valid."""
    state = {"fail": True, "prompts": []}

    def api(messages, params):
        state["prompts"].append(messages[-1]["content"])
        if state["fail"] and "Q1" in messages[-1]["content"]:
            return {"text": None, "finish_reason": "error", "error": "the server returned null content"}
        return good_first(messages, params)

    data = pairs(3)
    judge = Judge(get_protocol("pav"), ScriptedBackend(api), GREEDY)
    first = run_eval(judge, data, tmp_path, progress=False)
    assert first["invalid_reasons"] == {"empty_output": 2} and first["n_failed"] == 2 and first["n_retry"] == 2
    assert first["finish_reasons"] == {"stop": 4, "error": 2}
    recs = [json.loads(x) for x in (tmp_path / "judgments.jsonl").read_text().splitlines()]
    assert sorted(r["pair_id"] for r in recs if not r["final"]) == ["p1", "p1"]
    assert all("null content" in r["error"] for r in recs if not r["final"])

    state.update(fail=False, prompts=[])
    second = run_eval(judge, data, tmp_path, progress=False)
    assert len(state["prompts"]) == 2 and all("Q1" in p for p in state["prompts"])
    assert second["invalid_reasons"] == {} and second["n_failed"] == 0 and second["n_retry"] == 0
    assert second["accuracy"] == 1.0 and second["timing"]["judgments_this_run"] == 2

    state["prompts"] = []
    run_eval(judge, data, tmp_path, progress=False)  # nothing left to do
    assert state["prompts"] == []


def test_filtered_answers_are_retried_too(tmp_path: Path) -> None:
    calls = {"n": 0}

    def api(messages, params):
        calls["n"] += 1
        if calls["n"] == 1:
            return {"text": "", "finish_reason": "content_filter", "error": "filtered"}
        return good_first(messages, params)

    judge = Judge(get_protocol("pav"), ScriptedBackend(api), GREEDY)
    s = run_eval(judge, pairs(1), tmp_path, progress=False)
    assert s["finish_reasons"].get("content_filter") == 1 and s["n_retry"] == 1
    s = run_eval(judge, pairs(1), tmp_path, progress=False)
    assert s["n_retry"] == 0 and s["accuracy"] == 1.0


def test_prompt_too_long_is_invalid_counted_and_not_generated(tmp_path: Path) -> None:
    data = pairs(2) + [PreferencePair(id="long", prompt="Q " + "word " * 400, chosen="good", rejected="bad")]
    generated = []
    backend = ScriptedBackend(lambda m, p: generated.append(m[-1]["content"]) or good_first(m, p), context_length=300)
    judge = Judge(get_protocol("pav"), backend, GREEDY)
    s = run_eval(judge, data, tmp_path, progress=False)
    assert s["invalid_reasons"] == {"prompt_too_long": 2}
    assert s["finish_reasons"]["prompt_too_long"] == 2 and s["n_retry"] == 0
    rec = next(json.loads(x) for x in (tmp_path / "judgments.jsonl").read_text().splitlines() if '"long"' in x)
    assert "max_new_tokens 64" in rec["error"] and "context 300" in rec["error"]
    assert len(generated) == 4 and all("word word" not in g for g in generated)  # never generated


def test_forcing_goes_through_the_protocol_and_is_marked() -> None:
    def untrained(messages, params):
        if messages[-1]["role"] == "assistant":
            assert params.stop == ("</score>", "\n") and messages[-1]["content"].endswith("<score>")
            return "7"
        return "<think>it is fine"

    judge = Judge(get_protocol("pos", max_score=9), ScriptedBackend(untrained), GREEDY, force_answer=True)
    [j] = judge.run([JudgeRequest(judge.build("q", ["r"]), 1)])
    assert j.forced and j.decision.scores == (7.0,) and j.text == "<think>it is fine\n</think>\n<score>7</score>"
    assert [s.kind for s in j.trajectory.segments] == ["model", "forced", "model"]


def test_run_eval_summary_counts_identical_response_pairs(tmp_path: Path) -> None:
    same = PreferencePair(id="same", prompt="Q", chosen="same text", rejected="same text",
                          meta={"identical_responses": True})
    judge = Judge(get_protocol("pav"), ScriptedBackend(lambda m, p: "<verdict>A</verdict>"), GREEDY)
    s = run_eval(judge, pairs(1) + [same], tmp_path, progress=False)
    assert s["n_identical_response_pairs"] == 1
    # reported apart, not in the headline figures: always "A" is right once on the real pair
    assert s["n_pairs"] == 1 and s["accuracy"] == 0.5
    assert s["identical_responses"]["n_pairs"] == 1 and s["identical_responses"]["flip_rate"] == 1.0
    assert "identical" in (tmp_path / "report.md").read_text()


def test_difficulty_is_reported_apart_from_the_source(tmp_path: Path) -> None:
    """RM-Bench style: source = the file's subset, difficulty a separate breakdown."""
    data = [PreferencePair(id=f"r{i}", prompt=f"Q{i}", chosen=f"good {i}", rejected=f"bad {i}",
                           source="rmbench/chat/refusal", meta={"difficulty": d})
            for i, d in enumerate(["easy", "hard", "hard"])]
    judge = Judge(get_protocol("pav"), ScriptedBackend(good_first), GREEDY)
    s = run_eval(judge, data, tmp_path, progress=False)
    assert list(s["by_source"]) == ["rmbench/chat/refusal"]
    assert {k: v["n_pairs"] for k, v in s["by_difficulty"].items()} == {"easy": 1, "hard": 2}
    assert "## By difficulty" in (tmp_path / "report.md").read_text()


def test_judge_config_is_the_resume_identity() -> None:
    a = Judge(get_protocol("pos", max_score=9), ScriptedBackend(["x"]), GREEDY).config()
    b = Judge(get_protocol("pos"), ScriptedBackend(["x"]), GREEDY).config()
    assert a["protocol"]["max_score"] == 9 and a != b
    assert a["tools"] is None and a["force_answer"] is False


@pytest.mark.parametrize("protocol,responses", [("pav", ("a",)), ("pos", ("a", "b")), ("listwise", ("a",))])
def test_bad_inputs_are_clear_errors(protocol: str, responses: tuple) -> None:
    judge = Judge(get_protocol(protocol), ScriptedBackend(["x"]), GREEDY)
    with pytest.raises(ValueError, match="response"):
        judge.judge([JudgeInput("q", responses)])
    with pytest.raises(ValueError, match="samples"):
        judge.judge([JudgeInput("q", ("a", "b"))], samples=0)
