"""Judge training on TRL: recipes, GRPO with DAPO options, SFT warm-up, tool-integrated rollouts.

The recipes follow J1 (Whitehouse et al., 2025, "J1: Incentivizing Thinking in LLM-as-a-Judge via
Reinforcement Learning"), TIR-Judge (Xu et al., 2025, "Incentivizing Agentic Reasoning in LLM Judges via Tool-Integrated
Reinforcement Learning") with its Distill and Zero variants, and DAPO (Yu et al., 2025); ``policy-grpo``
trains a policy against a judge (the judge-as-reward setting of "Examining Reasoning LLMs-as-Judges in
Non-Verifiable LLM Post-Training", 2025).

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
