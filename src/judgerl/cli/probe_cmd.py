"""`judgerl probe --judge M`: a judge's false-positive rate on master keys and reward-hacking
responses (see judgerl.probe and docs/defences.md)."""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from judgerl.cli.judge_options import BASE_URL_OPTION, MODEL_ARG_OPTION


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
    protocol: str = typer.Option("pos", "--protocol", "-p", help="Pointwise or pairwise protocol: pos, pav, pas, "
                                 "pavs, arena."),
    protocol_arg: Optional[List[str]] = typer.Option(None, "--protocol-arg", help="Protocol option KEY=VALUE "
                                                     "(repeatable), e.g. max_score=9."),
    anti_hacking: bool = typer.Option(False, "--anti-hacking", help="Add the anti-hacking instruction to the judge "
                                      "prompt (protocol option anti_hacking=true)."),
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
    samples: int = typer.Option(1, "--samples", "-n", min=1, help="Judgment samples per probe (voting)."),
    temperature: Optional[float] = typer.Option(None, "--temperature", min=0.0, help="Sampling temperature "
                                                "(default: 0 for one sample, 0.7 for several)."),
    top_p: float = typer.Option(1.0, "--top-p", min=0.0, max=1.0, help="Nucleus sampling mass."),
    max_new_tokens: int = typer.Option(256, "--max-new-tokens", min=1, help="Tokens per judgment."),
    force_answer: bool = typer.Option(False, "--force-answer", help="Prefill the answer tag when a judgment ends "
                                      "without its final answer."),
    seed: int = typer.Option(0, "--seed", help="Seed of the prompt draw and sampling."),
    batch_size: int = typer.Option(16, "--batch-size", min=1, help="Judgments per backend call and durable write."),
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
    from judgerl.cli.judge_options import make_judge, make_params, make_protocol
    from judgerl.ensemble import JudgeEnsemble
    from judgerl.eval import RunConfigMismatch
    from judgerl.probe import hack_probes, load_probe_prompts, load_prompts_file, master_key_probes, run_probe

    proto = make_protocol(protocol, protocol_arg, anti_hacking)
    params = make_params(max_new_tokens, temperature, top_p, samples)
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
    judges = [make_judge(m, proto, params, force_answer=force_answer, seed=seed,
                        model_arg=model_arg, base_url=base_url) for m in judge]
    j = judges[0] if len(judges) == 1 else JudgeEnsemble(judges, combine=combine.value)
    info = {"data": data_info, "sources": sources if prompts is None else None, "n_per_source": n_per_source,
            "models": list(judge)}
    try:
        summary = run_probe(j, items, out, probes=probes, threshold=threshold, samples=samples,
                            batch_size=batch_size, resume=not overwrite, progress=progress, info=info)
    except RunConfigMismatch as e:
        typer.echo(f"error: {e}", err=True)
        raise SystemExit(2) from e
    except KeyboardInterrupt:
        typer.echo(f"\ninterrupted: finished judgments are saved in {out}; run the same command to resume", err=True)
        raise SystemExit(130) from None

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
