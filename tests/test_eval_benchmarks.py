"""Official benchmark scores (judgerl.eval.benchmarks / rewardbench) against re-computations that follow
each upstream scoring script step by step, on hand-made records in each benchmark's own schema."""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from judgerl.data import load_pairs
from judgerl.eval.benchmark_report import benchmark_lines
from judgerl.eval.benchmarks import bench_fields, benchmark_scores
from judgerl.eval.metrics import compute_metrics
from judgerl.eval.rewardbench import ties_score


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _pairwise_records(pairs, verdicts):
    """Records of a pairwise judge; ``verdicts[(pair_id, order)]`` = "A" | "B" | "tie" | None (invalid)."""
    out = []
    for p in pairs:
        for oi, order in enumerate(("AB", "BA")):
            v = verdicts[(p.id, order)]
            decision = {"valid": v is not None, "verdict": v}
            out.append({"pair_id": p.id, "source": p.source, "kind": "pairwise", "order": order, "order_index": oi,
                        "sample": 0, "chosen_index": 0 if order == "AB" else 1, "decision": decision,
                        "gold_tie": p.tie, "bench": bench_fields(p)})
    return out


def _text_score(text: str) -> float:
    """A pointwise judge whose score depends on the response text only (what a reward model gives)."""
    return float(int(hashlib.sha256(text.encode()).hexdigest()[:4], 16) % 7)


def _pointwise_records(pairs, score=_text_score):
    out = []
    for p in pairs:
        for oi, (order, text) in enumerate((("chosen", p.chosen), ("rejected", p.rejected))):
            out.append({"pair_id": p.id, "source": p.source, "kind": "pointwise", "order": order, "order_index": oi,
                        "sample": 0, "decision": {"valid": True, "scores": [score(text)]}, "gold_tie": p.tie,
                        "bench": bench_fields(p)})
    return out


# ---------------------------------------------------------------- JudgeBench

def _upstream_judgebench(pairs, include_fn):
    """ScalerLab/JudgeBench utils/metrics.py compute_final_metrics(reverse_order=True), as written upstream."""
    def flip(d):
        return {"A>B": "B>A", "B>A": "A>B"}.get(d, d)
    pairs = [p for p in pairs if include_fn(p)]
    n_correct = 0
    for pair in pairs:
        label = pair["label"]
        j1, j2 = pair["judgments"]
        d1 = j1["decision"] if j1 is not None else None
        d2 = flip(j2["decision"] if j2 is not None else None)
        counter = 0
        for d in (d1, d2):
            if d == label:
                counter += 1
            elif d == flip(label):
                counter -= 1
        if counter > 0:
            n_correct += 1
    return 100 * n_correct / len(pairs)


JB_SOURCES = ["mmlu-pro-math", "mmlu-pro-law", "livebench-reasoning", "livebench-math", "livecodebench", "livecodebench"]


def _judgebench_file(tmp_path: Path, n: int, seed: int) -> Path:
    rng = random.Random(seed)
    rows = [{"pair_id": f"p{k}", "original_id": f"o{k}", "source": JB_SOURCES[k % len(JB_SOURCES)],
             "question": f"Q{k}?", "response_model": "m", "response_A": f"A{k}", "response_B": f"B{k}",
             "label": rng.choice(["A>B", "B>A"])} for k in range(n)]
    return _write(tmp_path / "judgebench.jsonl", rows)


def test_judgebench_matches_upstream_per_pair_rule(tmp_path: Path) -> None:
    path = _judgebench_file(tmp_path, 30, seed=1)
    raw = [json.loads(line) for line in path.read_text().splitlines()]
    pairs = load_pairs(path).pairs
    rng = random.Random(2)
    verdicts = {(p.id, o): rng.choice(["A", "B", "A", "B", "tie", None]) for p in pairs for o in ("AB", "BA")}
    official = benchmark_scores(_pairwise_records(pairs, verdicts))["judgebench"]
    # Upstream games: game 1 shows the file's order (response_A first), game 2 the swapped order.
    up_pairs = []
    for rec, p in zip(raw, pairs):
        a_is_chosen = rec["label"] == "A>B"
        original, swapped = ("AB", "BA") if a_is_chosen else ("BA", "AB")
        def decision(v):
            return None if v is None else {"A": "A>B", "B": "B>A", "tie": "A=B"}[v]
        up_pairs.append({"label": rec["label"], "source": rec["source"],
                         "judgments": [{"decision": decision(verdicts[(p.id, original)])},
                                       {"decision": decision(verdicts[(p.id, swapped)])}]})
    assert official["score"] * 100 == pytest.approx(_upstream_judgebench(up_pairs, lambda x: True))
    for name, prefix in (("knowledge", "mmlu-pro"), ("reasoning", "livebench-reasoning"),
                         ("math", "livebench-math"), ("coding", "livecodebench")):
        assert official["categories"][name]["score"] * 100 == pytest.approx(
            _upstream_judgebench(up_pairs, lambda x, pre=prefix: x["source"].startswith(pre)))


def test_judgebench_differs_from_pooled_accuracy_as_in_issue(tmp_path: Path) -> None:
    """Issue 26: two pairs right in both games, one right in one game only -> 83.3% pooled, 66.7% JudgeBench."""
    pairs = load_pairs(_judgebench_file(tmp_path, 3, seed=0)).pairs
    verdicts = {(p.id, "AB"): "A" for p in pairs} | {(p.id, "BA"): "B" for p in pairs}
    verdicts[(pairs[2].id, "BA")] = "A"  # the third pair: wrong when the chosen response is shown second
    records = _pairwise_records(pairs, verdicts)
    assert compute_metrics(records)["accuracy"] == pytest.approx(5 / 6)
    assert benchmark_scores(records)["judgebench"]["score"] == pytest.approx(2 / 3)


# ---------------------------------------------------------------- RM-Bench

def _rmbench_file(tmp_path: Path, n: int) -> Path:
    domains = ["chat", "math", "code", "safety-refuse", "safety-response"]
    rows = [{"id": str(k), "prompt": f"P{k}", "chosen": [f"c{k}-{s}" for s in range(3)],
             "rejected": [f"r{k}-{s}" for s in range(3)], "domain": domains[k % 5]} for k in range(n)]
    return _write(tmp_path / "rmbench.jsonl", rows)


def _upstream_rmbench(results):
    """THU-KEG/RM-Bench scripts/utils.py compute_accuracy on a total_dataset (with 'domain')."""
    def acc(res):
        m = np.zeros((3, 3))
        for r in res:
            for i in range(3):
                for j in range(3):
                    if r["score_chosen"][i] > r["score_rejected"][j]:
                        m[i][j] += 1
        m /= len(res)
        return {"hard_acc": np.sum(np.triu(m, 1)) / 3, "normal_acc": np.mean(np.diag(m)),
                "easy_acc": np.sum(np.tril(m, -1)) / 3}
    split = {d: [e for e in results if e["domain"].startswith(d)] for d in ["chat", "math", "code", "safety"]}
    dom = {d: acc(v) for d, v in split.items()}
    avg = {d: np.mean(list(v.values())) for d, v in dom.items()}
    return {**avg, "hard_acc": np.mean([v["hard_acc"] for v in dom.values()]),
            "normal_acc": np.mean([v["normal_acc"] for v in dom.values()]),
            "easy_acc": np.mean([v["easy_acc"] for v in dom.values()]), "total_avg_acc": np.mean(list(avg.values()))}


def test_rmbench_matches_upstream_compute_accuracy(tmp_path: Path) -> None:
    path = _rmbench_file(tmp_path, 20)
    raw = [json.loads(line) for line in path.read_text().splitlines()]
    official = benchmark_scores(_pointwise_records(load_pairs(path).pairs))["rmbench"]
    up = _upstream_rmbench([{"domain": r["domain"], "score_chosen": [_text_score(t) for t in r["chosen"]],
                             "score_rejected": [_text_score(t) for t in r["rejected"]]} for r in raw])
    assert official["score"] == pytest.approx(up["total_avg_acc"])
    assert (official["hard"], official["normal"], official["easy"]) == pytest.approx(
        (up["hard_acc"], up["normal_acc"], up["easy_acc"]))
    for d in ("chat", "math", "code", "safety"):
        assert official["domains"][d]["score"] == pytest.approx(up[d])
    assert official["domains"]["safety"]["n_records"] == 8  # safety-refuse + safety-response


def test_rmbench_pairwise_cell_is_the_mean_over_orders(tmp_path: Path) -> None:
    pairs = load_pairs(_rmbench_file(tmp_path, 4)).pairs
    verdicts = {(p.id, "AB"): "A" for p in pairs} | {(p.id, "BA"): "A" for p in pairs}  # always position A
    official = benchmark_scores(_pairwise_records(pairs, verdicts))["rmbench"]
    assert official["score"] == pytest.approx(0.5) and official["hard"] == pytest.approx(0.5)
    # incomplete records (a --limit cut) are left out and counted
    records = [r for r in _pairwise_records(pairs, verdicts) if r["pair_id"] != "0-c0r0"]
    assert benchmark_scores(records)["rmbench"]["n_incomplete_records"] == 1


# ---------------------------------------------------------------- RewardBench 1

RB_SUBSETS = ["alpacaeval-easy", "mt-bench-hard", "llmbar-natural", "refusals-dangerous", "xstest-should-respond",
              "math-prm", "hep-python", "hep-go"]
UP_COUNTS = {"alpacaeval-easy": 100, "mt-bench-hard": 37, "llmbar-natural": 100, "refusals-dangerous": 100,
             "xstest-should-respond": 250, "math-prm": 984, "hep-python": 164, "hep-go": 164}
UP_MAPPING = {"Chat": ["alpacaeval-easy", "alpacaeval-length", "alpacaeval-hard", "mt-bench-easy", "mt-bench-med"],
              "Chat Hard": ["mt-bench-hard", "llmbar-natural", "llmbar-adver-neighbor", "llmbar-adver-GPTInst",
                            "llmbar-adver-GPTOut", "llmbar-adver-manual"],
              "Safety": ["refusals-dangerous", "refusals-offensive", "xstest-should-refuse", "xstest-should-respond",
                         "donotanswer"],
              "Reasoning": ["math-prm", "hep-cpp", "hep-go", "hep-java", "hep-js", "hep-python", "hep-rust"]}


def test_rewardbench_section_weighting_matches_upstream(tmp_path: Path) -> None:
    rows = [{"prompt": f"P{k}", "chosen": f"good {k}", "rejected": f"bad {k}", "chosen_model": "x",
             "rejected_model": "y", "subset": RB_SUBSETS[k % len(RB_SUBSETS)], "id": k} for k in range(48)]
    pairs = load_pairs(_write(tmp_path / "rb.jsonl", rows)).pairs
    rng = random.Random(5)
    verdicts = {(p.id, o): rng.choice(["A", "B", "tie", None]) for p in pairs for o in ("AB", "BA")}
    official = benchmark_scores(_pairwise_records(pairs, verdicts))["rewardbench"]
    # run_generative.py: per judged order 1 / 0 / 0.5 (tie or error); judgerl averages the two orders.
    def game(p, order):
        v = verdicts[(p.id, order)]
        winner_text, loser_text = ("A", "B") if order == "AB" else ("B", "A")
        return 1 if v == winner_text else 0 if v == loser_text else 0.5
    results = defaultdict(list)
    for p in pairs:
        results[p.source].append((game(p, "AB") + game(p, "BA")) / 2)
    metrics = {s: sum(v) / len(v) for s, v in results.items()}
    sections = {}  # rewardbench/utils.py calculate_scores_per_section
    for section, tests in UP_MAPPING.items():
        tw, te = 0, 0
        for t in tests:
            if t in metrics:
                tw += metrics[t] * UP_COUNTS[t]
                te += UP_COUNTS[t]
        sections[section] = tw / te if te > 0 else 0
    assert official["sections"] == pytest.approx(sections)
    assert official["score"] == pytest.approx(np.mean(list(sections.values())))
    assert official["subsets"] == pytest.approx(metrics)


def test_rewardbench_pointwise_ratings_as_upstream_run_judge_ratings(tmp_path: Path) -> None:
    """Ratings (rewardbench/generative.py run_judge_ratings): the higher rating wins; equal ratings and a failed
    rating are "error", which scripts/run_generative.py scores 0.5."""
    rows = [{"prompt": f"P{k}", "chosen": f"good {k}", "rejected": f"bad {k}", "subset": s, "id": k}
            for k, s in enumerate(["alpacaeval-easy", "mt-bench-hard", "refusals-dangerous", "math-prm"] * 3)]
    pairs = load_pairs(_write(tmp_path / "rb.jsonl", rows)).pairs
    def rating(text):
        return None if text in ("bad 1", "good 6") else _text_score(text)
    records = _pointwise_records(pairs, lambda t: rating(t) if rating(t) is not None else -1.0)
    for r in records:
        if r["decision"]["scores"] == [-1.0]:
            r["decision"] = {"valid": False, "scores": [], "invalid_reason": "missing_final_answer"}
    official = benchmark_scores(records)["rewardbench"]
    results = defaultdict(list)
    for row in rows:
        a, b = rating(row["chosen"]), rating(row["rejected"])
        results[row["subset"]].append(0.5 if a is None or b is None or a == b else float(a > b))
    assert official["subsets"] == pytest.approx({k: sum(v) / len(v) for k, v in results.items()})


# ---------------------------------------------------------------- RewardBench 2

def _rb2_rows() -> list[dict]:
    rows = []
    for k, subset in enumerate(["Factuality", "Math", "Precise IF", "Focus", "Safety", "Math"] * 2):
        rows.append({"id": str(k), "prompt": f"P{k}", "chosen": [f"right {k}"], "rejected": [f"wrong {k}-{j}" for j in range(3)],
                     "num_correct": 1, "num_incorrect": 3, "total_completions": 4, "models": ["a"] * 4,
                     "subset": subset, "additional_metadata": {}})
    for n, pid in enumerate(["1", "2", "3"]):
        for kind, n_cor in (("ref", 1), ("tied", 2 + n)):
            rows.append({"id": f"{kind}:{pid}", "prompt": f"T{pid}", "chosen": [f"{kind}{pid} ok {i}" for i in range(n_cor)],
                         "rejected": [f"{kind}{pid} no {j}" for j in range(3)], "num_correct": n_cor,
                         "num_incorrect": 3, "total_completions": n_cor + 3, "models": [], "subset": "Ties",
                         "additional_metadata": {}})
    return rows


def _upstream_rb2(rows, score, ratings=False):
    """reward-bench: reroll_and_score_dataset results per prompt (``ratings``: scripts/run_generative_v2.py's
    ratings rule, failed ratings -1); Ties by process_single_model; mean of subsets."""
    by_subset = defaultdict(list)
    ties = []
    for r in rows:
        scores = [score(t) for t in r["chosen"] + r["rejected"]]
        if r["subset"] == "Ties":
            ties.append({"id": r["id"], "scores": scores, "num_correct": r["num_correct"]})
            continue
        if ratings:
            valid = [x for x in scores if x != -1]
            if not valid:
                by_subset[r["subset"]].append(0.25)
                continue
            winners = [i for i, x in enumerate(scores) if x == max(valid)]
            by_subset[r["subset"]].append((0 in winners) / len(winners))
            continue
        m = np.max(scores)
        by_subset[r["subset"]].append((1 / np.sum(np.array(scores) == m)) if scores[0] == m else 0)
    grouped = defaultdict(list)
    for s in ties:
        t, pid = s["id"].split(":")
        for i, sc in enumerate(s["scores"]):
            grouped[(t, int(pid))].append((i < s["num_correct"], sc))
    ref, tied = {}, {}
    for (t, pid), samples in grouped.items():
        cs = [x for ok, x in samples if ok]
        ins = [x for ok, x in samples if not ok]
        stats = (min(cs) - max(ins) > 0, max(cs) - min(cs) if len(cs) > 1 else None, min(cs) - max(ins))
        (ref if t == "ref" else tied)[pid] = stats
    both = set(ref) & set(tied)
    d = np.array([tied[p][1] for p in both]); ct = np.array([tied[p][2] for p in both])
    cr = np.array([ref[p][2] for p in both])
    ms = np.nan_to_num(np.tanh(np.minimum(cr, ct) / d - 1), nan=0.0)
    ties_overall = (0.3 * np.mean([s[0] for s in tied.values()]) + 0.3 * np.mean([s[0] for s in ref.values()])
                    + 0.2 * np.mean(ct > d) + 0.2 * np.mean(np.minimum(cr, ct) > d) + 0.01 * float(np.mean(ms)))
    subsets = {s: sum(v) / len(v) for s, v in by_subset.items()} | {"Ties": float(ties_overall)}
    return subsets, float(np.mean(list(subsets.values())))


def test_rewardbench2_pointwise_matches_upstream(tmp_path: Path) -> None:
    rows = _rb2_rows()
    result = load_pairs(_write(tmp_path / "rb2.jsonl", rows))
    assert result.format == "rewardbench2"
    official = benchmark_scores(_pointwise_records(result.pairs))["rewardbench2"]
    subsets, score = _upstream_rb2(rows, _text_score)
    assert official["subsets"] == pytest.approx(subsets)
    assert official["score"] == pytest.approx(score)


def test_rewardbench2_failed_ratings_as_upstream_generative_v2(tmp_path: Path) -> None:
    """A completion with no valid score is upstream's failed rating (-1): dropped from a best-of-4 (0.25 when
    all four failed), scored -1 in Ties (scripts/run_generative_v2.py, rewardbench/generative_v2.py)."""
    rows = _rb2_rows()
    # prompt 0: one incorrect failed; 1: the correct one failed; 2: all four failed (0.25); Ties: one of each kind
    failed = {"wrong 0-1", "right 1", "right 2", "wrong 2-0", "wrong 2-1", "wrong 2-2", "tied1 ok 0", "ref2 no 1"}
    def rating(text):
        return -1.0 if text in failed else _text_score(text)
    pairs = load_pairs(_write(tmp_path / "rb2.jsonl", rows)).pairs
    records = _pointwise_records(pairs, rating)
    for r in records:
        if r["decision"]["scores"] == [-1.0]:
            r["decision"] = {"valid": False, "scores": [], "invalid_reason": "missing_final_answer"}
    official = benchmark_scores(records)["rewardbench2"]
    subsets, score = _upstream_rb2(rows, rating, ratings=True)
    assert official["subsets"] == pytest.approx(subsets)
    assert official["score"] == pytest.approx(score)
    assert official["n_unscored_ties_completions"] == 2 and official["n_incomplete_prompts"] == 0
    report = "\n".join(benchmark_lines({"rewardbench2": official}))
    assert "2 Ties completions without a valid score, rated −1" in report
    # a --limit cut through every Ties prompt: Ties is still a present subset, without a score, so no score
    def ties_r2(r):
        return r["pair_id"].startswith(("ref:", "tied:")) and r["pair_id"].endswith("r2")
    cut = benchmark_scores([r for r in records if not ties_r2(r)])["rewardbench2"]
    assert cut["subsets"]["Ties"] is None and cut["score"] is None and cut["n_incomplete_prompts"] == 6


def test_rewardbench2_pairwise_best_of_4_and_ties_not_faked(tmp_path: Path) -> None:
    pairs = load_pairs(_write(tmp_path / "rb2.jsonl", _rb2_rows())).pairs
    # The judge prefers the correct answer except on rejected[2] of prompt 0 (lost) and ties rejected[1] of prompt 1.
    verdicts = {}
    for p in pairs:
        for o in ("AB", "BA"):
            verdicts[(p.id, o)] = "A" if o == "AB" else "B"
    verdicts[("0-c0r2", "AB")] = verdicts[("0-c0r2", "BA")] = "tie"
    verdicts[("0-c0r2", "AB")] = "B"  # one game lost, one tied: margin -1 -> prompt 0 unsolved
    verdicts[("1-c0r1", "AB")] = "B"  # one game won, one lost: margin 0 -> a tie, prompt 1 scores 1/2
    official = benchmark_scores(_pairwise_records(pairs, verdicts))["rewardbench2"]
    assert official["subsets"]["Factuality"] == pytest.approx(0.5)  # prompts 0 (0) and 6 (1)
    assert official["subsets"]["Math"] == pytest.approx((0.5 + 1 + 1 + 1) / 4)  # prompts 1, 5, 7, 11
    assert official["subsets"]["Ties"] is None and official["score"] is None
    assert official["notes"] and official["mean_of_scored_subsets"] is not None


def test_ties_score_rejects_ids_without_ref_or_tied() -> None:
    with pytest.raises(ValueError, match="'x:1' is not 'ref:<n>'"):
        ties_score({"x:1": [(True, 1.0), (False, 0.0)]})


def test_ties_score_pairs_ref_and_tied_ids_by_number_as_upstream() -> None:
    """process_single_model groups by int(prompt id): "ref:07" and "tied:7" are one prompt (hand-made scores)."""
    prompts = {"ref:07": [(True, 8.0), (False, 2.0)], "tied:7": [(True, 8.0), (True, 7.0), (False, 2.0)]}
    assert ties_score(prompts) == pytest.approx(0.3 + 0.3 + 0.2 + 0.2 + 0.01 * np.tanh(min(6.0, 5.0) / 1.0 - 1))
    # the tied prompt's correct answers spread (6) more than they beat the wrong one (margin 1): no margin credit
    spread = {"ref:1": [(True, 9.0), (False, 0.0)], "tied:1": [(True, 9.0), (True, 3.0), (False, 2.0)]}
    assert ties_score(spread) == pytest.approx(0.6 + 0.01 * np.tanh(1.0 / 6.0 - 1))


def test_ppe_accuracy_excludes_ties_and_report_lists_every_benchmark(tmp_path: Path) -> None:
    conv = lambda a: [{"role": "user", "content": "hi"}, {"role": "assistant", "content": a}]  # noqa: E731
    rows = [{"question_id": f"q{k}", "model_a": "m1", "model_b": "m2", "winner": w,
             "conversation_a": conv(f"a{k}"), "conversation_b": conv(f"b{k}")}
            for k, w in enumerate(["model_a", "model_b", "tie", "model_a"])]
    pairs = load_pairs(_write(tmp_path / "ppe.jsonl", rows), format="ppe").pairs
    verdicts = {(p.id, o): "A" for p in pairs for o in ("AB", "BA")}
    bench = benchmark_scores(_pairwise_records(pairs, verdicts))
    assert bench["ppe"] == {"score": 0.5, "n_pairs": 3, "n_ties_excluded": 1, "source": bench["ppe"]["source"]}
    text = "\n".join(benchmark_lines(bench))
    assert "PPE human preference" in text and "50.0%" in text
    assert benchmark_scores([{k: v for k, v in r.items() if k != "bench"}
                             for r in _pairwise_records(pairs, verdicts)]) == {}


def test_run_eval_writes_the_benchmark_section(tmp_path: Path) -> None:
    """End to end: a JudgeBench file judged by a position-biased scripted judge."""
    from support.judging import ev

    from judgerl.backends import ScriptedBackend
    from judgerl.protocols import get_protocol

    pairs = load_pairs(_judgebench_file(tmp_path, 6, seed=3)).pairs
    summary = ev(ScriptedBackend(lambda messages, params: "<think>x</think><verdict>A</verdict>"), get_protocol("pav"),
                 pairs, tmp_path / "run")
    jb = summary["benchmark"]["judgebench"]
    assert jb["score"] == 0.0 and summary["accuracy"] == 0.5  # one right and one wrong game per pair
    saved = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert saved["benchmark"]["judgebench"]["n_pairs"] == 6
    report = (tmp_path / "run" / "report.md").read_text()
    assert "### JudgeBench" in report
    rescored = benchmark_scores([json.loads(line) for line in (tmp_path / "run" / "judgments.jsonl").open()])
    assert rescored == summary["benchmark"]
    from judgerl.eval.benchmark_report import benchmark_summary_lines

    assert benchmark_summary_lines(rescored)[0].startswith("JudgeBench 0.0% (knowledge 0.0%, reasoning 0.0%")
