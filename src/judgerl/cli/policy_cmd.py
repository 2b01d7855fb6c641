"""``judgerl train`` for policy recipes (``task: policy``, e.g. ``policy-grpo``): a policy trained with
GRPO against a judge, checked by a gold judge (see :mod:`judgerl.train.policy`)."""

from __future__ import annotations

import json

import typer


def policy_train(config: str, overrides: list[str], *, data: str | None, output_dir: str | None,
                 max_steps: int | None, model: str | None, resume: bool, reward_url: str | None,
                 dry_run: bool, reward: str | None = None, rubric: str | None = None) -> None:
    """Resolve the policy recipe with the ``judgerl train`` options and run it.

    ``--data`` is the prompt file (``prompts``), ``--model`` the policy, ``--reward-url`` a ``judgerl serve``
    root, ``--reward gold`` the oracle arm (the gold judge as the reward), ``--rubric`` the training judge's
    rubric (``ifeval`` or a prompt-record field). Exits 2 with one line on a bad recipe or prompt file; on a
    training failure the message names the checkpoint.
    """
    from judgerl.train.config import RecipeError
    from judgerl.train.policy_config import load_policy_recipe

    extra = list(overrides)
    for key, value in (("prompts", data), ("output_dir", output_dir), ("grpo.max_steps", max_steps),
                       ("model", model), ("reward_url", reward_url), ("reward", reward), ("rubric", rubric)):
        if value is not None:
            extra.append(f"{key}={value}")
    if resume:
        extra.append("resume=true")
    try:
        cfg = load_policy_recipe(config, extra)
        cfg.validate(where=f"recipe {config}")
    except RecipeError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    if dry_run:
        typer.echo(json.dumps(cfg.to_dict(), indent=2))
        return
    from judgerl.data.errors import DataFormatError
    from judgerl.train.policy import PolicyTrainingError, run_policy

    try:
        result = run_policy(cfg)
    except PolicyTrainingError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    except (DataFormatError, FileNotFoundError, ValueError) as e:  # before training: prompts, mix, rubric
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    typer.echo(json.dumps(result, indent=2, default=str))
