"""bench/bench_if_judge.py (the pointwise tool IF judge on more training prompts): the data stage keeps the study's
held-out prompts out of training, refuses a study whose training pairs share one, and the option check."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from judgerl.data import load_pairs, write_pairs_jsonl
from judgerl.gold.records import normalize_prompt
from judgerl.types import PreferencePair

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_if_judge", ROOT / "bench" / "bench_if_judge.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    yield mod
    while str(ROOT / "bench") in sys.path:
        sys.path.remove(str(ROOT / "bench"))


@pytest.fixture(scope="module")
def small_ifeval(shared_data, tmp_path_factory):
    """A data folder whose ifeval/input_data.jsonl holds the first 40 IFEval records; their train-split prompts."""
    from judgerl.data.builders.if_pairs import prompt_split

    lines = (shared_data / "ifeval" / "input_data.jsonl").read_text().splitlines()[:40]
    root = tmp_path_factory.mktemp("data")
    (root / "ifeval").mkdir()
    (root / "ifeval" / "input_data.jsonl").write_text("\n".join(lines) + "\n")
    train = [r["prompt"] for r in map(json.loads, lines) if prompt_split(r["key"]) == "train"]
    assert len(train) >= 3
    return root, train


def _study(tmp_path: Path, gold_prompt: str, held_prompts: list[str]) -> Path:
    study = tmp_path / "study"
    (study / "judge-tool").mkdir(parents=True)
    write_pairs_jsonl([PreferencePair(id="g0", prompt=gold_prompt, chosen="a", rejected="b", chosen_score=1.0,
                                      rejected_score=0.0, meta={"domain": "if"})],
                      study / "judge-tool" / "gold_pairs.jsonl")
    (study / "records-heldout.jsonl").write_text(
        "".join(json.dumps({"id": f"h{i}", "prompt": p, "response": "x"}) + "\n" for i, p in enumerate(held_prompts)))
    return study


def test_data_drops_the_study_held_out_prompts_and_keeps_its_gold_pairs(bench, small_ifeval, tmp_path):
    data, train_prompts = small_ifeval
    held = ["  " + train_prompts[0].replace(" ", "\n", 1)]  # re-wrapped: matched on the normalised text
    study = _study(tmp_path, "Write a haiku about rain.", held)
    args = bench.parse_args(["--out", str(tmp_path / "out"), "--study", str(study), "--data", str(data)])
    res = bench.build_data(args, tmp_path / "out")
    pairs = load_pairs(tmp_path / "out" / "data" / "train.jsonl").pairs
    assert res["study_pairs"] == 1 and pairs[0].id == "g0"
    assert res["if_pairs_dropped_heldout"] >= 1 and res["pairs"] == len(pairs) == 1 + res["if_pairs_kept"]
    assert normalize_prompt(held[0]) not in {normalize_prompt(p.prompt) for p in pairs}
    assert all(p.meta.get("instruction_ids") for p in pairs[1:])  # what the IF teacher checks


def test_a_study_whose_training_pairs_share_a_held_out_prompt_is_refused(bench, small_ifeval, tmp_path):
    data, _ = small_ifeval
    study = _study(tmp_path, "Same prompt.", ["Same   prompt."])
    args = bench.parse_args(["--out", str(tmp_path / "out"), "--study", str(study), "--data", str(data)])
    with pytest.raises(RuntimeError, match="shares its prompt"):
        bench.build_data(args, tmp_path / "out")


def test_a_missing_study_file_is_named(bench, tmp_path):
    args = bench.parse_args(["--out", str(tmp_path / "out"), "--study", str(tmp_path / "nowhere")])
    with pytest.raises(FileNotFoundError, match="gold_pairs.jsonl"):
        bench.build_data(args, tmp_path / "out")


def test_a_rerun_with_other_sft_steps_is_refused(bench, tmp_path):
    from run_options import check_options

    args = bench.parse_args(["--out", str(tmp_path), "--study", "s", "--sft-steps", "100"])
    check_options(tmp_path / "options.json", vars(args), selectors=bench.SELECTORS, later=bench.LATER)
    more = bench.parse_args(["--out", str(tmp_path), "--study", "s", "--sft-steps", "100", "--grpo-steps", "30",
                             "--budget-min", "60"])
    check_options(tmp_path / "options.json", vars(more), selectors=bench.SELECTORS, later=bench.LATER)  # accepted
    other = bench.parse_args(["--out", str(tmp_path), "--study", "s", "--sft-steps", "50"])
    with pytest.raises(SystemExit, match="sft_steps"):
        check_options(tmp_path / "options.json", vars(other), selectors=bench.SELECTORS, later=bench.LATER)


def test_rubric_option_trains_on_rubric_prompts(bench, small_ifeval, tmp_path):
    data, train_prompts = small_ifeval
    study = _study(tmp_path, "Write a haiku about rain.", [])
    (study / "judge-tool-rubric").mkdir()
    write_pairs_jsonl([PreferencePair(id="r0", prompt="Write a limerick.", chosen="a", rejected="b", chosen_score=1.0,
                                      rejected_score=0.0, meta={"domain": "if"}, rubric="1. no commas")],
                      study / "judge-tool-rubric" / "gold_pairs.jsonl")
    args = bench.parse_args(["--out", str(tmp_path / "out"), "--study", str(study), "--data", str(data), "--rubric"])
    res = bench.build_data(args, tmp_path / "out")
    pairs = load_pairs(tmp_path / "out" / "data" / "train.jsonl").pairs
    assert pairs[0].id == "r0" and pairs[0].rubric == "1. no commas"  # the tool-rubric arm's gold pairs
    assert res["if_pairs_kept"] >= 1 and all(p.rubric for p in pairs[1:])  # every builder pair has its rubric


def test_read_judgments_counts_what_the_judge_did(bench, tmp_path):
    """Failed code, a printed score line, copying it, and whether the checks were right (vs the gold)."""
    def write(d, recs):
        d.mkdir(parents=True)
        (d / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))

    think = "<think>Let me check.\n```python\nprint(1)\n```\n```output\n{}\n```\n</think><score>{}</score>"
    write(tmp_path / "gold", [{"id": i, "score": s, "final": True} for i, s in (("a", 9.0), ("b", 5.0), ("c", 0.0))])
    write(tmp_path / "judge", [
        {"id": "a", "score": 9.0, "reasoning": think.format("2 of 2 score 9", 9), "final": True},  # right, copied
        {"id": "b", "score": 9.0, "reasoning": think.format("1 of 2 score 5", 9), "final": True},  # right, not copied
        {"id": "c", "score": 9.0, "reasoning": think.format("TypeError: bad operand", 9), "final": True}])  # failed
    c = bench.read_judgments(tmp_path / "judge", tmp_path / "gold")
    assert c == {"n": 3, "failed": 1, "printed": 2, "copied": 1, "printed_gold": 2, "written_gold": 1}
