"""The judge trainer: TRL's GRPOTrainer with pair-preserving batching and DAPO dynamic sampling.

DAPO (Yu et al., 2025, "DAPO: An Open-Source LLM Reinforcement Learning System at Scale") has five
ingredients. Four come from TRL and are only exposed in recipes:

* clip-higher: ``epsilon`` (ε_low) and ``epsilon_high`` (ε_high > ε_low), eq. (10);
* token-level policy-gradient loss: ``loss_type: dapo``, eq. (12);
* overlong filtering: ``mask_truncated_completions: true`` (truncated samples leave the loss);
* soft overlong punishment, eq. (13): ``trl.rewards.get_soft_overlong_punishment``.

Implemented here:

* :class:`JudgeGRPOConfig`: TRL's ``GRPOConfig`` plus judgerl's trainer options (as TRL adds its
  own options to ``TrainingArguments``);
* dynamic sampling, eq. (11): groups whose rewards are all equal have zero advantage and teach
  nothing; :class:`JudgeGRPOTrainer` drops them after scoring and generates more prompts until
  the generation batch is full again (TRL does not do this itself);
* :class:`PairBlockRepeatSampler`: TRL's ``RepeatSampler`` but shuffling whole blocks of rows
  (both orders of a pair), so J1's position-agnostic batching survives shuffling;
* ``merge_for_rollout``: TRL's transformers generation runs on merged LoRA weights
  (:func:`judgerl.train.lora.merged_for_generation`), the loss on the unmerged adapter;
* :func:`check_pair_locality`: at start-up, the trainer replays the first generation batch of its
  sampler, deals it to the processes the way ``accelerate`` does, and fails unless every process's
  slice holds whole pairs (the consistency and pointwise-pair rewards run per process).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import torch
from torch.utils.data import Sampler
from trl import GRPOConfig, GRPOTrainer

from judgerl.train import defaults
from judgerl.train.lora import merged_for_generation


@dataclass
class JudgeGRPOConfig(GRPOConfig):
    """``trl.GRPOConfig`` plus judgerl's trainer options (a recipe's ``grpo`` section).

    Attributes:
        pair_block: Rows per block kept together by :class:`PairBlockRepeatSampler` (2 = both
            orders of a pair, or chosen + rejected; 1 = plain TRL behaviour).
        dynamic_sampling: DAPO dynamic sampling (see :class:`JudgeGRPOTrainer`); default from
            :mod:`judgerl.train.defaults`; recipes set it under ``dapo``.
        max_sampling_rounds: Extra generation batches allowed per step for the refill.
        merge_for_rollout: Generate on merged LoRA weights (a recipe's ``lora.merge_for_rollout``;
            see :class:`JudgeGRPOTrainer`).
    """

    pair_block: int = field(default=defaults.PAIR_BLOCK, metadata={"help": "Rows kept together per shuffled block (2 = a pair)."})
    dynamic_sampling: bool = field(default=defaults.DYNAMIC_SAMPLING,
                                   metadata={"help": "DAPO dynamic sampling: drop zero-variance groups, refill."})
    max_sampling_rounds: int = field(default=defaults.MAX_SAMPLING_ROUNDS,
                                     metadata={"help": "Extra generation batches per step for dynamic sampling."})
    merge_for_rollout: bool = field(default=False,
                                    metadata={"help": "Generate rollouts on merged LoRA weights (peft models)."})


def cpu_precision_defaults() -> dict[str, Any]:
    """``bf16=False, use_cpu=True`` when no GPU is present: TRL configs default to bf16, which CPUs
    refuse, and ``use_cpu`` lets several CPU processes (``accelerate launch --multi_gpu
    --num_processes 2``, i.e. torchrun) form a gloo process group (``DistributedType.MULTI_CPU``)."""
    return {} if torch.cuda.is_available() else {"bf16": False, "use_cpu": True}


class PairBlockRepeatSampler(Sampler[int]):
    """TRL's ``RepeatSampler`` over shuffled blocks of ``block`` consecutive dataset rows.

    Yields, per generation batch of ``batch_size`` distinct rows, each row ``mini_repeat_count``
    times (the group), the whole batch ``repeat_count`` times (reuse across iterations). Rows are
    shuffled in blocks, so rows 2k and 2k+1 (both orders of a pair) always stay adjacent and land
    in the same generation batch when ``batch_size`` is a multiple of ``block``.

    Raises:
        ValueError: ``batch_size`` not a multiple of ``block`` or dataset length not a multiple of
            ``block``.
    """

    def __init__(
        self,
        data_source: Any,
        mini_repeat_count: int,
        batch_size: int = 1,
        repeat_count: int = 1,
        shuffle: bool = True,
        seed: int | None = None,
        block: int = 2,
    ) -> None:
        n = len(data_source)
        if batch_size % block:
            raise ValueError(
                f"{batch_size} distinct prompts per generation batch is not a multiple of the block size {block}: "
                "set generation_batch_size / num_generations to an even number so both orders of a pair "
                "are generated together"
            )
        if n % block:
            raise ValueError(f"dataset has {n} rows, not a multiple of the block size {block}")
        self.num_samples = n
        self.mini_repeat_count = mini_repeat_count
        self.batch_size = batch_size
        self.repeat_count = repeat_count
        self.shuffle = shuffle
        self.block = block
        self.generator = torch.Generator()
        if seed is not None:
            self.generator.manual_seed(seed)

    def _order(self) -> list[int]:
        n_blocks = self.num_samples // self.block
        blocks = torch.randperm(n_blocks, generator=self.generator).tolist() if self.shuffle else range(n_blocks)
        return [b * self.block + j for b in blocks for j in range(self.block)]

    def __iter__(self) -> Iterator[int]:
        idx = self._order()
        chunks = [idx[i : i + self.batch_size] for i in range(0, len(idx), self.batch_size)]
        for chunk in chunks:
            if len(chunk) != self.batch_size:
                continue
            for _ in range(self.repeat_count):
                for i in chunk:
                    for _ in range(self.mini_repeat_count):
                        yield i

    def __len__(self) -> int:
        return (self.num_samples // self.batch_size) * self.batch_size * self.mini_repeat_count * self.repeat_count


def check_pair_locality(
    pair_keys: Sequence[Any],
    sampler: Sampler,
    per_process_rows: int,
    num_processes: int,
    block: int,
) -> None:
    """Fail unless both halves of every pair land in the same process's generation batch.

    TRL's GRPO dataloader (``batch_size = per_device_train_batch_size × steps_per_generation``) is
    sharded by ``accelerate``'s ``BatchSamplerShard`` (``split_batches=False``): of every
    ``num_processes`` consecutive batches, process ``p`` gets batch ``p``. This replays the first
    generation batch of ``sampler`` (a fresh copy; the trainer's own sampler is not advanced), deals
    it that way and checks every process's slice: each pair key present in it must come with all
    ``block`` of its rows.

    Args:
        pair_keys: One hashable per dataset row naming its pair block (``(pair_id, protocol)``).
        sampler: A sampler over the dataset yielding one generation batch per
            ``per_process_rows × num_processes`` indices.
        per_process_rows: Rows each process receives per generation batch.
        num_processes: Training processes.
        block: Rows per pair block (1 disables the check).

    Raises:
        ValueError: a pair is split between processes (names the pair, the processes and the fix).
    """
    if block <= 1:
        return
    it = iter(sampler)
    batch = [next(it, None) for _ in range(per_process_rows * num_processes)]
    if any(i is None for i in batch):
        return  # a dataset smaller than one generation batch is rejected by the sampler itself
    for p in range(num_processes):
        local = set(batch[p * per_process_rows : (p + 1) * per_process_rows])
        rows_of: dict[Any, set[int]] = {}
        for i in local:
            rows_of.setdefault(pair_keys[int(i)], set()).add(int(i))
        for key, rows in rows_of.items():
            if len(rows) != block:
                raise ValueError(
                    f"pair {key!r} is split across processes: process {p} holds {len(rows)} of its {block} rows. "
                    f"Each process's slice of a generation batch must hold whole pairs: make "
                    "per_device_train_batch_size * steps_per_generation / num_generations a multiple of "
                    f"{block}, and keep both rows of every pair adjacent in the dataset"
                )


# Keys of GRPOTrainer._generate_and_score_completions' output and how to pad them when merging.
_LEFT_PAD = {"prompt_ids", "prompt_mask"}
_PAD_VALUE_PAD_TOKEN = {"prompt_ids", "completion_ids"}


def _merge_rows(parts: list[dict[str, Any]], picks: list[tuple[int, int]], pad_token_id: int) -> dict[str, Any]:
    """Rows ``picks`` = [(part index, row index)] of several scored batches, merged into one batch.

    2-D tensors are re-padded to a common width (prompt side on the left, completion side on the
    right), 1-D tensors concatenated. ``num_items_in_batch`` is recomputed by the caller.

    Raises:
        ValueError: a key this merge does not know how to combine (e.g. image inputs).
    """
    out: dict[str, Any] = {}
    for key, first in parts[0].items():
        if key == "num_items_in_batch":
            continue
        if first is None:
            out[key] = None
            continue
        if not isinstance(first, torch.Tensor) or first.ndim == 0 or first.ndim > 2:
            raise ValueError(f"dynamic sampling cannot merge the batch field {key!r}")
        rows = [parts[p][key][r] for p, r in picks]
        if first.ndim == 1:
            out[key] = torch.stack(rows)
            continue
        width = max(t.shape[0] for t in rows)
        value = pad_token_id if key in _PAD_VALUE_PAD_TOKEN else 0
        padded = []
        for t in rows:
            fill = t.new_full((width - t.shape[0],), value)
            padded.append(torch.cat([fill, t]) if key in _LEFT_PAD else torch.cat([t, fill]))
        out[key] = torch.stack(padded)
    return out


class JudgeGRPOTrainer(GRPOTrainer):
    """``trl.GRPOTrainer`` with pair-block batching and DAPO dynamic sampling.

    Options come from :class:`JudgeGRPOConfig` (``args``):

    * ``pair_block``: rows per block kept together by :class:`PairBlockRepeatSampler`;
    * ``dynamic_sampling``: after scoring a generation batch, drop the groups (the
            ``num_generations`` completions of one prompt) whose total rewards are all equal, then
            generate and score further batches of fresh prompts — drawn from the training set
            in block-shuffled order, independent of the main sampler — keeping their informative
            groups, until the batch is full again or ``max_sampling_rounds`` extra batches were
            tried. If it is still not full, the first dropped groups fill the remaining places
            (their advantage is 0, so they add nothing to the gradient but keep the batch shape).
            Logged per step: ``dapo/informative_group_frac`` (of the first batch) and
            ``dapo/sampling_rounds``. Under several processes the decision to refill is taken from
            the all-process reward matrix, so every process makes the same number of calls;
    * ``max_sampling_rounds``: extra generation batches allowed per step;
    * ``merge_for_rollout``: with a ``peft`` model and TRL's transformers generation (not vLLM,
            which gets merged weights from TRL itself), every generation call runs inside
            :func:`judgerl.train.lora.merged_for_generation`: merged weights for the rollout,
            the original base tensors back (bit-exact) before the loss. A ``rollout_func``
            (TIR) does its own merging (:func:`judgerl.train.rollout.make_tir_rollout`).
            Refused under DeepSpeed ZeRO-3 / FSDP (sharded weights cannot be merged per process).

    Everything else is ``GRPOTrainer``'s (``rollout_func`` included). A plain ``GRPOConfig`` gets
    :class:`JudgeGRPOConfig`'s defaults.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        args_obj = kwargs.get("args") if "args" in kwargs else (args[2] if len(args) > 2 else None)
        self.block = int(getattr(args_obj, "pair_block", defaults.PAIR_BLOCK))
        self.dynamic_sampling = bool(getattr(args_obj, "dynamic_sampling", defaults.DYNAMIC_SAMPLING))
        self.max_sampling_rounds = int(getattr(args_obj, "max_sampling_rounds", defaults.MAX_SAMPLING_ROUNDS))
        self.merge_for_rollout = bool(getattr(args_obj, "merge_for_rollout", False))
        self._last_rewards_per_func: torch.Tensor | None = None
        self._refill_iter: Iterator[int] | None = None
        super().__init__(*args, **kwargs)
        if self.merge_for_rollout and (self._dist.is_zero3 or self._dist.is_fsdp):
            raise ValueError("merge_for_rollout: not supported with DeepSpeed ZeRO-3 or FSDP (sharded weights); "
                             "set lora.merge_for_rollout: false")
        self._check_pairs()

    def _check_pairs(self) -> None:
        """Position-agnostic batching under any number of processes (:func:`check_pair_locality`)."""
        ds = self.train_dataset
        if self.block <= 1 or ds is None or "pair_id" not in getattr(ds, "column_names", ()):
            return
        protos = ds["protocol"] if "protocol" in ds.column_names else [None] * len(ds)
        keys = list(zip(ds["pair_id"], protos))
        per_process = self.args.per_device_train_batch_size * self.args.steps_per_generation
        check_pair_locality(keys, self._get_train_sampler(ds), per_process, self.accelerator.num_processes, self.block)

    # -- generation -----------------------------------------------------------------------
    def _generate_single_turn(self, *args: Any, **kwargs: Any):  # type: ignore[override]
        if not self.merge_for_rollout or self.use_vllm:
            return super()._generate_single_turn(*args, **kwargs)
        with merged_for_generation(self.accelerator.unwrap_model(self.model)):
            return super()._generate_single_turn(*args, **kwargs)

    # -- batching -------------------------------------------------------------------------
    def _get_train_sampler(self, dataset: Any = None) -> Sampler:
        if dataset is None:
            dataset = self.train_dataset
        return PairBlockRepeatSampler(
            data_source=dataset,
            mini_repeat_count=self.num_generations,
            batch_size=self.args.generation_batch_size // self.num_generations,
            repeat_count=self.num_iterations * self.args.steps_per_generation,
            shuffle=self.shuffle_dataset,
            seed=self.args.seed,
            block=self.block,
        )

    # -- dynamic sampling -----------------------------------------------------------------
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):  # type: ignore[override]
        rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._last_rewards_per_func = rewards
        return rewards

    def _group_informative(self) -> tuple[torch.Tensor, int]:
        """(local per-group "rewards not all equal" flags, global count of informative groups)."""
        rpf = self._last_rewards_per_func
        if rpf is None:
            raise RuntimeError("dynamic sampling: no rewards were computed for the last batch")
        g = self.num_generations
        total = (rpf * self.reward_weights.to(rpf.device).unsqueeze(0)).nansum(dim=1).view(-1, g)
        informative = (total.max(dim=1).values - total.min(dim=1).values) > 1e-6
        n_local = informative.numel() // self.accelerator.num_processes
        i = self.accelerator.process_index
        return informative[i * n_local : (i + 1) * n_local].cpu(), int(informative.sum())

    def _refill_inputs(self, n_rows: int) -> list[dict[str, Any]]:
        """``n_rows`` fresh per-process rows (prompts repeated ``num_generations`` times)."""
        g = self.num_generations
        n_prompts_global = (n_rows // g) * self.accelerator.num_processes
        sampler = PairBlockRepeatSampler(
            self.train_dataset, mini_repeat_count=1, batch_size=self.block, shuffle=True,
            seed=self.args.seed + 1, block=self.block,
        )
        if self._refill_iter is None:
            self._refill_iter = itertools.cycle(list(iter(sampler)))
        idx = [next(self._refill_iter) for _ in range(n_prompts_global)]
        per_proc = n_prompts_global // self.accelerator.num_processes
        p = self.accelerator.process_index
        local = idx[p * per_proc : (p + 1) * per_proc]
        return [dict(self.train_dataset[i]) for i in local for _ in range(g)]

    def _generate_and_score_completions(self, inputs):  # type: ignore[override]
        out = super()._generate_and_score_completions(inputs)
        if not (self.dynamic_sampling and self.model.training):
            return out
        g = self.num_generations
        n_groups = len(inputs) // g
        n_groups_global = n_groups * self.accelerator.num_processes
        flags, n_informative = self._group_informative()
        parts, part_flags = [out], [flags]
        self._metrics["train"]["dapo/informative_group_frac"].append(n_informative / max(n_groups_global, 1))
        rounds = 0
        while n_informative < n_groups_global and rounds < self.max_sampling_rounds:
            rounds += 1
            more = super()._generate_and_score_completions(self._refill_inputs(len(inputs)))
            f, n = self._group_informative()
            parts.append(more)
            part_flags.append(f)
            n_informative += n
        self._metrics["train"]["dapo/sampling_rounds"].append(float(rounds))
        if rounds == 0:
            return out
        chosen_groups = [(p, k) for p, fl in enumerate(part_flags) for k in range(len(fl)) if fl[k]]
        fillers = [(0, k) for k in range(len(part_flags[0])) if not part_flags[0][k]]
        chosen_groups = (chosen_groups + fillers)[:n_groups]
        chosen_groups.sort()
        picks = [(p, k * g + j) for p, k in chosen_groups for j in range(g)]
        merged = _merge_rows(parts, picks, self._tokenizer.pad_token_id)
        loss_mask = merged["completion_mask"]
        if merged.get("tool_mask") is not None:
            loss_mask = loss_mask * merged["tool_mask"]
        merged["num_items_in_batch"] = self.accelerator.gather(loss_mask.sum()).sum()
        return merged
