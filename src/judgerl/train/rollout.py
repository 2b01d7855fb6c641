"""Tool-integrated GRPO rollouts: the :class:`~judgerl.judge.Judge` inside TRL's ``rollout_func`` hook.

TRL 1.16 lets ``GRPOTrainer(rollout_func=f)`` replace generation: ``f(prompts, trainer)`` gets the
per-process prompts (each already repeated ``num_generations`` times by the sampler) and returns
``prompt_ids``, ``completion_ids``, ``logprobs`` and any extra per-completion fields, which are
forwarded to the reward functions. The field ``env_mask`` is special: TRL uses it as the tool
mask, multiplying it into the loss mask, so tokens with mask 0 are not trained on.

:func:`make_tir_rollout` builds such a function around the same :class:`~judgerl.judge.Judge`
that evaluation and the reward server use: the policy being trained generates (through
:meth:`judgerl.backends.hf.HFBackend.from_loaded`, no copy of the weights), every closed python
block runs in the sandbox, its output goes back into the context in an ```` ```output ```` block
(at most ``tools.max_rounds`` rounds), and the completion's tokens are the tokenization of the
whole trajectory text with ``env_mask`` = 0 on the ``tool`` and ``forced`` segments (text judgerl
inserted is masked out of the loss, as in TIR-Judge). The trajectories go to the reward functions
as the ``trajectories`` column (TIR reward: Rt needs the executed calls and errors).
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any, Callable, Sequence

from judgerl.backends.base import SamplingParams, derive_seed
from judgerl.backends.chat import render_chat
from judgerl.protocols.base import JudgeProtocol
from judgerl.tools import Executor
from judgerl.train.sections import ToolsConfig
from judgerl.train.datasets import prompt_key
from judgerl.train.lora import merged_for_generation


#: Segment kinds masked out of the GRPO loss: text judgerl inserted, not sampled from the policy.
ROLLOUT_MASKED_KINDS: tuple[str, ...] = ("tool", "forced")


def trajectory_ids(tokenizer: Any, trajectory: Any, max_len: int,
                   masked: Sequence[str] = ROLLOUT_MASKED_KINDS,
                   terminated: bool | None = None) -> tuple[list[int], list[int]]:
    """Completion token ids of a trajectory and its loss mask (0 on the ``masked`` segment kinds:
    tool output and forced prefills by default).

    The ids are the tokenization of the whole trajectory text; the mask uses the segments' token
    offsets (computed with the same tokenizer). The sequence is cut to ``max_len``; a terminated
    trajectory that was not cut gets the EOS token so TRL counts it as terminated (not truncated,
    so DAPO's overlong filtering keeps it). ``terminated`` defaults to ``finish_reason == "stop"``;
    a judgment whose answer was forced is complete too (its first pass may have ended on length).
    """
    ids = tokenizer(trajectory.text, add_special_tokens=False)["input_ids"]
    mask = [1] * len(ids)
    for seg in trajectory.segments:
        if seg.kind in masked:
            for j in range(seg.token_start, min(seg.token_end, len(ids))):
                mask[j] = 0
    cut = len(ids) > max_len
    ids, mask = ids[:max_len], mask[:max_len]
    if terminated is None:
        terminated = trajectory.finish_reason == "stop"
    if not cut and terminated and len(ids) < max_len:
        ids.append(tokenizer.eos_token_id)
        mask.append(1)
    if not ids:  # an empty generation: a lone EOS keeps TRL's tensors well-formed
        ids, mask = [tokenizer.eos_token_id], [1]
    return ids, mask


def make_tir_rollout(protocol: JudgeProtocol, tools: ToolsConfig, tokenizer: Any, sandbox: Executor | None = None,
                     rows: Sequence[dict[str, Any]] = (), *, merge_for_rollout: bool = False
                     ) -> Callable[[list, Any], dict]:
    """A TRL ``rollout_func`` running the sandboxed tool loop with the trainer's current policy.

    TRL hands the rollout only the prompts; ``rows`` (the GRPO dataset rows,
    :func:`judgerl.train.datasets.build_rows`) give each prompt's ``responses`` and ``question``, which
    every :class:`~judgerl.judge.JudgeRequest` carries, so the Judge applies the quoted-answer check and
    (protocol option ``namespace``) the response namespace in training as in eval and serve (a prompt
    is found by its messages without an assistant prefill).

    ``protocol``: the run's TIR protocol object (:class:`~judgerl.train.setup.TrainSetup`): pairwise (task
    ``tir``, two responses per prompt) or pointwise (task ``tir-pointwise``, one).
    ``tools`` (the recipe's :class:`~judgerl.train.sections.ToolsConfig`): ``max_rounds``, ``sandbox``
    kind, ``timeout_s``, ``max_new_tokens`` per round (default ``grpo.max_completion_length``),
    ``allow_unsafe``, ``force_answer`` (the Judge forces the answer tag of trajectories that
    never wrote one; the forced prefill is masked, the tokens after it are trained, and the
    ``trajectories`` column marks them ``forced`` for the reward). Sampling uses the trainer's
    ``temperature`` and ``top_p``; rollout ``i`` of step ``s`` on process ``p`` samples with
    ``derive_seed(seed, s, p, i)``. With ``merge_for_rollout`` (the recipe's ``lora.merge_for_rollout``)
    the tool loop generates on merged LoRA weights (:func:`judgerl.train.lora.merged_for_generation`;
    restored before the loss, also when the loop raises). Logs ``judge/tool_use_rate`` (fraction of rollouts with at
    least one executed block), ``judge/tool_error_rate`` and ``judge/forced_rate`` through the
    trainer.

    Raises:
        judgerl.tools.SandboxUnavailableError: only the unsafe fallback sandbox is available and
            ``tools.allow_unsafe`` is false.
        KeyError: (when called) ``rows`` were given and a prompt is not among them.
        RuntimeError: (when called) from the sandbox or the tool loop.
    """
    from judgerl.backends.hf import HFBackend
    from judgerl.judge.core import Judge, JudgeRequest
    from judgerl.tools import get_sandbox

    box = sandbox or get_sandbox(kind=tools.sandbox, timeout_s=float(tools.timeout_s), allow_unsafe=tools.allow_unsafe)
    shown = {prompt_key(r["prompt"]): (tuple(r.get("responses") or ()), r.get("question")) for r in rows}
    shown_count = 1 if protocol.kind == "pointwise" else 2

    def shown_of(prompt: Any) -> tuple[tuple[str, ...], str | None]:
        if not shown:
            return (), None
        key = prompt_key(prompt)
        if key not in shown:
            raise KeyError(f"tir_rollout: a prompt that is not in the dataset rows: {key[:200]}...")
        return shown[key]

    def tir_rollout(prompts: list, trainer: Any) -> dict[str, Any]:
        import torch

        args = trainer.args
        max_len = int(args.max_completion_length)
        per_round = int(tools.max_new_tokens or max_len)
        model = trainer.accelerator.unwrap_model(trainer.model)
        was_training = model.training
        model.eval()
        backend = HFBackend.from_loaded(model, tokenizer, batch_size=max(1, len(prompts)))
        params = SamplingParams(max_new_tokens=per_round, temperature=float(args.temperature or 1.0),
                                top_p=float(args.top_p or 1.0))
        judge = Judge(protocol, backend, params, sandbox=box, max_tool_rounds=int(tools.max_rounds),
                      force_answer=bool(tools.force_answer))
        step, proc = int(trainer.state.global_step), int(trainer.accelerator.process_index)
        requests = [JudgeRequest(p, shown_count, derive_seed(int(args.seed), step, proc, i), *shown_of(p))
                    for i, p in enumerate(prompts)]
        merged = merged_for_generation(model) if merge_for_rollout else nullcontext(model)
        try:
            with merged, torch.no_grad():
                judgments = judge.run(requests)
        finally:
            if was_training:
                model.train()
        trajectories = [j.trajectory for j in judgments]
        prompt_ids, completion_ids, masks = [], [], []
        for prompt, t, j in zip(prompts, trajectories, judgments):
            prompt_ids.append(tokenizer(render_chat(tokenizer, prompt), add_special_tokens=False)["input_ids"])
            ids, mask = trajectory_ids(tokenizer, t, max_len, terminated=j.forced or t.finish_reason == "stop")
            completion_ids.append(ids)
            masks.append(mask)
        n = max(len(trajectories), 1)
        trainer._log_metric("judge/tool_use_rate", sum(t.tool_calls > 0 for t in trajectories) / n)
        calls = sum(t.tool_calls for t in trajectories)
        trainer._log_metric("judge/tool_error_rate", sum(t.tool_errors for t in trajectories) / calls if calls else 0.0)
        trainer._log_metric("judge/forced_rate", sum(j.forced for j in judgments) / n)
        return {
            "prompt_ids": prompt_ids,
            "completion_ids": completion_ids,
            "logprobs": None,
            "env_mask": masks,
            "trajectories": [{**t.to_dict(), "forced": j.forced} for t, j in zip(trajectories, judgments)],
        }

    return tir_rollout
