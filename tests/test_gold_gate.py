"""The gated gold (judgerl.gold.gate.GatedScorer, ``load_scorer("ifeval-gated")``): IFEval's checks pass a reply
that attempts nothing ("The answer." has no comma); the gated gold scores it 0, and leaves every attempt alone."""

from __future__ import annotations

import json

import pytest

from judgerl.gold.scorer import load_scorer
from judgerl.judge.scorer import ScoreItem


@pytest.fixture(scope="module")
def ifeval_file(shared_data):
    return str(shared_data / "ifeval" / "input_data.jsonl")


def test_gated_gold_scores_a_non_attempt_zero_and_an_attempt_as_the_gold(ifeval_file):
    rec = json.loads(open(ifeval_file).readline())  # no commas, 300+ words, 3 highlighted sections
    itinerary = json.loads(open(ifeval_file).readlines()[1])["prompt"]  # "... not allowed to use any commas"
    plain, gated = load_scorer("ifeval", ifeval_data=ifeval_file), load_scorer("ifeval-gated", ifeval_data=ifeval_file)
    attempt = ("Day one in Kyoto thou shalt wander through the temples at dawn and dine on tofu by the river. Day two "
               "brings thee to Nara where deer do bow and greet thee kindly.")
    items = [ScoreItem(itinerary, "The answer is not available."), ScoreItem(itinerary, attempt),
             ScoreItem(rec["prompt"], "SMORMOL" + "MOL" * 80)]
    p, g = plain.score_batch(items), gated.score_batch(items)
    assert p[0].score > 0 and p[2].score > 0  # the instruction-only gold pays both non-answers
    assert (g[0].score, g[0].valid, g[0].details["not_an_attempt"]) == (0.0, True, ["non_answer"])
    assert g[2].score == 0.0 and g[2].reasoning.startswith("not an attempt")
    assert g[1] == p[1]  # an attempt: the gold's own verdict
    assert gated.scale == plain.scale and gated.config()["gate"] == ["non_answer", "master_key", "policy_refusal"]
    assert gated.score_batch([]) == []


def test_policy_recipe_takes_the_gated_gold(ifeval_file):
    from judgerl.train.policy_config import load_policy_recipe

    cfg = load_policy_recipe("policy-grpo", [f"prompts={ifeval_file}", "gold=ifeval-gated", "reward=gold"])
    cfg.validate()
    assert cfg.gold == "ifeval-gated"


def test_the_study_passes_its_gold_to_labels_and_policies(shared_data):
    import importlib.util
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "bench"
    sys.path.insert(0, str(bench))
    try:
        spec = importlib.util.spec_from_file_location("study_gold", bench / "bench_judge_as_reward.py")
        study = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(study)
    finally:
        sys.path.remove(str(bench))
    assert study.parse_args(["--gold", "ifeval-gated"]).gold == "ifeval-gated"
    assert study.parse_args([]).gold == "ifeval"
    with pytest.raises(SystemExit):
        study.parse_args(["--gold", "gpt-4"])
