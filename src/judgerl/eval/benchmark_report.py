"""The "Benchmark scores" section of ``report.md``: the official numbers of :mod:`judgerl.eval.benchmarks`."""

from __future__ import annotations

from typing import Any, Mapping


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    return [_row(header), _row(["---"] * len(header)), *(_row(r) for r in rows)]


def benchmark_lines(bench: Mapping[str, Any] | None) -> list[str]:
    """Markdown lines for ``summary["benchmark"]`` (empty list when there is none)."""
    if not bench:
        return []
    lines = ["## Benchmark scores (each benchmark's own rule)", "",
             "Computed from the same judgments with each benchmark's scoring code re-created "
             "(docs/benchmarks.md); compare these, not the pooled accuracy above, with leaderboards.", ""]
    if "judgebench" in bench:
        b = bench["judgebench"]
        cats = b.get("categories") or {}
        lines += ["### JudgeBench (per-pair: +1 per correct game, −1 per wrong, correct if > 0)", ""]
        lines += _table(["overall", *cats], [[f"{_pct(b.get('score'))} ({b.get('n_pairs')} pairs)",
                                             *(f"{_pct(c.get('score'))} ({c.get('n_pairs')})" for c in cats.values())]])
        lines.append("")
    if "rmbench" in bench:
        b = bench["rmbench"]
        lines += ["### RM-Bench (domain-averaged 3×3 style matrix)", ""]
        rows = [[d, _pct(v.get("score")), _pct(v.get("easy")), _pct(v.get("normal")), _pct(v.get("hard")),
                 v.get("n_records")] for d, v in (b.get("domains") or {}).items()]
        rows.append(["**average**", _pct(b.get("score")), _pct(b.get("easy")), _pct(b.get("normal")),
                     _pct(b.get("hard")), b.get("n_records")])
        lines += _table(["domain", "score", "easy", "normal", "hard", "records"], rows)
        if b.get("n_incomplete_records"):
            lines.append(f"\n{b['n_incomplete_records']} records without all 9 pairs left out.")
        lines.append("")
    if "rewardbench" in bench:
        b = bench["rewardbench"]
        secs = b.get("sections") or {}
        lines += ["### RewardBench (section-weighted)", ""]
        lines += _table(["score", *secs], [[_pct(b.get("score")), *(_pct(v) for v in secs.values())]])
        lines.append("")
    if "rewardbench2" in bench:
        b = bench["rewardbench2"]
        subs = b.get("subsets") or {}
        lines += ["### RewardBench 2 (best-of-4 per subset, Ties score, mean over subsets)", ""]
        lines += _table(["score", *subs], [[_pct(b.get("score")), *(_pct(v) for v in subs.values())]])
        for note in b.get("notes") or []:
            lines.append(f"\n{note}; mean of the scored subsets: {_pct(b.get('mean_of_scored_subsets'))}.")
        if b.get("n_unscored_ties_completions"):
            lines.append(f"\n{b['n_unscored_ties_completions']} Ties completions without a valid score, rated −1 "
                         "(upstream's failed rating).")
        lines.append("")
    if "ppe" in bench:
        b = bench["ppe"]
        lines += ["### PPE human preference (accuracy, ties excluded)", "",
                  f"{_pct(b.get('score'))} over {b.get('n_pairs')} battles.", ""]
    if "ppe_correctness" in bench:
        b = bench["ppe_correctness"]
        subs = b.get("subsets") or {}
        lines += ["### PPE correctness (accuracy on correct-vs-incorrect pairs; best-of-K with a pointwise judge)", ""]
        lines += _table(["subset", "accuracy", "best-of-K end", "best-of-K max", "row-wise Pearson", "prompts"],
                        [[s, _pct(v.get("accuracy")), _pct(v.get("end_score")), _pct(v.get("max_achieved")),
                          "–" if v.get("row_wise_pearson") is None else f"{v['row_wise_pearson']:.3f}",
                          v.get("n_prompts")] for s, v in subs.items()]
                        + [["**mean**", _pct(b.get("score")), "", "", "", b.get("n_prompts")]])
        for note in b.get("notes") or []:
            lines.append(f"\n{note}.")
        left = {k: b.get(k) for k in ("n_incomplete_prompts", "n_unscored_prompts") if b.get(k)}
        if left:
            lines.append("\nLeft out: " + ", ".join(f"{v} {k[2:].replace('_', ' ')}" for k, v in left.items()) + ".")
        lines.append("")
    return lines


def benchmark_summary_lines(bench: Mapping[str, Any] | None) -> list[str]:
    """One console line per benchmark with its official number(s), e.g.
    ``"JudgeBench 66.7% (knowledge 50.0%, reasoning 100.0%, …; 30 pairs)"``."""
    out = []
    for name, b in (bench or {}).items():
        if name == "judgebench":
            parts = [f"{k} {_pct(v.get('score'))}" for k, v in (b.get("categories") or {}).items()]
            out.append(f"JudgeBench {_pct(b.get('score'))} ({', '.join(parts + [str(b.get('n_pairs')) + ' pairs'])})")
        elif name == "rmbench":
            parts = [f"{k} {_pct(v.get('score'))}" for k, v in (b.get("domains") or {}).items()]
            out.append(f"RM-Bench {_pct(b.get('score'))} (easy {_pct(b.get('easy'))}, normal {_pct(b.get('normal'))}, "
                       f"hard {_pct(b.get('hard'))}; {', '.join(parts)})")
        elif name == "rewardbench":
            parts = [f"{k} {_pct(v)}" for k, v in (b.get("sections") or {}).items()]
            out.append(f"RewardBench {_pct(b.get('score'))} ({', '.join(parts)})")
        elif name == "rewardbench2":
            parts = [f"{k} {_pct(v)}" for k, v in (b.get("subsets") or {}).items()]
            out.append(f"RewardBench 2 {_pct(b.get('score'))} ({', '.join(parts)})")
        elif name == "ppe":
            out.append(f"PPE human preference {_pct(b.get('score'))} ({b.get('n_pairs')} battles, ties excluded)")
        elif name == "ppe_correctness":
            parts = [f"{k} {_pct(v.get('accuracy'))}" for k, v in (b.get("subsets") or {}).items()]
            out.append(f"PPE correctness {_pct(b.get('score'))} ({', '.join(parts)}; {b.get('n_prompts')} prompts)")
    return out
