"""Run several tiny recipes in ONE ``accelerate launch`` (the processes start once, then train each
recipe in turn), for the 2-process CPU test of the scale path.

Usage (what ``tests/test_train_accelerate_slow.py`` runs)::

    accelerate launch --multi_gpu --num_processes 2 -m tests.support.train_launch OUT GSM8K_TRAIN j1-pav tir-judge-distill

Every process writes ``OUT/<recipe>/rank-<i>.json`` with its process index and count and the run
summary (only when training finished without error), so the test can check that both processes took
part in every recipe.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

#: Per-recipe settings on top of the shared tiny ones (1 step, 2 pairs, 16 tokens).
EXTRA: dict[str, list[str]] = {
    "j1-pav": ["freeze_layers=28"],
    "j1-pos": ["freeze_layers=28"],
    "j1-multitask": ["freeze_layers=28", "grpo.per_device_train_batch_size=8"],
    "score-regression": ["freeze_layers=28"],
    "tir-judge": ["freeze_layers=28", "tools.max_rounds=1", "tools.max_new_tokens=8", "dapo.overlong_buffer=4"],
    "j1-pav-distill": ["lora.top_layers=2"],
    "tir-judge-distill": ["lora.top_layers=2", "tools.max_rounds=1", "tools.max_new_tokens=8",
                          "dapo.overlong_buffer=4", "distill.max_new_tokens=32"],
    "tir-judge-zero": ["lora.top_layers=2", "tools.max_rounds=1", "tools.max_new_tokens=8", "zero.rounds=1",
                       "zero.samples=2", "zero.rl_steps=1", "zero.max_new_tokens=8"],
}
TINY = [
    "data.builder=gsm8k-arith",
    "data.limit=2",
    "warmup.steps=1",
    "warmup.batch_size=2",
    "grpo.max_steps=1",
    "grpo.num_generations=2",
    "grpo.per_device_train_batch_size=4",  # per process: 2 prompts x 2 generations = one whole pair
    "grpo.max_completion_length=16",
    "dapo.dynamic_sampling=false",
]


def tiny_overrides(recipe: str, out: Path, gsm8k_train: str) -> list[str]:
    """The overrides that make ``recipe`` a 1-step, 2-pair, 16-token run in ``out``."""
    return [*TINY, f"data.source={gsm8k_train}", f"output_dir={out}", *EXTRA.get(recipe, [])]


def main(argv: list[str]) -> int:
    from judgerl.train.config import load_recipe
    from judgerl.train.run import run_training
    from judgerl.train.stages import _state

    out, gsm8k, *recipes = argv
    state = _state()
    for recipe in recipes:
        run_dir = Path(out) / recipe
        result = run_training(load_recipe(recipe, tiny_overrides(recipe, run_dir, gsm8k)))
        rec = {"process_index": state.process_index, "num_processes": state.num_processes,
               "distributed_type": str(state.distributed_type), "result": result}
        (run_dir / f"rank-{state.process_index}.json").write_text(json.dumps(rec, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
