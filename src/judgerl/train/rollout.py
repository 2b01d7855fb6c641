"""Tool-integrated GRPO rollouts: judgerl's tool loop inside TRL's ``rollout_func`` hook.

TRL 1.16 lets ``GRPOTrainer(rollout_func=f)`` replace generation: ``f(prompts, trainer)`` gets the
per-process prompts (each already repeated ``num_generations`` times by the sampler) and returns
``prompt_ids``, ``completion_ids``, ``logprobs`` and any extra per-completion fields, which are
forwarded to the reward functions. The field ``env_mask`` is special: TRL uses it as the tool
mask, multiplying it into the loss mask, so tokens with mask 0 are not trained on.

:func:`make_tir_rollout` builds such a function around
:func:`judgerl.tools.tir.run_tool_loop`: the policy being trained generates (through
:class:`LiveModelBackend`), every closed python block runs in the sandbox, its output goes back
into the context in an ```` ```output ```` block (at most ``tools.max_rounds`` rounds), and the
completion's tokens are the tokenization of the whole trajectory text with ``env_mask`` = 0 on the
``tool`` segments (the interpreter output is masked out of the loss, as in TIR-Judge). The
trajectories go to the reward functions as the ``trajectories`` column (TIR reward: Rt needs the
executed calls and errors).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from judgerl.backends.base import SamplingParams, cut_at_stop
from judgerl.backends.hf import render_chat
from judgerl.train.config import TrainConfig
from judgerl.types import Completion, Messages


class LiveModelBackend:
    """A judgerl :class:`~judgerl.backends.Backend` over the in-memory policy being trained.

    Generation is batched with left padding; sampling uses the trainer's model directly (no copy),
    so rollouts always come from the current weights. Stop strings are honoured (transformers
    ``stop_strings``) and cut from the text, as the Backend protocol requires.

    Args:
        model: A transformers causal LM (unwrapped from any accelerate/DDP wrapper).
        tokenizer: Its tokenizer (must have a pad token; padding side is set to left).
        batch_size: Prompts per ``model.generate`` call.
    """

    def __init__(self, model: Any, tokenizer: Any, batch_size: int = 64) -> None:  # noqa: D107
        self.name = "policy"
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size

    def generate(self, prompts: Sequence[Messages], params: SamplingParams) -> list[Completion]:
        import torch

        tok = self.tokenizer
        tok.padding_side = "left"
        device = next(self.model.parameters()).device
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos]) | {tok.eos_token_id}
        out: list[Completion] = []
        for start in range(0, len(prompts), self.batch_size):
            texts = [render_chat(tok, p) for p in prompts[start : start + self.batch_size]]
            enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
            kw: dict[str, Any] = dict(max_new_tokens=params.max_new_tokens, pad_token_id=tok.pad_token_id)
            if params.temperature > 0:
                kw.update(do_sample=True, temperature=params.temperature, top_p=params.top_p, top_k=0)
                if params.seed is not None:
                    torch.manual_seed(params.seed + start)
            else:
                kw.update(do_sample=False, temperature=None, top_p=None, top_k=None)
            if params.stop:
                kw.update(stop_strings=list(params.stop), tokenizer=tok)
            with torch.no_grad():
                seqs = self.model.generate(**enc, **kw)
            new = seqs[:, enc["input_ids"].shape[1] :].tolist()
            for row, plen in zip(new, enc["attention_mask"].sum(dim=1).tolist()):
                n = next((j for j, t in enumerate(row) if t in eos_ids), len(row))
                text, stopped = cut_at_stop(tok.decode(row[:n], skip_special_tokens=True), params.stop)
                finish = "stop" if (n < len(row) or stopped) else "length"
                out.append(Completion(text, int(plen), n, finish))
        return out


def trajectory_ids(tokenizer: Any, trajectory: Any, max_len: int) -> tuple[list[int], list[int]]:
    """Completion token ids of a trajectory and its loss mask (0 on tool-output tokens).

    The ids are the tokenization of the whole trajectory text; the mask uses the segments' token
    offsets (the tool loop computes them with the same tokenizer). The sequence is cut to
    ``max_len``; a trajectory that stopped (not cut, finish_reason "stop") gets the EOS token so TRL
    counts it as terminated.
    """
    ids = tokenizer(trajectory.text, add_special_tokens=False)["input_ids"]
    mask = [1] * len(ids)
    for seg in trajectory.segments:
        if seg.kind == "tool":
            for j in range(seg.token_start, min(seg.token_end, len(ids))):
                mask[j] = 0
    cut = len(ids) > max_len
    ids, mask = ids[:max_len], mask[:max_len]
    if not cut and trajectory.finish_reason == "stop" and len(ids) < max_len:
        ids.append(tokenizer.eos_token_id)
        mask.append(1)
    if not ids:  # an empty generation: a lone EOS keeps TRL's tensors well-formed
        ids, mask = [tokenizer.eos_token_id], [1]
    return ids, mask


def make_tir_rollout(config: TrainConfig, tokenizer: Any, sandbox: Any = None) -> Callable[[list, Any], dict]:
    """A TRL ``rollout_func`` running the sandboxed tool loop with the trainer's current policy.

    ``config.tools``: ``max_rounds`` (default 3), ``sandbox`` kind (``auto``), ``timeout_s`` (5),
    ``max_new_tokens`` per round (default: ``grpo.max_completion_length``). Sampling uses the
    trainer's ``temperature`` and ``top_p``. Logs ``judge/tool_use_rate`` (fraction of rollouts
    with at least one executed block) and ``judge/tool_error_rate`` through the trainer.

    Raises:
        RuntimeError: (when called) from the sandbox or the tool loop.
    """
    from judgerl.tools import get_sandbox
    from judgerl.tools.tir import run_tool_loop

    tools = config.tools
    max_rounds = int(tools.get("max_rounds", 3))
    box = sandbox or get_sandbox(kind=tools.get("sandbox", "auto"), timeout_s=float(tools.get("timeout_s", 5)))

    def tir_rollout(prompts: list, trainer: Any) -> dict[str, Any]:
        import torch

        args = trainer.args
        max_len = int(args.max_completion_length)
        per_round = int(tools.get("max_new_tokens", max_len))
        model = trainer.accelerator.unwrap_model(trainer.model)
        was_training = model.training
        model.eval()
        tokenizer.padding_side = "left"
        backend = LiveModelBackend(model, tokenizer, batch_size=max(1, len(prompts)))
        params = SamplingParams(
            max_new_tokens=per_round, temperature=float(args.temperature or 1.0), top_p=float(args.top_p or 1.0),
            seed=int(args.seed) + int(trainer.state.global_step),
        )
        try:
            with torch.no_grad():
                trajectories = run_tool_loop(backend, prompts, params, box, max_rounds=max_rounds, tokenizer=tokenizer)
        finally:
            if was_training:
                model.train()
        prompt_ids, completion_ids, masks = [], [], []
        for prompt, t in zip(prompts, trajectories):
            prompt_ids.append(tokenizer(render_chat(tokenizer, prompt), add_special_tokens=False)["input_ids"])
            ids, mask = trajectory_ids(tokenizer, t, max_len)
            completion_ids.append(ids)
            masks.append(mask)
        n = max(len(trajectories), 1)
        trainer._log_metric("judge/tool_use_rate", sum(t.tool_calls > 0 for t in trajectories) / n)
        calls = sum(t.tool_calls for t in trajectories)
        trainer._log_metric("judge/tool_error_rate", sum(t.tool_errors for t in trajectories) / calls if calls else 0.0)
        return {
            "prompt_ids": prompt_ids,
            "completion_ids": completion_ids,
            "logprobs": None,
            "env_mask": masks,
            "trajectories": [t.to_dict() for t in trajectories],
        }

    return tir_rollout


def tir_reward_func(config: TrainConfig) -> Callable[..., list[float | None]]:
    """The TIR-Judge reward R = Rc × (0.1 + 0.9 · 1[Rt ∧ Rf]) for the recipe's pairwise protocol.

    See :func:`judgerl.rewards.tir.get_tir_reward`; reads the ``label`` and ``trajectories``
    columns (the latter from :func:`make_tir_rollout`).
    """
    from judgerl.rewards.tir import get_tir_reward

    return get_tir_reward(config.protocol, max_tool_calls=int(config.tools.get("max_rounds", 3)))
