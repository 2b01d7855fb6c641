"""Leaderboard exports of finished runs: a RewardBench results JSON and an Arena-Hard leaderboard table.

**RewardBench / RewardBench 2** (:func:`rewardbench_results`): the results dict that
allenai/reward-bench's scripts save and upload to the leaderboard's results repository
(``scripts/run_generative.py`` and ``scripts/run_v2.py`` / ``scripts/run_generative_v2.py``:
``results_grouped`` = ``{"model", "model_type", "chat_template", <subset>: score, …}``, written by
``rewardbench/utils.py::save_to_hub`` with ``json.dumps(indent=4, sort_keys=True)`` to
``results/eval-set/<model>.json``; RewardBench 2's Ties entry is the Ties score of
``process_single_model``). The section scores (Chat, Chat Hard, Safety, Reasoning) and the overall
score are not in that file: the leaderboard recomputes them from the subsets (``analysis/
get_benchmark_results.py``), and extra keys would be read as subsets, so they are returned beside
it (:func:`rewardbench_sections`) and printed by ``judgerl export``. Scores come from the run's
``summary.json`` ``benchmark`` section (:mod:`judgerl.eval.benchmarks`).

**Arena-Hard** (:func:`arena_hard_rows`): the leaderboard table of lmarena/arena-hard-auto
``show_result.py`` (v0.1; the CSV of ``--output``, ``leaderboard/arena_hard_leaderboard_<date>.csv``):
columns ``model, score, rating_q025, rating_q975, CI, avg_tokens, date``; ``score`` is the
Bradley-Terry win rate against the baseline in percent (``utils_math.py::get_win_rate_column``:
``1 / (1 + 10^((elo_baseline − elo) / 400))``, rounded to 2 decimals), ``rating_q025`` /
``rating_q975`` the same for the bootstrap interval's ends (judgerl's ``bt_elo_ci``, a percentile
bootstrap over prompts at the run's confidence, 95% by default as upstream's 2.5/97.5 percentiles),
``CI`` = ``"(-lo, +hi)"`` and the baseline a row at 50. ``avg_tokens`` is the mean response length
in whitespace tokens (upstream counts tiktoken tokens, so the two differ by the tokenizer). With
``style_control`` the score is judgerl's style-controlled win rate (no bootstrap: no interval).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any, Mapping

#: ``model_type`` of a generative judge in reward-bench's results (``scripts/run_generative.py``).
GENERATIVE_MODEL_TYPE = "Generative RM"
_RB_BENCHMARKS = ("rewardbench", "rewardbench2")


def read_summary(run_dir: str | Path) -> dict[str, Any]:
    """The ``summary.json`` of an eval or arena run directory.

    Raises:
        FileNotFoundError: no ``summary.json`` (the run has not finished).
        ValueError: the file is not a JSON object.
    """
    path = Path(run_dir) / "summary.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (is {run_dir} a finished judgerl eval / arena run?)")
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(summary, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return summary


def _rb_section(summary: Mapping[str, Any], benchmark: str | None) -> tuple[str, dict[str, Any]]:
    bench = summary.get("benchmark") or {}
    present = [b for b in _RB_BENCHMARKS if b in bench]
    if benchmark is not None:
        if benchmark not in _RB_BENCHMARKS:
            raise ValueError(f"benchmark must be one of {', '.join(_RB_BENCHMARKS)}, got {benchmark!r}")
        if benchmark not in bench:
            raise ValueError(f"the run has no {benchmark} scores (it has: {', '.join(bench) or 'none'})")
        return benchmark, bench[benchmark]
    if not present:
        raise ValueError("the run has no RewardBench scores: evaluate a RewardBench / RewardBench 2 file "
                         f"(benchmark scores present: {', '.join(bench) or 'none'})")
    if len(present) > 1:
        raise ValueError("the run has both RewardBench and RewardBench 2 scores: choose one with --benchmark")
    return present[0], bench[present[0]]


def rewardbench_results(summary: Mapping[str, Any], *, model: str | None = None,
                        model_type: str = GENERATIVE_MODEL_TYPE, chat_template: str | None = None,
                        benchmark: str | None = None, partial: bool = False) -> tuple[str, dict[str, Any]]:
    """(benchmark, results dict) in reward-bench's upload shape (module docstring).

    Args:
        summary: An eval run's ``summary.json``.
        model: The model name in the file (default: the judge's model of the run).
        model_type: reward-bench's model type (default ``"Generative RM"``).
        chat_template: reward-bench's ``chat_template`` entry (None for a judge's own template).
        benchmark: ``"rewardbench"`` or ``"rewardbench2"`` (default: the one in the run).
        partial: Export even when the leaderboard score is undefined (a section or subset is missing,
            e.g. ``--limit`` or RewardBench 2 Ties judged pairwise); subsets without a score are omitted.

    Raises:
        ValueError: no / ambiguous RewardBench scores in the run, or an incomplete run without ``partial``.
    """
    name, b = _rb_section(summary, benchmark)
    subsets = b.get("subsets") or {}
    if b.get("score") is None and not partial:
        if name == "rewardbench":
            missing = [s for s, v in (b.get("sections") or {}).items() if v is None]
            what = f"sections without any subset: {', '.join(missing)}"
        else:
            missing = [s for s, v in subsets.items() if v is None]
            what = f"subsets without a score: {', '.join(missing)}" + ("; " + "; ".join(b.get("notes") or []))
        raise ValueError(f"the {name} leaderboard score is undefined for this run ({what}); "
                         "pass --partial to export the scored subsets only")
    model_name = model or (summary.get("config") or {}).get("model") or (summary.get("info") or {}).get("model_arg")
    if not model_name:
        raise ValueError("the run does not name its model: pass --model")
    results: dict[str, Any] = {"model": str(model_name), "model_type": model_type, "chat_template": chat_template}
    for subset, value in subsets.items():
        if value is not None:
            if subset in results:
                raise ValueError(f"subset name {subset!r} clashes with a reward-bench results key")
            results[subset] = value
    return name, results


def rewardbench_sections(summary: Mapping[str, Any], benchmark: str) -> dict[str, float | None]:
    """The leaderboard's aggregate numbers: RewardBench 1 sections + score; RewardBench 2 score."""
    b = (summary.get("benchmark") or {})[benchmark]
    return {**(b.get("sections") or {}), "Score": b.get("score")}


def dump_rewardbench(results: Mapping[str, Any]) -> str:
    """The file text as ``save_to_hub`` writes it: ``json.dumps(indent=4, sort_keys=True)``, no newline."""
    return json.dumps(results, indent=4, sort_keys=True)


def results_path(run_dir: str | Path, model: str) -> Path:
    """``RUN_DIR/leaderboard/eval-set/<model>.json`` (upstream: ``results/eval-set/<model>.json``;
    ``org/name`` makes a folder as upstream); unsafe characters and ``..`` parts become ``_``."""
    parts = [re.sub(r"[^A-Za-z0-9._+-]", "_", p) for p in model.split("/") if p]
    parts = ["_" if p in (".", "..") else p for p in parts] or ["model"]
    return Path(run_dir) / "leaderboard" / "eval-set" / Path(*parts[:-1], parts[-1] + ".json")


def _win_rate_pct(elo: float, elo_baseline: float) -> float:
    """``get_win_rate_column``: the BT win rate against the baseline, percent, 2 decimals."""
    return round(100.0 / (1.0 + 10.0 ** ((elo_baseline - elo) / 400.0)), 2)


def arena_hard_rows(summary: Mapping[str, Any], *, style_control: bool = False) -> list[dict[str, Any]]:
    """Arena-Hard leaderboard rows of an arena run, best first (module docstring).

    Returns:
        ``[{"model", "score", "rating_q025", "rating_q975", "avg_tokens"}]``, percentages; the
        interval ends are None when the run has no bootstrap interval for the system.

    Raises:
        ValueError: ``summary`` is not an arena summary.
    """
    if "leaderboard" not in summary or "bt_elo_baseline" not in summary:
        raise ValueError("not an arena run (summary.json has no leaderboard): export --format arena-hard takes a "
                         "`judgerl arena` output directory")
    base = float(summary["bt_elo_baseline"])
    inputs = summary.get("inputs") or {}
    rows = []
    for r in summary["leaderboard"]:
        words = (inputs.get(r["system"]) or {}).get("mean_words")
        row: dict[str, Any] = {"model": r["system"], "avg_tokens": None if words is None else int(words)}
        if r.get("baseline"):
            row.update(score=50.0, rating_q025=50.0, rating_q975=50.0)
        elif style_control:
            wr = r.get("win_rate_style_controlled")
            row.update(score=None if wr is None else round(100.0 * wr, 2), rating_q025=None, rating_q975=None)
        else:
            elo, ci = r.get("bt_elo"), r.get("bt_elo_ci")
            row.update(score=None if elo is None else _win_rate_pct(elo, base),
                       rating_q025=_win_rate_pct(ci[0], base) if ci else None,
                       rating_q975=_win_rate_pct(ci[1], base) if ci else None)
        rows.append(row)
    rows.sort(key=lambda r: (-(r["score"] if r["score"] is not None else -math.inf), r["model"]))
    return rows


def _ci_text(row: Mapping[str, Any]) -> str:
    if row["rating_q025"] is None or row["score"] is None:
        return ""
    return f"(-{row['score'] - row['rating_q025']:.2f}, +{row['rating_q975'] - row['score']:.2f})"


def arena_hard_csv(rows: list[Mapping[str, Any]], date: str) -> str:
    """The CSV of ``show_result.py --output`` (header ``model,score,rating_q025,rating_q975,CI,avg_tokens,date``).

    Raises:
        ValueError: ``date`` is not ``YYYY-MM-DD``.
    """
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        raise ValueError(f"date must be YYYY-MM-DD, got {date!r}")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["model", "score", "rating_q025", "rating_q975", "CI", "avg_tokens", "date"])
    for r in rows:
        keys = ("score", "rating_q025", "rating_q975", "avg_tokens")
        nums = ["" if r[k] is None else repr(float(r[k])) for k in keys]
        w.writerow([r["model"], *nums[:3], _ci_text(r), nums[3], date])
    return buf.getvalue()


def arena_hard_lines(rows: list[Mapping[str, Any]]) -> list[str]:
    """``show_result.py``'s console lines: ``model | score: s | 95% CI: (lo, hi) | average #tokens: n``."""
    out = []
    for r in rows:
        score = "-" if r["score"] is None else round(r["score"], 1)
        interval = "-" if r["rating_q025"] is None or r["score"] is None else str(
            (round(r["rating_q025"] - r["score"], 1), round(r["rating_q975"] - r["score"], 1)))
        tokens = "-" if r["avg_tokens"] is None else r["avg_tokens"]
        out.append(f"{r['model'] : <30} | score: {score : ^5} | 95% CI: {interval : ^12} | average #tokens: {tokens}")
    return out
