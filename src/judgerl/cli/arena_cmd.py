"""`judgerl arena --judge M --baseline FILE SYSTEM_FILES…`: Arena-Hard-style win rates against a
baseline (see judgerl.arena and docs/arena.md)."""

from __future__ import annotations

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

_FIELD_HELP = ("Field mapping CANONICAL=RECORD_FIELD for every input file (repeatable; dotted paths allowed): "
               "id=…, prompt=…, response=…, e.g. --field prompt=question --field response=output.")


def arena_command(
    systems: List[str] = typer.Argument(..., help="System output files (JSONL of {id, prompt?, response}); "
                                        "NAME=PATH names a system (default: the file stem)."),
    judge: str = typer.Option(..., "--judge", "-m", help="Judge model: smollm2-135m, hf/<path>, openai/<model>, "
                              "vllm/<path>, scripted/<file>, or a local directory."),
    model_arg: Optional[List[str]] = MODEL_ARG_OPTION,
    base_url: Optional[str] = BASE_URL_OPTION,
    baseline: str = typer.Option(..., "--baseline", "-b", help="The baseline's outputs (JSONL of {id, prompt, "
                                 "response}); NAME=PATH allowed."),
    protocol: str = protocol_option("arena"),
    protocol_arg: Optional[List[str]] = PROTOCOL_ARG_OPTION,
    prompt_template: Optional[Path] = PROMPT_TEMPLATE_OPTION,
    anti_hacking: bool = ANTI_HACKING_OPTION,
    field: Optional[List[str]] = typer.Option(None, "--field", help=_FIELD_HELP),
    round_robin: bool = typer.Option(False, "--round-robin", help="Also judge every pair of systems (a joint "
                                     "Bradley-Terry ranking; k(k-1)/2 more series)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Use only the baseline's first N prompts."),
    strong_weight: float = typer.Option(3.0, "--strong-weight", min=1.0, help="Games a strong win/loss counts as "
                                        "(Arena-Hard-Auto: 3)."),
    samples: int = SAMPLES_OPTION,
    temperature: Optional[float] = TEMPERATURE_OPTION,
    top_p: float = TOP_P_OPTION,
    max_new_tokens: int = MAX_NEW_TOKENS_OPTION,
    force_answer: bool = FORCE_ANSWER_OPTION,
    seed: int = SEED_OPTION,
    n_bootstrap: int = typer.Option(1000, "--bootstrap", min=1, help="Bootstrap rounds of the CIs."),
    batch_size: int = BATCH_SIZE_OPTION,
    out: Path = typer.Option(..., "--out", "-o", help="Output directory (leaderboard.md, leaderboard.png, "
                             "summary.json, games/)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Discard previous results instead of resuming."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show progress bars."),
) -> None:
    """Arena-Hard-style win rates of systems against a baseline.

    Each system is judged against the baseline in both orders with five-level labels; writes win rates with
    bootstrap CIs, Bradley-Terry scores, a leaderboard and a plot. Re-running the same command resumes.
    """
    from dataclasses import replace

    from judgerl.arena import load_system, run_arena
    from judgerl.cli.data_cmd import parse_field_options
    from judgerl.eval import RunConfigMismatch

    opts = judge_options(judge, model_arg=model_arg, base_url=base_url, protocol=protocol, protocol_arg=protocol_arg, prompt_template=prompt_template,
                         anti_hacking=anti_hacking, samples=samples, temperature=temperature, top_p=top_p,
                         max_new_tokens=max_new_tokens, seed=seed, force_answer=force_answer, batch_size=batch_size)
    fmap = parse_field_options(field)
    base = load_system(baseline, fmap, require_prompt=True)
    if limit is not None:
        keep = list(base.prompts)[:limit]
        base = replace(base, responses={k: base.responses[k] for k in keep}, prompts={k: base.prompts[k] for k in keep},
                       locations={k: base.locations[k] for k in keep})
    loaded = [load_system(s, fmap) for s in systems]
    j = opts.make_judge()
    info = {"model_arg": judge, "baseline": base.path, "systems": [s.path for s in loaded], "limit": limit}
    try:
        summary = run_arena(j, base, loaded, out, round_robin=round_robin, samples=samples, batch_size=batch_size,
                            resume=not overwrite, progress=progress, n_bootstrap=n_bootstrap,
                            strong_weight=strong_weight, info=info)
    except RunConfigMismatch as e:
        fail(e)
    except KeyboardInterrupt:
        interrupted(out)
    for r in summary["leaderboard"]:
        ci = r["win_rate_ci"]
        ci_s = f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else ""
        wr = "    -" if r["win_rate"] is None else f"{100 * r['win_rate']:5.1f}%"
        bt = "-" if r["bt_elo"] is None else f"{r['bt_elo']:.0f}"
        typer.echo(f"{r['rank']:>3}. {r['system']:<30} win rate {wr}{ci_s}  BT {bt}"
                   + ("  (baseline)" if r.get("baseline") else ""))
    typer.echo(f"wrote {out / 'leaderboard.md'}, {out / 'leaderboard.png'}, {out / 'summary.json'}")
