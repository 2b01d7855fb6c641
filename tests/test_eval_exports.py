"""Leaderboard exports (judgerl.eval.exports, `judgerl export`) against hand-made files in the upstream shapes:
reward-bench's results JSON (scripts/run_generative.py results_grouped, rewardbench/utils.py save_to_hub) and
Arena-Hard-Auto's leaderboard CSV / console table (show_result.py, leaderboard/arena_hard_leaderboard_*.csv)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from judgerl.cli.main import main
from judgerl.data import load_pairs
from judgerl.eval.benchmarks import bench_fields, benchmark_scores
from judgerl.eval.exports import (
    arena_hard_csv,
    arena_hard_lines,
    arena_hard_rows,
    dump_rewardbench,
    results_path,
    rewardbench_results,
)


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _rb1_rows() -> list[dict]:
    subsets = ["alpacaeval-easy", "alpacaeval-easy", "mt-bench-hard", "donotanswer", "math-prm", "hep-go"]
    return [{"id": str(k), "prompt": f"P{k}", "chosen": f"good {k}", "rejected": f"bad {k}", "subset": s}
            for k, s in enumerate(subsets)]


def _pairwise(pairs, wrong=()):
    """A judge right in both orders except on the pairs in ``wrong`` (wrong in both)."""
    out = []
    for p in pairs:
        for oi, order in enumerate(("AB", "BA")):
            right = "A" if order == "AB" else "B"
            v = ("B" if right == "A" else "A") if p.id in wrong else right
            out.append({"pair_id": p.id, "source": p.source, "kind": "pairwise", "order": order, "order_index": oi,
                        "sample": 0, "chosen_index": 0 if order == "AB" else 1,
                        "decision": {"valid": True, "verdict": v}, "gold_tie": p.tie, "bench": bench_fields(p)})
    return out


def test_rewardbench_results_file_has_reward_benchs_shape(tmp_path: Path) -> None:
    pairs = load_pairs(_write(tmp_path / "rb.jsonl", _rb1_rows())).pairs
    summary = {"benchmark": benchmark_scores(_pairwise(pairs, wrong={"1", "4"})), "config": {"model": "org/judge-7b"}}
    name, results = rewardbench_results(summary)
    assert name == "rewardbench"
    assert results == {"model": "org/judge-7b", "model_type": "Generative RM", "chat_template": None,
                       "alpacaeval-easy": 0.5, "mt-bench-hard": 1.0, "donotanswer": 1.0, "math-prm": 0.0, "hep-go": 1.0}
    assert dump_rewardbench(results) == (
        '{\n    "alpacaeval-easy": 0.5,\n    "chat_template": null,\n    "donotanswer": 1.0,\n    "hep-go": 1.0,\n'
        '    "math-prm": 0.0,\n    "model": "org/judge-7b",\n    "model_type": "Generative RM",\n'
        '    "mt-bench-hard": 1.0\n}')
    custom = rewardbench_results(summary, model="x", model_type="Custom Classifier")[1]
    assert custom["model_type"] == "Custom Classifier"
    assert results_path(tmp_path, "org/judge-7b") == tmp_path / "leaderboard" / "eval-set" / "org" / "judge-7b.json"
    unsafe = results_path(tmp_path, "../../etc/x y")
    assert unsafe == tmp_path / "leaderboard" / "eval-set" / "_" / "_" / "etc" / "x_y.json"


def test_incomplete_rewardbench_runs_are_refused_unless_partial(tmp_path: Path) -> None:
    pairs = load_pairs(_write(tmp_path / "rb.jsonl", _rb1_rows()[:3])).pairs  # no Safety, no Reasoning
    summary = {"benchmark": benchmark_scores(_pairwise(pairs)), "config": {"model": "m"}}
    with pytest.raises(ValueError, match="sections without any subset: Safety, Reasoning.*--partial"):
        rewardbench_results(summary)
    assert set(rewardbench_results(summary, partial=True)[1]) == {"model", "model_type", "chat_template",
                                                                  "alpacaeval-easy", "mt-bench-hard"}
    with pytest.raises(ValueError, match="no RewardBench scores"):
        rewardbench_results({"benchmark": {"judgebench": {}}})


def test_rewardbench2_results_carry_the_ties_score_of_a_pointwise_run(tmp_path: Path) -> None:
    rows = [{"id": "1", "prompt": "P", "chosen": ["right"], "rejected": ["w1", "w2", "w3"], "num_correct": 1,
             "num_incorrect": 3, "total_completions": 4, "subset": "Math"}]
    rows += [{"id": f"{kind}:1", "prompt": "T", "chosen": [f"{kind} ok {i}" for i in range(n)],
              "rejected": [f"{kind} no"], "num_correct": n, "num_incorrect": 1, "total_completions": n + 1,
              "subset": "Ties"} for kind, n in (("ref", 1), ("tied", 2))]
    pairs = load_pairs(_write(tmp_path / "rb2.jsonl", rows)).pairs
    scores = {"right": 9, "w1": 1, "w2": 2, "w3": 3, "ref ok 0": 8, "ref no": 2, "tied ok 0": 8, "tied ok 1": 7,
              "tied no": 2}
    recs = [{"pair_id": p.id, "source": p.source, "kind": "pointwise", "order": o, "order_index": i, "sample": 0,
             "decision": {"valid": True, "scores": [scores[t]]}, "gold_tie": False, "bench": bench_fields(p)}
            for p in pairs for i, (o, t) in enumerate((("chosen", p.chosen), ("rejected", p.rejected)))]
    _, results = rewardbench_results({"benchmark": benchmark_scores(recs), "config": {"model": "m"}})
    # Ties by hand: both prompts accurate; tied spread 1 < margins 5 (tied) and 6 (ref); tanh(min(6, 5) / 1 - 1)
    ties = 0.30 + 0.30 + 0.20 + 0.20 + 0.01 * math.tanh(4.0)
    assert results == {"model": "m", "model_type": "Generative RM", "chat_template": None, "Math": 1.0,
                       "Ties": pytest.approx(ties)}
    pairwise = {"benchmark": benchmark_scores(_pairwise(pairs)), "config": {"model": "m"}}
    with pytest.raises(ValueError, match="Ties.*pointwise protocol"):
        rewardbench_results(pairwise)
    assert "Ties" not in rewardbench_results(pairwise, partial=True)[1]


def test_export_cli_end_to_end_on_a_rewardbench_eval(tmp_path: Path, capsys) -> None:
    data = _write(tmp_path / "rb.jsonl", _rb1_rows())
    outputs = tmp_path / "judge.jsonl"
    outputs.write_text(json.dumps("<think>A</think><verdict>A</verdict>") + "\n")
    run = tmp_path / "run"
    assert main(["eval", "--model", f"scripted/{outputs}", "--data", str(data), "--out", str(run),
                 "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["export", str(run), "--format", "rewardbench", "--model", "org/judge-7b"]) == 0
    printed = capsys.readouterr().out
    assert "RewardBench: Chat 50.0%, Chat Hard 50.0%, Safety 50.0%, Reasoning 50.0%, Score 50.0%" in printed
    text = (run / "leaderboard" / "eval-set" / "org" / "judge-7b.json").read_text()
    assert json.loads(text) == {"model": "org/judge-7b", "model_type": "Generative RM", "chat_template": None,
                                **{s: 0.5 for s in ("alpacaeval-easy", "mt-bench-hard", "donotanswer", "math-prm",
                                                     "hep-go")}}
    assert main(["export", str(run), "--format", "arena-hard"]) == 2
    assert "error: not an arena run" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "missing"), "--format", "rewardbench"]) == 2
    assert "summary.json: no such file" in capsys.readouterr().err


# ------------------------------------------------------------------ Arena-Hard

def _elo(win_rate: float) -> float:
    return 1000.0 + 400.0 * math.log10(win_rate / (1.0 - win_rate))


def _arena_summary() -> dict:
    return {"bt_elo_baseline": 1000.0, "baseline": "base",
            "leaderboard": [
                {"system": "tin", "bt_elo": _elo(0.25), "bt_elo_ci": None, "win_rate_style_controlled": 0.3},
                {"system": "gold", "bt_elo": _elo(0.75), "bt_elo_ci": [1000.0, _elo(0.9)],
                 "win_rate_style_controlled": 0.6},
                {"system": "base", "bt_elo": 1000.0, "bt_elo_ci": None, "baseline": True}],
            "inputs": {"gold": {"mean_words": 12.6}, "tin": {"mean_words": 3.0}, "base": {"mean_words": 20.0}}}


def test_arena_hard_table_has_show_results_columns_and_lines() -> None:
    rows = arena_hard_rows(_arena_summary())
    assert arena_hard_csv(rows, "2025-01-02") == (
        "model,score,rating_q025,rating_q975,CI,avg_tokens,date\n"
        'gold,75.0,50.0,90.0,"(-25.00, +15.00)",12.0,2025-01-02\n'
        'base,50.0,50.0,50.0,"(-0.00, +0.00)",20.0,2025-01-02\n'
        "tin,25.0,,,,3.0,2025-01-02\n")
    assert arena_hard_lines(rows) == [
        "gold".ljust(30) + " | score: 75.0  | 95% CI: (-25.0, 15.0) | average #tokens: 12",
        "base".ljust(30) + " | score: 50.0  | 95% CI:  (0.0, 0.0)  | average #tokens: 20",
        "tin".ljust(30) + " | score: 25.0  | 95% CI:      -       | average #tokens: 3"]
    styled = arena_hard_rows(_arena_summary(), style_control=True)
    assert [(r["model"], r["score"], r["rating_q025"]) for r in styled] == [
        ("gold", 60.0, None), ("base", 50.0, 50.0), ("tin", 30.0, None)]
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        arena_hard_csv(rows, "2025/01/02")
    with pytest.raises(ValueError, match="not an arena run"):
        arena_hard_rows({"benchmark": {}})


def test_export_cli_end_to_end_on_an_arena_run(tmp_path: Path, capsys) -> None:
    for name, prompt in (("base", True), ("gold", False)):
        _write(tmp_path / f"{name}.jsonl", [{"id": f"q{i}", "response": f"{name} says {i}",
                                             **({"prompt": f"Q{i}?"} if prompt else {})} for i in range(4)])
    outputs = tmp_path / "judge.jsonl"
    outputs.write_text(json.dumps("<think>t</think><verdict>[[A>B]]</verdict>") + "\n")
    run = tmp_path / "arena"
    assert main(["arena", "--judge", f"scripted/{outputs}", "--baseline", str(tmp_path / "base.jsonl"),
                 str(tmp_path / "gold.jsonl"), "-o", str(run), "--no-progress", "--bootstrap", "20"]) == 0
    capsys.readouterr()
    assert main(["export", str(run), "--format", "arena-hard", "--date", "2025-01-02"]) == 0
    printed = capsys.readouterr().out
    csv_text = (run / "leaderboard" / "arena_hard_leaderboard_20250102.csv").read_text()
    header, *lines = csv_text.splitlines()
    assert header == "model,score,rating_q025,rating_q975,CI,avg_tokens,date"
    gold = json.loads((run / "summary.json").read_text())["systems"]["gold"]
    wr = round(100 * gold["bt_win_rate"], 2)  # a position-biased judge: every system at ~50%
    assert {line.split(",")[0]: float(line.split(",")[1]) for line in lines} == {"gold": wr, "base": 50.0}
    assert all(line.endswith(",3.0,2025-01-02") for line in lines)
    assert "gold" in printed and "average #tokens: 3" in printed
