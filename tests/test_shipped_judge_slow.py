"""The shipped trained judge (``smollm2-135m-judge``) judges held-out arithmetic pairs better than its base.

A regression test of what training bought (docs/results.md, "Trained judges vs their base"): on 12
held-out pairs (expressions not in the training file, outside the 40 of the proof table), both orders,
greedy, the TIR judge runs its check in the real sandbox and is position-consistently right on most;
the base with forced answers never is (it answers by position).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


def _pairs(shared_data: Path) -> list:
    from judgerl.data.builders import held_out_arithmetic_pairs

    pairs, _ = held_out_arithmetic_pairs(shared_data / "gsm8k" / "test.jsonl", shared_data / "gsm8k" / "train.jsonl")
    return pairs[40:52]


def test_shipped_tir_judge_beats_its_base_on_held_out_arithmetic(shared_data: Path, tmp_path: Path) -> None:
    from judgerl.backends import SamplingParams, load_backend
    from judgerl.protocols import get_protocol
    from judgerl.tools import get_sandbox
    from tests.support.judging import ev

    pairs = _pairs(shared_data)
    sandbox = get_sandbox(timeout_s=5)
    try:
        trained = ev(load_backend("smollm2-135m-judge"), get_protocol("pav"), pairs, tmp_path / "trained",
                     params=SamplingParams(max_new_tokens=64), sandbox=sandbox, progress=False)
    finally:
        sandbox.close()
    base = ev(load_backend("smollm2-135m"), get_protocol("pav"), pairs, tmp_path / "base",
              params=SamplingParams(max_new_tokens=48), force_answer=True, progress=False)
    assert trained["invalid_rate"] <= 0.1 and trained["tool_use_rate"] == 1.0
    assert trained["position_consistent_accuracy"] >= 0.75
    assert trained["position_consistent_accuracy"] >= base["position_consistent_accuracy"] + 0.5
