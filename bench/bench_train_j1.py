"""Proof on real data: train the embedded 135M judge with the ``j1-pav`` recipe, before/after figures.

Task: arithmetic-verification pairs derived from GSM8K solutions (``judgerl.data.builders.arith``): the
judge sees "What is 48 + 24?" with two answers ("48 + 24 = 72" vs "48 + 24 = 82") and must say
which is right. Training pairs come from ``gsm8k/train.jsonl``; the held-out split comes from
``gsm8k/test.jsonl`` with every expression seen in training removed.

Pipeline (one wall-clock budget for everything, default 45 minutes):

1. evaluate the base model on the held-out pairs with the eval runner (``judgerl.eval.run_eval``,
   PaV, both orders, greedy);
2. train with the ``j1-pav`` recipe (SFT format warm-up on templated trajectories, then GRPO with
   verdict + consistency + format rewards, DAPO clip-higher / token-level loss / overlong filtering /
   dynamic sampling); GRPO stops when the time reserved for step 3 is reached;
3. evaluate the trained model the same way;
4. print and write ``bench_train_j1.json`` / ``.md``: valid-format rate, accuracy,
   position-consistent accuracy and flip rate, before and after.

Usage::

    python bench/bench_train_j1.py --out /tmp/bench_j1 --budget-min 45
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("JUDGERL_SHARED_DATA", REPO.parent / "shared" / "data"))


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def split_pairs(data: Path, n_train: int, n_eval: int, ops: str, seed: int):
    from judgerl.data.builders.arith import build_arithmetic_pairs

    train = build_arithmetic_pairs(data / "gsm8k" / "train.jsonl", seed=seed, ops=ops)
    seen = {p.meta["expression"] for p in train}
    test = [p for p in build_arithmetic_pairs(data / "gsm8k" / "test.jsonl", seed=seed, ops=ops)
            if p.meta["expression"] not in seen]
    rng = random.Random(seed)
    rng.shuffle(test)
    return train[:n_train], test[:n_eval]


def evaluate(model_dir: str, pairs, out_dir: Path, max_new_tokens: int) -> dict:
    from judgerl.backends import SamplingParams
    from judgerl.backends.hf import HFBackend
    from judgerl.eval import run_eval
    from judgerl.judge import Judge
    from judgerl.protocols import get_protocol

    judge = Judge(get_protocol("pav"), HFBackend(model_dir, batch_size=16),
                  SamplingParams(max_new_tokens=max_new_tokens, temperature=0.0), seed=0)
    summary = run_eval(judge, pairs, out_dir, samples=1, resume=False, progress=False)
    return summary


def figures(summary: dict) -> dict:
    inv = summary.get("invalid_rate")
    return {
        "valid_format_rate": None if inv is None else 1.0 - inv,
        "accuracy": summary.get("accuracy"),
        "position_consistent_accuracy": summary.get("position_consistent_accuracy"),
        "flip_rate": summary.get("flip_rate"),
        "position_a_rate": summary.get("position_a_rate"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="/tmp/bench_train_j1")
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="the shared data folder (has gsm8k/)")
    ap.add_argument("--budget-min", type=float, default=45.0, help="wall-clock budget for the whole run")
    ap.add_argument("--n-train", type=int, default=400, help="training pairs (each gives 2 prompts)")
    ap.add_argument("--n-eval", type=int, default=40, help="held-out pairs (judged in both orders)")
    ap.add_argument("--ops", default="+-", help="operators kept in the arithmetic pairs")
    ap.add_argument("--warmup-steps", type=int, default=10)
    ap.add_argument("--freeze-layers", type=int, default=20, help="freeze the bottom N of 30 blocks (CPU speed)")
    ap.add_argument("--eval-tokens", type=int, default=64, help="max new tokens per judgment (templated judgments are ~45)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--trained-model", default=None,
                    help="skip training: evaluate this already-trained model (e.g. <out>/run/final) against the base")
    ap.add_argument("--set", dest="overrides", action="append", default=[], help="extra recipe overrides")
    args = ap.parse_args(argv)

    os.environ.setdefault("JUDGERL_CACHE", str(Path.home() / ".cache" / "judgerl"))
    t0 = time.time()
    deadline = t0 + 60 * args.budget_min
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = Path(args.data)

    from judgerl.backends.embedded import embedded_model_path
    from judgerl.data import write_pairs_jsonl
    from judgerl.train.run import load_run_recipe, run_training

    train, held_out = split_pairs(data, args.n_train, args.n_eval, args.ops, args.seed)
    train_file = out / "train_pairs.jsonl"
    write_pairs_jsonl(train, train_file)
    log(f"{len(train)} training pairs, {len(held_out)} held-out pairs (gsm8k arithmetic, ops {args.ops!r})")

    base = str(embedded_model_path())
    t = time.time()
    before = evaluate(base, held_out, out / "eval_before", args.eval_tokens)
    eval_s = time.time() - t
    log(f"before: {figures(before)} ({eval_s:.0f} s)")

    if args.trained_model:
        t = time.time()
        after = evaluate(args.trained_model, held_out, out / "eval_after", args.eval_tokens)
        log(f"after ({args.trained_model}): {figures(after)} ({time.time() - t:.0f} s)")
        report = {"trained_model": args.trained_model, "n_eval_pairs": len(held_out), "eval_tokens": args.eval_tokens,
                  "before": figures(before), "after": figures(after),
                  "seconds": {"eval_before": round(eval_s), "total": round(time.time() - t0)}}
        (out / "bench_train_j1_eval.json").write_text(json.dumps(report, indent=2))
        print(json.dumps(report, indent=2))
        return 0

    # Leave time for the after-evaluation (trained outputs are shorter: budget 1.1x the first one).
    train_minutes = (deadline - time.time() - 1.1 * eval_s - 60) / 60
    if train_minutes < 3:
        log(f"only {train_minutes:.1f} min left for training; raise --budget-min")
        return 1
    overrides = [
        f"output_dir={out / 'run'}",
        f"data.path={train_file}",
        "data.limit=null",
        f"seed={args.seed}",
        f"freeze_layers={args.freeze_layers}",
        f"time_limit_min={train_minutes:.2f}",
        f"warmup.steps={args.warmup_steps}",
        "warmup.learning_rate=1.0e-4",
        "warmup.batch_size=8",
        "grpo.max_steps=1000",
        "grpo.learning_rate=5.0e-6",
        "grpo.max_completion_length=64",
        "grpo.num_generations=4",
        "grpo.per_device_train_batch_size=8",
        "grpo.save_steps=5",
        "dapo.max_sampling_rounds=1",
        *args.overrides,
    ]
    config = load_run_recipe("j1-pav", overrides)
    log(f"training j1-pav for at most {train_minutes:.1f} min")
    t = time.time()
    result = run_training(config)
    train_s = time.time() - t
    log(f"trained: {result['global_step']} GRPO steps in {train_s:.0f} s")

    t = time.time()
    after = evaluate(result["final_model"], held_out, out / "eval_after", args.eval_tokens)
    log(f"after: {figures(after)} ({time.time() - t:.0f} s)")

    report = {
        "task": "gsm8k arithmetic-verification pairs (PaV, both orders, greedy)",
        "n_train_pairs": len(train),
        "n_eval_pairs": len(held_out),
        "recipe": "j1-pav",
        "overrides": overrides,
        "grpo_steps": result["global_step"],
        "seconds": {"eval_before": round(eval_s), "train": round(train_s), "total": round(time.time() - t0)},
        "before": figures(before),
        "after": figures(after),
    }
    (out / "bench_train_j1.json").write_text(json.dumps(report, indent=2))
    rows = ["| metric | base | trained |", "|---|---|---|"]
    for k in report["before"]:
        b, a = report["before"][k], report["after"][k]
        fmt = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
        rows.append(f"| {k} | {fmt(b)} | {fmt(a)} |")
    md = "\n".join(rows)
    (out / "bench_train_j1.md").write_text(md + "\n")
    print(md)
    print(json.dumps(report["seconds"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
