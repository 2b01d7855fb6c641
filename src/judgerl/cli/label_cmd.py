"""``judgerl label`` (score instruction–response records with any judge, resumable) and ``judgerl agree``
(static agreement of judges' labels with gold labels)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from judgerl.cli.errors import interrupted
from judgerl.cli.judge_options import (
    BASE_URL_OPTION,
    BATCH_SIZE_OPTION,
    FORCE_ANSWER_OPTION,
    MAX_NEW_TOKENS_OPTION,
    MODEL_ARG_OPTION,
    PROMPT_TEMPLATE_OPTION,
    SAMPLES_OPTION,
    SCORE_MODE_OPTION,
    SEED_OPTION,
    TEMPERATURE_OPTION,
    fail,
    judge_options,
)
from judgerl.judge.defaults import default_score_mode


def label_command(
    judge: str = typer.Option(..., "--judge", "-j", help="'ifeval' (the programmatic IFEval gold judge) or a judge "
                              "model: smollm2-135m, hf/<path>, openai/<model>, vllm/<path>, scripted/<file>, a dir."),
    model_arg: Optional[List[str]] = MODEL_ARG_OPTION,
    base_url: Optional[str] = BASE_URL_OPTION,
    data: Path = typer.Option(..., "--data", "-d", help="Instruction–response records (JSON / JSONL): prompt, "
                              "response, optional id."),
    out: Path = typer.Option(..., "--out", "-o", help="Output directory (labels.jsonl, run.json, summary.json)."),
    scale: str = typer.Option("0-9", "--scale", help="Score scale LO-HI of the PoS judge (ifeval: 0-9; with "
                              "--prompt-template the template's scale)."),
    prompt_template: Optional[Path] = PROMPT_TEMPLATE_OPTION,
    field: Optional[List[str]] = typer.Option(None, "--field", help="Field mapping NAME=RECORD_FIELD for id, prompt, "
                                              "response (dotted paths allowed; repeatable)."),
    rubric: Optional[str] = typer.Option(None, "--rubric", help="Record field (dotted paths allowed) holding a "
                                         "per-record rubric shown to an LLM judge after the question; 'ifeval' "
                                         "derives it from the prompt's IFEval instructions (needs --ifeval-data)."),
    score_mode: Optional[str] = SCORE_MODE_OPTION,
    samples: int = SAMPLES_OPTION,
    temperature: Optional[float] = TEMPERATURE_OPTION,
    max_new_tokens: int = MAX_NEW_TOKENS_OPTION,
    force_answer: bool = FORCE_ANSWER_OPTION,
    seed: int = SEED_OPTION,
    ifeval_data: Optional[Path] = typer.Option(None, "--ifeval-data", help="--judge ifeval: the IFEval prompts "
                                               "(input_data.jsonl)."),
    batch_size: int = BATCH_SIZE_OPTION,
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Label only the first N records."),
    skip_invalid: bool = typer.Option(False, "--skip-invalid", help="Skip malformed records instead of failing."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Discard labels in --out instead of resuming."),
) -> None:
    """Score instruction–response records with a judge; keeps its reasoning (SFT targets). Re-running the
    same command resumes."""
    import json

    from judgerl.cli.data_cmd import parse_field_options
    from judgerl.eval.store import RunConfigMismatch
    from judgerl.judge.expected import ExpectedScoreUnavailable
    from judgerl.gold.label import load_label_records, run_label
    from judgerl.gold.scorer import load_scorer
    from judgerl.judge.scorer import parse_scale

    from judgerl.data.errors import DataFormatError
    from judgerl.gold.label import ifeval_rubrics

    fmap = parse_field_options(field) if field else None
    if rubric == "ifeval" and not ifeval_data:
        fail("--rubric ifeval derives the rubric from the IFEval instructions: give --ifeval-data input_data.jsonl")
    try:
        records, errors = load_label_records(data, fmap, skip_invalid=skip_invalid,
                                             rubric_field=None if rubric == "ifeval" else rubric)
        if rubric == "ifeval":
            records = ifeval_rubrics(records, str(ifeval_data))
    except DataFormatError as e:
        fail(e)
    if errors:
        typer.echo(f"skipped {len(errors)} invalid records in {data} (first: {errors[0]})", err=True)
    if limit is not None:
        records = records[:limit]
    if not records:
        fail(f"no records in {data}")
    opts = judge_options(judge, model_arg=model_arg, base_url=base_url, protocol="pos", prompt_template=prompt_template, samples=samples,
                         temperature=temperature, max_new_tokens=max_new_tokens, seed=seed, force_answer=force_answer,
                         batch_size=batch_size)
    try:
        scorer = load_scorer(judge, scale=parse_scale(scale), mode=score_mode or default_score_mode(samples),
                             options=opts, ifeval_data=str(ifeval_data) if ifeval_data else None)
    except ExpectedScoreUnavailable as e:
        fail(f"--score-mode expected: {e}")
    info = {"data": str(Path(data).resolve()), "limit": limit, "judge_arg": judge, "rubric": rubric}

    def progress(done: int, total: int) -> None:
        typer.echo(f"labelled {done}/{total}", err=True)

    try:
        summary = run_label(scorer, records, out, resume=not overwrite, batch_size=opts.batch_size, info=info,
                            on_batch=progress)
    except RunConfigMismatch as e:
        fail(e)
    except KeyboardInterrupt:
        interrupted(out, "labels")
    typer.echo(json.dumps(summary, indent=2))


def agree_command(
    gold: Path = typer.Option(..., "--gold", "-g", help="Label directory of the gold judge (judgerl label)."),
    judge: List[str] = typer.Option(..., "--judge", "-j", help="NAME=LABEL_DIR of a judge to compare (repeatable), "
                                    "e.g. --judge untrained=runs/l0 --judge grpo=runs/l2."),
    ids: Optional[Path] = typer.Option(None, "--ids", help="Only these record ids (one per line; e.g. held-out)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Also write the report as JSON here."),
) -> None:
    """Agreement with the gold labels: Krippendorff's alpha, Pearson, Spearman, invalid rate, MAE."""
    import json

    from judgerl.gold.agreement import agreement_report, format_agreement

    judges = {}
    for item in judge:
        name, sep, path = item.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise typer.BadParameter(f"--judge: expected NAME=LABEL_DIR, got {item!r}")
        judges[name.strip()] = Path(path.strip())
    keep = None
    if ids is not None:
        keep = [ln.strip() for ln in ids.read_text(encoding="utf-8").splitlines() if ln.strip()]
    report = agreement_report(gold, judges, keep)
    typer.echo(format_agreement(report))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
