"""Proof that training makes the embedded 135M judge judge better (issue 10), in ONE resumable command.

Trains, on arithmetic-verification pairs from ``gsm8k/train.jsonl`` (``data.builder=gsm8k-arith``):

* ``pav``        -- ``j1-pav-distill``: programmatic-teacher SFT (-> "distilled SFT", ``sft/``), then J1
                   GRPO with verdict + consistency rewards (-> "SFT + J1 GRPO", ``final/``);
* ``pav-verdict`` -- the same GRPO from the same SFT model with the verdict reward only, for exactly as
                   many steps as ``pav`` made (consistency vs no consistency at equal steps);
* ``pos``        -- ``j1-pos`` with the programmatic PoS teacher SFT, then J1's pointwise reward from
                   pairwise supervision (score(chosen) > score(rejected));
* ``tir``        -- ``tir-judge-distill``: teacher SFT with ``print(a op b)`` run in the sandbox (tool
                   output masked), then TIR GRPO;
* ``zero``       -- ``tir-judge-zero``: no teacher, rounds of RL -> rejection sampling -> SFT from base.

and evaluates with :func:`judgerl.eval.run_eval` (one :class:`~judgerl.judge.Judge` per judge; greedy;
both orders) on held-out sets never seen in training: ``arith`` (``gsm8k/test.jsonl`` calculations whose
expression is not in the training file), ``arith-phrasing`` (the same pairs in other phrasings,
:mod:`judgerl.data.builders.arith_phrasing`), ``arith-attack`` (the same pairs with adversarial text in
the responses: injected checks, fake interpreter output, notes to the judge, verdict tags, quoted numbers),
``gsm8k`` (GSM8K test-question model solutions, correct vs
wrong, re-verified) and ``humaneval`` (canonical solution vs a failing mutant). Judges: base (plain),
base + forced answer, the trained ones above. Plus test-time scaling (N = 1, 2, 4, 8 samples at
temperature 0.7, majority vote / mean score) and the TIR GRPO step cost against the no-tool one.

Every stage writes ``<out>/stages/<name>.json`` (result, wall seconds, load average before/after) when
it finishes; a rerun skips finished stages and resumes unfinished trainings / evaluations from their
checkpoints and ``judgments.jsonl``. ``<out>/report.md`` + ``<out>/*.png`` hold the table and plots;
``--write-docs`` puts them in ``docs/results.md`` (its own section) and ``docs/figures/``; ``--ship tir``
copies that judge's LoRA adapter into ``src/judgerl/backends/judges/smollm2-135m-judge/``.

Usage (run ALONE on an idle machine)::

    python bench/bench_train_judges.py --out runs/proof --budget-min 300 --write-docs --ship tir
    python bench/bench_train_judges.py --out /tmp/smoke --smoke       # minutes: checks the pipeline only
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
DEFAULT_DATA = Path(os.environ.get("JUDGERL_SHARED_DATA", REPO.parent / "shared" / "data"))

from run_options import check_options  # noqa: E402  (bench/run_options.py)
from train_judges_report import write_report  # noqa: E402  (bench/train_judges_report.py)

#: Training runs: recipe, share of the training budget (SFT and GRPO together; ``pav-verdict`` has no time
#: limit: it makes exactly as many GRPO steps as ``pav``), extra overrides.
RUNS: dict[str, dict[str, Any]] = {
    "pav": {"recipe": "j1-pav-distill", "share": 2.0, "set": ["warmup.steps=30"]},
    "pav-verdict": {"recipe": "j1-pav-distill", "share": 0.0, "set": ["warmup.steps=30", "rewards.consistency=0"]},
    "pos": {"recipe": "j1-pos", "share": 1.0,
            "set": ["distill.teacher=programmatic", "lora.r=16", "lora.alpha=32", "warmup.steps=120",
                    "warmup.batch_size=8", "warmup.learning_rate=5.0e-4", "grpo.learning_rate=2.0e-5"]},
    "tir": {"recipe": "tir-judge-distill", "share": 1.0, "set": ["warmup.steps=60"]},
    # CPU-budget Zero: one bootstrap round (RL -> sampling on 48 rows -> SFT from base) + the last RL phase
    "zero": {"recipe": "tir-judge-zero", "share": 1.8, "set": ["zero.rounds=1", "zero.rl_steps=5", "zero.examples=48"]},
}
#: Shared settings of every run (CPU budget): LoRA on all 30 blocks (copying each response's number into
#: the check needs the middle layers: top-10-block LoRA learned the form, not the copy), the same GRPO batch.
COMMON = ["lora.top_layers=0", "grpo.per_device_train_batch_size=8", "grpo.num_generations=4",
          "grpo.save_steps=5", "dapo.max_sampling_rounds=1"]
#: Evaluated judges: (model source, protocol, tools, force_answer).
JUDGES: dict[str, tuple[str, str, bool, bool]] = {
    "base": ("base", "pav", False, False),
    "base-forced": ("base", "pav", False, True),
    "pav-sft": ("pav:sft", "pav", False, False),
    "pav-grpo": ("pav:final", "pav", False, False),
    "pav-verdict": ("pav-verdict:final", "pav", False, False),
    "pos-sft": ("pos:sft", "pos", False, False),
    "pos": ("pos:final", "pos", False, False),
    "tir-sft": ("tir:sft", "pav", True, False),
    "tir": ("tir:final", "pav", True, False),
    "zero": ("zero:final", "pav", True, False),
}
SETS = ("arith", "arith-phrasing", "arith-attack", "gsm8k", "humaneval")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Stages:
    """Run named stages once: ``<out>/stages/<name>.json`` holds each finished stage's record.

    Args:
        out: The run directory.
        options: The command-line options (JSON-able), kept in ``<out>/options.json``: a later run with other
            values of those the results depend on is refused (its finished stages would mix two
            configurations; :func:`run_options.check_options`). None: not checked.
        selectors: The options that only choose what runs now (not compared, not kept).
        clock, loadavg: Time and load sources (tests pass fakes).

    Raises:
        SystemExit: ``options`` differ from the ones ``out`` was begun with (names the changed keys).
    """

    def __init__(self, out: Path, options: dict[str, Any] | None = None, *, selectors: tuple[str, ...] = (),
                 clock: Callable[[], float] = time.time,
                 loadavg: Callable[[], tuple[float, ...]] = os.getloadavg) -> None:
        self.dir = out / "stages"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.clock, self.loadavg = clock, loadavg
        if options is not None:
            check_options(out / "options.json", options, selectors=selectors)

    def get(self, name: str) -> dict[str, Any] | None:
        f = self._file(name)
        return json.loads(f.read_text()) if f.is_file() else None

    def _file(self, name: str) -> Path:
        """The record file of stage ``name`` (``:`` and ``/`` made ``_``: ``eval:base:arith/word``)."""
        return self.dir / f"{name.replace(':', '_').replace('/', '_')}.json"

    def run(self, name: str, fn: Callable[[], Any]) -> Any:
        done = self.get(name)
        if done is not None:
            log(f"stage {name}: finished before, skipped")
            return done["result"]
        load0, t0 = self.loadavg(), self.clock()
        log(f"stage {name} (load average {load0[0]:.2f})")
        result = fn()
        rec = {"stage": name, "result": result, "wall_s": round(self.clock() - t0, 1), "finished": round(self.clock(), 1),
               "loadavg_before": [round(x, 2) for x in load0], "loadavg_after": [round(x, 2) for x in self.loadavg()]}
        self._file(name).write_text(json.dumps(rec, indent=2, default=str))
        log(f"stage {name} done in {rec['wall_s']:.0f} s")
        return result

    def records(self) -> list[dict[str, Any]]:
        """Every finished stage's record, in the order they finished."""
        recs = [json.loads(f.read_text()) for f in self.dir.glob("*.json")]
        return sorted(recs, key=lambda r: r.get("finished", 0))


# -- data -------------------------------------------------------------------------------------------


def build_data(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Training pairs and the held-out sets, written as canonical JSONL under ``<out>/data``."""
    from judgerl.data import write_pairs_jsonl
    from judgerl.data.builders import (build_arithmetic_pairs, build_humaneval_pairs_report, build_math_pairs,
                                       held_out_arithmetic_pairs)
    from judgerl.data.builders.arith_phrasing import attack_arithmetic, rephrase_arithmetic

    data, d = Path(args.data), out / "data"
    train = build_arithmetic_pairs(data / "gsm8k" / "train.jsonl", seed=args.seed, ops=args.ops)
    test, _ = held_out_arithmetic_pairs(data / "gsm8k" / "test.jsonl", data / "gsm8k" / "train.jsonl",
                                        seed=args.seed, ops=args.ops)
    sets = {
        "train": train[: args.n_train],
        "arith": test[: args.n_eval],
        "arith-tts": test[: args.n_tts],
        "arith-phrasing": rephrase_arithmetic(test[: args.n_eval], seed=args.seed),
        "arith-attack": attack_arithmetic(test[: args.n_eval], seed=args.seed),
        "gsm8k": build_math_pairs(data / "gsm8k" / "example_model_solutions.jsonl", seed=args.seed,
                                  max_pairs_per_question=1, limit=args.n_gsm8k),
    }
    he = build_humaneval_pairs_report(seed=args.seed, limit=args.n_humaneval)
    sets["humaneval"] = he.pairs
    counts = {}
    for name, pairs in sets.items():
        write_pairs_jsonl(pairs, d / f"{name}.jsonl")
        counts[name] = len(pairs)
    return {"counts": counts, "humaneval": he.summary(), "dir": str(d)}


def load_set(out: Path, name: str) -> list[Any]:
    from judgerl.data import load_pairs

    return load_pairs(out / "data" / f"{name}.jsonl").pairs


# -- training ---------------------------------------------------------------------------------------


def train_run(name: str, args: argparse.Namespace, out: Path, minutes: float, stages: Stages) -> dict[str, Any]:
    """One training run (``RUNS[name]``) under ``<out>/train/<name>``, stopped after ``minutes``."""
    from judgerl.train.run import load_run_recipe, run_training
    from judgerl.train.setup import TrainSetup
    from judgerl.train.stages import train_recipe

    spec = RUNS[name]
    sets = [f"output_dir={out / 'train' / name}", f"data.path={out / 'data' / 'train.jsonl'}", "data.limit=null",
            f"seed={args.seed}", "resume=true", f"time_limit_min={minutes:.2f}", *COMMON, *spec["set"],
            *args.smoke_sets, *args.overrides]
    if name == "pav-verdict":  # same SFT model as pav, as many GRPO steps as pav made
        pav = stages.get("train:pav")["result"]
        sets += [f"grpo.max_steps={max(1, int(pav['global_step']))}", "time_limit_min=null"]
        config = load_run_recipe(spec["recipe"], sets)
        sft = Path(pav["sft_model"])
        return train_recipe(TrainSetup.from_config(config), config.output_dir, resume=config.resume,
                            init_adapter=sft / "adapter", sft=False)
    return run_training(load_run_recipe(spec["recipe"], sets))


def model_dir(source: str, stages: Stages) -> str:
    """``base`` or ``<run>:<sft|final>`` -> a model directory."""
    from judgerl.backends.models import resolve_hf_path

    if source == "base":
        return resolve_hf_path("smollm2-135m")
    run, which = source.split(":")
    rec = stages.get(f"train:{run}")
    if rec is None:
        raise RuntimeError(f"judge {source}: training stage {run} has not finished")
    res = rec["result"]
    path = res.get("sft_model") if which == "sft" else (res.get("final_model") or res.get("latest_model"))
    if not path:
        raise RuntimeError(f"judge {source}: the run has no {which} model")
    return path


# -- evaluation -------------------------------------------------------------------------------------


def evaluate(judge_name: str, set_name: str, args: argparse.Namespace, out: Path, stages: Stages,
             samples: int = 1, temperature: float = 0.0, tag: str = "", limit: int | None = None) -> dict[str, Any]:
    """run_eval of one judge on one held-out set (resumable); returns the summary's figures."""
    from judgerl.backends import SamplingParams
    from judgerl.backends.hf import HFBackend
    from judgerl.eval import run_eval
    from judgerl.judge import Judge
    from judgerl.protocols import get_protocol
    from judgerl.tools import get_sandbox

    source, proto, tools, force = JUDGES[judge_name]
    sandbox = get_sandbox(timeout_s=5) if tools else None
    try:
        tokens = args.tir_tokens if tools else args.eval_tokens
        judge = Judge(get_protocol(proto), HFBackend(model_dir(source, stages), batch_size=16),
                      SamplingParams(max_new_tokens=tokens, temperature=temperature), sandbox=sandbox,
                      force_answer=force, seed=args.seed)
        summary = run_eval(judge, load_set(out, set_name)[:limit], out / "eval" / f"{judge_name}{tag}" / set_name,
                           samples=samples, resume=True, progress=False)
    finally:
        if sandbox is not None:
            sandbox.close()
    return figures(summary)


def figures(summary: dict[str, Any]) -> dict[str, Any]:
    """The table's columns from an eval summary."""
    inv = summary.get("invalid_rate")
    return {
        "n_pairs": summary.get("n_pairs"),
        "valid_format_rate": None if inv is None else 1.0 - inv,
        "accuracy": summary.get("accuracy"),
        "accuracy_valid_only": summary.get("accuracy_valid_only"),
        "position_consistent_accuracy": summary.get("position_consistent_accuracy"),
        "flip_rate": summary.get("flip_rate"),
        "tool_use_rate": summary.get("tool_use_rate"),
        "forced_answer_rate": summary.get("forced_answer_rate"),
        "judgments_per_s": (summary.get("timing") or {}).get("judgments_per_s"),
    }


def scaling(judge_name: str, args: argparse.Namespace, out: Path, stages: Stages) -> dict[str, Any]:
    """Test-time scaling: one run_eval with 8 samples at temperature 0.7, metrics for N = 1, 2, 4, 8
    from the first N samples of every (pair, order) (majority vote / mean score)."""
    from judgerl.eval.metrics import compute_metrics
    from judgerl.eval.store import read_judgments

    evaluate(judge_name, "arith-tts", args, out, stages, samples=8, temperature=0.7, tag="-tts", limit=args.n_tts)
    recs = read_judgments(out / "eval" / f"{judge_name}-tts" / "arith-tts" / "judgments.jsonl")
    return {str(n): figures(compute_metrics([r for r in recs if r["sample"] < n]))
            for n in (1, 2, 4, 8)}


def step_costs(stages: Stages, out: Path) -> dict[str, Any]:
    """Mean GRPO ``step_time`` (s) and completion length of the no-tool and TIR runs (same batch), overall
    and per number of DAPO resampling rounds (``dapo/sampling_rounds``: a step that resampled generated
    twice; the TIR judge, right on every group, resampled on every step of the proof run while most
    no-tool steps did not, so only steps with equal rounds compare the same work; a direct interleaved
    measurement is ``bench/bench_tir_step.py``)."""
    from judgerl.train.callbacks import read_metrics

    res: dict[str, Any] = {}
    for name in ("pav", "tir"):
        recs = [r for r in read_metrics(out / "train" / name / "metrics.jsonl")
                if r.get("phase") == "grpo" and "step_time" in r][1:]  # step 1 includes start-up
        if recs:
            by: dict[int, list[float]] = {}
            for r in recs:
                by.setdefault(int(r.get("dapo/sampling_rounds", 0) or 0), []).append(float(r["step_time"]))
            res[name] = {"steps": len(recs), "step_time_s": sum(r["step_time"] for r in recs) / len(recs),
                         "mean_length": sum(r.get("completions/mean_length", 0) for r in recs) / len(recs),
                         "by_rounds": {k: {"steps": len(v), "step_time_s": sum(v) / len(v)} for k, v in sorted(by.items())}}
    if "pav" in res and "tir" in res:
        res["ratio"] = res["tir"]["step_time_s"] / res["pav"]["step_time_s"]
        common = set(res["pav"]["by_rounds"]) & set(res["tir"]["by_rounds"])
        res["ratio_equal_rounds"] = {k: res["tir"]["by_rounds"][k]["step_time_s"] / res["pav"]["by_rounds"][k]["step_time_s"]
                                     for k in sorted(common)}
    return res


# -- main -------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="runs/proof", help="run directory (resumable)")
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="the shared data folder")
    ap.add_argument("--budget-min", type=float, default=300.0,
                    help="training budget in minutes, split over the runs by their share (evaluation is extra)")
    ap.add_argument("--n-train", type=int, default=400, help="training pairs (arithmetic, gsm8k train)")
    ap.add_argument("--n-eval", type=int, default=100, help="held-out arithmetic pairs (and their rephrasings)")
    ap.add_argument("--n-tts", type=int, default=50, help="held-out arithmetic pairs for test-time scaling")
    ap.add_argument("--n-gsm8k", type=int, default=60, help="held-out GSM8K solution pairs")
    ap.add_argument("--n-humaneval", type=int, default=40, help="HumanEval problems for code pairs")
    ap.add_argument("--ops", default="+-*", help="operators of the arithmetic pairs")
    ap.add_argument("--eval-tokens", type=int, default=96, help="max new tokens per no-tool judgment")
    ap.add_argument("--tir-tokens", type=int, default=64, help="max new tokens per tool round")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", default=",".join(RUNS), help="training runs to do (comma-separated)")
    ap.add_argument("--judges", default=",".join(JUDGES), help="judges to evaluate")
    ap.add_argument("--sets", default=",".join(SETS), help="held-out sets")
    ap.add_argument("--set", dest="overrides", action="append", default=[], help="extra recipe override (all runs)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes and 1-2 steps: checks the pipeline in minutes")
    ap.add_argument("--write-docs", action="store_true", help="write the section into docs/results.md + docs/figures")
    ap.add_argument("--ship", choices=["tir", "pav", "pos", "zero"], default=None,
                    help="copy this run's LoRA adapter into judgerl/backends/judges/smollm2-135m-judge")
    args = ap.parse_args(argv)
    args.command = "python bench/bench_train_judges.py " + " ".join(sys.argv[1:] if argv is None else argv)
    args.smoke_sets = []
    if args.smoke:
        args.n_train, args.n_eval, args.n_tts, args.n_gsm8k, args.n_humaneval = 8, 4, 2, 2, 2
        args.eval_tokens, args.tir_tokens = 24, 16
        args.smoke_sets = ["warmup.steps=2", "warmup.batch_size=4", "grpo.max_steps=1", "grpo.max_completion_length=48",
                           "tools.max_new_tokens=16", "tools.max_rounds=1", "dapo.dynamic_sampling=false"]
        RUNS["zero"]["set"] = [*RUNS["zero"]["set"], "zero.rounds=1", "zero.samples=2", "zero.rl_steps=1",
                               "zero.examples=8"]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stages = Stages(out)
    t0 = time.time()
    stages.run("data", lambda: build_data(args, out))
    runs = [r for r in args.runs.split(",") if r]
    shares = sum(RUNS[r]["share"] for r in runs) or 1.0
    for name in runs:
        minutes = args.budget_min * RUNS[name]["share"] / shares
        stages.run(f"train:{name}", lambda n=name, m=minutes: train_run(n, args, out, m, stages))
    judges = [j for j in args.judges.split(",") if j]
    for set_name in [s for s in args.sets.split(",") if s]:
        for j in judges:
            if j == "pav-verdict" and set_name != "arith":
                continue  # only its flip rate on arith is compared
            stages.run(f"eval:{j}:{set_name}", lambda j=j, s=set_name: evaluate(j, s, args, out, stages))
    for j in ("pav-grpo", "pos", "tir"):
        if j in judges:
            stages.run(f"tts:{j}", lambda j=j: scaling(j, args, out, stages))
    stages.run("cost", lambda: step_costs(stages, out))
    if args.ship:
        ship(args.ship, stages)
    report = write_report(stages.records(), out, args, docs=REPO / "docs" if args.write_docs else None)
    log(f"report: {report} (total {time.time() - t0:.0f} s)")
    return 0


def ship(run: str, stages: Stages) -> Path:
    """Copy a trained run's LoRA adapter into the package as ``smollm2-135m-judge``.

    Raises:
        RuntimeError: the run has no adapter, or it is larger than 30 MB.
    """
    from judgerl.backends.named import ADAPTER_FILES, package_adapter_dir

    adapter = Path(model_dir(f"{run}:final", stages)) / "adapter"
    size = sum((adapter / f).stat().st_size for f in ADAPTER_FILES if (adapter / f).is_file())
    if not all((adapter / f).is_file() for f in ADAPTER_FILES):
        raise RuntimeError(f"{adapter}: no LoRA adapter (train the run with lora.r > 0)")
    if size > 30 * 2**20:
        raise RuntimeError(f"{adapter}: {size / 2**20:.1f} MB is over the 30 MB limit; lower lora.r or lora.top_layers")
    dest = package_adapter_dir("smollm2-135m-judge")
    dest.mkdir(parents=True, exist_ok=True)
    for f in ADAPTER_FILES:
        shutil.copy2(adapter / f, dest / f)
    log(f"shipped {adapter} ({size / 2**20:.1f} MB) as smollm2-135m-judge -> {dest}")
    return dest


if __name__ == "__main__":
    sys.exit(main())
