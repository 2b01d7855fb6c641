"""One training run from an initial model: an SFT stage and/or a GRPO stage.

:func:`train_recipe` is a plain recipe (``judgerl train``) and every phase of TIR-Judge-Zero
(:mod:`judgerl.train.bootstrap`). Under several processes (``accelerate launch``) the teacher /
template data and the saved models are written by the main process only; the others wait at a
barrier and read them (every process trains).
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Sequence

from judgerl.backends.models import resolve_hf_path
from judgerl.train.config import SAVED_CONFIG, TrainConfig
from judgerl.train.sft import SFTExample

logger = logging.getLogger(__name__)

#: Marker written last into a finished stage directory (``sft/done.json``).
DONE = "done.json"
SFT_EXAMPLES = "sft_examples.jsonl"
SFT_STATS = "sft_stats.json"


def _state() -> Any:
    import torch
    from accelerate import PartialState

    # cpu=True on CPU-only machines: the first PartialState fixes the process group for the whole
    # process, and only a CPU state joins several processes over gloo (see cpu_precision_defaults).
    return PartialState(cpu=not torch.cuda.is_available())


def is_main_process() -> bool:
    """True on the main process (and when not distributed)."""
    return bool(_state().is_main_process)


def barrier() -> None:
    """Wait for every process (no-op when not distributed)."""
    _state().wait_for_everyone()


def load_policy(config: TrainConfig, path: str, adapter: str | Path | None = None) -> tuple[Any, Any]:
    """Model and tokenizer from ``path`` (fp32), bottom layers frozen (``freeze_layers``) or wrapped
    with LoRA (``lora``; ``adapter``: continue that adapter instead of a fresh one)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from judgerl.train import lora
    from judgerl.train.grpo import freeze_bottom

    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    torch.manual_seed(config.seed)
    if config.freeze_layers:
        n = freeze_bottom(model, int(config.freeze_layers))
        logger.info("froze embeddings + %d layers; %d trainable parameters", config.freeze_layers, n)
    return lora.wrap(model, config.lora, adapter), tokenizer


def prepare_sft_examples(config: TrainConfig, rows: Sequence[dict[str, Any]], pairs: Sequence[Any],
                         out: Path) -> list[SFTExample]:
    """The SFT stage's targets, written to ``<out>/sft_examples.jsonl`` (+ ``sft_stats.json``):
    teacher trajectories kept by rejection sampling (``distill.teacher``) or templated judgments.
    A resumed run reuses the file. Computed on the main process only."""
    from judgerl.train.sft import read_examples, templated_examples, write_examples

    path = out / SFT_EXAMPLES
    n = len(rows) if config.warmup.examples is None else int(config.warmup.examples)
    if is_main_process() and not (config.resume and path.is_file()):
        if config.distill.teacher:
            from judgerl.train.distill import distill_examples

            examples, stats = distill_examples(config, rows[:n], pairs)
        else:
            pw, pt = config.pairwise(), config.pointwise()
            examples = templated_examples(rows[:n], {p.id: p for p in pairs}, [p for p in (pw, pt) if p is not None])
            stats = {"source": "templated", "rows": n, "selected": len(examples)}
        write_examples(examples, path)
        (out / SFT_STATS).write_text(json.dumps(stats, indent=2) + "\n")
        logger.info("SFT targets: %s", stats)
    barrier()
    return read_examples(path)


def sft_stage(config: TrainConfig, model: Any, tokenizer: Any, examples: Sequence[SFTExample], out: Path,
              base_path: str, callbacks: Sequence[Any] = ()) -> Any:
    """SFT on ``examples`` (``warmup`` section: steps, learning rate, batch size; ``sft``: any
    ``SFTConfig`` field), then save the model to ``<out>/sft`` (+ ``done.json``)."""
    from judgerl.train.callbacks import MetricsLogger
    from judgerl.train.lora import save_trained
    from judgerl.train.sft import run_sft

    kw = dict(max_steps=int(config.warmup.steps), learning_rate=float(config.warmup.learning_rate),
              per_device_train_batch_size=int(config.warmup.batch_size), seed=config.seed)
    kw.update(config.sft)
    logger.info("SFT: %d steps on %d trajectories", kw["max_steps"], len(examples))
    model = run_sft(model, tokenizer, examples, out / "sft-logs", kw, [MetricsLogger(out, "warmup"), *callbacks])
    if is_main_process():
        save_trained(model, tokenizer, out / "sft", base_path)
        (out / "sft" / DONE).write_text(json.dumps({"examples": len(examples), "steps": kw["max_steps"]}) + "\n")
    barrier()
    return model


def grpo_stage(config: TrainConfig, model: Any, tokenizer: Any, rows: Sequence[dict[str, Any]], out: Path,
               base_path: str, resume_from: str | None, callbacks: Sequence[Any] = ()) -> Any:
    """GRPO with the recipe's rewards and DAPO options, then save ``<out>/final``. Returns the trainer."""
    from judgerl.train.callbacks import MetricsLogger
    from judgerl.train.datasets import to_dataset
    from judgerl.train.grpo import build_grpo_config, build_reward_funcs
    from judgerl.train.lora import is_peft, save_trained
    from judgerl.train.trainer import JudgeGRPOTrainer

    funcs, weights = build_reward_funcs(config)
    args = build_grpo_config(config, weights)
    rollout_func = None
    if config.task == "tir":
        from judgerl.train.rollout import make_tir_rollout

        rollout_func = make_tir_rollout(config, tokenizer, rows=rows)
    tokenizer.padding_side = "left"
    trainer = JudgeGRPOTrainer(
        model=model,
        reward_funcs=funcs,
        args=args,
        train_dataset=to_dataset(list(rows)),
        processing_class=tokenizer,
        callbacks=[MetricsLogger(out, "grpo"), *callbacks],
        rollout_func=rollout_func,
    )
    trainer.train(resume_from_checkpoint=resume_from)
    final = out / "final"
    trained = trainer.accelerator.unwrap_model(trainer.model)
    if is_peft(trained):
        if trainer.accelerator.is_main_process:
            save_trained(trained, tokenizer, final, base_path)
    else:
        trainer.save_model(str(final))
        if trainer.accelerator.is_main_process:
            tokenizer.save_pretrained(str(final))
    trainer.accelerator.wait_for_everyone()
    return trainer


def train_recipe(
    config: TrainConfig,
    *,
    init_path: str | None = None,
    init_adapter: str | Path | None = None,
    examples: Sequence[SFTExample] | None = None,
    sft: bool = True,
    grpo: bool = True,
    deadline: float | None = None,
    prefill: str | None = None,
) -> dict[str, Any]:
    """One run in ``config.output_dir``: SFT stage (``sft`` and ``warmup.steps`` > 0) then GRPO
    stage (``grpo``).

    Args:
        config: The (validated) recipe.
        init_path: Initial model directory (default: ``config.model``).
        init_adapter: With LoRA: continue this adapter on ``config.model`` (Zero's RL phases).
        examples: SFT targets (default: :func:`prepare_sft_examples`).
        sft, grpo: Which stages run.
        deadline: Unix time after which training stops at the next step (default from
            ``time_limit_min``).
        prefill: An assistant prefill on every GRPO prompt (:func:`judgerl.train.datasets.with_prefill`);
            ``task: tir`` only (its rollouts run through the Judge, which reads the prefill as part
            of the judge's turn; the no-tool rewards parse TRL's completion alone).

    Resuming (``config.resume``): a GRPO checkpoint in ``output_dir`` restores the weights and
    skips the SFT stage; else a finished ``sft/`` is loaded instead of training it again.

    Returns:
        ``output_dir``, ``final_model`` (None without GRPO), ``sft_model`` (None without SFT),
        ``global_step``, ``stopped_early`` (a time limit ended GRPO before ``max_steps``),
        ``resumed_from``, ``n_pairs``, ``n_rows``, ``metrics``.

    Raises:
        ValueError: ``prefill`` with a task other than ``tir``.
    """
    from judgerl.train import lora
    from judgerl.train.callbacks import TimeLimit
    from judgerl.train.datasets import build_rows, with_prefill
    from judgerl.train.grpo import last_checkpoint, load_training_pairs

    if prefill and config.task != "tir":
        raise ValueError(f"a GRPO prefill needs task 'tir' (the tool-loop rollouts read it as part of the judge's turn); "
                         f"got task {config.task!r}")
    started = time.time()
    if deadline is None and config.time_limit_min:
        deadline = started + 60 * float(config.time_limit_min)
    limit_cb = [TimeLimit(deadline)] if deadline else []
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    if is_main_process():
        (out / SAVED_CONFIG).write_text(json.dumps(config.to_dict(), indent=2))

    pairs = load_training_pairs(config)
    rows = build_rows(pairs, config.task, config.pairwise(), config.pointwise())
    base_path = resolve_hf_path(config.model)
    init = init_path or base_path
    resume_from = last_checkpoint(out) if (config.resume and grpo) else None
    sft_dir = out / "sft"
    do_sft = sft and int(config.warmup.steps) > 0
    if resume_from is not None or not do_sft:
        model, tokenizer = load_policy(config, init, init_adapter)
    elif config.resume and (sft_dir / DONE).is_file():
        logger.info("resuming after the finished SFT stage in %s", sft_dir)
        if config.lora.r:
            model, tokenizer = load_policy(config, base_path, sft_dir / lora.ADAPTER_DIR)
        else:
            model, tokenizer = load_policy(config, str(sft_dir))
    else:
        model, tokenizer = load_policy(config, init, init_adapter)
        ex = examples if examples is not None else prepare_sft_examples(config, rows, pairs, out)
        model = sft_stage(config, model, tokenizer, ex, out, base_path, limit_cb)
    result: dict[str, Any] = {
        "output_dir": str(out),
        "final_model": None,
        "sft_model": str(sft_dir) if (sft_dir / DONE).is_file() else None,
        "global_step": 0,
        "stopped_early": False,
        "resumed_from": resume_from,
        "n_pairs": len(pairs),
        "n_rows": len(rows),
        "metrics": str(out / "metrics.jsonl"),
    }
    if grpo:
        trainer = grpo_stage(config, model, tokenizer, with_prefill(rows, prefill), out, base_path, resume_from, limit_cb)
        step = int(trainer.state.global_step)
        result.update(final_model=str(out / "final"), global_step=step,
                      stopped_early=step < int(trainer.args.max_steps))
    return result
