"""Cost of a TIR GRPO step against a no-tool GRPO step with the same batch (issue 10 target: <= 1.3x).

Both steps continue trained judges of ``bench/bench_train_judges.py`` (default: the proof run in
``runs/proof``: the no-tool PaV judge after J1 GRPO and the TIR judge) on the same training pairs, with
the same GRPO batch (``per_device_train_batch_size`` rollouts, ``num_generations`` per prompt) and
**without DAPO dynamic sampling**, so every step generates exactly one batch. (In the proof run every TIR
step resampled once, because the TIR judge was already right on every group, while most no-tool steps did
not: step times there compare different amounts of work.) The two kinds run interleaved
(plain, tir, plain, tir, ...; ``--reps`` times ``--steps`` steps each; the first step of every run is
dropped as warm-up) and the script prints, per kind, the mean seconds per step and its parts:

* ``rollout``: generation (TRL's ``generate`` for the no-tool judge; judgerl's tool loop through
  ``rollout_func`` for TIR: every generation round, the sandbox runs and the tokenization);
* ``sandbox``: the part of the TIR rollout spent running code in the sandbox (wall time of the rounds'
  parallel runs);
* ``train``: the rest of the step (reward functions, log-probabilities, forward/backward, optimizer);

plus the generated tokens per rollout and the load average. Run it alone on the machine::

    python bench/bench_tir_step.py --reps 2 --steps 4
    python bench/bench_tir_step.py --shipped --reps 2 --steps 3   # no runs/proof needed

``--shipped`` continues the shipped TIR judge (``smollm2-135m-judge``'s package adapter) in both kinds: the
no-tool step with ``j1-pav-distill`` (PaV, no tools), the TIR step with ``tir-judge-distill``, both on
``--pairs`` arithmetic pairs built from GSM8K ``train.jsonl`` (``data.builder=gsm8k-arith``) with the proof
run's shared settings (LoRA r=16 on all blocks, 8 rollouts of 4 generations). Same model, same pairs: the
ratio is the cost of the tool loop itself.

Raises (exits with the message): a missing config or adapter.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

KINDS = ("plain", "tir")


class _Timer:
    """Seconds spent per (kind, global step, part), filled by the wrappers below."""

    def __init__(self) -> None:
        self.kind = ""
        self.step = 0
        self.parts: dict[tuple[str, int], dict[str, float]] = defaultdict(lambda: defaultdict(float))

    def add(self, part: str, seconds: float) -> None:
        self.parts[(self.kind, self.step)][part] += seconds


TIMER = _Timer()


def _install_timers() -> None:
    """Wrap the trainer's step and generation and every sandbox run with timers (this process only)."""
    from judgerl.train.trainer import JudgeGRPOTrainer

    step_fn, gen_fn = JudgeGRPOTrainer.training_step, JudgeGRPOTrainer._generate

    def training_step(self: Any, *a: Any, **k: Any) -> Any:
        TIMER.step = int(self.state.global_step) + 1
        t0 = time.perf_counter()
        try:
            return step_fn(self, *a, **k)
        finally:
            TIMER.add("step", time.perf_counter() - t0)

    def generate(self: Any, *a: Any, **k: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return gen_fn(self, *a, **k)
        finally:
            TIMER.add("rollout", time.perf_counter() - t0)

    JudgeGRPOTrainer.training_step = training_step  # type: ignore[method-assign]
    JudgeGRPOTrainer._generate = generate  # type: ignore[method-assign]
    import judgerl.tools.tir as tir

    from concurrent.futures import ThreadPoolExecutor

    class TimedPool(ThreadPoolExecutor):
        def map(self, fn: Any, *its: Any, **k: Any) -> Any:  # the sandbox runs of one round
            t0 = time.perf_counter()
            out = list(super().map(fn, *its, **k))
            TIMER.add("sandbox", time.perf_counter() - t0)
            return iter(out)

    tir.ThreadPoolExecutor = TimedPool  # type: ignore[misc]


def run_kind(kind: str, config_path: Path, adapter: Path, steps: int, out: Path) -> list[dict[str, Any]]:
    """``steps`` GRPO steps of one kind from ``adapter``; per-step timings and generated lengths."""
    from judgerl.train.config import load_recipe
    from judgerl.train.setup import TrainSetup
    from judgerl.train.stages import train_recipe

    TIMER.kind = kind
    cfg = load_recipe(str(config_path), [
        f"output_dir={out}", f"grpo.max_steps={steps}", "grpo.save_steps=100000", "dapo.dynamic_sampling=false",
        "resume=false", "time_limit_min=0", "warmup.steps=0",
    ])
    train_recipe(TrainSetup.from_config(cfg), cfg.output_dir, init_adapter=adapter, sft=False, grpo=True)
    lengths = {}
    for line in (out / "metrics.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if "completions/mean_length" in rec:
            lengths[int(rec["step"])] = float(rec["completions/mean_length"])
    rows = []
    for (k, step), parts in sorted(TIMER.parts.items()):
        if k == kind and step in lengths:
            rows.append({"kind": kind, "step": step, "step_s": parts.get("step", 0.0),
                         "rollout": parts.get("rollout", 0.0), "sandbox": parts.get("sandbox", 0.0),
                         "tokens": lengths[step]})
    for key in [key for key in TIMER.parts if key[0] == kind]:
        del TIMER.parts[key]
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Mean per kind over the steps kept (step 1 of each run dropped)."""
    out: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        kept = [r for r in rows if r["kind"] == kind and r["step"] > 1]
        if not kept:
            continue
        mean = {f: sum(r[f] for r in kept) / len(kept) for f in ("step_s", "rollout", "sandbox", "tokens")}
        mean["step"] = mean.pop("step_s")
        mean["train"] = mean["step"] - mean["rollout"]
        mean["n_steps"] = len(kept)
        out[kind] = mean
    return out


def proof_runs(args: argparse.Namespace) -> dict[str, tuple[Path, Path]]:
    """``{kind: (config.json, adapter)}`` of the proof run's trained judges (exits when one is missing)."""
    runs = {"plain": args.proof / "train" / args.plain_run, "tir": args.proof / "train" / args.tir_run}
    for kind, d in runs.items():
        for need in (d / "config.json", d / "final" / "adapter"):
            if not need.exists():
                raise SystemExit(f"{need}: not found ({kind} run; pass --proof / --{kind}-run, or --shipped)")
    return {kind: (d / "config.json", d / "final" / "adapter") for kind, d in runs.items()}


#: --shipped: the recipe of each kind, and the proof run's shared settings (bench/bench_train_judges.py COMMON).
SHIPPED_RECIPES = {"plain": "j1-pav-distill", "tir": "tir-judge-distill"}
SHIPPED_SET = ["lora.r=16", "lora.alpha=32", "lora.top_layers=0", "grpo.per_device_train_batch_size=8",
               "grpo.num_generations=4", "dapo.max_sampling_rounds=1"]


def shipped_runs(data: Path, pairs: int, tmp: Path) -> dict[str, tuple[Path, Path]]:
    """``{kind: (config.json, adapter)}`` continuing the shipped TIR judge's package adapter in both kinds.

    Raises:
        SystemExit: ``data/gsm8k/train.jsonl`` is missing, or the package holds no shipped adapter.
    """
    from judgerl.backends.named import ADAPTER_FILES, package_adapter_dir
    from judgerl.train.config import load_recipe

    source = data / "gsm8k" / "train.jsonl"
    adapter = package_adapter_dir("smollm2-135m-judge")
    if not source.is_file():
        raise SystemExit(f"{source}: not found (pass --data, the folder holding gsm8k/train.jsonl)")
    if not all((adapter / f).is_file() for f in ADAPTER_FILES):
        raise SystemExit(f"{adapter}: the package holds no shipped adapter")
    out = {}
    for kind, recipe in SHIPPED_RECIPES.items():
        cfg = load_recipe(recipe, [*SHIPPED_SET, "data.builder=gsm8k-arith", f"data.source={source}",
                                   f"data.limit={pairs}"])
        path = tmp / f"{kind}-config.json"
        path.write_text(json.dumps(cfg.to_dict(), indent=2))
        out[kind] = (path, adapter)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--proof", type=Path, default=Path("runs/proof"), help="bench_train_judges output dir")
    ap.add_argument("--plain-run", default="pav", help="no-tool training run under <proof>/train")
    ap.add_argument("--tir-run", default="tir", help="TIR training run under <proof>/train")
    ap.add_argument("--steps", type=int, default=4, help="GRPO steps per run (the first is dropped)")
    ap.add_argument("--reps", type=int, default=2, help="interleaved repetitions of (plain, tir)")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows and summary here")
    ap.add_argument("--shipped", action="store_true", help="continue the shipped TIR judge in both kinds "
                    "(no runs/proof needed; see the module docstring)")
    ap.add_argument("--pairs", type=int, default=64, help="--shipped: arithmetic training pairs")
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("JUDGERL_SHARED_DATA", "../shared/data")),
                    help="--shipped: the shared data folder (gsm8k/train.jsonl)")
    args = ap.parse_args(argv)
    if args.steps < 2:
        ap.error("--steps must be >= 2 (the first step of each run is dropped)")
    with tempfile.TemporaryDirectory(prefix="bench-tir-step-") as tmp:
        runs = shipped_runs(args.data, args.pairs, Path(tmp)) if args.shipped else proof_runs(args)
        _install_timers()
        load0 = os.getloadavg()
        t0 = time.time()
        rows: list[dict[str, Any]] = []
        for rep in range(args.reps):
            for kind in KINDS:
                config, adapter = runs[kind]
                got = run_kind(kind, config, adapter, args.steps, Path(tmp) / f"{kind}-{rep}")
                rows += got
                print(f"rep {rep} {kind}: " + ", ".join(f"step {r['step']} {r['step_s']:.1f} s" for r in got),
                      file=sys.stderr, flush=True)
    summary = summarise(rows)
    wall = time.time() - t0
    print(f"load average before {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, after "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; wall {wall / 60:.1f} min; "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}")
    print("| kind | steps | s/step | rollout s | sandbox s | train s | tokens/rollout |")
    print("|---|---|---|---|---|---|---|")
    for kind, m in summary.items():
        print(f"| {kind} | {m['n_steps']:.0f} | {m['step']:.1f} | {m['rollout']:.1f} | {m['sandbox']:.2f} | "
              f"{m['train']:.1f} | {m['tokens']:.1f} |")
    if "plain" in summary and "tir" in summary:
        print(f"TIR / no-tool step: {summary['tir']['step'] / summary['plain']['step']:.2f}x "
              f"(target <= 1.3x)")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "summary": summary, "wall_s": wall,
                                         "loadavg_before": load0}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
