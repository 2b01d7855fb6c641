"""Issue 23's proof: ONE tool-using judge trained on a mixture of domains, against its base, a no-tool
judge and TIR-Judge-Zero, per domain on held-out pairs -- in one resumable command.

Stages (each writes ``<out>/stages/<name>.json`` with its result, wall seconds and load average before /
after when it finishes; a rerun skips finished stages, and trainings / evaluations resume from their own
checkpoints and ``judgments.jsonl``):

1. ``data`` -- the mixture, each builder once per split (``train`` and ``held-out``: disjoint problems,
   prompts and phrasings, :mod:`judgerl.data.builders.splits`): ``arith-mix`` (arithmetic in four forms +
   GSM8K word problems), ``chat-mix`` (LLMBar / PandaLM / hh-rlhf: chat and safety), ``code-pairs``
   (HumanEval, split by problem), ``if-pairs`` (IFEval, split by prompt). ``<out>/data/train.jsonl``
   holds ``--n-train`` pairs per domain (``meta["domain"]``), interleaved; ``<out>/data/held-out/<domain>.jsonl``
   ``--n-eval`` pairs per domain. The two sets are checked disjoint (:func:`~judgerl.data.builders.splits.overlap`).
2. ``sft:distill`` then ``rl:distill`` -- ``tir-judge-mix``: programmatic teachers per domain, rejection
   sampled, SFT; then TIR GRPO (response namespace on; the no-tool rule on chat / safety rows).
3. ``zero`` -- ``tir-judge-zero-mix``: TIR-Judge-Zero rounds on the same rows (a run the stage time
   stopped is not recorded: rerunning the command continues it at its first unfinished phase).
4. ``sft:notool`` then ``rl:notool`` -- ``j1-pav-distill`` on the same pairs: the same judge without tools.
5. ``eval:<judge>:<domain>`` -- :func:`judgerl.eval.run_eval` (greedy, both orders) of each judge of
   :data:`JUDGES` on each domain's held-out pairs: valid format, accuracy, accuracy among valid, PCA,
   flip rate, tool use.

Then ``<out>/results.md`` (tables, the commands, the stage times; paste into ``docs/results.md``) and
``<out>/generalise_*.png`` (copy to ``docs/figures/``), written by ``bench/generalise_report.py``.

The options the results depend on are saved in ``<out>/options.json``; rerunning with other values is
refused (``--runs`` / ``--judges`` / ``--domains`` only choose stages and may change).

Usage (run ALONE on an idle machine; ~2 h per training stage, ~9-11 h in all on 2 cores)::

    python bench/bench_generalise.py --out runs/generalise
    python bench/bench_generalise.py --out /tmp/gen-smoke --smoke     # tiny sizes: checks the pipeline only
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import sys
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
DEFAULT_DATA = Path(os.environ.get("JUDGERL_SHARED_DATA", REPO.parent / "shared" / "data"))

from bench_train_judges import Stages, figures, log  # noqa: E402  (bench/bench_train_judges.py)
from generalise_report import write_report  # noqa: E402  (bench/generalise_report.py)

SPLITS = ("train", "held-out")
#: Training runs in order: recipe, phases (``sft`` + ``rl`` share one run directory; ``zero`` is one
#: TIR-Judge-Zero run), extra overrides, extra overrides under ``--smoke``.
#: Sizes: the mixture's SFT steps take ~95-105 s on 2 cores (8 examples of up to 1,024 tokens: its IF, code and
#: chat prompts are 3x the arithmetic ones the recipes were sized on), so each training stage is cut to fit
#: one ~2 h session: 64 SFT steps (0.6 epoch of the ~830 kept teacher trajectories), 60 GRPO steps.
FIT = ["warmup.steps=64", "grpo.max_steps=60"]
RUNS: dict[str, dict[str, Any]] = {
    "distill": {"recipe": "tir-judge-mix", "phases": ("sft", "rl"), "set": FIT, "smoke": []},
    "zero": {"recipe": "tir-judge-zero-mix", "phases": ("zero",), "set": [],
             "smoke": ["zero.rounds=1", "zero.samples=2", "zero.rl_steps=1", "zero.examples=8"]},
    # the same judge without tools: J1 PaV, programmatic teacher SFT, verdict + consistency GRPO, same sizes
    "notool": {"recipe": "j1-pav-distill", "phases": ("sft", "rl"),
               "set": ["lora.top_layers=0", *FIT], "smoke": []},
}
#: Overrides of every run under ``--smoke``.
SMOKE_SETS = ["warmup.steps=2", "warmup.batch_size=4", "grpo.max_steps=1", "grpo.max_completion_length=48",
              "tools.max_new_tokens=16", "tools.max_rounds=1", "dapo.dynamic_sampling=false"]
#: Evaluated judges: model source (``base`` or ``<run>:<phase>``), tools (TIR prompt, sandbox and the
#: response namespace, as the TIR runs train), force_answer.
JUDGES: dict[str, tuple[str, bool, bool]] = {
    "base": ("base", True, False),
    "base-forced": ("base", True, True),
    "notool": ("notool:rl", False, False),
    "distill-sft": ("distill:sft", True, False),
    "distill": ("distill:rl", True, False),
    "zero": ("zero:zero", True, False),
}
#: Options that only choose which stages run, or where a training stage pauses (``stage_min``: a stage the
#: time limit stopped resumes from its checkpoint with the same result), left out of ``options.json``
#: (:func:`run_options.check_options`).
SELECTORS = ("out", "runs", "judges", "domains", "command", "stage_min")


# -- data -------------------------------------------------------------------------------------------


def _arith(split: str, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    from judgerl.data.builders.mixes import write_arith_mix

    gsm = Path(args.data) / "gsm8k"
    held = split == "held-out"
    return write_arith_mix(out, split, per_form=args.per_form_held if held else args.per_form_train, seed=args.seed,
                           gsm8k=gsm / ("test.jsonl" if held else "train.jsonl"),
                           gsm8k_exclude=gsm / "train.jsonl" if held else None,
                           gsm8k_limit=args.gsm8k_held if held else args.gsm8k_train)


def _chat(split: str, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    from judgerl.data.builders.mixes import write_chat_mix

    return write_chat_mix(out, [args.data], split, seed=args.seed, limit=args.chat_limit)


def _code(split: str, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    from judgerl.data.builders.code_pairs import CodePairSettings, write_code_pairs
    from judgerl.data.builders.humaneval import load_humaneval_problems
    from judgerl.verify.code import default_executor

    ex = default_executor(timeout_s=10.0)
    try:
        return write_code_pairs(load_humaneval_problems()[: args.code_problems], ex, out,
                                CodePairSettings(split=split, seed=args.seed))
    finally:
        ex.close()


def _if(split: str, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    from judgerl.data.builders.if_pairs import IFPairSettings, write_if_pairs
    from judgerl.gold.ifeval import IFEvalGoldJudge

    checker = IFEvalGoldJudge.from_file(Path(args.data) / "ifeval" / "input_data.jsonl")
    return write_if_pairs(checker.records[: args.if_prompts], checker, out, IFPairSettings(split=split, seed=args.seed))


#: The mixture's builders (those of ``judgerl data build``): ``fn(split, out_jsonl, args) -> summary``.
BUILDERS: dict[str, Callable[[str, Path, argparse.Namespace], dict[str, Any]]] = {
    "arith-mix": _arith, "chat-mix": _chat, "code-pairs": _code, "if-pairs": _if}


def domain_file(out: Path, domain: str) -> Path:
    """``<out>/data/held-out/<domain>.jsonl`` (``arith/word`` -> ``arith-word``)."""
    return out / "data" / "held-out" / f"{domain.replace('/', '-')}.jsonl"


def _by_domain(paths: list[Path]) -> dict[str, list[Any]]:
    from judgerl.data import load_pairs

    out: dict[str, list[Any]] = {}
    for path in paths:
        if path.is_file():
            for p in load_pairs(path).pairs:
                if not p.tie:
                    out.setdefault(str(p.meta.get("domain") or path.stem), []).append(p)
    return out


def _take(pairs: list[Any], n: int, seed: int, tag: str) -> list[Any]:
    """``n`` of ``pairs`` in a seeded order (the builders write them grouped by problem)."""
    pairs = list(pairs)
    random.Random(f"{seed}:{tag}").shuffle(pairs)
    return pairs[:n]


def build_mixture(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Every builder of :data:`BUILDERS` once per split into ``<out>/data/build/<split>/<kind>.jsonl``
    (their sinks resume), then the training mixture and the held-out files per domain.

    Returns:
        ``builders`` (each build's summary), ``train`` / ``held_out`` (pairs per domain), ``domains``.

    Raises:
        RuntimeError: the training and held-out sets share a prompt or a family
            (:func:`judgerl.data.builders.splits.overlap`), or a domain has no held-out pair.
    """
    from judgerl.data import write_pairs_jsonl
    from judgerl.data.builders.splits import overlap

    build = out / "data" / "build"
    summaries: dict[str, Any] = {}
    files: dict[str, list[Path]] = {s: [] for s in SPLITS}
    for kind, fn in BUILDERS.items():
        for split in SPLITS:
            path = build / split / f"{kind}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            summaries[f"{kind}:{split}"] = fn(split, path, args)
            files[split].append(path)
    train, held = _by_domain(files["train"]), _by_domain(files["held-out"])
    shared = {k: v for k, v in overlap([p for ps in train.values() for p in ps],
                                       [p for ps in held.values() for p in ps]).items() if v}
    if shared:
        raise RuntimeError(f"training and held-out sets overlap: {json.dumps({k: v[:5] for k, v in shared.items()})}")
    missing = sorted(set(train) - set(held))
    if missing:
        raise RuntimeError(f"no held-out pairs for domain(s) {', '.join(missing)}; raise the builders' sizes")
    picked = {d: _take(ps, args.n_train, args.seed, f"train:{d}") for d, ps in sorted(train.items())}
    mix = [ps[i] for i in range(max(map(len, picked.values()), default=0)) for ps in picked.values() if i < len(ps)]
    write_pairs_jsonl(mix, out / "data" / "train.jsonl")
    held_counts = {}
    for d, ps in sorted(held.items()):
        held_counts[d] = write_pairs_jsonl(_take(ps, args.n_eval, args.seed, f"held-out:{d}"), domain_file(out, d))
    return {"builders": summaries, "train": {d: len(ps) for d, ps in picked.items()}, "held_out": held_counts,
            "domains": sorted(held_counts)}


# -- training ---------------------------------------------------------------------------------------


def run_config(run: str, args: argparse.Namespace, out: Path) -> Any:
    """The validated recipe of ``RUNS[run]`` with this harness's data, seed, stage time and sizes.

    Raises:
        RecipeError: an override the recipe refuses.
    """
    from judgerl.train.run import load_run_recipe

    spec = RUNS[run]
    sets = [f"output_dir={out / 'train' / run}", f"data.path={out / 'data' / 'train.jsonl'}", "data.limit=null",
            f"seed={args.seed}", "resume=true", f"time_limit_min={args.stage_min:g}", *spec["set"],
            *((SMOKE_SETS + spec["smoke"]) if args.smoke else []), *args.overrides]
    return load_run_recipe(spec["recipe"], sets)


def train_phase(run: str, phase: str, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """One phase of a run: ``sft`` (the teacher SFT alone), ``rl`` (GRPO from that SFT model, resumed from
    the run's checkpoints) or ``zero`` (:func:`judgerl.train.zero.run_zero`).

    Raises:
        SystemExit: a phase the stage time stopped (SFT before its last step, GRPO before ``max_steps``, a Zero
            run): not recorded; rerunning the command continues it from its checkpoint.
    """
    from judgerl.train.run import run_training
    from judgerl.train.setup import TrainSetup
    from judgerl.train.stages import train_recipe

    config = run_config(run, args, out)
    if phase == "sft":
        deadline = time.time() + 60 * float(args.stage_min)
        result = train_recipe(TrainSetup.from_config(config), config.output_dir, resume=True, sft=True, grpo=False,
                              deadline=deadline)
        if result.get("sft_done") is None:
            raise SystemExit(f"sft:{run}: the stage time ({args.stage_min:g} min) stopped it before its last step; "
                             "rerun the same command to continue from its checkpoint")
        return result
    result = run_training(config)  # rl: resume=true loads the finished sft/; zero: resumes its phases
    if phase == "zero" and not result.get("final_model"):
        raise SystemExit(f"zero: the stage time ({args.stage_min:g} min) stopped it after {len(result['rounds'])} "
                         "round(s); rerun the same command to continue it")
    if phase == "rl" and result.get("stopped_early"):
        raise SystemExit(f"rl:{run}: the stage time ({args.stage_min:g} min) stopped it at GRPO step "
                         f"{result.get('global_step')}; rerun the same command to continue from its checkpoint")
    if result.get("final_model"):  # finished: resume-only checkpoints go (~1.6 GB each on full fine-tuning)
        from judgerl.train.grpo import prune_checkpoints

        prune_checkpoints(config.output_dir)
    return result


def model_dir(source: str, stages: Stages) -> str:
    """``base`` or ``<run>:<phase>`` -> a model directory.

    Raises:
        RuntimeError: that phase has not finished, or left no model.
    """
    from judgerl.backends.models import resolve_hf_path

    if source == "base":
        return resolve_hf_path("smollm2-135m")
    run, phase = source.split(":")
    rec = stages.get(phase if phase == "zero" else f"{phase}:{run}")
    if rec is None:
        raise RuntimeError(f"judge {source}: stage {phase}:{run} has not finished")
    res = rec["result"]
    path = res.get("sft_model") if phase == "sft" else (res.get("final_model") or res.get("latest_model"))
    if not path:
        raise RuntimeError(f"judge {source}: the run has no {phase} model")
    return path


# -- evaluation -------------------------------------------------------------------------------------


def evaluate(judge_name: str, domain: str, args: argparse.Namespace, out: Path, stages: Stages) -> dict[str, Any]:
    """run_eval of one judge on one domain's held-out pairs (resumable); the table's figures."""
    from judgerl.backends import SamplingParams
    from judgerl.backends.hf import HFBackend
    from judgerl.data import load_pairs
    from judgerl.eval import run_eval
    from judgerl.judge import Judge
    from judgerl.protocols import get_protocol
    from judgerl.tools import get_sandbox

    source, tools, force = JUDGES[judge_name]
    sandbox = get_sandbox(timeout_s=5) if tools else None
    try:
        judge = Judge(get_protocol("pav", namespace=tools), HFBackend(model_dir(source, stages), batch_size=16),
                      SamplingParams(max_new_tokens=args.tir_tokens if tools else args.eval_tokens, temperature=0.0),
                      sandbox=sandbox, max_tool_rounds=1 if args.smoke else 3, force_answer=force, seed=args.seed)
        path = domain_file(out, domain)
        summary = run_eval(judge, load_pairs(path).pairs, out / "eval" / judge_name / path.stem, resume=True,
                           progress=False)
    finally:
        if sandbox is not None:
            sandbox.close()
    return figures(summary)


# -- main -------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="runs/generalise", help="run directory (resumable)")
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="the shared data folder")
    ap.add_argument("--n-train", type=int, default=64, help="training pairs per domain (8 domains: 512 pairs)")
    ap.add_argument("--n-eval", type=int, default=50, help="held-out pairs per domain (judged in both orders)")
    ap.add_argument("--per-form-train", type=int, default=200, help="arith-mix: generated pairs per form, train")
    ap.add_argument("--per-form-held", type=int, default=80, help="arith-mix: generated pairs per form, held-out")
    ap.add_argument("--gsm8k-train", type=int, default=200, help="arith-mix: GSM8K word problems, train")
    ap.add_argument("--gsm8k-held", type=int, default=80, help="arith-mix: GSM8K word problems, held-out")
    ap.add_argument("--chat-limit", type=int, default=150, help="chat-mix: pairs per file and split")
    ap.add_argument("--code-problems", type=int, default=None, help="code-pairs: first N HumanEval problems (all)")
    ap.add_argument("--if-prompts", type=int, default=None, help="if-pairs: first N IFEval prompts (all)")
    ap.add_argument("--eval-tokens", type=int, default=96, help="max new tokens per no-tool judgment")
    ap.add_argument("--tir-tokens", type=int, default=64, help="max new tokens per tool round")
    ap.add_argument("--stage-min", type=float, default=120.0, help="time limit of each training stage (minutes)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", default=",".join(RUNS), help="training runs to do (comma-separated)")
    ap.add_argument("--judges", default=",".join(JUDGES), help="judges to evaluate")
    ap.add_argument("--domains", default="all", help="held-out domains to evaluate (comma-separated, or all)")
    ap.add_argument("--set", dest="overrides", action="append", default=[], help="extra recipe override (all runs)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes and 1-2 steps: checks the pipeline only")
    args = ap.parse_args(argv)
    args.command = "python bench/bench_generalise.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    if args.smoke:
        args.n_train, args.n_eval, args.per_form_train, args.per_form_held = 2, 2, 8, 4
        args.gsm8k_train, args.gsm8k_held, args.chat_limit, args.code_problems, args.if_prompts = 4, 4, 6, 20, 20
        args.eval_tokens, args.tir_tokens, args.stage_min = 24, 16, 20.0
    for name in [r for r in args.runs.split(",") if r]:
        if name not in RUNS:
            ap.error(f"--runs: unknown run {name!r}; runs: {', '.join(RUNS)}")
    for name in [j for j in args.judges.split(",") if j]:
        if name not in JUDGES:
            ap.error(f"--judges: unknown judge {name!r}; judges: {', '.join(JUDGES)}")
    return args


def pick_domains(arg: str, known: list[str]) -> list[str]:
    """The held-out domains ``--domains`` names, as the data stage spells them (``arith/expression``): ``all``, or a
    comma-separated list written with ``/``, ``-`` or ``_`` (``arith-expression`` is its held-out file's name).

    Raises:
        SystemExit: a name that is no domain of the data stage (the message lists them).
    """
    if arg == "all":
        return list(known)
    def norm(name: str) -> str:
        return re.sub(r"[^a-z0-9]", "", name.lower())

    key = {norm(d): d for d in known}
    out = []
    for name in (d.strip() for d in arg.split(",") if d.strip()):
        if norm(name) not in key:
            raise SystemExit(f"--domains: no held-out domain {name!r}; the data stage has: {', '.join(known)}")
        out.append(key[norm(name)])
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stages = Stages(out, vars(args), selectors=SELECTORS)  # options.json: every argument but SELECTORS
    t0 = time.time()
    data = stages.run("data", lambda: build_mixture(args, out))
    for run in [r for r in args.runs.split(",") if r]:
        for phase in RUNS[run]["phases"]:
            name = "zero" if phase == "zero" else f"{phase}:{run}"
            stages.run(name, lambda r=run, p=phase: train_phase(r, p, args, out))
    domains = pick_domains(args.domains, data["domains"])
    for judge in [j for j in args.judges.split(",") if j]:
        for domain in domains:
            stages.run(f"eval:{judge}:{domain}", lambda j=judge, d=domain: evaluate(j, d, args, out, stages))
    report = write_report(stages.records(), out, args)
    log(f"report: {report} (this invocation {time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
