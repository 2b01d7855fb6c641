"""GRPO rollouts on merged LoRA weights against the unmerged adapter (``lora.merge_for_rollout``, issue 27).

The embedded model (``smollm2-135m``, loaded as training loads it: :func:`judgerl.train.stages.load_policy`,
fp32) gets a LoRA adapter (``--r``, all linear layers) whose B matrices are drawn from N(0, ``--b-std``)
(peft starts B at 0, where merging changes nothing), so the adapter moves the outputs. On ``--pairs``
LLMBar pairs in both orders (PaV prompts), greedy, ``--new-tokens`` per judgment, it prints:

* (a) agreement of merged vs unmerged rollouts: identical completion texts and equal verdicts (the
  Judge forces the answer tag when the model wrote none, as TIR rollouts do with
  ``tools.force_answer``), and the same against the adapter switched off on the first batch (how much
  the adapter matters);
* (b) rollout time per generation batch (``--batch`` prompts) and per decode step, merged (the merge
  itself included) vs unmerged, through both rollout engines: judgerl's
  :class:`~judgerl.backends.hf.HFBackend` (the TIR rollout) and ``model.generate`` on a left-padded
  batch (TRL's transformers generation path; there also the prefill and the mean decode step, timed by a
  logits processor), and the cost of the merge and restore themselves;

plus the load average before and after (the machine may be shared: figures are per-run). Run::

    python bench/bench_merged_rollout.py --pairs 8 --new-tokens 64 --batch 8
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, str(Path(__file__).resolve().parent))


def policy_with_random_adapter(r: int, b_std: float, seed: int) -> tuple[Any, Any]:
    """The embedded model wrapped with a LoRA adapter whose B ~ N(0, b_std) (A: peft's init)."""
    import torch

    from judgerl.backends.models import resolve_hf_path
    from judgerl.train.sections import LoraConfig
    from judgerl.train.stages import load_policy

    model, tokenizer = load_policy(resolve_hf_path("smollm2-135m"), seed=seed, lora=LoraConfig(r=r, alpha=2 * r))
    gen = torch.Generator().manual_seed(seed)
    for name, p in model.named_parameters():
        if "lora_B" in name:
            p.data.copy_(torch.randn(p.shape, generator=gen) * b_std)
    tokenizer.padding_side = "left"
    return model.eval(), tokenizer


def judge_rollouts(model: Any, tokenizer: Any, prompts: list, batch: int, new_tokens: int,
                   mode: str) -> tuple[list[Any], float]:
    """Greedy judgments of ``prompts`` through the TIR rollout's engine; (judgments, seconds).

    ``mode``: ``merged``, ``unmerged`` or ``off`` (adapter disabled)."""
    import torch

    from judgerl.backends import SamplingParams
    from judgerl.backends.hf import HFBackend
    from judgerl.judge.core import Judge, JudgeRequest
    from judgerl.protocols import get_protocol
    from judgerl.train.lora import merged_for_generation

    ctx = {"merged": lambda: merged_for_generation(model), "off": model.disable_adapter,
           "unmerged": nullcontext}[mode]
    t0 = time.perf_counter()
    with ctx(), torch.no_grad():
        backend = HFBackend.from_loaded(model, tokenizer, batch_size=batch)
        judge = Judge(get_protocol("pav"), backend, SamplingParams(max_new_tokens=new_tokens, temperature=0.0),
                      force_answer=True)
        out = judge.run([JudgeRequest(p, 2) for p in prompts])
    return out, time.perf_counter() - t0


class StepClock:
    """A logits processor that only records when each generation step reaches sampling: the first
    stamp after the start is the prefill, the gaps between later stamps are decode steps."""

    def __init__(self) -> None:
        self.stamps: list[float] = []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        self.stamps.append(time.perf_counter())
        return scores


def generate_rollouts(model: Any, tokenizer: Any, prompts: list, batch: int, new_tokens: int,
                      merged: bool) -> tuple[list[list[int]], float, float, float]:
    """Greedy ``model.generate`` on left-padded batches (TRL's transformers path).

    Returns:
        (completion ids, total seconds with the merge, prefill seconds, mean decode-step seconds).
    """
    import torch
    from transformers import LogitsProcessorList

    from judgerl.backends.chat import render_chat
    from judgerl.train.lora import merged_for_generation

    texts = [render_chat(tokenizer, p) for p in prompts]
    ids: list[list[int]] = []
    prefill, gaps = 0.0, []
    t0 = time.perf_counter()
    with (merged_for_generation(model) if merged else nullcontext()), torch.no_grad():
        for i in range(0, len(texts), batch):
            enc = tokenizer(texts[i : i + batch], return_tensors="pt", padding=True, add_special_tokens=False)
            clock = StepClock()
            start = time.perf_counter()
            out = model.generate(**enc, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                                 pad_token_id=tokenizer.pad_token_id, logits_processor=LogitsProcessorList([clock]))
            prefill += clock.stamps[0] - start
            gaps += [b - a for a, b in zip(clock.stamps, clock.stamps[1:])]
            ids += out[:, enc["input_ids"].shape[1]:].tolist()
    return ids, time.perf_counter() - t0, prefill, sum(gaps) / max(len(gaps), 1)


def first_prompt_logit_gaps(model: Any, tokenizer: Any, prompt: Any) -> tuple[float, float, float, float]:
    """Over every position of one prompt: (max |merged - unmerged| logit, merged top-1 = unmerged top-1
    rate, max |off - unmerged| logit, off top-1 = unmerged top-1 rate)."""
    import torch

    from judgerl.backends.chat import render_chat
    from judgerl.train.lora import merged_for_generation

    ids = tokenizer(render_chat(tokenizer, prompt), return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        on = model(input_ids=ids).logits[0]
        with merged_for_generation(model):
            merged = model(input_ids=ids).logits[0]
        with model.disable_adapter():
            off = model(input_ids=ids).logits[0]
    top = on.argmax(-1)
    return (float((merged - on).abs().max()), float((merged.argmax(-1) == top).float().mean()),
            float((off - on).abs().max()), float((off.argmax(-1) == top).float().mean()))


def agreement(a: list[Any], b: list[Any]) -> tuple[float, float]:
    """(fraction of identical texts, fraction of equal verdicts; invalid counts as a value)."""
    n = max(len(a), 1)
    return (sum(x.text == y.text for x, y in zip(a, b)) / n,
            sum(x.decision.verdict == y.decision.verdict for x, y in zip(a, b)) / n)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    from bench_generation import DEFAULT_DATA, both_order_prompts

    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LLMBar-format pairs file")
    ap.add_argument("--pairs", type=int, default=8, help="pairs (x2 orders = prompts)")
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8, help="prompts per generation batch")
    ap.add_argument("--r", type=int, default=16, help="LoRA rank (alpha = 2r)")
    ap.add_argument("--b-std", type=float, default=0.05, help="std of the random LoRA B matrices")
    ap.add_argument("--gen-prompts", type=int, default=None,
                    help="prompts through model.generate and the adapter-off control (default: one batch)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)

    load0 = os.getloadavg()
    prompts = both_order_prompts(args.data, args.pairs)
    model, tok = policy_with_random_adapter(args.r, args.b_std, args.seed)
    n_batches = -(-len(prompts) // args.batch)
    few = prompts[: args.gen_prompts or args.batch]
    few_batches = -(-len(few) // args.batch)
    steps = few_batches * args.new_tokens
    print(f"smollm2-135m fp32 + LoRA r={args.r} all-linear, B~N(0,{args.b_std}); {len(prompts)} prompts, "
          f"{args.new_tokens} new tokens, batch {args.batch}; torch threads {torch.get_num_threads()}")

    from judgerl.train.lora import merged_for_generation

    merge_s = []
    for _ in range(3):
        t0 = time.perf_counter()
        with merged_for_generation(model):
            pass
        merge_s.append(time.perf_counter() - t0)
    logit_gap = first_prompt_logit_gaps(model, tok, prompts[0])
    judged, times = {}, {}
    for mode in ("unmerged", "merged"):
        judged[mode], times[("judge", mode)] = judge_rollouts(model, tok, prompts, args.batch, args.new_tokens, mode)
        print(f"judge {mode}: {times[('judge', mode)]:.1f} s", file=sys.stderr, flush=True)
    ids, split = {}, {}
    for merged in (True, False):  # reverse order: a load drift favours neither side
        ids[merged], times[("generate", "merged" if merged else "unmerged")], *split[merged] = generate_rollouts(
            model, tok, few, args.batch, args.new_tokens, merged)
        print(f"generate merged={merged}: {times[('generate', 'merged' if merged else 'unmerged')]:.1f} s",
              file=sys.stderr, flush=True)
    control = few  # adapter off: how much the adapter moves the outputs
    judged["off"], times[("judge", "off")] = judge_rollouts(model, tok, control, args.batch, args.new_tokens, "off")
    load1 = os.getloadavg()

    text_mu, verdict_mu = agreement(judged["merged"], judged["unmerged"])
    text_ou, verdict_ou = agreement(judged["off"], judged["unmerged"][: len(control)])
    same_ids = sum(a == b for a, b in zip(ids[True], ids[False])) / len(few)
    print(f"(a) first prompt, all positions: max |logit merged - unmerged| {logit_gap[0]:.2e}, top-1 equal "
          f"{logit_gap[1]:.1%}; adapter off vs on: max |logit gap| {logit_gap[2]:.2f}, top-1 equal {logit_gap[3]:.1%}")
    print("(a) agreement with the unmerged adapter (greedy)")
    print("| rollouts | identical texts | equal verdicts |")
    print("|---|---|---|")
    print(f"| merged (Judge, HFBackend) | {text_mu:.1%} | {verdict_mu:.1%} |")
    print(f"| merged (model.generate, {len(few)} prompts) | {same_ids:.1%} (token ids) | - |")
    print(f"| adapter off (control, {len(control)} prompts) | {text_ou:.1%} | {verdict_ou:.1%} |")
    print("(b) rollout time, merged (merge included) vs unmerged")
    print("| engine | unmerged s/batch | merged s/batch | unmerged ms/token-step | merged ms/token-step | speed-up |")
    print("|---|---|---|---|---|---|")
    for engine in ("judge", "generate"):
        u, m = times[(engine, "unmerged")], times[(engine, "merged")]
        if engine == "judge":  # judgments may stop early (EOS) and forcing adds tokens: count them
            name, nb = "HFBackend (TIR rollout)", n_batches
            su, sm = (sum(j.completion_tokens for j in judged[k]) / args.batch for k in ("unmerged", "merged"))
        else:
            name, nb, su, sm = "model.generate (TRL)", few_batches, steps, steps
        print(f"| {name} | {u / nb:.2f} | {m / nb:.2f} | {1e3 * u / su:.0f} | {1e3 * m / sm:.0f} | "
              f"{u / m:.2f}x |")
    print("(ms/token-step: seconds per batch of one new token each; prefill included)")
    for merged in (False, True):
        pre, step = split[merged]
        print(f"model.generate {'merged' if merged else 'unmerged'}: prefill {pre / few_batches:.2f} s/batch, "
              f"decode step {1e3 * step:.0f} ms at batch {args.batch}")
    print(f"decode step speed-up merged: {split[False][1] / split[True][1]:.2f}x; merge + restore "
          f"{min(merge_s):.2f} s per rollout call (best of 3); adapter off (HFBackend): "
          f"{times[('judge', 'off')]:.2f} s for {len(control)} prompts")
    print(f"load average before {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, after "
          f"{load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f} (shared machine)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
