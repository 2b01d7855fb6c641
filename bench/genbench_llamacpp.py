"""``bench/bench_generation.py --workload llamacpp``: judgerl's fp32 hf backend vs llama.cpp's
``llama-server`` on the same judge prompts, interleaved, with verdict agreement.

Each round runs, each in a fresh process, ``run_eval`` (the ``judgerl eval`` path) of
``--judge-pairs`` LLMBar pairs x 2 orders with the PaV protocol, greedy, up to
``--judge-max-new-tokens`` tokens, stopping at ``</verdict>``, with answer forcing (so every
judgment ends in a verdict), first on judgerl's hf backend (fp32, continuous batching, batch
``--batch-size``), then on judgerl's ``llamacpp`` backend (``llama-server`` on the embedded Q4_1
GGUF, ``--llama-parallel`` slots, continuous batching, ``--llama-threads`` threads; requests
through the ``openai/`` client). Model loading / server start and a warm-up request are not timed.

Prints per run judgments/s and tokens/s (completion tokens / timed seconds), and per round the
verdicts equal to fp32's (``None`` = no verdict counts as a verdict of its own), the identical
texts, and, across rounds, whether each engine repeats itself.
"""

from __future__ import annotations

import statistics
from typing import Any, Callable


def _same(a: list[Any], b: list[Any]) -> int:
    return sum(x == y for x, y in zip(a, b, strict=True))


def llama_workload(args: Any, run_worker: Callable[[dict[str, Any]], dict[str, Any]],
                   print_run: Callable[..., None]) -> dict[str, Any]:
    """Interleaved rounds hf fp32 / llama-server; returns the runs, medians and agreement."""
    spec = {"kind": "judge", "model": args.model, "data": str(args.data), "n_pairs": args.judge_pairs,
            "max_new": args.judge_max_new_tokens, "stop": ["</verdict>"], "temperature": 0.0, "force_answer": True,
            "batch_size": args.batch_size, "eval_chunk": 0, "dtype": None}
    n = 2 * args.judge_pairs
    print(f"\n== judgerl hf fp32 vs llama-server: {args.judge_pairs} LLMBar pairs x 2 orders = {n} PaV judgments "
          f"through run_eval, greedy, up to {args.judge_max_new_tokens} new tokens, stop </verdict>, answer forcing; "
          f"hf batch {args.batch_size} / llama-server {args.llama_parallel} slots, {args.llama_threads} threads; "
          f"{args.repeats} interleaved rounds")
    engines = {"hf-fp32": "continuous", "llama-server": "llama-server"}
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in engines}
    for rnd in range(args.repeats):
        print(f" round {rnd + 1}/{args.repeats}")
        for name, engine in engines.items():
            r = run_worker({**spec, "engine": engine})
            print_run(name, r)
            runs[name].append(r)
            if "error" in r:
                return {"error": f"{name}: {r['error']}", "runs": runs}
    out: dict[str, Any] = {"n_judgments": n, "engine": {k: rs[0]["engine"] for k, rs in runs.items()}}
    for name, rs in runs.items():
        out[name] = {"judgments_per_s": statistics.median(n / r["seconds"] for r in rs),
                     "tokens_per_s": statistics.median(sum(r["tokens"]) / r["seconds"] for r in rs),
                     "seconds": [r["seconds"] for r in rs], "accuracy": [r["accuracy"] for r in rs],
                     "forced": [r["forced"] for r in rs], "tokens": [sum(r["tokens"]) for r in rs],
                     "repeats_itself": [_same(rs[0]["texts"], r["texts"]) for r in rs[1:]],
                     "load": [(r["load_before"][0], r["load_after"][0]) for r in rs]}
    hf, ll = runs["hf-fp32"], runs["llama-server"]
    out["verdict_agreement"] = [_same(a["verdicts"], b["verdicts"]) / n for a, b in zip(hf, ll)]
    out["identical_texts"] = [_same(a["texts"], b["texts"]) for a, b in zip(hf, ll)]
    out["ratio_per_round"] = [a["seconds"] / b["seconds"] for a, b in zip(hf, ll)]
    print(" summary: median over rounds")
    for name in engines:
        s = out[name]
        print(f"  {name:13s} {s['judgments_per_s']:.3f} judgments/s  {s['tokens_per_s']:6.1f} tok/s  accuracy "
              f"{s['accuracy']}  forced answers {s['forced']}  identical to its own round 1: {s['repeats_itself']}")
    print(f"  llama-server / hf fp32 judgments/s per round: {', '.join(f'{x:.2f}x' for x in out['ratio_per_round'])}")
    print(f"  verdicts equal to fp32 per round: {', '.join(f'{x:.1%}' for x in out['verdict_agreement'])}; identical "
          f"texts {', '.join(f'{x}/{n}' for x in out['identical_texts'])}")
    return out
