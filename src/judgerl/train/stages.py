"""One training run from an initial model: an SFT stage and/or a GRPO stage.

:func:`train_recipe` is a plain recipe (``judgerl train``) and every phase of TIR-Judge-Zero
(:mod:`judgerl.train.zero`): it receives the run's objects, read from the recipe once
(:class:`~judgerl.train.setup.TrainSetup`: protocol objects, model path, pairs, rows, the reward context,
the sections), and hands each stage only the objects it needs. Under several processes (``accelerate
launch``) the teacher / template data and the saved models are written by the main process only; the
others wait at a barrier and read them (every process trains).
"""

from __future__ import annotations

import functools
import json
import logging
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from judgerl.protocols.base import JudgeProtocol
from judgerl.train.config import TIR_TASKS
from judgerl.train.sections import LoraConfig, WarmupConfig
from judgerl.train.setup import TrainSetup
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


def load_policy(path: str, *, seed: int = 0, freeze_layers: int = 0, lora: LoraConfig | None = None,
                adapter: str | Path | None = None) -> tuple[Any, Any]:
    """Model and tokenizer from ``path`` (fp32), the bottom ``freeze_layers`` layers frozen or wrapped
    with LoRA (``lora``; ``adapter``: continue that adapter instead of a fresh one)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from judgerl.train import lora as lora_mod
    from judgerl.train.grpo import freeze_bottom

    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    torch.manual_seed(seed)
    if freeze_layers:
        n = freeze_bottom(model, int(freeze_layers))
        logger.info("froze embeddings + %d layers; %d trainable parameters", freeze_layers, n)
    return lora_mod.wrap(model, lora or LoraConfig(), adapter), tokenizer


def prepare_sft_examples(rows: Sequence[dict[str, Any]], pairs: Sequence[Any], out: Path, *,
                         protocols: Mapping[str, JudgeProtocol], n: int | None = None,
                         teacher: Callable[[], tuple[list[SFTExample], dict[str, Any]]] | None = None,
                         resume: bool = False) -> list[SFTExample]:
    """The SFT stage's targets, written to ``<out>/sft_examples.jsonl`` (+ ``sft_stats.json``):
    ``teacher()`` (teacher trajectories kept by rejection sampling, :func:`judgerl.train.distill.distill_examples`)
    or templated judgments of the first ``n`` rows (None: all) with ``protocols``. A resumed run reuses
    the file. Computed on the main process only."""
    from judgerl.train.sft import read_examples, templated_examples, write_examples

    path = out / SFT_EXAMPLES
    n = len(rows) if n is None else int(n)
    if is_main_process() and not (resume and path.is_file()):
        if teacher is not None:
            examples, stats = teacher()
        else:
            examples = templated_examples(rows[:n], {p.id: p for p in pairs}, list(protocols.values()))
            stats = {"source": "templated", "rows": n, "selected": len(examples)}
        write_examples(examples, path)
        (out / SFT_STATS).write_text(json.dumps(stats, indent=2) + "\n")
        logger.info("SFT targets: %s", stats)
    barrier()
    return read_examples(path)


#: Largest share of the teacher's turns allowed over the per-round token budget (:func:`check_turn_budget`).
MAX_OVER_BUDGET = 0.05


def check_turn_budget(examples: Sequence[SFTExample], tokenizer: Any, budget: int) -> dict[str, Any]:
    """Tokens per turn of the SFT targets against ``tools.max_new_tokens`` (a turn: the judge's pieces up to a
    tool output). A turn longer than the budget is cut in every rollout and evaluation, so the judge learns code
    it is never let finish (stop 33: IF check programs of median 132 tokens under a budget of 64).

    Returns:
        ``{"turns", "over", "p50", "max", "warning"}`` (token counts of the judge's tokenizer; ``warning``: None,
        or the message logged when more than :data:`MAX_OVER_BUDGET` of the turns are over ``budget``, naming
        ``tools.max_new_tokens`` and the size that fits -- a warning, not an error, since a smoke run's tiny
        budget is meant).
    """
    lengths: list[int] = []
    for ex in examples:
        turn = ""
        for kind, text in (*ex.pieces, ("tool", "")):
            if kind in ("model", "code"):
                turn += text
            elif turn:
                lengths.append(len(tokenizer(turn, add_special_tokens=False)["input_ids"]))
                turn = ""
    if not lengths:
        return {"turns": 0, "over": 0, "p50": 0, "max": 0, "warning": None}
    lengths.sort()
    stats: dict[str, Any] = {"turns": len(lengths), "over": sum(n > budget for n in lengths),
                             "p50": lengths[len(lengths) // 2], "max": lengths[-1], "warning": None}
    if stats["over"] > MAX_OVER_BUDGET * len(lengths):
        stats["warning"] = (f"tools.max_new_tokens={budget}: {stats['over']} of {stats['turns']} teacher turns are "
                            f"longer (median {stats['p50']}, max {stats['max']} tokens), so rollouts and evaluations "
                            f"cut the code the SFT teaches; set tools.max_new_tokens to at least {stats['max']}")
        logger.warning("%s", stats["warning"])
    return stats


def sft_stage(model: Any, tokenizer: Any, examples: Sequence[SFTExample], out: Path, base_path: str,
              sft_args: Mapping[str, Any], callbacks: Sequence[Any] = ()) -> Any:
    """SFT on ``examples`` with ``sft_args`` (``SFTConfig`` fields: the recipe's ``warmup`` steps,
    learning rate, batch size and seed, then its ``sft`` section), then save the model to
    ``<out>/sft`` (+ ``done.json``: the trajectories, the steps made and ``max_steps``).

    A time limit (a :class:`~judgerl.train.callbacks.TimeLimit` in ``callbacks``) that stops it before
    ``max_steps`` leaves a checkpoint in ``<out>/sft-logs`` and no ``done.json``: the stage is unfinished, and
    the next call continues from that checkpoint (weights, optimizer, schedule, data position), so a long
    SFT spans several sessions with the result of one run."""
    from judgerl.train.callbacks import MetricsLogger, StepCount
    from judgerl.train.grpo import last_checkpoint
    from judgerl.train.lora import save_trained
    from judgerl.train.sft import run_sft

    kw = dict(sft_args)
    resume_from = last_checkpoint(out / "sft-logs")
    logger.info("SFT: %d steps on %d trajectories%s", kw["max_steps"], len(examples),
                f" (continuing from {resume_from})" if resume_from else "")
    count = StepCount()
    model = run_sft(model, tokenizer, examples, out / "sft-logs", kw, [MetricsLogger(out, "warmup"), count, *callbacks],
                    resume_from=resume_from)
    done = count.steps is None or count.steps >= int(kw["max_steps"])
    if not done:
        logger.warning("SFT stopped by the time limit at step %s of %s: rerun to continue from its checkpoint",
                       count.steps, kw["max_steps"])
    elif is_main_process():
        save_trained(model, tokenizer, out / "sft", base_path)
        steps = kw["max_steps"] if count.steps is None else count.steps
        (out / "sft" / DONE).write_text(json.dumps({"examples": len(examples), "steps": steps, "max_steps": kw["max_steps"],
                                                    "stopped_early": steps < int(kw["max_steps"])}) + "\n")
    barrier()
    return model


def grpo_stage(model: Any, tokenizer: Any, rows: Sequence[dict[str, Any]], out: Path, base_path: str,
               resume_from: str | None, *, reward_funcs: Sequence[Any], grpo_args: Any,
               rollout_func: Any = None, callbacks: Sequence[Any] = ()) -> Any:
    """GRPO (``grpo_args``: a :class:`~judgerl.train.trainer.JudgeGRPOConfig`) with ``reward_funcs``
    and, for tool-integrated training, ``rollout_func`` (:func:`judgerl.train.rollout.make_tir_rollout`);
    then save ``<out>/final``. Returns the trainer."""
    from judgerl.train.callbacks import MetricsLogger
    from judgerl.train.datasets import to_dataset
    from judgerl.train.lora import is_peft, save_trained
    from judgerl.train.trainer import JudgeGRPOTrainer

    tokenizer.padding_side = "left"
    trainer = JudgeGRPOTrainer(
        model=model,
        reward_funcs=list(reward_funcs),
        args=grpo_args,
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


def sft_args(warmup: WarmupConfig, sft: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """The SFT stage's ``SFTConfig`` fields: the ``warmup`` section's steps, learning rate and batch size,
    the seed, then the recipe's ``sft`` section (any ``SFTConfig`` field)."""
    kw: dict[str, Any] = dict(max_steps=int(warmup.steps), learning_rate=float(warmup.learning_rate),
                              per_device_train_batch_size=int(warmup.batch_size), seed=seed)
    kw.update(sft)
    return kw


def train_recipe(
    setup: TrainSetup,
    out: str | Path,
    *,
    resume: bool = False,
    init_path: str | None = None,
    init_adapter: str | Path | None = None,
    examples: Sequence[SFTExample] | None = None,
    sft: bool = True,
    grpo: bool = True,
    max_steps: int | None = None,
    deadline: float | None = None,
    prefill: str | None = None,
) -> dict[str, Any]:
    """One run in ``out``: SFT stage (``sft`` and ``warmup.steps`` > 0) then GRPO stage (``grpo``).

    Args:
        setup: The run's objects (:meth:`TrainSetup.from_config <judgerl.train.setup.TrainSetup.from_config>`).
        out: The run (or phase) directory: ``sft/``, ``checkpoint-N/``, ``final/``, ``metrics.jsonl``.
        resume: A GRPO checkpoint in ``out`` restores the weights and skips the SFT stage; else a
            finished ``sft/`` is loaded instead of training it again (and its targets file reused).
        init_path: Initial model directory (default: ``setup.base_model``).
        init_adapter: With LoRA: continue this adapter on ``setup.base_model`` (Zero's RL phases).
        examples: SFT targets (default: :func:`prepare_sft_examples`).
        sft, grpo: Which stages run.
        max_steps: GRPO steps (default: the recipe's ``grpo.max_steps``).
        deadline: Unix time after which training stops at the next step (None: no limit).
        prefill: An assistant prefill on every GRPO prompt (:func:`judgerl.train.datasets.with_prefill`);
            TIR tasks only (their rollouts run through the Judge, which reads the prefill as part
            of the judge's turn; the no-tool rewards parse TRL's completion alone).

    Returns:
        ``output_dir``, ``final_model`` (None without GRPO), ``sft_model`` (None without SFT), ``sft_done``
        (its ``done.json``: steps made, ``max_steps``, ``stopped_early``), ``global_step``, ``stopped_early`` (a time limit ended GRPO before ``max_steps``),
        ``resumed_from``, ``n_pairs``, ``n_rows``, ``metrics``.

    Raises:
        ValueError: ``prefill`` with a task other than ``tir``.
        RecipeError: a reward that cannot be built, GRPO fields that would split pairs.
    """
    from judgerl.backends.chat import defuse_special_tokens
    from judgerl.train.callbacks import TimeLimit
    from judgerl.train.datasets import with_prefill
    from judgerl.train.grpo import build_grpo_config, last_checkpoint
    from judgerl.train.lora import ADAPTER_DIR
    from judgerl.train.rewards import reward_funcs

    if prefill and setup.task not in TIR_TASKS:
        raise ValueError(f"a GRPO prefill needs a TIR task ({', '.join(TIR_TASKS)}: the tool-loop rollouts read it as part of the judge's turn); "
                         f"got task {setup.task!r}")
    limit_cb = [TimeLimit(deadline)] if deadline else []
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    pairs, rows, base_path = list(setup.pairs), list(setup.rows), setup.base_model
    init = init_path or base_path
    resume_from = last_checkpoint(out) if (resume and grpo) else None
    sft_dir = out / "sft"
    do_sft = sft and int(setup.warmup.steps) > 0
    policy = dict(seed=setup.seed, freeze_layers=setup.freeze_layers, lora=setup.lora)
    if resume_from is not None or not do_sft:
        model, tokenizer = load_policy(init, adapter=init_adapter, **policy)
    elif resume and (sft_dir / DONE).is_file():
        logger.info("resuming after the finished SFT stage in %s", sft_dir)
        if setup.lora.r:
            model, tokenizer = load_policy(base_path, adapter=sft_dir / ADAPTER_DIR, **policy)
        else:
            model, tokenizer = load_policy(str(sft_dir), **policy)
    else:
        model, tokenizer = load_policy(init, adapter=init_adapter, **policy)
        if examples is not None:
            ex = examples
        else:
            teacher = None
            if setup.distill.teacher:
                from judgerl.train.distill import distill_examples

                n = len(rows) if setup.warmup.examples is None else int(setup.warmup.examples)
                teacher = functools.partial(distill_examples, rows[:n], pairs, protocols=setup.protocols,
                                            spec=setup.distill, tools=setup.tools if setup.task in TIR_TASKS else None,
                                            seed=setup.seed, score_tolerance=float(
                                                getattr(setup.rewards, "score_tolerance", 0.0) or 0.0))
            ex = prepare_sft_examples(rows, pairs, out, protocols=setup.protocols, n=setup.warmup.examples,
                                      teacher=teacher, resume=resume)
        if setup.task in TIR_TASKS and setup.tools.max_new_tokens:
            logger.info("teacher turns: %s", check_turn_budget(ex, tokenizer, int(setup.tools.max_new_tokens)))
        model = sft_stage(model, tokenizer, ex, out, base_path, sft_args(setup.warmup, setup.sft, setup.seed), limit_cb)
    sft_unfinished = do_sft and resume_from is None and not (sft_dir / DONE).is_file()
    result: dict[str, Any] = {
        "output_dir": str(out),
        "final_model": None,
        "sft_model": str(sft_dir) if (sft_dir / DONE).is_file() else None,
        "sft_done": json.loads((sft_dir / DONE).read_text()) if (sft_dir / DONE).is_file() else None,
        "global_step": 0,
        "stopped_early": False,
        "resumed_from": resume_from,
        "n_pairs": len(pairs),
        "n_rows": len(rows),
        "metrics": str(out / "metrics.jsonl"),
    }
    if sft_unfinished:  # the time limit stopped the SFT stage: no GRPO on a half-trained model
        result["stopped_early"] = True
        return result
    if grpo:
        # TRL renders a row's prompt with the tokenizer's own chat template (no render_chat): defused here, so the
        # GRPO prompts hold the text the judge is served with (eval and serve render through render_chat)
        rows = [dict(r, prompt=defuse_special_tokens(tokenizer, r["prompt"])) for r in rows]
        funcs, weights = reward_funcs(setup.reward_weights, setup.rewards)
        fields = dict(setup.grpo) if max_steps is None else {**setup.grpo, "max_steps": int(max_steps)}
        grpo_args = build_grpo_config(fields, setup.dapo, output_dir=out, seed=setup.seed, weights=weights,
                                      merge_for_rollout=bool(setup.lora.merge_for_rollout))
        rollout_func = None
        if setup.task in TIR_TASKS:
            from judgerl.train.rollout import make_tir_rollout

            rollout_func = make_tir_rollout(setup.pairwise or setup.pointwise, setup.tools, tokenizer, rows=rows,
                                            merge_for_rollout=bool(setup.lora.merge_for_rollout))
        trainer = grpo_stage(model, tokenizer, with_prefill(rows, prefill), out, base_path, resume_from,
                             reward_funcs=funcs, grpo_args=grpo_args, rollout_func=rollout_func, callbacks=limit_cb)
        step = int(trainer.state.global_step)
        result.update(final_model=str(out / "final"), global_step=step,
                      stopped_early=step < int(trainer.args.max_steps))
    return result
