"""`judgerl eval`: evaluate a judge on preference data (resumable; see judgerl.eval.runner)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any, List, Optional

import typer

from judgerl.cli.judge_options import BASE_URL_OPTION, MODEL_ARG_OPTION


class ToolsChoice(str, Enum):
    none = "none"
    python = "python"


def parse_protocol_args(items: List[str] | None) -> dict[str, Any]:
    """Parse repeated ``KEY=VALUE`` options into protocol kwargs (values read as YAML scalars).

    Raises:
        ValueError: an item without ``=`` or with an empty key.
    """
    import yaml

    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--protocol-arg: expected KEY=VALUE, got {item!r}")
        out[key.strip()] = yaml.safe_load(value)
    return out


def open_sandbox(tools: bool, unsafe: bool) -> Any:
    """The sandbox for ``--tools python`` (None without tools), refusing the unsafe fallback unless
    ``unsafe`` or ``JUDGERL_UNSAFE_SANDBOX=1``; exits 2 with one line when it cannot run code."""
    if not tools:
        return None
    from judgerl.tools import SandboxError, get_sandbox

    try:
        return get_sandbox(allow_unsafe=unsafe)
    except SandboxError as e:
        typer.echo(f"error: {e}", err=True)
        raise SystemExit(2) from e


def print_runtime(backend: Any = None) -> None:
    """``--verbose``: the OpenMP wait policy and thread count (:func:`judgerl.runtime.describe_runtime`)
    and, for backends that describe themselves (hf), their dtype, engine and prefix cache, on stderr."""
    from judgerl.runtime import describe_runtime

    typer.echo(describe_runtime(), err=True)
    describe = getattr(backend, "describe", None)
    if callable(describe):
        typer.echo(describe(), err=True)


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
    protocol: str = typer.Option("pav", "--protocol", "-p", help="Judge protocol: pav, pas, pavs, pos, listwise."),
    protocol_arg: Optional[List[str]] = typer.Option(None, "--protocol-arg", help="Protocol option KEY=VALUE "
                                                     "(repeatable), e.g. max_score=9 or mode=rank."),
    samples: int = typer.Option(1, "--samples", "-n", min=1, help="Judgment samples per pair and order "
                                "(majority vote / mean score)."),
    temperature: Optional[float] = typer.Option(None, "--temperature", min=0.0, help="Sampling temperature "
                                                "(default: 0 for one sample, 0.7 for several)."),
    top_p: float = typer.Option(1.0, "--top-p", min=0.0, max=1.0, help="Nucleus sampling mass."),
    max_new_tokens: int = typer.Option(512, "--max-new-tokens", min=1, help="Tokens per generation (per round "
                                       "with tools)."),
    seed: int = typer.Option(0, "--seed", help="Seed for candidate order and sampling."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Use only the first N pairs."),
    batch_size: int = typer.Option(64, "--batch-size", min=1, help="Judgments per judge call (the backend "
                                    "batches inside it; finished judgments leave the decode batch and queued ones "
                                    "join). Changes speed, never the results."),
    out: Path = typer.Option(..., "--out", "-o", help="Output directory (judgments.jsonl, summary.json, "
                             "report.md)."),
    tools: ToolsChoice = typer.Option(ToolsChoice.none, "--tools", help="Let the judge run python code "
                                      "(TIR loop)."),
    max_tool_rounds: int = typer.Option(3, "--max-tool-rounds", min=0, help="Most code executions per judgment."),
    skip_invalid: bool = typer.Option(False, "--skip-invalid", help="Skip malformed data records instead of "
                                      "failing."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Discard previous results in --out instead of "
                                   "resuming."),
    save_messages: bool = typer.Option(False, "--save-messages", help="Store full prompts in judgments.jsonl."),
    force_answer: bool = typer.Option(False, "--force-answer", help="When a judgment ends without its final "
                                      "answer, prefill the answer tag and generate a few tokens (marked and "
                                      "counted as forced_answer_rate; for small/untrained judges)."),
    unsafe_sandbox: bool = typer.Option(False, "--unsafe-sandbox", help="With --tools python where bubblewrap "
                                        "is missing: run model-written code in the fallback executor, which is "
                                        "NOT a security boundary (or set JUDGERL_UNSAFE_SANDBOX=1)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show progress on stderr: tokens "
                                  "generated of the expected total with the time left from the token rate, "
                                  "judgments started and finished, running accuracy and invalid count."),
    verbose: bool = typer.Option(False, "--verbose", help="Print the runtime settings (OpenMP wait policy, "
                                 "threads) and the backend's engine before judging."),
) -> None:
    """Evaluate a judge on preference data: accuracy, position-consistent accuracy, flip/tie/invalid rates.

    Re-running the same command resumes an interrupted run.
    """
    from judgerl.backends import SamplingParams, load_backend
    from judgerl.data import DataFormatError, load_pairs
    from judgerl.eval import RunConfigMismatch, run_eval
    from judgerl.judge import Judge
    from judgerl.protocols import get_protocol

    try:
        proto = get_protocol(protocol, **parse_protocol_args(protocol_arg))
    except (ValueError, TypeError) as e:
        typer.echo(f"error: --protocol {protocol}: {e}", err=True)
        raise SystemExit(2) from e
    try:
        from judgerl.cli.data_cmd import parse_field_options, parse_label_map

        loaded = load_pairs(data, format=format, field_map=parse_field_options(field), skip_invalid=skip_invalid,
                            limit=limit, split=split, config=data_config, label_map=parse_label_map(label_map))
    except (DataFormatError, OSError, ValueError) as e:
        typer.echo(f"error: {e}", err=True)
        raise SystemExit(2) from e
    if loaded.notice:
        typer.echo(loaded.notice, err=True)
    if loaded.n_skipped:
        typer.echo(f"skipped {loaded.n_skipped} invalid records in {data}", err=True)
    if not loaded.pairs:
        typer.echo(f"error: no pairs loaded from {data}", err=True)
        raise SystemExit(2)
    temp = temperature if temperature is not None else (0.0 if samples == 1 else 0.7)
    try:
        params = SamplingParams(max_new_tokens=max_new_tokens, temperature=temp, top_p=top_p)
    except ValueError as e:
        typer.echo(f"error: {e}", err=True)
        raise SystemExit(2) from e
    sandbox = open_sandbox(tools is ToolsChoice.python, unsafe_sandbox)
    from judgerl.cli.judge_options import load_judge_backend

    backend = load_judge_backend(model, model_arg, base_url)
    if verbose:
        print_runtime(backend)
    judge = Judge(proto, backend, params, sandbox=sandbox, max_tool_rounds=max_tool_rounds,
                  force_answer=force_answer, seed=seed)
    info = {"data": str(Path(data).resolve()), "format": loaded.format, "limit": limit, "model_arg": model,
            "n_skipped_records": loaded.n_skipped}
    try:
        summary = run_eval(
            judge, loaded.pairs, out, samples=samples, resume=not overwrite, progress=progress,
            batch_size=batch_size, save_messages=save_messages, info=info,
        )
    except RunConfigMismatch as e:
        typer.echo(f"error: {e}", err=True)
        raise SystemExit(2) from e
    except KeyboardInterrupt:
        typer.echo(f"\ninterrupted: finished judgments are saved in {out}; run the same command to resume",
                   err=True)
        raise SystemExit(130) from None
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
