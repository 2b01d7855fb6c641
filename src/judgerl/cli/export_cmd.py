"""`judgerl export RUN_DIR --format rewardbench|arena-hard`: leaderboard files from a finished run
(see judgerl.eval.exports)."""

from __future__ import annotations

import datetime
from enum import Enum
from pathlib import Path
from typing import Optional

import typer


class ExportFormat(str, Enum):
    rewardbench = "rewardbench"
    arena_hard = "arena-hard"


def export_command(
    run_dir: Path = typer.Argument(..., help="A finished `judgerl eval` (rewardbench) or `judgerl arena` "
                                   "(arena-hard) output directory."),
    format: ExportFormat = typer.Option(..., "--format", "-f", help="rewardbench: reward-bench's results JSON "
                                        "(RewardBench or RewardBench 2 runs); arena-hard: Arena-Hard-Auto's "
                                        "leaderboard table (arena runs)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output file (default: RUN_DIR/leaderboard/"
                                       "eval-set/<model>.json, or RUN_DIR/leaderboard/arena_hard_leaderboard_"
                                       "<YYYYMMDD>.csv)."),
    model: Optional[str] = typer.Option(None, "--model", help="rewardbench: the model name in the file (default: "
                                        "the run's judge model)."),
    model_type: str = typer.Option("Generative RM", "--model-type", help="rewardbench: reward-bench's model_type."),
    benchmark: Optional[str] = typer.Option(None, "--benchmark", help="rewardbench: rewardbench or rewardbench2 "
                                            "when a run has both."),
    partial: bool = typer.Option(False, "--partial", help="rewardbench: export a run whose leaderboard score is "
                                 "undefined (missing sections / subsets), scored subsets only."),
    style_control: bool = typer.Option(False, "--style-control", help="arena-hard: rank by the style-controlled "
                                       "win rate (no interval)."),
    date: Optional[str] = typer.Option(None, "--date", help="arena-hard: the date column, YYYY-MM-DD (default: "
                                       "today, as upstream)."),
) -> None:
    """Write a finished run in a leaderboard's own format and print its numbers."""
    from judgerl.eval.exports import (
        arena_hard_csv,
        arena_hard_lines,
        arena_hard_rows,
        dump_rewardbench,
        read_summary,
        results_path,
        rewardbench_results,
        rewardbench_sections,
    )
    from judgerl.eval.store import atomic_write_text

    summary = read_summary(run_dir)
    if format is ExportFormat.rewardbench:
        name, results = rewardbench_results(summary, model=model, model_type=model_type, benchmark=benchmark,
                                            partial=partial)
        path = out or results_path(run_dir, results["model"])
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, dump_rewardbench(results))
        agg = ", ".join(f"{k} {'-' if v is None else f'{100 * v:.1f}%'}" for k, v in
                        rewardbench_sections(summary, name).items())
        typer.echo(f"{'RewardBench 2' if name == 'rewardbench2' else 'RewardBench'}: {agg}")
        typer.echo(f"wrote {path} (upload as eval-set/<org>/<model>.json to the "
                   f"{'allenai/reward-bench-2-results' if name == 'rewardbench2' else 'allenai/reward-bench-results'}"
                   " dataset)")
        return
    day = date or datetime.date.today().isoformat()
    rows = arena_hard_rows(summary, style_control=style_control)
    text = arena_hard_csv(rows, day)
    for line in arena_hard_lines(rows):
        typer.echo(line)
    path = out or Path(run_dir) / "leaderboard" / f"arena_hard_leaderboard_{day.replace('-', '')}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)
    typer.echo(f"wrote {path}")
