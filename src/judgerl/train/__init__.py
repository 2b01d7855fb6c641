"""Judge training on TRL: recipes, GRPO with DAPO options, SFT warm-up, tool-integrated rollouts.

Heavy libraries (torch, trl) are imported only by the modules that need them; this package's
top level only exposes the recipe API and :func:`run_training`.
"""

from judgerl.train.config import RecipeError, TrainConfig, apply_overrides, load_recipe, recipe_names


def run_training(config: TrainConfig) -> dict:
    """Train a judge with ``config`` (see :func:`judgerl.train.run.run_training`)."""
    from judgerl.train.run import run_training as _run

    return _run(config)


__all__ = ["RecipeError", "TrainConfig", "apply_overrides", "load_recipe", "recipe_names", "run_training"]
