"""The end-to-end bound of ``bench/bench_generation.py``: the machine's peak fp32 GEMM and copy
bandwidth, the model's shape, the prompt tokens an exact engine cannot skip, and the time an
ideal exact engine needs for the fixed workload (formulas in ``bench_generation``'s docstring)."""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path
from typing import Any, Sequence


def roofline_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Peak fp32 GEMM GFLOP/s, copy GB/s, the model's shape and the prompt-trie token positions."""
    import torch
    from transformers import AutoConfig, AutoTokenizer

    from judgerl.backends.chat import render_chat
    from judgerl.backends.models import resolve_hf_path

    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    a @ b
    peak = 0.0
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(8):
            a @ b
        peak = max(peak, 2 * 2048**3 * 8 / (time.perf_counter() - t) / 1e9)
    src = torch.ones(128 * 2**20 // 4)
    dst = torch.empty_like(src)
    bw = 0.0
    for _ in range(5):
        t = time.perf_counter()
        dst.copy_(src)
        bw = max(bw, 2 * src.numel() * 4 / (time.perf_counter() - t) / 1e9)
    path = resolve_hf_path(spec["model"])
    cfg = AutoConfig.from_pretrained(path)
    tok = AutoTokenizer.from_pretrained(path)
    from bench_generation import both_order_prompts

    prompts = both_order_prompts(Path(spec["data"]), spec["n_pairs"])
    ids = [tok(render_chat(tok, p), add_special_tokens=False)["input_ids"] for p in prompts]
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    kv_heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
    head = cfg.vocab_size * cfg.hidden_size  # the LM head (tied or not: one vocab x hidden product)
    params = cfg.vocab_size * cfg.hidden_size * (1 if cfg.tie_word_embeddings else 2) + cfg.num_hidden_layers * (
        cfg.hidden_size * (cfg.num_attention_heads + 2 * kv_heads) * head_dim
        + cfg.num_attention_heads * head_dim * cfg.hidden_size + 3 * cfg.hidden_size * cfg.intermediate_size)
    embedding = 0 if cfg.tie_word_embeddings else head  # an untied input table: a lookup, not streamed
    return {"peak_gflops": peak, "bandwidth_gbs": bw, "params": params, "weight_bytes": 4 * (params - embedding),
            "head_params": head, "embedding_params": embedding,
            "n_layers": cfg.num_hidden_layers, "d_attn": cfg.num_attention_heads * head_dim,
            "kv_bytes_per_token": 2 * cfg.num_hidden_layers * kv_heads * head_dim * 4,
            "prompt_lengths": [len(x) for x in ids], "new_positions": trie_new_positions(ids)}


def trie_new_positions(ids: Sequence[Sequence[int]]) -> list[list[int]]:
    """For each prompt, ``[first, end)``: the positions not already covered by an earlier prompt's
    prefix (the longest common prefix with any earlier prompt is free for an exact engine)."""
    out, seen = [], []
    for x in ids:
        lcp = 0
        for y in seen:
            n = 0
            for a, b in zip(x, y):
                if a != b:
                    break
                n += 1
            lcp = max(lcp, n)
        out.append([lcp, len(x)])
        seen.append(x)
    return out


def end_to_end_bound(roof: dict[str, Any], n_prompts: int, max_new: int, batch: int) -> dict[str, float]:
    """Seconds an ideal exact engine needs for the fixed workload (see the module docstring)."""
    peak, bw = roof["peak_gflops"] * 1e9, roof["bandwidth_gbs"] * 1e9
    two_n, attn = 2 * roof["params"], 4 * roof["n_layers"] * roof["d_attn"]
    # untied input embeddings are a lookup, not FLOPs (tied ones are the LM head's weight)
    two_n -= 2 * roof.get("embedding_params", 0)
    two_head = 2 * roof.get("head_params", 0)
    prefill = 0.0
    for first, end in roof["new_positions"][:n_prompts]:
        count = end - first
        # body FLOPs for every new position, the LM head only at the prompt's last one
        prefill += count * (two_n - two_head) + two_head + attn * (first + end - 1) * count / 2
    lengths = roof["prompt_lengths"][:n_prompts]
    ctx = statistics.mean(lengths) + max_new / 2
    batch = min(batch, n_prompts)
    rows = n_prompts * max_new
    steps = math.ceil(rows / batch)
    step_compute = batch * (two_n + attn * ctx) / peak
    step_memory = (roof["weight_bytes"] + batch * ctx * roof["kv_bytes_per_token"]) / bw
    decode = steps * max(step_compute, step_memory)
    return {"prefill_s": prefill / peak, "decode_s": decode, "total_s": prefill / peak + decode,
            "decode_bound": "compute" if step_compute >= step_memory else "memory"}
