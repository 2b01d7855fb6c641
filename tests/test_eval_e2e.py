"""End-to-end eval with the embedded SmolLM2-135M judge on LLMBar Natural (slow: runs the model)."""

from __future__ import annotations

import json

import pytest

from support.judging import ev
from judgerl.backends import SamplingParams
from judgerl.data import load_pairs
from judgerl.eval import read_judgments, run_eval
from judgerl.protocols import get_protocol


@pytest.mark.slow
def test_embedded_model_eval_on_llmbar(tmp_path, shared_data, embedded_backend):
    pairs = load_pairs(shared_data / "llmbar" / "natural.json", limit=3).pairs
    params = SamplingParams(max_new_tokens=48)
    summary = ev(embedded_backend, get_protocol("pav"), pairs, tmp_path, params=params, progress=False)

    for name in ("judgments.jsonl", "summary.json", "report.md", "accuracy_by_source.png", "run.json"):
        assert (tmp_path / name).is_file(), name
    recs = read_judgments(tmp_path / "judgments.jsonl")
    assert len(recs) == 6
    assert {(r["pair_id"], r["order"]) for r in recs} == {(p.id, o) for p in pairs for o in ("AB", "BA")}
    for r in recs:
        assert isinstance(r["raw_output"], str) and 0 < r["completion_tokens"] <= 48
        assert r["finish_reason"] in ("stop", "length")
        assert r["correct"] in (True, False, None)
        assert (r["correct"] is None) == (not r["decision"]["valid"])

    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["n_pairs"] == 3 and on_disk["n_judgments"] == 6
    for key in ("accuracy", "position_consistent_accuracy", "tie_rate", "invalid_rate", "accuracy_valid_only"):
        v = on_disk[key]
        assert v is None or 0.0 <= v <= 1.0, key
    assert on_disk["flip_rate"] is None or 0.0 <= on_disk["flip_rate"] <= 1.0
    assert on_disk["position_consistent_accuracy"] <= on_disk["accuracy"]
    assert on_disk["accuracy"] + on_disk["judgment_invalid_rate"] + on_disk["tie_rate"] <= 1.0 + 1e-9
    lo, hi = on_disk["accuracy_ci"]
    assert 0.0 <= lo <= on_disk["accuracy"] <= hi <= 1.0
    assert "llmbar/natural" in on_disk["by_source"]
    assert "## Overall" in (tmp_path / "report.md").read_text()

    # A second run over the same directory resumes: no new generation, same numbers.
    again = ev(embedded_backend, get_protocol("pav"), pairs, tmp_path, params=params, progress=False)
    assert again["timing"]["judgments_this_run"] == 0
    assert again["accuracy"] == summary["accuracy"]
    assert len(read_judgments(tmp_path / "judgments.jsonl")) == 6
