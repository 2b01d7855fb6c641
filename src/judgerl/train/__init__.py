"""Judge training on TRL: recipes, GRPO with DAPO options, SFT warm-up, tool-integrated rollouts.

Heavy libraries (torch, trl) are imported only by the modules that need them; this package's
top level only exposes the recipe API, :func:`load_run_recipe` (read and validate a recipe of either
kind) and :func:`run_training`.
"""

from typing import Any, Iterable

from judgerl.train.config import RecipeError, TrainConfig, apply_overrides, load_recipe, recipe_names


def load_run_recipe(name_or_path: str, overrides: Iterable[str] = (), **options: Any) -> Any:
    """Read, build and validate a recipe of either kind (see :func:`judgerl.train.run.load_run_recipe`)."""
    from judgerl.train.run import load_run_recipe as _load

    return _load(name_or_path, overrides, **options)


def run_training(config: TrainConfig) -> dict:
    """Train a judge with the validated ``config`` (see :func:`judgerl.train.run.run_training`)."""
    from judgerl.train.run import run_training as _run

    return _run(config)


__all__ = ["RecipeError", "TrainConfig", "apply_overrides", "load_recipe", "load_run_recipe", "recipe_names",
           "run_training"]
