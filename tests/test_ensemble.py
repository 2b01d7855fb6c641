"""Judge ensembles: mean / min combination, mixed scales and backends, invalid members."""

from __future__ import annotations

import pytest

from judgerl.backends import SamplingParams, ScriptedBackend
from judgerl.judge.ensemble import EnsembleJudgment, JudgeEnsemble, judge_scale
from judgerl.judge import Judge, JudgeInput
from judgerl.protocols import get_protocol
from judgerl.types import Decision

PARAMS = SamplingParams(max_new_tokens=32)


def const(text: str, name: str = "scripted") -> ScriptedBackend:
    return ScriptedBackend(lambda m, p: text, name=name)


def pos(score: str, max_score: int = 10, name: str = "scripted") -> Judge:
    return Judge(get_protocol("pos", max_score=max_score), const(f"<think>t</think><score>{score}</score>", name),
                 PARAMS)


def pav(verdict: str) -> Judge:
    return Judge(get_protocol("pav"), const(f"<think>t</think><verdict>{verdict}</verdict>"), PARAMS)


def one(ens: JudgeEnsemble, *responses: str) -> EnsembleJudgment:
    [res] = ens.judge([JudgeInput("Q", tuple(responses), key="k")])
    return res


def test_pointwise_mean_and_min_on_mixed_scales() -> None:
    a, b = pos("8", 10), pos("0", 9)  # 0.8 and 0.0 on [0, 1]
    mean = JudgeEnsemble([a, b], "mean")
    assert mean.scale == (0.0, 1.0) and mean.kind == "pointwise"
    assert one(mean, "r").decision.scores == pytest.approx((0.4,))
    assert one(JudgeEnsemble([a, b], "min"), "r").decision.scores == pytest.approx((0.0,))
    same = JudgeEnsemble([pos("8"), pos("4")], "mean")
    assert same.scale == (0.0, 10.0) and one(same, "r").decision.scores == pytest.approx((6.0,))
    assert one(JudgeEnsemble([a, b], "min", scale=(1, 5)), "r").decision.scores == pytest.approx((1.0,))
    assert judge_scale(same) == (0.0, 10.0) and judge_scale(a) == (0.0, 10.0) and judge_scale(pav("A")) is None


@pytest.mark.parametrize("verdicts, combine, expect, scores", [
    (("A", "A"), "mean", "A", (1.0, 0.0)),
    (("A", "B"), "mean", "tie", (0.5, 0.5)),
    (("A", "A", "B"), "mean", "A", (2 / 3, 1 / 3)),
    (("A", "B"), "min", "tie", (0.0, 0.0)),  # a hack must fool every judge
    (("A", "A", "B"), "min", "tie", (0.0, 0.0)),
    (("B", "B"), "min", "B", (0.0, 1.0)),
])
def test_pairwise_credits(verdicts, combine, expect, scores) -> None:
    d = one(JudgeEnsemble([pav(v) for v in verdicts], combine), "a", "b").decision
    assert d.verdict == expect and d.scores == pytest.approx(scores)


def test_pairwise_min_with_a_tie_member() -> None:
    tie = Judge(get_protocol("pas"), const("<think>t</think><score_A>5</score_A><score_B>5</score_B>"), PARAMS)
    d = one(JudgeEnsemble([pav("A"), tie], "min"), "a", "b").decision
    assert d.verdict == "A" and d.scores == pytest.approx((0.5, 0.0))
    arena = Judge(get_protocol("arena"), const("<think>t</think><verdict>[[B>>A]]</verdict>"), PARAMS)
    assert one(JudgeEnsemble([pav("B"), arena], "mean"), "a", "b").decision.verdict == "B"


def test_invalid_members() -> None:
    broken = pos("eleven")
    strict = JudgeEnsemble([pos("9"), broken], "min")
    d = one(strict, "r").decision
    assert not d.valid and d.invalid_reason == "judge 1: unparseable_score"
    lenient = JudgeEnsemble([pos("9"), broken], "min", require_all=False)
    assert one(lenient, "r").decision.scores == (9.0,)
    assert one(JudgeEnsemble([broken, pos("x")], "mean", require_all=False), "r").decision.invalid_reason == \
        "judge 0: unparseable_score"


def test_samples_members_and_callbacks() -> None:
    seen = []
    ens = JudgeEnsemble([pos("2", name="m1"), pos("6", name="m2")], "mean")
    [res] = ens.judge([JudgeInput("Q", ("r",))], samples=2, on_done=lambda k, i, j: seen.append((k, i)))
    assert len(res.samples) == 4 and len(res.members) == 2 and res.n_invalid == 0 and not res.retryable
    assert sorted(seen) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    cfg = ens.config()
    assert cfg["ensemble"] == {"combine": "mean", "require_all": True, "scale": [0.0, 10.0]}
    assert [m["model"] for m in cfg["members"]] == ["m1", "m2"]


def test_combine_decisions_directly() -> None:
    ens = JudgeEnsemble([pav("A"), pav("B")], "mean")
    assert ens.combine_decisions([Decision(valid=True, verdict="A"), Decision(valid=True, verdict="A")]).verdict == "A"
    assert ens.combine_decisions([Decision(valid=True), Decision(valid=True, verdict="A")]).invalid_reason == \
        "judge 0: no verdict"
    with pytest.raises(ValueError, match="one per member"):
        ens.combine_decisions([Decision(valid=True, verdict="A")])


def test_bad_ensembles() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        JudgeEnsemble([pos("1")])
    with pytest.raises(ValueError, match="combine"):
        JudgeEnsemble([pos("1"), pos("2")], "max")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="one kind"):
        JudgeEnsemble([pos("1"), pav("A")])
    lw = Judge(get_protocol("listwise"), const("<best>1</best>"), PARAMS)
    with pytest.raises(ValueError, match="listwise"):
        JudgeEnsemble([lw, lw])
    with pytest.raises(ValueError, match="scale"):
        JudgeEnsemble([pos("1"), pos("2")], scale=(5, 5))
    with pytest.raises(ValueError, match="pointwise ensembles only"):
        JudgeEnsemble([pav("A"), pav("B")], scale=(0, 1))
    with pytest.raises(ValueError):  # wrong number of responses for the members' protocol
        JudgeEnsemble([pos("1"), pos("2")]).judge([JudgeInput("Q", ("a", "b"))])
