"""``judgerl train``: train a judge with a recipe (GRPO/DAPO on TRL, optional SFT warm-up)."""

from __future__ import annotations

from typing import List, Optional

import typer

from judgerl.cli.errors import RUNTIME_ERROR, fail


def train_command(
    config: Optional[str] = typer.Option(
        None, "--config", "-c", help="Built-in recipe name (listed by --list-recipes: j1-pav, tir-judge, "
        "tir-judge-zero, policy-grpo, ...) or YAML path."
    ),
    overrides: List[str] = typer.Option(
        [], "--set", "-s", help="Override a recipe field: key=value, dotted for sections (grpo.max_steps=2). Repeatable."
    ),
    data: Optional[str] = typer.Option(None, "--data", help="Training pairs file (same as --set data.path=...)."),
    output_dir: Optional[str] = typer.Option(None, "--output-dir", "-o", help="Run directory (checkpoints, metrics)."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help="GRPO steps (same as --set grpo.max_steps=N)."),
    model: Optional[str] = typer.Option(None, "--model", help="Model: smollm2-135m or a local model directory."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --output-dir from its newest "
                                "checkpoint, with the config it saved (config.json); --config is then optional."),
    reward_url: Optional[str] = typer.Option(None, "--reward-url", help="Policy recipes (policy-grpo): take "
                                             "rewards from this `judgerl serve` server instead of an in-process judge."),
    reward: Optional[str] = typer.Option(None, "--reward", help="Policy recipes: 'judge' (the training judge) or "
                                         "'gold' (the oracle arm: the gold judge itself is the reward) or 'random' (the "
                                         "control arm: a seeded score that ignores the response)."),
    rubric: Optional[str] = typer.Option(None, "--rubric", help="Policy recipes: the training judge's per-prompt "
                                         "rubric, 'ifeval' (from the IFEval instructions) or a prompt-record field."),
    list_recipes: bool = typer.Option(False, "--list-recipes", help="List the built-in recipes and exit."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the resolved config, check its data (no model loads) and exit."),
    verbose: bool = typer.Option(False, "--verbose", help="Print the runtime settings (OpenMP wait policy, "
                                 "threads) before training."),
) -> None:
    """Train a judge from a recipe: SFT stage (templated or distilled from a teacher), then RL (TRL
    GRPO with DAPO options); ``tir-judge-zero`` bootstraps a tool judge in rounds with no teacher.

    Every recipe field can be overridden: --set grpo.learning_rate=1e-6 --set rewards.format=0.
    Writes checkpoints, metrics.jsonl and PNG curves to the output directory; evaluate a checkpoint
    with: judgerl eval --model <output_dir>/final. Several processes:
    accelerate launch --multi_gpu --num_processes 2 -m judgerl.cli.main train ...
    """
    import json

    from judgerl.train.config import RecipeError, recipe_names, saved_config

    if list_recipes:
        for name in recipe_names():
            typer.echo(name)
        return
    saved = saved_config(output_dir) if (resume and output_dir) else None
    if saved is not None:
        config = str(saved)  # the run's own resolved config: the command need not be repeated
        typer.echo(f"resuming {output_dir} with its saved config {saved}", err=True)
    if not config:
        if resume:
            raise typer.BadParameter("--resume: no saved config.json in --output-dir; give --config as well")
        raise typer.BadParameter("--config is required (a recipe name or a YAML file); see --list-recipes")
    from judgerl.train.run import load_run_recipe, run_recipe

    try:  # the one read and validation of the recipe, of either kind (task: policy, or a judge recipe)
        cfg = load_run_recipe(config, list(overrides), data=data, output_dir=output_dir, max_steps=max_steps,
                              model=model, resume=resume, reward_url=reward_url, reward=reward, rubric=rubric)
    except RecipeError as e:
        fail(e)
    from judgerl.data.errors import DataFormatError

    if dry_run:  # the resolved config, and its data read as the run would read it (no model loads)
        try:
            found = run_recipe(cfg, dry_run=True)["inputs"]
        except (RecipeError, DataFormatError, FileNotFoundError, ValueError) as e:
            fail(e)
        typer.echo(json.dumps(cfg.to_dict(), indent=2))
        typer.echo(found, err=True)
        return
    if verbose:
        from judgerl.cli.judge_options import print_runtime

        print_runtime()
    from judgerl.train.policy import PolicyTrainingError

    try:
        result = run_recipe(cfg)
    except PolicyTrainingError as e:  # the run failed, not its input; the message names the checkpoint
        fail(e, RUNTIME_ERROR)
    except (DataFormatError, FileNotFoundError, ValueError) as e:  # before training: recipe, data, prompts
        fail(e)
    typer.echo(json.dumps(result, indent=2, default=str))
