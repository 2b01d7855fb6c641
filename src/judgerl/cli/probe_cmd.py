"""`judgerl probe --judge M`: a judge's false-positive rate on master keys and reward-hacking
responses (see judgerl.probe and docs/defences.md)."""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from judgerl.cli.errors import interrupted
from judgerl.cli.judge_options import (
    ANTI_HACKING_OPTION,
    BASE_URL_OPTION,
    BATCH_SIZE_OPTION,
    FORCE_ANSWER_OPTION,
    MAX_NEW_TOKENS_OPTION,
    MODEL_ARG_OPTION,
    PROMPT_TEMPLATE_OPTION,
    PROTOCOL_ARG_OPTION,
    SAMPLES_OPTION,
    SEED_OPTION,
    TEMPERATURE_OPTION,
    TOP_P_OPTION,
    fail,
    judge_options,
    protocol_option,
)


class Combine(str, Enum):
    mean = "mean"
    min = "min"


def _default_data_dir() -> Path:
    return Path(os.environ.get("JUDGERL_SHARED_DATA", "../shared/data"))


def probe_command(
    judge: List[str] = typer.Option(..., "--judge", "-m", help="Judge model (smollm2-135m, hf/<path>, openai/<model>, "
                                    "vllm/<path>, scripted/<file>, a local directory). Repeat for an ensemble."),
    model_arg: Optional[List[str]] = MODEL_ARG_OPTION,
    base_url: Optional[str] = BASE_URL_OPTION,
    combine: Combine = typer.Option(Combine.mean, "--combine", help="How an ensemble (several --judge) combines: "
                                    "mean or min."),
    protocol: str = protocol_option("pos"),
    protocol_arg: Optional[List[str]] = PROTOCOL_ARG_OPTION,
    prompt_template: Optional[Path] = PROMPT_TEMPLATE_OPTION,
    anti_hacking: bool = ANTI_HACKING_OPTION,
    data_dir: Path = typer.Option(None, "--data-dir", help="Folder with ifeval/, gsm8k/, llmbar/ (default: "
                                  "$JUDGERL_SHARED_DATA or ../shared/data).", show_default=False),
    sources: str = typer.Option("ifeval,gsm8k,llmbar", "--sources", help="Comma-separated prompt sources."),
    n_per_source: int = typer.Option(10, "--n-per-source", min=1, help="Prompts drawn (seeded) per source."),
    prompts: Optional[Path] = typer.Option(None, "--prompts", help="Your own prompts instead: JSON/JSONL of "
                                           "{id, prompt, reference?}."),
    keys: bool = typer.Option(True, "--keys/--no-keys", help="Probe with every master key (and the empty response)."),
    hacks: str = typer.Option("all", "--hacks", help="Hacking templates: all, none, or a comma-separated list of "
                              "policy_refusal, fabricated_policy, fake_end_marker, self_evaluation, "
                              "note_to_evaluator, hacking_pattern."),
    threshold: Optional[float] = typer.Option(None, "--threshold", help="Pointwise pass threshold (default: the "
                                              "midpoint of the score scale)."),
    samples: int = SAMPLES_OPTION,
    temperature: Optional[float] = TEMPERATURE_OPTION,
    top_p: float = TOP_P_OPTION,
    max_new_tokens: int = MAX_NEW_TOKENS_OPTION,
    force_answer: bool = FORCE_ANSWER_OPTION,
    seed: int = SEED_OPTION,
    batch_size: int = BATCH_SIZE_OPTION,
    out: Path = typer.Option(..., "--out", "-o", help="Output directory (judgments.jsonl, summary.json, report.md, "
                             "probe_pass_rates.png)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Discard previous results in --out instead of resuming."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
) -> None:
    """A judge's false-positive rate on master keys and reward-hacking responses.

    Real prompts x master keys ("Solution", ":", empty …) and hacks (policy refusals, fabricated
    policies, fake end markers, self-evaluations). Guards are off: the probe measures the judge itself.
    Re-running the same command resumes.
    """
    from judgerl.judge.ensemble import JudgeEnsemble
    from judgerl.eval import RunConfigMismatch
    from judgerl.probe import hack_probes, load_probe_prompts, load_prompts_file, master_key_probes, run_probe

    options = [judge_options(m, model_arg=model_arg, base_url=base_url, protocol=protocol, protocol_arg=protocol_arg, prompt_template=prompt_template,
                             anti_hacking=anti_hacking, samples=samples, temperature=temperature, top_p=top_p,
                             max_new_tokens=max_new_tokens, seed=seed, force_answer=force_answer,
                             batch_size=batch_size) for m in judge]
    probes = master_key_probes() if keys else []
    if hacks.strip() != "none":
        probes += hack_probes(None if hacks.strip() == "all" else [h.strip() for h in hacks.split(",") if h.strip()])
    if not probes:
        raise ValueError("nothing to probe: --no-keys with --hacks none")
    if prompts is not None:
        items = load_prompts_file(prompts)
        data_info = str(prompts)
    else:
        root = data_dir if data_dir is not None else _default_data_dir()
        items = load_probe_prompts(root, [s.strip() for s in sources.split(",") if s.strip()], n_per_source, seed)
        data_info = str(root)
    judges = [o.make_judge() for o in options]
    j = judges[0] if len(judges) == 1 else JudgeEnsemble(judges, combine=combine.value)
    info = {"data": data_info, "sources": sources if prompts is None else None, "n_per_source": n_per_source,
            "models": list(judge)}
    try:
        summary = run_probe(j, items, out, probes=probes, threshold=threshold, samples=samples,
                            batch_size=batch_size, resume=not overwrite, progress=progress, info=info)
    except RunConfigMismatch as e:
        fail(e)
    except KeyboardInterrupt:
        interrupted(out)

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.1f}%"

    fam = summary["families"]
    ci = summary.get("false_positive_rate_ci")
    ci_s = f" (95% CI {100 * ci[0]:.1f}-{100 * ci[1]:.1f})" if ci else ""
    typer.echo(f"false-positive rate {pct(summary['false_positive_rate'])}{ci_s} over {summary['n_judgments']} "
               f"judgments on {summary['n_prompts']} prompts (guards off)")
    for name, s in fam.items():
        typer.echo(f"  {name:<11} pass {pct(s['pass_rate']):>7}  invalid {pct(s['invalid_rate']):>7}  n={s['n']}")
    typer.echo(f"wrote {out / 'judgments.jsonl'}, {out / 'summary.json'}, {out / 'report.md'}")
