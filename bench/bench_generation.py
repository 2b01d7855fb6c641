"""Generation speed of the ``hf`` backend: batched vs one prompt at a time, with a roofline.

Judges the same LLMBar pairs with PaV prompts twice -- once with the backend batching
(``--batch-size``) and once one prompt per ``generate`` call -- forcing every completion to
exactly ``--max-new-tokens`` tokens (``min_new_tokens``), and prints judgments/s, generated
tokens/s and the batched / one-at-a-time ratio.

It also prints what this CPU allows (a roofline estimate, Williams et al. 2009, "Roofline: an
insightful visual performance model", CACM 52(4)):

* compute bound: a decoder forward costs ~2 x N_params FLOPs per token (every weight is one
  multiply-add, the tied LM head included) plus attention, 4 x n_layers x ctx x d_attn FLOPs per
  token for QK^T and AV over a context of ctx tokens (Kaplan et al. 2020, "Scaling Laws for
  Neural Language Models", Sec. 2.1). Divided into the measured peak matmul GFLOP/s this gives
  the most tokens/s batched decode (and prefill) can reach;
* memory bound: one-at-a-time decode reads every weight once per token, so tokens/s <=
  memory bandwidth / weight bytes (bandwidth measured with a large tensor copy).

Run (about 3-5 minutes on 2 idle cores with the defaults)::

    python bench/bench_generation.py                     # 16 pairs batched, 4 one at a time
    python bench/bench_generation.py --n-pairs 32 --batch-size 32 --dtype bfloat16
    python bench/bench_generation.py --compare-dtype     # also: bf16 vs fp32 greedy agreement

The CPU may be shared: the load average is printed before and after, numbers are noisy when
it exceeds the core count.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("JUDGERL_SHARED_DATA", REPO.parent / "shared" / "data")) / "llmbar" / "natural.json"


def load_pav_prompts(path: Path, n: int) -> list[Any]:
    """PaV chat prompts for the first ``n`` pairs of an LLMBar-format file (chosen shown first)."""
    from judgerl.data import load_pairs
    from judgerl.protocols import get_protocol

    pairs = load_pairs(path, limit=n).pairs
    if len(pairs) < n:
        raise SystemExit(f"{path} has only {len(pairs)} pairs, --n-pairs asked for {n}")
    pav = get_protocol("pav")
    return [pav.build(p.prompt, [p.chosen, p.rejected]) for p in pairs]


def peak_matmul_gflops(dtype: Any, size: int = 2048, repeats: int = 8) -> float:
    """Best-of-3 GFLOP/s of a square ``size`` matmul (2 x size^3 FLOPs) in ``dtype`` on this CPU."""
    import torch

    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    a @ b
    best = 0.0
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(repeats):
            a @ b
        best = max(best, 2 * size**3 * repeats / (time.perf_counter() - t) / 1e9)
    return best


def memory_bandwidth_gbs(mib: int = 512, repeats: int = 5) -> float:
    """Best-of-3 GB/s of a ``mib`` MiB tensor copy (bytes read + bytes written)."""
    import torch

    src = torch.empty(mib * 2**20 // 4, dtype=torch.float32).fill_(1.0)
    dst = torch.empty_like(src)
    dst.copy_(src)
    best = 0.0
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(repeats):
            dst.copy_(src)
        best = max(best, 2 * src.numel() * 4 * repeats / (time.perf_counter() - t) / 1e9)
    return best


def model_shape(model: Any) -> dict[str, float]:
    """Parameter count (tied weights once), bytes, and the attention dimensions of ``model``."""
    cfg = model.config
    params = sum(p.numel() for p in model.parameters())
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    return {
        "params": params,
        "weight_bytes": weight_bytes,
        "n_layers": cfg.num_hidden_layers,
        "d_attn": cfg.num_attention_heads * head_dim,
    }


def flops_per_token(shape: dict[str, float], ctx: float) -> float:
    """Forward FLOPs for one token at context length ``ctx``: 2 N + 4 n_layers ctx d_attn."""
    return 2 * shape["params"] + 4 * shape["n_layers"] * ctx * shape["d_attn"]


def timed_generate(backend: Any, prompts: Sequence[Any], params: Any, one_at_a_time: bool) -> dict[str, float]:
    """Run and time generation; returns seconds, judgments, prompt and generated token totals."""
    t = time.perf_counter()
    if one_at_a_time:
        outs = [c for p in prompts for c in backend.generate([p], params, min_new_tokens=params.max_new_tokens)]
    else:
        outs = backend.generate(prompts, params, min_new_tokens=params.max_new_tokens)
    secs = time.perf_counter() - t
    return {
        "seconds": secs,
        "judgments": len(outs),
        "prompt_tokens": sum(c.prompt_tokens for c in outs),
        "generated_tokens": sum(c.completion_tokens for c in outs),
        "judgments_per_s": len(outs) / secs,
        "generated_tokens_per_s": sum(c.completion_tokens for c in outs) / secs,
        "texts": [c.text for c in outs],
    }


def compare_dtypes(model_dir: str, prompts: Sequence[Any], params: Any, batch_size: int) -> dict[str, float]:
    """Greedy fp32 vs bf16 on the same prompts: identical outputs and equal parsed PaV verdicts."""
    from judgerl.backends.hf import HFBackend
    from judgerl.protocols import get_protocol

    pav = get_protocol("pav")
    runs = {}
    for dtype in ("float32", "bfloat16"):
        b = HFBackend(model_dir, batch_size=batch_size, dtype=dtype)
        t = time.perf_counter()
        runs[dtype] = ([c.text for c in b.generate(prompts, params)], time.perf_counter() - t)
        del b
    (t32, s32), (t16, s16) = runs["float32"], runs["bfloat16"]
    verdicts32 = [pav.parse(t).verdict for t in t32]
    verdicts16 = [pav.parse(t).verdict for t in t16]
    return {
        "identical_text": sum(a == b for a, b in zip(t32, t16)) / len(t32),
        "same_verdict": sum(a == b for a, b in zip(verdicts32, verdicts16)) / len(t32),
        "fp32_seconds": s32,
        "bf16_seconds": s16,
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m", help="model name for load_backend (hf provider)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LLMBar-format pairs file")
    ap.add_argument("--n-pairs", type=int, default=16, help="pairs judged batched")
    ap.add_argument("--n-single", type=int, default=4, help="of those, pairs judged one at a time")
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--dtype", default=None, help="float32 (CPU default) or bfloat16")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    ap.add_argument("--no-static-cache", action="store_true", help="use transformers' dynamic KV cache")
    ap.add_argument("--compare-dtype", action="store_true", help="also compare fp32 vs bf16 greedy outputs")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args(argv)
    if not 1 <= args.n_single <= args.n_pairs:
        ap.error("need 1 <= --n-single <= --n-pairs")

    import torch

    from judgerl.backends import SamplingParams, load_backend

    if args.threads:
        torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    print(f"cpu cores: {os.cpu_count()}  torch threads: {torch.get_num_threads()}  load average: {load_before}")
    prompts = load_pav_prompts(args.data, args.n_pairs)
    backend = load_backend(
        args.model,
        batch_size=args.batch_size,
        dtype=args.dtype,
        static_cache=False if args.no_static_cache else None,
    )
    params = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=0.0)
    backend.generate(prompts[:2], SamplingParams(max_new_tokens=4))  # warm-up

    batched = timed_generate(backend, prompts, params, one_at_a_time=False)
    single = timed_generate(backend, prompts[: args.n_single], params, one_at_a_time=True)
    same = sum(a == b for a, b in zip(batched["texts"], single["texts"]))
    # Prefill alone (one new token): the part of a judgment batching cannot amortise.
    prefill = timed_generate(backend, prompts, SamplingParams(max_new_tokens=1), one_at_a_time=False)

    shape = model_shape(backend.model)
    dtype = backend.model.dtype
    peak = peak_matmul_gflops(dtype)
    bandwidth = memory_bandwidth_gbs()
    mean_prompt = batched["prompt_tokens"] / batched["judgments"]
    decode_ctx = mean_prompt + args.max_new_tokens / 2
    f_decode = flops_per_token(shape, decode_ctx)
    f_prefill = flops_per_token(shape, mean_prompt / 2)
    decode_bound = peak * 1e9 / f_decode
    single_bound = bandwidth * 1e9 / 2 / shape["weight_bytes"]  # copy GB/s counts read + write
    judgment_flops = mean_prompt * f_prefill + args.max_new_tokens * f_decode
    judgment_bound = peak * 1e9 / judgment_flops
    load_after = os.getloadavg()

    ratio_j = batched["judgments_per_s"] / single["judgments_per_s"]
    ratio_t = batched["generated_tokens_per_s"] / single["generated_tokens_per_s"]
    print(f"model {args.model}: {shape['params'] / 1e6:.1f}M params, {dtype}, "
          f"{shape['weight_bytes'] / 2**20:.0f} MiB of weights, static cache: {backend.static_cache}")
    print(f"prompts: {args.n_pairs} LLMBar/Natural PaV prompts, mean {mean_prompt:.0f} prompt tokens, "
          f"{args.max_new_tokens} new tokens each (min_new_tokens forced)")
    print(f"batched (batch {args.batch_size}, {args.n_pairs} pairs): {batched['seconds']:.1f} s, "
          f"{batched['judgments_per_s']:.3f} judgments/s, {batched['generated_tokens_per_s']:.1f} generated tok/s")
    print(f"one at a time ({args.n_single} pairs): {single['seconds']:.1f} s, "
          f"{single['judgments_per_s']:.3f} judgments/s, {single['generated_tokens_per_s']:.1f} generated tok/s")
    print(f"ratio batched / one at a time: {ratio_j:.2f}x judgments/s, {ratio_t:.2f}x generated tok/s "
          f"(greedy outputs identical in {same}/{args.n_single})")
    prefill_s = prefill["seconds"] / prefill["judgments"]
    single_s = single["seconds"] / single["judgments"]
    print(f"prefill alone (batched, 1 new token): {prefill_s:.2f} s/judgment = "
          f"{prefill_s * batched['judgments'] / batched['seconds']:.0%} of the batched time; "
          f"ratio if batched decode were free: {single_s / prefill_s:.1f}x (Amdahl bound)")
    print(f"roofline: peak matmul {peak:.0f} GFLOP/s ({dtype}), copy bandwidth {bandwidth:.1f} GB/s")
    print(f"  FLOPs/token: {f_decode / 1e9:.3f} GFLOP decode at ctx {decode_ctx:.0f} "
          f"(2 x params = {2 * shape['params'] / 1e9:.3f} + attention)")
    print(f"  compute bound, batched decode: {decode_bound:.0f} tok/s -> measured batched is "
          f"{batched['generated_tokens_per_s'] / decode_bound:.0%} of it")
    print(f"  compute bound incl. prefill: {judgment_bound:.3f} judgments/s "
          f"({judgment_bound * args.max_new_tokens:.0f} generated tok/s) -> measured batched is "
          f"{batched['judgments_per_s'] / judgment_bound:.0%} of it")
    print(f"  memory bound, one-at-a-time decode: {single_bound:.0f} tok/s (weights read once per token)")
    print(f"load average before {load_before}, after {load_after}")
    result = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "batched": {k: v for k, v in batched.items() if k != "texts"},
        "single": {k: v for k, v in single.items() if k != "texts"},
        "prefill_seconds_per_judgment": prefill_s,
        "ratio_judgments": ratio_j,
        "ratio_tokens": ratio_t,
        "peak_gflops": peak,
        "bandwidth_gbs": bandwidth,
        "decode_bound_tok_s": decode_bound,
        "judgment_bound_per_s": judgment_bound,
        "single_bound_tok_s": single_bound,
        "load_before": load_before,
        "load_after": load_after,
    }
    if args.compare_dtype:
        cmp = compare_dtypes(backend.model_path, prompts, params, args.batch_size)
        print(f"fp32 vs bf16 greedy on {args.n_pairs} prompts: identical text {cmp['identical_text']:.0%}, "
              f"same PaV verdict {cmp['same_verdict']:.0%}; fp32 {cmp['fp32_seconds']:.1f} s, "
              f"bf16 {cmp['bf16_seconds']:.1f} s")
        result["dtype_comparison"] = cmp
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
