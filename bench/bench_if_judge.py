"""The pointwise tool-using instruction-following judge trained on more prompts (issue 23 item 4; the tool arm's
judge of the judge-as-reward study, issue 24) -- one resumable command.

The study's tool judge (``bench/bench_judge_as_reward.py --train-tool-judge``) is trained on the gold labels of
its 96 training prompts only (192 pointwise rows), and agrees with the IFEval gold on the study's held-out records
at Krippendorff's alpha -0.03 after SFT, 0.24 after GRPO. This harness trains the same recipe (``tir-judge-if``:
the IF teacher's programmatic trajectories, rejection-sampled against the gold score, SFT; optional TIR GRPO) on
those rows **plus** the IFEval pair builder's training split (``judgerl data build if-pairs``: a response that
follows every instruction and edits that break one, labelled by the IFEval checker), and measures it on the
**same held-out records** as the study's judges, so the agreement table compares like with like.

Held out: every if-pairs training prompt whose normalised text is one of the study's held-out prompts is dropped
(the study's prompt split and the builder's are different splits of IFEval); the count is in the data stage.

Stages (``<out>/stages.json``: result, wall seconds, load average before / after; a rerun skips finished stages and
the SFT resumes from its checkpoint; a rerun with other values of the options the results depend on is refused,
``<out>/options.json``):

1. ``data`` -- ``<out>/data/train.jsonl``: the study's gold pairs + the filtered if-pairs (``--rubric``: the
   tool-rubric arm's gold pairs, and each builder pair with its prompt's IFEval rubric, :mod:`judgerl.gold.rubric`;
   the held-out records are then labelled with their rubric too).
2. ``sft`` -- recipe ``tir-judge-if`` (``--sft-steps``), SFT only; ``grpo`` (``--grpo-steps`` > 0) then its TIR GRPO.
3. ``static-<name>-expected`` / ``-parsed`` -- the judge's labels of the study's held-out records (forced answer +
   expected score, as the reward server scores; parsed without forcing: the honest invalid rate).
4. ``agreement`` -- :func:`judgerl.gold.agreement.agreement_report` of this judge and the study's judges against
   the gold: ``<out>/agreement.md`` and ``<out>/results.md``.

Usage (alone on an idle machine; ~1 h on 2 cores at the defaults)::

    python bench/bench_if_judge.py --out runs/if-judge --study results/study-arms
    python bench/bench_if_judge.py --out /tmp/if-smoke --study results/study-arms --smoke   # pipeline check only
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
DEFAULT_DATA = Path(os.environ.get("JUDGERL_SHARED_DATA", REPO.parent / "shared" / "data"))

from bench_policy_reward import agreement, label  # noqa: E402  (bench/bench_policy_reward.py)
from run_options import check_options  # noqa: E402  (bench/run_options.py)
from study_stages import Stages, log  # noqa: E402  (bench/study_stages.py)

#: The study's judges shown beside this one in the agreement table (their label directories under
#: ``<study>/labels``; those missing are left out).
STUDY_JUDGES = ("tool-sft-expected", "tool-expected", "tool-parsed", "tool-rubric-sft-expected",
                "tool-rubric-expected", "nonreasoning-expected", "reasoning-expected")
#: Options that only choose what runs now (neither compared nor saved in ``<out>/options.json``); the GRPO steps
#: only shape a stage that runs after the SFT.
SELECTORS = ("out", "budget_min")
LATER = ("grpo_steps",)
#: Overrides of the recipe under ``--smoke`` (tiny sizes: checks the pipeline only).
SMOKE_SETS = ["warmup.batch_size=2", "grpo.per_device_train_batch_size=4", "grpo.num_generations=2",
              "grpo.max_completion_length=48", "tools.max_rounds=1", "tools.max_new_tokens=32",
              "dapo.dynamic_sampling=false", "lora.top_layers=2"]


def build_data(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """``<out>/data/train.jsonl``: the study's training gold pairs + the IFEval pair builder's training split,
    without the study's held-out prompts.

    Raises:
        FileNotFoundError: the study has no ``judge-tool/gold_pairs.jsonl`` or ``records-heldout.jsonl``.
    """
    from judgerl.data import load_pairs, write_pairs_jsonl
    from judgerl.data.builders.if_pairs import IFPairSettings, write_if_pairs
    from judgerl.gold.ifeval import IFEvalGoldJudge
    from judgerl.gold.records import normalize_prompt

    study = Path(args.study)
    gold_pairs = study / ("judge-tool-rubric" if args.rubric else "judge-tool") / "gold_pairs.jsonl"
    held_path = study / "records-heldout.jsonl"
    for p in (gold_pairs, held_path):
        if not p.is_file():
            raise FileNotFoundError(f"{p}: the study's files (bench/bench_judge_as_reward.py --train-tool-judge)")
    held = {normalize_prompt(json.loads(line)["prompt"]) for line in held_path.read_text().splitlines() if line.strip()}
    checker = IFEvalGoldJudge.from_file(Path(args.data) / "ifeval" / "input_data.jsonl")
    built = out / "data" / "if-pairs-train.jsonl"
    built.parent.mkdir(parents=True, exist_ok=True)
    summary = write_if_pairs(checker.records, checker, built, IFPairSettings(split="train", seed=args.seed))
    study_pairs = load_pairs(gold_pairs).pairs
    extra = load_pairs(built).pairs
    kept = [p for p in extra if normalize_prompt(p.prompt) not in held]
    dropped = len(extra) - len(kept)
    if args.rubric:  # each builder pair carries its prompt's IFEval rubric, as the study's tool-rubric pairs do
        from dataclasses import replace

        from judgerl.gold.rubric import IFEvalRubrics

        rubrics = IFEvalRubrics(checker.records)
        kept = [replace(p, rubric=rubrics.for_prompt(p.prompt)) for p in kept]
    if args.if_limit is not None:
        kept = kept[: args.if_limit]
    if any(normalize_prompt(p.prompt) in held for p in study_pairs):
        raise RuntimeError(f"{gold_pairs}: a training gold pair shares its prompt with {held_path}")
    n = write_pairs_jsonl([*study_pairs, *kept], out / "data" / "train.jsonl")
    return {"study_pairs": len(study_pairs), "if_pairs_built": len(extra), "if_pairs_kept": len(kept),
            "if_pairs_dropped_heldout": dropped,
            "pairs": n, "prompts": len({normalize_prompt(p.prompt) for p in [*study_pairs, *kept]}),
            "builder": summary}


def _config(args: argparse.Namespace, out: Path, deadline_min: float) -> Any:
    from judgerl.train.run import load_run_recipe

    sets = [f"data.path={out / 'data' / 'train.jsonl'}", "data.limit=null", f"output_dir={out / 'judge'}",
            "resume=true", f"model={args.judge}", f"seed={args.seed}", f"warmup.steps={args.sft_steps}",
            f"grpo.max_steps={max(1, args.grpo_steps)}", f"time_limit_min={max(1.0, deadline_min)}",
            *(["protocol_args.measures=true"] if args.measures else []), *(SMOKE_SETS if args.smoke else []), *args.set]
    return load_run_recipe("tir-judge-if", sets)


def train_sft(args: argparse.Namespace, out: Path, stages: Stages) -> dict[str, Any] | None:
    """The ``tir-judge-if`` SFT on ``<out>/data/train.jsonl``; None when the budget stopped it (a rerun resumes)."""
    from judgerl.train.setup import TrainSetup
    from judgerl.train.stages import train_recipe

    config = _config(args, out, stages.left_min())
    res = train_recipe(TrainSetup.from_config(config), config.output_dir, resume=True, sft=True, grpo=False,
                       deadline=time.time() + 60 * stages.left_min())
    if res.get("sft_done") is None:
        return None
    stats = out / "judge" / "sft_stats.json"
    return {"sft_model": res.get("sft_model"), "model": res.get("sft_model"),
            "teacher": json.loads(stats.read_text()) if stats.is_file() else None}


def train_grpo(args: argparse.Namespace, out: Path, stages: Stages) -> dict[str, Any] | None:
    """TIR GRPO from the finished SFT (``--grpo-steps``); None when the budget stopped it (a rerun resumes)."""
    from judgerl.train.grpo import prune_checkpoints
    from judgerl.train.run import run_training

    res = run_training(_config(args, out, stages.left_min()))
    if int(res.get("global_step") or 0) < int(args.grpo_steps):
        return None
    prune_checkpoints(out / "judge")
    return {"model": res["final_model"], "global_step": res["global_step"]}


def read_judgments(labels: str | Path, gold: str | Path) -> dict[str, int]:
    """What a pointwise IF judge's judgments did, read from their text: ``n`` judgments; ``failed`` (no executed
    output, or an error: :func:`judgerl.text.codeblocks.looks_like_error`); ``printed`` (the first output is the
    teacher's ``k of n score s`` line); ``copied`` (the written score equals the printed one); ``printed_gold`` (the
    printed score equals the gold's: the judge wrote the right checks); ``written_gold`` (the written score equals
    the gold's).

    Raises:
        FileNotFoundError / ValueError: as :func:`judgerl.gold.label.read_labels`.
    """
    from judgerl.gold.label import read_labels
    from judgerl.text.codeblocks import looks_like_error, output_blocks
    from judgerl.train.teach.base import read_score

    gold_scores = {k: r.get("score") for k, r in read_labels(gold).items()}
    c = dict.fromkeys(("n", "failed", "printed", "copied", "printed_gold", "written_gold"), 0)
    for key, rec in read_labels(labels).items():
        c["n"] += 1
        outs = output_blocks(rec.get("reasoning") or "")
        c["failed"] += not outs or looks_like_error(outs[0])
        printed = read_score(outs[0]) if outs else None
        written, want = rec.get("score"), gold_scores.get(key)
        c["printed"] += printed is not None
        c["copied"] += printed is not None and written is not None and float(written) == printed
        c["printed_gold"] += printed is not None and want is not None and float(want) == printed
        c["written_gold"] += written is not None and want is not None and float(written) == float(want)
    return c


def write_results(args: argparse.Namespace, out: Path, stages: Stages, report: dict) -> str:
    """``<out>/results.md``: the agreement table, the data counts, each stage's time and load, the command."""
    from judgerl.gold.agreement import format_agreement

    data = stages.result("data")
    lines = ["## The pointwise tool IF judge on more training prompts (issue 23 item 4)", "",
             f"Training rows: {data['pairs']} pairs over {data['prompts']} prompts (the study's {data['study_pairs']} gold "
             f"pairs + {data['if_pairs_kept']} IFEval builder pairs; {data['if_pairs_dropped_heldout']} builder pairs "
             "on the study's held-out prompts dropped); held-out: the study's records (`records-heldout.jsonl`).", "",
             format_agreement(report), ""]
    parsed = out / "labels" / ("if-grpo-parsed" if args.grpo_steps > 0 else "if-sft-parsed")
    gold = Path(args.study) / "labels" / "gold-heldout"
    if parsed.is_dir() and gold.is_dir():
        c = read_judgments(parsed, gold)
        lines += [f"Read from the parsed judgments ({c['n']}): code failed or printed nothing in {c['failed']}; the "
                  f"score line printed in {c['printed']}, copied into `<score>` in {c['copied']}, equal to the gold "
                  f"in {c['printed_gold']} (the right checks); written score equal to the gold in {c['written_gold']}.",
                  ""]
    lines += ["| stage | wall s | load at start | load at end |", "|---|---:|---|---|"]
    for name, rec in stages.stages.items():
        lines.append(f"| {name} | {rec['seconds']:.0f} | {rec['load_start']} | {rec['load_end']} |")
    lines += ["", "Reproduce: `python bench/bench_if_judge.py " + " ".join(sys.argv[1:]) + "`", ""]
    text = "\n".join(lines)
    (out / "results.md").write_text(text)
    return text


def run(args: argparse.Namespace) -> str:
    """Every stage in order (see the module docstring); returns the results table."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    check_options(out / "options.json", vars(args), selectors=SELECTORS, later=LATER)
    stages = Stages(out, args.budget_min)
    stages.run("data", build_data, args, out)
    judge = stages.run("sft", train_sft, args, out, stages)
    name = "if-sft"
    if args.grpo_steps > 0:
        judge = stages.run("grpo", train_grpo, args, out, stages)
        name = "if-grpo"
    held = str(Path(args.study) / "records-heldout.jsonl")
    if args.smoke:  # 8 records: the pipeline check only
        held = str(out / "data" / "heldout-smoke.jsonl")
        Path(held).write_text("".join((Path(args.study) / "records-heldout.jsonl").read_text().splitlines(True)[:8]))
    for mode in ("expected", "parsed"):
        stages.run(f"static-{name}-{mode}", label, args, out, judge["model"], held, f"{name}-{mode}", mode=mode,
                   tools=True, rubric=args.rubric, measures=args.measures)
    study_labels = Path(args.study) / "labels"
    judges = {n: str(study_labels / n) for n in STUDY_JUDGES if (study_labels / n).is_dir()}
    judges.update({f"{name}-{m}": str(out / "labels" / f"{name}-{m}") for m in ("expected", "parsed")})
    stages.forget("agreement")  # cheap, and the judges shown may change between invocations
    report = stages.run("agreement", agreement, out, str(study_labels / "gold-heldout"), judges)
    return write_results(args, out, stages, report)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="run directory (resumable)")
    ap.add_argument("--study", required=True, help="a judge-as-reward study directory (results/study-arms)")
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="the shared data folder (ifeval/input_data.jsonl)")
    ap.add_argument("--judge", default="smollm2-135m", help="base model of the judge")
    ap.add_argument("--sft-steps", type=int, default=100, help="SFT steps (batch 8)")
    ap.add_argument("--grpo-steps", type=int, default=0, help="TIR GRPO steps after the SFT (0: SFT only)")
    ap.add_argument("--if-limit", type=int, default=None, help="most IFEval builder pairs added (default: all)")
    ap.add_argument("--judge-tokens", type=int, default=192, help="judge tokens per generation (>= 320 with tools)")
    ap.add_argument("--measures", action="store_true",
                    help="the prompt names the namespace's text measures (protocol option measures): the IF teacher "
                         "writes one call per instruction (judgerl.tools.namespace_text)")
    ap.add_argument("--rubric", action="store_true",
                    help="every prompt's IFEval rubric in the judge prompt, in training and labelling (the study's "
                         "tool-rubric arm: its gold pairs are <study>/judge-tool-rubric/gold_pairs.jsonl)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget-min", type=float, default=170.0, help="wall-clock budget of this invocation")
    ap.add_argument("--set", action="append", default=[], help="recipe override (key=value), repeatable")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes: checks the pipeline only")
    args = ap.parse_args(argv)
    args.ifeval = str(Path(args.data) / "ifeval" / "input_data.jsonl")
    return args


def main(argv: list[str] | None = None) -> None:
    print(run(parse_args(argv)))


if __name__ == "__main__":
    main()
