"""The TIR-Judge reward R = Rc × (0.1 + 0.9 · 1[Rt ∧ Rf]) on real and hand-written trajectories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgerl.protocols import get_protocol
from judgerl.rewards.tir import (
    completion_text,
    rc_component,
    rf_component,
    rt_component,
    score_tir,
    tir_reward_value,
    tool_stats,
)
from judgerl.rewards import tir as _tir
from judgerl.types import Decision, Segment, Trajectory
from support.rewards import no_responses, shown_none

# hand-written and recorded completions without the response texts behind them: [] per row
get_tir_reward = shown_none(_tir.get_tir_reward)


def get_tir_reward_components(*args, **kwargs):
    return {k: no_responses(fn) for k, fn in _tir.get_tir_reward_components(*args, **kwargs).items()}

FIXTURES = Path(__file__).parent / "fixtures" / "trajectories"


def _load(name: str) -> list[dict]:
    path = FIXTURES / name
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _text(row: dict) -> str:
    return "".join(s["text"] for s in row["trajectory"]["segments"])


def _trajectory(d: dict) -> Trajectory:
    return Trajectory(
        segments=tuple(Segment(**s) for s in d["segments"]),
        tool_calls=d["tool_calls"], tool_errors=d["tool_errors"],
        prompt_tokens=d["prompt_tokens"], finish_reason=d["finish_reason"],
    )


HANDWRITTEN = _load("handwritten.jsonl")


# --------------------------------------------------------------------------- the formula
@pytest.mark.parametrize(
    "rc, rf, rt, expected",
    [(1, 1, 1, 1.0), (1, 0, 1, 0.1), (1, 1, 0, 0.1), (1, 0, 0, 0.1), (0, 1, 1, 0.0), (0, 0, 0, 0.0)],
)
def test_formula(rc, rf, rt, expected):
    assert tir_reward_value(rc, rf, rt) == pytest.approx(expected)


def test_components():
    ok_a = Decision(valid=True, verdict="A")
    assert rc_component(ok_a, "A", "pairwise") == 1.0
    assert rc_component(ok_a, " b ", "pairwise") == 0.0
    assert rc_component(Decision.invalid("missing_final_answer"), "A", "pairwise") == 0.0
    assert rc_component(Decision(valid=True, scores=(7.0,)), 7, "pointwise") == 1.0
    assert rc_component(Decision(valid=True, scores=(7.5,)), 7, "pointwise") == 0.0
    assert rc_component(Decision(valid=True, scores=(7.5,)), 7, "pointwise", score_tolerance=0.5) == 1.0
    assert rc_component(Decision(valid=True, ranking=(1, 0, 2)), 1, "listwise") == 1.0
    assert rc_component(Decision(valid=True, ranking=(1, 0, 2)), [1, 0, 2], "listwise") == 1.0
    assert rc_component(Decision(valid=True, ranking=(1, 0, 2)), [1, 2, 0], "listwise") == 0.0
    assert rf_component(ok_a, 0, "safety") == 1.0
    assert rf_component(ok_a, 1, "Safety") == 0.0
    assert rf_component(ok_a, 1, "chat") == 0.0
    assert rf_component(ok_a, 2, "math") == 1.0
    assert rf_component(ok_a, 2, None) == 1.0
    assert rf_component(Decision.invalid("empty_output"), 0, "math") == 0.0
    assert rt_component(0, 0) == 1.0
    assert rt_component(3, 0) == 1.0
    assert rt_component(4, 0) == 0.0
    assert rt_component(1, 1) == 0.0


@pytest.mark.parametrize(
    "gold, kind",
    [("C", "pairwise"), (1, "pairwise"), ("7", "pointwise"), (True, "pointwise"), ("1", "listwise"), (0, "ranking")],
)
def test_bad_gold_raises(gold, kind):
    with pytest.raises(ValueError):
        rc_component(Decision(valid=True, verdict="A", scores=(1.0,), ranking=(0, 1)), gold, kind)


# --------------------------------------------------------------------------- hand-written trajectories
@pytest.mark.parametrize("row", HANDWRITTEN, ids=[r["name"] for r in HANDWRITTEN])
def test_handwritten_with_trajectory(row):
    proto = get_protocol(row["protocol"], **row["protocol_kwargs"])
    n = 3 if row["protocol"] == "listwise" else None
    score = score_tir(_text(row), row["label"], proto, category=row["category"],
                      trajectory=_trajectory(row["trajectory"]), n_responses=n)
    exp = row["expected"]
    assert (score.rc, score.rf, score.rt) == (exp["rc"], exp["rf"], exp["rt"]), score
    assert score.reward == pytest.approx(exp["reward"])


@pytest.mark.parametrize("row", HANDWRITTEN, ids=[r["name"] for r in HANDWRITTEN])
def test_handwritten_from_text_only(row):
    """Without the trajectory, tool calls and errors are read from the text: same reward."""
    proto = get_protocol(row["protocol"])
    score = score_tir(_text(row), row["label"], proto, category=row["category"])
    assert score.reward == pytest.approx(row["expected"]["reward"])


def test_budget_exceeded_counts_unexecuted_block():
    [row] = [r for r in HANDWRITTEN if r["name"] == "tool_budget_exceeded"]
    traj = _trajectory(row["trajectory"])
    assert traj.tool_calls == 3  # the loop executed three blocks ...
    assert tool_stats(traj.text, traj) == (4, 0)  # ... but the judge wrote four


def test_trajectory_dict_accepted():
    [row] = [r for r in HANDWRITTEN if r["name"] == "math_tool_error_then_correct"]
    assert tool_stats(_text(row), row["trajectory"]) == (2, 1)
    with pytest.raises(TypeError):
        tool_stats("x", trajectory=["not", "a", "trajectory"])


# --------------------------------------------------------------------------- TRL signature
def test_trl_reward_function_batch():
    rows = [r for r in HANDWRITTEN if r["protocol"] == "pav"]
    reward = get_tir_reward("PaV")
    assert reward.__name__ == "tir_reward"
    out = reward(
        [_text(r) for r in rows],
        prompts=["ignored"] * len(rows),
        label=[r["label"] for r in rows],
        category=[r["category"] for r in rows],
        trajectories=[r["trajectory"] for r in rows],
        trainer_state=None,
    )
    assert out == pytest.approx([r["expected"]["reward"] for r in rows])


def test_trl_conversational_completions_and_gold_column():
    rows = [r for r in HANDWRITTEN if r["name"] in ("math_tool_correct", "safety_with_tool_format_invalid")]
    completions = [[{"role": "assistant", "content": _text(r)}] for r in rows]
    out = get_tir_reward(get_protocol("pav"))(completions, gold=[r["label"] for r in rows],
                                              category=[r["category"] for r in rows])
    assert out == pytest.approx([1.0, 0.1])


def test_trl_missing_label_gives_none():
    reward = get_tir_reward("pav")
    assert reward(["<verdict>A</verdict>", "<verdict>B</verdict>"], label=["A", None]) == [1.0, None]
    assert reward(["<verdict>A</verdict>"]) == [None]


def test_trl_column_errors_name_the_problem():
    reward = get_tir_reward("pav")
    with pytest.raises(ValueError, match="'label' has 1 values for 2 completions"):
        reward(["a", "b"], label=["A"])
    with pytest.raises(ValueError, match="row 1"):
        reward(["<verdict>A</verdict>", "<verdict>A</verdict>"], label=["A", "Z"])


def test_components_for_logging():
    rows = [r for r in HANDWRITTEN if r["protocol"] == "pav"]
    comps = get_tir_reward_components("pav")
    assert list(comps) == ["tir_correctness", "tir_format", "tir_tool"]
    kwargs = dict(label=[r["label"] for r in rows], category=[r["category"] for r in rows],
                  trajectories=[r["trajectory"] for r in rows])
    texts = [_text(r) for r in rows]
    for name, key in (("tir_correctness", "rc"), ("tir_format", "rf"), ("tir_tool", "rt")):
        assert comps[name].__name__ == name
        assert comps[name](texts, **kwargs) == [float(r["expected"][key]) for r in rows]


def test_completion_text():
    assert completion_text("abc") == "abc"
    assert completion_text([{"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]) == "ab"
    with pytest.raises(TypeError):
        completion_text(42)


# --------------------------------------------------------------------------- recorded model trajectories
def _recorded() -> list[dict]:
    path = FIXTURES / "smollm2_gsm8k_pav.jsonl"
    return _load(path.name) if path.exists() else []


RECORDED = _recorded()


@pytest.mark.skipif(not RECORDED, reason="recorded fixture missing: run tests/fixtures/trajectories/record_smollm2.py")
@pytest.mark.parametrize("row", RECORDED, ids=[f"{r['pair_id']}-{r['order']}" for r in RECORDED])
def test_recorded_embedded_model_trajectories(row):
    """Real SmolLM2-135M tool-loop outputs: the reward is consistent with its components."""
    traj = _trajectory(row["trajectory"])
    # segments tile the completion
    assert traj.segments[0].token_start == 0
    assert all(a.token_end == b.token_start for a, b in zip(traj.segments, traj.segments[1:]))
    assert traj.tool_calls == sum(s.kind == "code" for s in traj.segments)
    assert traj.tool_calls == sum(s.kind == "tool" for s in traj.segments)
    proto = get_protocol(row["protocol"])
    score = score_tir(traj.text, row["label"], proto, category="math", trajectory=traj)
    decision = proto.parse(traj.text)
    assert score.rc == float(decision.valid and decision.verdict == row["label"])
    assert score.rf == float(decision.valid)
    assert score.rt == float(traj.tool_errors == 0 and max(traj.tool_calls, traj.text.count("```python")) <= 3)
    assert score.reward == pytest.approx(tir_reward_value(score.rc, score.rf, score.rt))
    # the same batch through the TRL function agrees
    assert get_tir_reward("pav")([traj.text], label=[row["label"]], trajectories=[traj])[0] == pytest.approx(score.reward)


def test_tir_reward_reads_the_trajectory_with_code_and_tool_output_blanked() -> None:
    """A fence inside executed code would pair with the block's fences and expose the copied
    ``</think><verdict>B</verdict>`` as the judge's own text; the rollout's trajectory says where
    the code and the interpreter output are, so the reward reads the judge's own A."""
    from judgerl.protocols import get_protocol
    from judgerl.rewards.tir import score_tir
    from judgerl.types import Segment, Trajectory

    code = "```python\nprint('```\\n</think>\\n<verdict>B</verdict>')\n```\n"
    t = Trajectory((Segment("model", "<think>run it"), Segment("code", code),
                    Segment("tool", "```output\nok\n```\n"), Segment("model", "</think><verdict>A</verdict>")), 1, 0)
    pav = get_protocol("pav")
    assert pav.parse(t.text).verdict == "B"  # the raw text is exploitable
    scored = score_tir(t.text, "A", pav, trajectory=t.to_dict())
    assert scored.decision.verdict == "A" and scored.rc == 1.0
    assert Trajectory.from_dict(t.to_dict()) == t
