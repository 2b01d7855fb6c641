"""`judgerl eval`: evaluate a judge on preference data (resumable; see judgerl.eval.runner)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import typer

from judgerl.cli.errors import interrupted
from judgerl.cli.judge_options import (
    BASE_URL_OPTION,
    BATCH_SIZE_OPTION,
    FORCE_ANSWER_OPTION,
    MAX_NEW_TOKENS_OPTION,
    MAX_TOOL_ROUNDS_OPTION,
    MODEL_ARG_OPTION,
    PROMPT_TEMPLATE_OPTION,
    PROTOCOL_ARG_OPTION,
    SAMPLES_OPTION,
    SEED_OPTION,
    TEMPERATURE_OPTION,
    TOOLS_OPTION,
    TOP_P_OPTION,
    UNSAFE_SANDBOX_OPTION,
    ToolsChoice,
    fail,
    judge_options,
    open_sandbox,
    print_runtime,
    protocol_option,
)


def eval_command(
    model: str = typer.Option(..., "--model", "-m", help="Judge model: smollm2-135m, hf/<path>, openai/<model>, "
                              "vllm/<path>, scripted/<outputs.jsonl>, or a local directory."),
    model_arg: Optional[List[str]] = MODEL_ARG_OPTION,
    base_url: Optional[str] = BASE_URL_OPTION,
    data: Path = typer.Option(..., "--data", "-d", help="Preference data: a file (JSON/JSONL/parquet/CSV), a "
                              "save_to_disk directory or a Hub dataset name (any format judgerl.data reads)."),
    split: Optional[str] = typer.Option(None, "--split", help="Split of a dataset directory / Hub dataset."),
    data_config: Optional[str] = typer.Option(None, "--data-config", help="Configuration of a Hub dataset."),
    label_map: Optional[List[str]] = typer.Option(None, "--label-map", help="With --field label=…: VALUE=first|"
                                                  "second|tie (repeatable; an unmapped label is an error)."),
    format: Optional[str] = typer.Option(None, "--format", help="Data format (default: detected)."),
    field: Optional[List[str]] = typer.Option(None, "--field", help="Field mapping for generic JSON/JSONL data: "
                                              "CANONICAL=RECORD_FIELD, e.g. --field prompt=question "
                                              "--field chosen=good (repeatable)."),
    rubric: Optional[str] = typer.Option(None, "--rubric", help="Record field (dotted paths allowed) holding a "
                                         "per-prompt rubric, shown to the judge after the question in every "
                                         "protocol (rubric-conditioned judging); a record without it is an error."),
    protocol: str = protocol_option("pav"),
    protocol_arg: Optional[List[str]] = PROTOCOL_ARG_OPTION,
    prompt_template: Optional[Path] = PROMPT_TEMPLATE_OPTION,
    samples: int = SAMPLES_OPTION,
    temperature: Optional[float] = TEMPERATURE_OPTION,
    top_p: float = TOP_P_OPTION,
    max_new_tokens: int = MAX_NEW_TOKENS_OPTION,
    seed: int = SEED_OPTION,
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Use only the first N pairs."),
    batch_size: int = BATCH_SIZE_OPTION,
    out: Path = typer.Option(..., "--out", "-o", help="Output directory (judgments.jsonl, summary.json, "
                             "report.md)."),
    tools: ToolsChoice = TOOLS_OPTION,
    max_tool_rounds: int = MAX_TOOL_ROUNDS_OPTION,
    skip_invalid: bool = typer.Option(False, "--skip-invalid", help="Skip malformed data records instead of "
                                      "failing."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Discard previous results in --out instead of "
                                   "resuming."),
    save_messages: bool = typer.Option(False, "--save-messages", help="Store full prompts in judgments.jsonl."),
    force_answer: bool = FORCE_ANSWER_OPTION,
    unsafe_sandbox: bool = UNSAFE_SANDBOX_OPTION,
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show progress on stderr: tokens "
                                  "generated of the expected total with the time left from the token rate, "
                                  "judgments started and finished, running accuracy and invalid count."),
    verbose: bool = typer.Option(False, "--verbose", help="Print the runtime settings (OpenMP wait policy, "
                                 "threads) and the backend's engine before judging."),
) -> None:
    """Evaluate a judge on preference data: accuracy, position-consistent accuracy, flip/tie/invalid rates.

    Re-running the same command resumes an interrupted run.
    """
    from judgerl.data import DataFormatError, load_pairs
    from judgerl.eval import RunConfigMismatch, run_eval

    opts = judge_options(model, model_arg=model_arg, base_url=base_url, protocol=protocol, protocol_arg=protocol_arg, prompt_template=prompt_template,
                         samples=samples, temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens,
                         seed=seed, force_answer=force_answer, tools=tools, max_tool_rounds=max_tool_rounds,
                         unsafe_sandbox=unsafe_sandbox, batch_size=batch_size)
    try:
        from judgerl.cli.data_cmd import parse_field_options, parse_label_map

        loaded = load_pairs(data, format=format, field_map=parse_field_options(field), skip_invalid=skip_invalid,
                            limit=limit, split=split, config=data_config, label_map=parse_label_map(label_map),
                            rubric_field=rubric)
    except (DataFormatError, OSError, ValueError) as e:
        fail(e)
    if loaded.n_skipped:
        typer.echo(f"skipped {loaded.n_skipped} invalid records in {data}", err=True)
    if not loaded.pairs:
        fail(f"no pairs loaded from {data}")
    info = {"data": str(Path(data).resolve()), "format": loaded.format, "limit": limit, "model_arg": model,
            "n_skipped_records": loaded.n_skipped, "rubric_field": rubric}
    if not overwrite:  # a run dir holding another judge's run is refused before the model load, not after
        from judgerl.eval.store import check_resumable, run_config

        try:
            check_resumable(out, run_config(opts.identity(), opts.samples, opts.seed), info)
        except (RunConfigMismatch, ValueError) as e:
            fail(e)
    sandbox = open_sandbox(opts)
    backend = opts.make_backend()
    if loaded.notice:  # after the model: a model that cannot load is the one line a user sees
        typer.echo(loaded.notice, err=True)
    if verbose:
        print_runtime(backend)
    judge = opts.make_judge(backend, sandbox=sandbox)
    try:
        summary = run_eval(
            judge, loaded.pairs, out, samples=opts.samples, resume=not overwrite, progress=progress,
            batch_size=opts.batch_size, save_messages=save_messages, info=info,
        )
    except RunConfigMismatch as e:
        fail(e)
    except KeyboardInterrupt:
        interrupted(out)
    finally:
        if sandbox is not None:
            sandbox.close()
    _print_summary(summary, out)


def _print_summary(summary: dict[str, Any], out: Path) -> None:
    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.1f}%"

    ci = summary.get("accuracy_ci")
    ci_s = f" (95% CI {100 * ci[0]:.1f}-{100 * ci[1]:.1f})" if ci else ""
    typer.echo(
        f"pairs {summary['n_pairs']}  accuracy {pct(summary['accuracy'])}{ci_s}  "
        f"position-consistent {pct(summary['position_consistent_accuracy'])}  flip {pct(summary['flip_rate'])}  "
        f"tie {pct(summary['tie_rate'])}  invalid {pct(summary['invalid_rate'])}"
    )
    from judgerl.eval.benchmark_report import benchmark_summary_lines

    for line in benchmark_summary_lines(summary.get("benchmark")):  # each benchmark's official number
        typer.echo(line)
    if "tool_use_rate" in summary:
        typer.echo(f"tool use {pct(summary['tool_use_rate'])}  tool errors {pct(summary['tool_error_rate'])}  "
                   f"mean tool rounds {summary['mean_tool_rounds']:.2f}")
    if "forced_answer_rate" in summary:
        typer.echo(f"answer forced in {pct(summary['forced_answer_rate'])} of judgments (--force-answer)")
    if summary.get("n_failed"):
        typer.echo(f"{summary['n_failed']} judgments failed to generate ({summary.get('finish_reasons')}); "
                   f"{summary.get('n_retry', 0)} will be retried by running the same command again")
    timing = summary.get("timing") or {}
    if timing.get("judgments_resumed"):
        typer.echo(f"resumed: {timing['judgments_resumed']} judgments were already in {out / 'judgments.jsonl'}, "
                   f"{timing.get('judgments_this_run', 0)} made now")
    if summary.get("invalid_rate") == 1.0 and "forced_answer_rate" not in summary:
        reasons = ", ".join(f"{k} {v}" for k, v in (summary.get("invalid_reasons") or {}).items())
        typer.echo(f"hint: every judgment is invalid ({reasons}); a small or untrained judge may never write its "
                   "answer tag: see --force-answer, a larger --max-new-tokens, or a trained judge")
    typer.echo(f"wrote {out / 'judgments.jsonl'}, {out / 'summary.json'}, {out / 'report.md'}")
